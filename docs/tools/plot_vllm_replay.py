#!/usr/bin/python3
"""Compares a kvfleet replay of the measured vLLM run with the measurement.

Usage: docs/tools/plot_vllm_replay.py RESULT.h5 REFERENCE_DIR OUT_PREFIX
  RESULT.h5      kvfleet run scenarios/validation/vllm-0.19-rtx4090-roofline.yaml --out RESULT.h5
  REFERENCE_DIR  ../shared/reference/validation/vllm-0.19-rtx4090-llama-3.1-8b
Writes OUT_PREFIX.png (per-request scatter and CDFs) and prints a Markdown table.
Needs Debian's python3-h5py, python3-numpy and python3-matplotlib.
"""
import json
import sys

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def measured(ref_dir):
    rows = [json.loads(l) for l in open(f"{ref_dir}/requests.jsonl")]
    rows.sort(key=lambda r: r["queued_ts"])  # the order kvfleet replays them in
    ttft = np.array([r["first_token_ts"] - r["queued_ts"] for r in rows])
    e2e = np.array([r["last_token_ts"] - r["queued_ts"] for r in rows])
    tpot = np.array([(r["last_token_ts"] - r["first_token_ts"]) / (r["output_toks"] - 1)
                     if r["output_toks"] > 1 else np.nan for r in rows])
    return ttft, tpot, e2e


def main(result, ref_dir, out):
    req = h5py.File(result, "r")["requests"][()]
    sim = {k: req[k + "_s"] for k in ("ttft", "tpot", "e2e")}
    mt, mp, me = measured(ref_dir)
    meas = {"ttft": mt, "tpot": mp, "e2e": me}
    print("| metric | statistic | measured (vLLM) | simulated | error |")
    print("|---|---|---|---|---|")
    for k, name in (("ttft", "TTFT (s)"), ("tpot", "TPOT (ms)"), ("e2e", "E2E (s)")):
        scale = 1e3 if k == "tpot" else 1.0
        m, s = meas[k][~np.isnan(meas[k])], sim[k][~np.isnan(sim[k])]
        for stat, f in (("mean", np.mean), ("p50", lambda v: np.percentile(v, 50)),
                        ("p90", lambda v: np.percentile(v, 90)),
                        ("p99", lambda v: np.percentile(v, 99))):
            a, b = f(m) * scale, f(s) * scale
            print(f"| {name} | {stat} | {a:.2f} | {b:.2f} | {100 * (b / a - 1):+.1f}% |")

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    for ax, (k, label) in zip(axes, (("ttft", "TTFT (s)"), ("tpot", "TPOT (s)"),
                                     ("e2e", "E2E latency (s)"))):
        m, s = meas[k], sim[k]
        ok = ~np.isnan(m) & ~np.isnan(s)
        ax.scatter(m[ok], s[ok], s=8, alpha=0.6)
        lim = [0, max(np.nanmax(m), np.nanmax(s)) * 1.05]
        ax.plot(lim, lim, "k--", lw=1, label="simulated = measured")
        ax.set_xlim(lim)
        ax.set_ylim(lim)
        ax.set_xlabel(f"measured {label}")
        ax.set_ylabel(f"simulated {label}")
        ax.set_title(f"{label}, per request (n={ok.sum()})")
        ax.legend(loc="upper left")
        ax.grid(alpha=0.3)
    fig.suptitle("vLLM 0.19, Llama-3.1-8B on one RTX 4090: measured vs kvfleet (roofline, uncalibrated)")
    fig.tight_layout()
    fig.savefig(out + ".png", dpi=110)


if __name__ == "__main__":
    main(*sys.argv[1:4])
