#!/usr/bin/env python3
"""Checks the include graph against the layers of docs/architecture.md.

The order is read from docs/architecture.md, from the line that starts with "core <" in its
"Layers" section: a layer of sim/ may include its own headers and those of layers to its left, not
its siblings ({a, b}) or anything to its right. Unit tests beside the code (*_test.cpp) are not part
of their layer's library (they build into sim_unit_tests, which links every layer) and are not
checked. calibration/ may include the layers up to cost, except calibration/fit.* (the fit of a
cost model to measured runs, which replays them: every layer); kernels/ none of sim/.
Exit 1 listing each include in a forbidden direction (file:line), 0 when there is none.

  tools/check_layers.py          (from anywhere in the checkout)
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INCLUDE = re.compile(r'^\s*#\s*include\s+"sim/([^/"]+)/')


def read_order():
    with open(os.path.join(ROOT, "docs", "architecture.md")) as f:
        for line in f:
            line = line.strip().strip("`")
            if line.startswith("core <"):
                ranks = {}
                for rank, group in enumerate(line.split("<")):
                    for name in group.replace("{", "").replace("}", "").split(","):
                        if name.strip():
                            ranks[name.strip()] = rank
                return ranks
    sys.exit("check_layers: no line starting 'core <' in docs/architecture.md")


def sources(folder):
    for dirpath, _, files in os.walk(os.path.join(ROOT, folder)):
        for f in files:
            if f.endswith((".h", ".cpp", ".cu", ".cuh", ".in")):
                yield os.path.join(dirpath, f)


def main():
    ranks = read_order()
    problems = []
    edges = set()
    for path in sources("sim"):
        rel = os.path.relpath(path, ROOT)
        layer = rel.split(os.sep)[1]
        if layer not in ranks:
            problems.append(f"{rel}: folder sim/{layer} is not a layer of docs/architecture.md")
            continue
        if rel.endswith("_test.cpp"):
            continue
        with open(path, errors="replace") as f:
            for n, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                to = m.group(1)
                if to == layer:
                    continue
                edges.add((layer, to))
                if to not in ranks:
                    problems.append(f"{rel}:{n}: includes sim/{to}, which is not a layer")
                elif ranks[to] >= ranks[layer]:
                    kind = "a sibling" if ranks[to] == ranks[layer] else "a layer above"
                    problems.append(f"{rel}:{n}: {layer} includes sim/{to}, {kind}")
    allowed = {"calibration": {"core", "io", "config", "model", "cost"}, "kernels": set()}
    for folder, ok in allowed.items():
        for path in sources(folder):
            rel = os.path.relpath(path, ROOT)
            if rel.startswith("calibration/fit."):
                continue  # kvfleet::fit links the replay layer (docs/architecture.md)
            with open(path, errors="replace") as f:
                for n, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if m and m.group(1) not in ok:
                        problems.append(f"{rel}:{n}: {folder}/ includes sim/{m.group(1)} "
                                        f"(allowed: {', '.join(sorted(ok)) or 'none'})")
    if problems:
        print("check_layers: includes against the layers of docs/architecture.md:")
        for p in problems:
            print("  " + p)
        return 1
    print(f"check_layers: {len(edges)} edges between {len(ranks)} layers, all downward")
    return 0


if __name__ == "__main__":
    sys.exit(main())
