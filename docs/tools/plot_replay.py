#!/usr/bin/python3
"""Replays a measured vLLM run on a profile and on the roofline, measures what each term of the
profile cost model contributes (ablations), and plots latency CDFs and running/waiting over time
against the run's timeseries.csv.

Usage: docs/tools/plot_replay.py KVFLEET RUN_DIR PROFILE.h5 OUT_PREFIX [TITLE]
  KVFLEET     build/bin/kvfleet
  RUN_DIR     ../shared/reference/validation/vllm-0.19-rtxpro6000-qwen3-30b-a3b
  PROFILE.h5  build/profiles/rtxpro6000-qwen3-30b-a3b-bf16.h5 (kvfleet-calibrate import)
Writes OUT_PREFIX.png and prints Markdown tables (truth, profile, roofline; ablations; step-time
breakdown). Needs Debian's python3-h5py, python3-numpy and python3-matplotlib.
"""
import json
import os
import subprocess
import sys
import tempfile

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def measured(run_dir):
    rows = [json.loads(l) for l in open(os.path.join(run_dir, "requests.jsonl")) if l.strip()]
    ttft = np.array([r["first_token_ts"] - r["queued_ts"] for r in rows])
    e2e = np.array([r["last_token_ts"] - r["queued_ts"] for r in rows])
    tpot = np.array([(r["last_token_ts"] - r["first_token_ts"]) / (r["output_toks"] - 1)
                     for r in rows if r["output_toks"] > 1])
    return {"ttft": ttft, "tpot": tpot, "e2e": e2e}


def replay(kvfleet, run_dir, profile, out, sets=()):
    """kvfleet replay, or (with --set overrides) kvfleet run on the scenario replay builds."""
    cmd = [kvfleet, "replay", run_dir, "--out", out, "-q"]
    if profile:
        cmd += ["--profile", profile]
    if sets:
        yaml = out + ".yaml"
        subprocess.run(cmd + ["--write-scenario", yaml], check=True, capture_output=True)
        cmd = [kvfleet, "run", yaml, "--out", out, "--quiet"]
        for s in sets:
            cmd += ["--set", s]
        os.remove(out)
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    f = h5py.File(out, "r")
    req = f["requests"][()]
    ok = req["outcome"] == b"ok"
    sim = {"ttft": req["ttft_s"][ok], "tpot": req["tpot_s"][ok], "e2e": req["e2e_s"][ok]}
    sim["tpot"] = sim["tpot"][~np.isnan(sim["tpot"])]
    ts = {n: f["timeseries"][n][()] for n in f["timeseries"]}
    rep = f["replicas"][()]
    return sim, ts, rep


def stats(v):
    return [np.mean(v), np.percentile(v, 50), np.percentile(v, 90), np.percentile(v, 99)]


def ablated(src, dst, drop_skew=False, drop_ops=()):
    """A copy of a profile without its skew table or without some operations."""
    with h5py.File(src, "r") as a, h5py.File(dst, "w") as b:
        for k in a:
            if drop_skew and k == "skew":
                continue
            data = a[k][()]
            if k == "curves" and drop_ops:
                data = data[~np.isin(data["op"], [o.encode() for o in drop_ops])]
            b.create_dataset(k, data=data)


