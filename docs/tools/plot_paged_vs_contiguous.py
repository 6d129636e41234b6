#!/usr/bin/python3
"""PagedAttention Fig. 2 with kvfleet: where the KV memory goes while the pool is full.

Usage: docs/tools/plot_paged_vs_contiguous.py KVFLEET_BINARY OUT.png
Runs scenarios/paged-vs-contiguous.yaml with each layout (CSV output in a temporary folder),
keeps the samples where requests wait, and plots token states, memory given to requests but
holding no token (reservation and internal fragmentation) and the rest of the pool (free holes:
external fragmentation). Needs Debian's python3-matplotlib.
"""
import csv
import os
import subprocess
import sys
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PAPER = {"Orca (max)": 20.4, "Orca (pow2)": 26.8, "Orca (oracle)": 38.2, "vLLM (paged)": 96.3}
CASES = [("Orca (max)", "contiguous", "max"), ("Orca (pow2)", "contiguous", "pow2"),
         ("Orca (oracle)", "contiguous", "oracle"), ("vLLM (paged)", "paged", "max")]


def main(binary, out):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    scenario = os.path.join(root, "scenarios", "paged-vs-contiguous.yaml")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, layout, res in CASES:
            d = os.path.join(tmp, f"{layout}-{res}")
            subprocess.run([binary, "run", scenario, "-q", "--csv", d,
                            "--set", f"pools[0].engine.kv_layout={layout}",
                            "--set", f"pools[0].engine.contiguous_reservation={res}"], check=True)
            blocks = int(next(csv.DictReader(open(f"{d}/replicas.csv")))["num_gpu_blocks"])
            pool = blocks * 16
            sat = [r for r in csv.DictReader(open(f"{d}/timeseries_a100.csv"))
                   if int(r["num_requests_waiting"]) > 0]
            held = sum(int(r["kv_tokens_held"]) for r in sat) / len(sat) / pool * 100
            alloc = sum(int(r["kv_tokens_allocated"]) for r in sat) / len(sat) / pool * 100
            rows.append((label, held, alloc - held, 100 - alloc))
    print("| system | token states (kvfleet) | token states (paper) | reserved, no token | free or fragmented |")
    print("|---|---|---|---|---|")
    for label, held, resv, free in rows:
        print(f"| {label} | {held:.1f}% | {PAPER[label]:.1f}% | {resv:.1f}% | {free:.1f}% |")
    fig, ax = plt.subplots(figsize=(11, 4.5))
    labels = [r[0] for r in rows]
    held = [r[1] for r in rows]
    resv = [r[2] for r in rows]
    free = [r[3] for r in rows]
    ax.bar(labels, held, color="#2b6cb0", label="token states")
    ax.bar(labels, resv, bottom=held, color="#f6ad55",
           label="reserved or allocated, holding no token")
    ax.bar(labels, free, bottom=[h + r for h, r in zip(held, resv)], color="#cbd5e0",
           label="free / external fragmentation")
    ax.scatter(labels, [PAPER[l] for l in labels], color="black", marker="D", zorder=5,
               label="token states in the paper (Fig. 2)")
    for i, h in enumerate(held):
        ax.text(i, h / 2, f"{h:.1f}%", ha="center", va="center", color="white", fontsize=10)
    ax.set_ylabel("share of the KV pool while it is full (%)")
    ax.set_ylim(0, 105)
    ax.set_title("KV memory holding token states: contiguous reservation vs paging\n"
                 "ShareGPT-like lengths (161 in / 338 out), 2048-token limit, same arrivals")
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
