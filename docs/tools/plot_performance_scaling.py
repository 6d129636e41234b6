#!/usr/bin/python3
"""How the fleet simulation's cost grows (docs/performance.md): reads the JSON output of
kvfleet-sim-bench's BM_FleetScaling cases, prints the Markdown table and draws the plot of wall
time per simulated request and per engine step.

Usage:
  build/bin/kvfleet-sim-bench --benchmark_filter=BM_FleetScaling \
      --benchmark_out=scaling.json --benchmark_out_format=json
  docs/tools/plot_performance_scaling.py scaling.json docs/img/performance_fleet_scaling.png

Needs Debian's python3-matplotlib.
"""
import json
import os
import re
import sys
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def fail(message):
    """Bad input: one line naming the file and what was wrong, exit status 2."""
    print(message, file=sys.stderr)
    sys.exit(2)


def cases(path):
    if not os.path.isfile(path):
        fail(f"{path}: not a readable file (missing, a directory or a special file)")
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        fail(f"{path}: cannot read: {e.strerror}")
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        fail(f"{path}: not kvfleet-sim-bench JSON output: {e}")
    out = []
    try:
        for b in data["benchmarks"]:
            m = re.match(r"BM_FleetScaling/(\d+)/(\d+)", b["name"])
            if not m or b.get("run_type") == "aggregate":
                continue
            unit = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}[b["time_unit"]]
            out.append({"replicas": int(m.group(1)), "seconds": int(m.group(2)),
                        "wall": float(b["real_time"]) * unit,
                        "requests": int(b["requests"]), "steps": int(b["steps"])})
    except (KeyError, TypeError, ValueError) as e:
        fail(f"{path}: a benchmark entry lacks or garbles a field ({e!r}); expected the "
             f"JSON that kvfleet-sim-bench --benchmark_out_format=json writes")
    if not out:
        fail(f"{path}: no BM_FleetScaling results")
    return sorted(out, key=lambda c: (c["replicas"], c["seconds"]))


def main():
    if len(sys.argv) != 3:
        fail(__doc__.rstrip())
    rows = cases(sys.argv[1])
    print("| replicas × simulated s | requests | engine steps | wall time | µs per request "
          "| µs per step |")
    print("|---|---|---|---|---|---|")
    for c in rows:
        print(f"| {c['replicas']} × {c['seconds']} | {c['requests']:,} | {c['steps']:,} "
              f"| {c['wall']:.2f} s | {1e6 * c['wall'] / c['requests']:.1f} "
              f"| {1e6 * c['wall'] / c['steps']:.2f} |")
    by_size = [c for c in rows if c["seconds"] == 600]
    by_time = [c for c in rows if c["replicas"] == 64]
    fig, axes = plt.subplots(2, 2, figsize=(9, 6), sharey="row")
    for row, (per, label) in enumerate((("requests", "µs per simulated request"),
                                        ("steps", "µs per engine step"))):
        for col, (group, key, xlabel) in enumerate(
                ((by_size, "replicas", "replicas (600 simulated s)"),
                 (by_time, "seconds", "simulated seconds (64 replicas)"))):
            ax = axes[row][col]
            ax.plot([c[key] for c in group], [1e6 * c["wall"] / c[per] for c in group], "o-")
            ax.set_xscale("log")
            ax.set_xticks([c[key] for c in group])
            ax.set_xticklabels([str(c[key]) for c in group])
            ax.set_ylim(bottom=0)
            ax.grid(True, alpha=0.3)
            if col == 0:
                ax.set_ylabel(label)
            if row == 1:
                ax.set_xlabel(xlabel)
    fig.suptitle("Wall time per unit of simulated work (flat = linear growth)")
    fig.tight_layout()
    # Written beside the target and renamed over it: a failure leaves no half-written image.
    out = sys.argv[2]
    try:
        fd, tmp = tempfile.mkstemp(suffix=".png", dir=os.path.dirname(out) or ".")
    except OSError as e:
        fail(f"{out}: cannot write: {e.strerror}")
    try:
        with os.fdopen(fd, "wb") as f:
            fig.savefig(f, format="png", dpi=110)
        os.replace(tmp, out)
    except OSError as e:
        os.unlink(tmp)
        fail(f"{out}: cannot write: {e.strerror}")


if __name__ == "__main__":
    main()
