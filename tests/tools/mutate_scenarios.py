#!/usr/bin/env python3
"""Structure-aware mutation test of one shipped scenario against the exit-code contract.

Makes COUNT mutants of SCENARIO (delete, duplicate or swap lines; replace a number with 0, -1,
1e9, 1e300, nan, inf or nothing), runs each through `kvfleet run` capped in requests and time, and
fails on any exit other than 0 or 2, on a crash or hang, on a message that is not one line naming
the problem, and on any file left behind after exit 2.

  mutate_scenarios.py --kvfleet build/bin/kvfleet --scenario scenarios/default.yaml [--count 300]
"""
import argparse
import os
import random
import re
import subprocess
import sys
import tempfile

NUMBER = re.compile(r"(?<![\w.])-?\d+(\.\d+)?([eE][-+]?\d+)?(?![\w.])")
REPLACEMENTS = ["0", "-1", "1e9", "1e300", "nan", "inf", ""]
# What keeps a mutant's run short, by workload kind (these keys exist for that kind only).
CAPS = {
    "synthetic": ["workload.num_requests=100"],
    "conversations": ["workload.num_sessions=8"],
    "trace": ["workload.max_requests=100"],
}


def absolute_paths(text, folder):
    """Relative `path:`/`base:` values made absolute, so that a mutant runs from anywhere."""
    def fix(m):
        value = m.group(2)
        if value.startswith(("/", "'", '"')) or not value:
            return m.group(0)
        return m.group(1) + os.path.normpath(os.path.join(folder, value))
    return re.sub(r"((?:path|base):\s*)([^\s{},#]+)", fix, text)


def mutate(lines, rng):
    lines = list(lines)
    op = rng.randrange(4)
    if not lines:
        return lines, "empty"
    i = rng.randrange(len(lines))
    if op == 0:
        del lines[i]
        return lines, f"delete line {i + 1}"
    if op == 1:
        lines.insert(i, lines[i])
        return lines, f"duplicate line {i + 1}"
    if op == 2:
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
        return lines, f"swap lines {i + 1} and {j + 1}"
    candidates = [k for k, line in enumerate(lines)
                  if NUMBER.search(line.split("#")[0])]
    if not candidates:
        return lines, "no number to replace"
    k = rng.choice(candidates)
    body, sep, comment = lines[k].partition("#")
    matches = list(NUMBER.finditer(body))
    m = rng.choice(matches)
    new = rng.choice(REPLACEMENTS)
    lines[k] = body[:m.start()] + new + body[m.end():] + sep + comment
    return lines, f"line {k + 1}: {m.group(0)} -> '{new}'"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kvfleet", required=True)
    ap.add_argument("--scenario", required=True)
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=60)
    args = ap.parse_args()

    with open(args.scenario) as f:
        original = f.read()
    if "shared/reference" in original and not os.path.isdir(
            os.path.join(os.path.dirname(args.scenario), "../../../shared/reference")):
        print(f"mutate: skipping {args.scenario}: ../shared/reference is absent")
        return 0
    folder = os.path.dirname(os.path.abspath(args.scenario))
    text = absolute_paths(original, folder)
    kind = re.search(r"^\s*impl:\s*(synthetic|conversations|trace)", text, re.M)
    caps = CAPS.get(kind.group(1) if kind else "synthetic", []) + ["simulation.max_time_s=600"]
    rng = random.Random(f"{args.seed}:{os.path.basename(args.scenario)}")
    failures = []
    counts = {0: 0, 2: 0}
    with tempfile.TemporaryDirectory(prefix="kvfleet-mutate-") as tmp:
        mutant_path = os.path.join(tmp, "mutant.yaml")
        out_dir = os.path.join(tmp, "out")
        os.mkdir(out_dir)
        for n in range(args.count):
            lines, what = mutate(text.splitlines(), rng)
            with open(mutant_path, "w") as f:
                f.write("\n".join(lines) + "\n")
            cmd = [args.kvfleet, "run", mutant_path, "-q", "--out", os.path.join(out_dir, "r.h5")]
            for c in caps:
                cmd += ["--set", c]
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
            except subprocess.TimeoutExpired:
                failures.append(f"mutant {n} ({what}): no exit within {args.timeout} s")
                continue
            left = sorted(os.listdir(out_dir))
            rc = p.returncode
            if rc not in (0, 2):
                failures.append(f"mutant {n} ({what}): exit {rc}: {p.stderr.strip()[-300:]}")
            elif rc == 2:
                if left:
                    failures.append(f"mutant {n} ({what}): exit 2 left {left}")
                msg = p.stderr.strip()
                if "\n" in msg or not msg.startswith("kvfleet: error: "):
                    failures.append(f"mutant {n} ({what}): exit 2 without one message: {msg[:300]}")
            elif "r.h5" not in left:
                failures.append(f"mutant {n} ({what}): exit 0 without its --out file")
            counts[rc] = counts.get(rc, 0) + 1
            for name in left:
                os.remove(os.path.join(out_dir, name))
    name = os.path.relpath(args.scenario)
    print(f"mutate: {name}: {args.count} mutants, {counts.get(0, 0)} ran, "
          f"{counts.get(2, 0)} refused (exit 2), {len(failures)} broke the contract")
    for f in failures[:30]:
        print("  " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
