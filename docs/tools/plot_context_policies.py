#!/usr/bin/python3
"""Context policies at the same load: KV usage over time and TTFT percentiles.

Usage: docs/tools/plot_context_policies.py KVFLEET_BINARY OUT.png
Runs scenarios/conversations/context-policies.yaml with each policy and prints a Markdown table.
Needs Debian's python3-matplotlib.
"""
import csv
import os
import subprocess
import sys
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

POLICIES = [("full", "{impl: full}"), ("window 4", "{impl: window, turns: 4}"),
            ("budget", "{impl: budget}"),
            ("summarize", "{impl: summarize, threshold_tokens: 3000, keep_turns: 2}")]


def main(binary, out):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    scenario = os.path.join(root, "scenarios", "conversations", "context-policies.yaml")
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, spec in POLICIES:
            d = os.path.join(tmp, label.replace(" ", "_"))
            subprocess.run([binary, "run", scenario, "-q", "--csv", d,
                            "--set", f"workload.context_policy={spec}"], check=True)
            s = next(csv.DictReader(open(f"{d}/summary.csv")))
            ts = list(csv.DictReader(open(f"{d}/timeseries_l40s.csv")))
            runs.append((label, s, ts))
    print("| policy | prompt tokens/turn | prefix hit | KV usage mean | TTFT p50 | TTFT p99 | E2E p99 | summaries | turns refused |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, s, _ in runs:
        turns = float(s["requests"]) - float(s["summary_requests"])
        print(f"| {label} | {float(s['prefix_cache_queries']) / max(turns, 1):.0f} | "
              f"{100 * float(s['prefix_cache_hit_rate']):.1f}% | {100 * float(s['kv_cache_usage_mean']):.1f}% | "
              f"{float(s['time_to_first_token_p50_s']):.2f} s | {float(s['time_to_first_token_p99_s']):.2f} s | "
              f"{float(s['e2e_request_latency_p99_s']):.1f} s | {int(float(s['summary_requests']))} | "
              f"{int(float(s['context_overflows']))} |")
    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 4.5), gridspec_kw={"width_ratios": [2, 1]})
    for label, _, ts in runs:
        a.plot([float(r["t_s"]) for r in ts], [100 * float(r["kv_cache_usage_perc"]) for r in ts],
               label=label, lw=1.2)
    a.set_xlabel("simulated time (s)")
    a.set_ylabel("KV cache usage (%)")
    a.set_title("KV usage over time, 150 closed-loop users on one L40S")
    a.legend(fontsize=8)
    a.grid(alpha=0.3)
    x = range(len(runs))
    b.bar([i - 0.2 for i in x], [float(s["time_to_first_token_p50_s"]) for _, s, _ in runs], 0.4,
          label="TTFT p50")
    b.bar([i + 0.2 for i in x], [float(s["time_to_first_token_p99_s"]) for _, s, _ in runs], 0.4,
          label="TTFT p99")
    b.set_xticks(list(x), [r[0] for r in runs])
    b.set_ylabel("seconds")
    b.set_title("Time to first token")
    b.legend(fontsize=8)
    b.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