def main(kvfleet, run_dir, profile, out, title="measured vLLM run vs kvfleet"):
    truth = measured(run_dir)
    tmp = tempfile.mkdtemp(prefix="kvfleet-replay-")
    prof, prof_ts, prof_rep = replay(kvfleet, run_dir, profile, os.path.join(tmp, "p.h5"))
    roof, _, _ = replay(kvfleet, run_dir, "", os.path.join(tmp, "r.h5"))
    names = ("TTFT (s)", "TPOT (ms)", "E2E (s)")
    keys = ("ttft", "tpot", "e2e")
    print("| metric | statistic | measured (vLLM) | kvfleet, profile | error | kvfleet, roofline | error |")
    print("|---|---|---|---|---|---|---|")
    errs = []
    for k, name in zip(keys, names):
        scale = 1e3 if k == "tpot" else 1.0
        for stat, a, b, c in zip(("mean", "p50", "p90", "p99"), stats(truth[k]), stats(prof[k]),
                                 stats(roof[k])):
            errs.append(abs(b / a - 1))
            print(f"| {name} | {stat} | {a * scale:.4g} | {b * scale:.4g} | {100 * (b / a - 1):+.1f}% "
                  f"| {c * scale:.4g} | {100 * (c / a - 1):+.1f}% |")
    print(f"\nprofile: mean absolute error over the twelve {100 * np.mean(errs):.2f}%\n")

    # Ablations: the profile without one term at a time.
    variants = [("the profile as imported", profile, [])]
    p = os.path.join(tmp, "noskew.h5")
    ablated(profile, p, drop_skew=True)
    variants.append(("without the skew correction", p, []))
    p = os.path.join(tmp, "noseq.h5")
    ablated(profile, p, drop_ops=("lm_head", "sampler"))
    variants.append(("without per-sequence lm_head and sampler", p, []))
    variants.append(("without async scheduling (arrivals join the next step)", profile,
                     ["pools[0].engine.async_scheduling=false"]))
    variants.append(("the GPU preset's datasheet link instead of config.json's", profile,
                     ["pools[0].link_Bps=0", "pools[0].link_latency_s=0"]))
    print("| variant | TTFT mean | TTFT p99 | TPOT mean | TPOT p99 | E2E mean | E2E p99 | MAE |")
    print("|---|---|---|---|---|---|---|---|")
    for label, path, sets in variants:
        sim, _, _ = replay(kvfleet, run_dir, path, os.path.join(tmp, "v.h5"), sets)
        cells, e = [], []
        for k in keys:
            t, s = stats(truth[k]), stats(sim[k])
            e += [abs(s[i] / t[i] - 1) for i in range(4)]
            cells += [f"{100 * (s[0] / t[0] - 1):+.1f}%", f"{100 * (s[3] / t[3] - 1):+.1f}%"]
        print(f"| {label} | " + " | ".join(cells) + f" | {100 * np.mean(e):.2f}% |")

    # Step-time breakdown (all ranks together).
    cols = ("gemm_s", "prefill_attention_s", "decode_attention_s", "communication_s", "overhead_s")
    tot = {c: float(np.sum(prof_rep[c])) for c in cols}
    busy = float(np.sum(prof_rep["busy_s"]))
    print("\n| kind of work | share of busy time |\n|---|---|")
    for c in cols:
        print(f"| {c[:-2].replace('_', ' ')} | {100 * tot[c] / busy:.1f}% |")

    fig, axes = plt.subplots(1, 4, figsize=(20, 4.5))
    for ax, k, name in zip(axes[:3], keys, names):
        scale = 1e3 if k == "tpot" else 1.0
        for data, label, style in ((truth[k], "measured (vLLM)", "k-"),
                                   (prof[k], "kvfleet, profile", "C0-"),
                                   (roof[k], "kvfleet, roofline", "C1--")):
            v = np.sort(data) * scale
            ax.plot(v, np.arange(1, len(v) + 1) / len(v), style, label=label)
        ax.set_xlabel(name)
        ax.set_ylabel("fraction of requests")
        ax.set_title(f"{name.split()[0]} CDF")
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right")
        if k == "ttft":
            ax.set_xscale("log")
    ax = axes[3]
    meas_ts = np.genfromtxt(os.path.join(run_dir, "timeseries.csv"), delimiter=",", names=True)
    ax.plot(meas_ts["t"], meas_ts["running"], "k-", label="running, measured")
    ax.plot(meas_ts["t"], meas_ts["waiting"], "k:", label="waiting, measured")
    t = next(iter(prof_ts.values()))["t_s"]
    run = sum(v["num_requests_running"] for v in prof_ts.values())
    wait = sum(v["num_requests_waiting"] for v in prof_ts.values())
    ax.plot(t, run, "C0-", label="running, kvfleet")
    ax.plot(t, wait, "C0:", label="waiting, kvfleet")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("requests (all ranks)")
    ax.set_title("running and waiting over time")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out + ".png", dpi=100)


if __name__ == "__main__":
    main(*sys.argv[1:6])
