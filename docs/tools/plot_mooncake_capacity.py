#!/usr/bin/python3
"""Prefix-cache hit rate against KV capacity on the Mooncake conversation trace.

Usage: docs/tools/plot_mooncake_capacity.py KVFLEET_BINARY OUT.png
Runs scenarios/traces/mooncake-conversation-h200.yaml (replayed 3x slower, so that one H200 keeps
up) with KV pools from 15,000 blocks to more than the trace's unique content, and once with the
H200's real pool plus a 1 TiB CPU tier. Needs ../shared/reference and python3-matplotlib.
"""
import csv
import os
import subprocess
import sys
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

BLOCKS = [15000, 30000, 56142, 100000, 200000, 500000, 1000000, 2000000, 6000000]


def run(binary, scenario, sets, d):
    args = [binary, "run", scenario, "-q", "--csv", d, "--set", "workload.time_scale=3"]
    for s in sets:
        args += ["--set", s]
    subprocess.run(args, check=True)
    return next(csv.DictReader(open(f"{d}/summary.csv")))


def main(binary, out):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    scenario = os.path.join(root, "scenarios", "traces", "mooncake-conversation-h200.yaml")
    pts = []
    with tempfile.TemporaryDirectory() as tmp:
        for b in BLOCKS:
            s = run(binary, scenario, [f"pools[0].engine.num_gpu_blocks_override={b}"],
                    f"{tmp}/{b}")
            pts.append((b * 16, 100 * float(s["prefix_cache_hit_rate"]), float(s["time_to_first_token_p50_s"])))
        t = run(binary, scenario, ["pools[0].engine.kv_tiers=[{name: cpu, capacity_gib: 1024, "
                                   "read_GBps: 50, write_GBps: 50}]"], f"{tmp}/tier")
        q = float(t["prefix_cache_queries"])
        tier_gpu = 100 * float(t["prefix_cache_hit_rate"])
        tier_all = 100 * (float(t["prefix_cache_hits"]) + float(t["tier_hit_tokens"])) / q
    print("| KV capacity (tokens) | prefix-cache hit rate | TTFT p50 (s) |")
    print("|---|---|---|")
    for tok, hit, ttft in pts:
        print(f"| {tok:,} | {hit:.1f}% | {ttft:.2f} |")
    print(f"| 898,272 + 1 TiB CPU tier | {tier_gpu:.1f}% GPU + {tier_all - tier_gpu:.1f}% tier = {tier_all:.1f}% | {float(t['time_to_first_token_p50_s']):.2f} |")
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label="GPU prefix cache")
    ax.axvline(56142 * 16, color="gray", ls="--", lw=1)
    ax.text(56142 * 16 * 1.07, 2, "one H200's KV pool\n(Llama-3.1-8B, bf16)", fontsize=8)
    ax.scatter([56142 * 16], [tier_all], marker="*", s=160, color="#dd6b20", zorder=5,
               label="H200 pool + 1 TiB CPU tier (GPU + tier hits)")
    ax.set_xscale("log")
    ax.set_xlabel("KV cache capacity (tokens)")
    ax.set_ylabel("prompt tokens served from cache (%)")
    ax.set_ylim(0, 42)
    ax.set_title("Mooncake conversation trace (12,031 requests): prefix-cache hits vs KV capacity")
    ax.grid(alpha=0.3, which="both")
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
