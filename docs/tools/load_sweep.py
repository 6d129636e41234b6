#!/usr/bin/env python3
"""Loads a kvfleet sweep file into pandas (docs/sweeps.md). Usage: load_sweep.py RESULTS.h5

Prints the points table and, per batch limit, TTFT p99 against arrival rate averaged over the
replicates. Needs Debian's python3-h5py and python3-pandas."""
import sys

import h5py
import pandas as pd


def load(path):
    with h5py.File(path, "r") as f:
        points = pd.DataFrame(f["points"][:])
        curves = pd.DataFrame(f["curves"][:])
        sweep_yaml = f["sweep"][()].decode()
    # Fixed-length strings come back as bytes.
    for df in (points, curves):
        for c in df.columns:
            if df[c].dtype == object:
                df[c] = df[c].str.decode("utf-8")
    return points, curves, sweep_yaml


if __name__ == "__main__":
    points, curves, sweep_yaml = load(sys.argv[1])
    print(f"{len(points)} points, {int((points.status == 'failed').sum())} failed")
    ok = points[points.status == "ok"]
    table = ok.groupby(["pools[0].engine.max_num_seqs", "workload.arrival.rate_per_s"])[
        "time_to_first_token_p99_s"].mean().unstack(0)
    print("TTFT p99 (s), mean over replicates; rows: arrival rate, columns: max_num_seqs")
    print(table.round(3).to_string())
    ttft = curves[(curves.metric == "ttft") & (curves.point == ok.point.iloc[0])]
    print(f"point {ok.point.iloc[0]}: TTFT p50 {ttft[ttft.percentile == 50].value_s.iloc[0]:.3f} s")
