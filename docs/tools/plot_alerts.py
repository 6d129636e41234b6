#!/usr/bin/env python3
"""Plots a run's KV usage and queue per replica with its alert firings and first events, from a
kvfleet results file (kvfleet run SCENARIO --out R.h5). Usage: plot_alerts.py R.h5 OUT.png"""
import sys

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

path, out = sys.argv[1], sys.argv[2]
f = h5py.File(path, "r")
fig, (kv, wait) = plt.subplots(2, 1, figsize=(10, 6), sharex=True)
for name, ds in f["timeseries"].items():
    t = ds["t_s"]
    kv.plot(t, ds["kv_cache_usage_perc"], label=f"{name} KV usage")
    wait.plot(t, ds["num_requests_waiting"], label=f"{name} waiting")
colours = {"out_of_memory": "red", "rejection_wave": "black", "slo_breach": "purple"}
for e in f["alert_events"]:
    if e["scope"].decode() != "fleet":
        continue
    kind = e["event"].decode()
    wait.axvline(e["t_s"], color=colours[kind], linestyle="--", linewidth=1)
    kv.axvline(e["t_s"], color=colours[kind], linestyle="--", linewidth=1,
               label=f"first {kind.replace('_', ' ')} ({e['t_s']:.0f} s)")
first = {}
for a in f["alerts"]:
    first.setdefault(a["rule"].decode(), a["fire_s"])
for i, (rule, t) in enumerate(sorted(first.items(), key=lambda x: x[1])):
    kv.plot([t], [0.05 + 0.08 * i], marker="v", markersize=9, linestyle="none",
            label=f"first '{rule}' firing")
kv.set_ylabel("KV cache usage")
kv.set_ylim(0, 1.45)
wait.set_ylabel("requests waiting")
wait.set_xlabel("simulated time (s)")
kv.legend(fontsize=8, loc="upper left", ncol=2)
wait.legend(fontsize=8, loc="upper left")
kv.set_title("kv-overflow: alert firings against the first out-of-memory, SLO breach and "
             "rejection wave", fontsize=10)
fig.tight_layout()
fig.savefig(out, dpi=120)
