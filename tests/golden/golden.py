#!/usr/bin/env python3
"""Golden test: every shipped scenario gives exactly the results stored in checksums.txt.

For each scenario in scenarios/ (shortened with --set where a full run is long; scenarios that need
../shared/reference, or a profile the build makes from it, are skipped with a message when absent)
and each sweep in scenarios/sweeps/ (shortened likewise), this runs the kvfleet CLI, reads the
result file with h5py and hashes every column of /requests, /summary, /replicas and of
/timeseries/<replica> over all replicas (runs), or /points and /curves (sweeps). A column's hash is taken over its
values, not its storage: numbers as float64 (so an int64 column that becomes float64 with equal
values keeps its hash; NaN canonical), text as UTF-8. Wall-clock columns are left out.

  golden.py --kvfleet build/bin/kvfleet --source . [--reference ../shared/reference] [--update]
  golden.py --compare A.h5 B.h5     (two result files of any run: identical column by column?)

Without --update, any difference fails and names the scenario, dataset and column. With --update,
checksums.txt is rewritten; do that only in a commit of its own that says which scenarios changed
and why.
"""
import argparse
import hashlib
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKSUMS = os.path.join(HERE, "checksums.txt")

# Scenario (relative to scenarios/) -> --set overrides that keep its run short (a few seconds).
# Scenarios not named here run as shipped (each takes under five seconds).
SHORTEN = {
    # One simulated hour of 64 replicas takes minutes: its first simulated minute keeps the
    # prefix-aware router and 64 engines under load.
    "fleet/fleet-64-hour.yaml": ["simulation.max_time_s=60"],
}
SWEEP_SHORTEN = {
    "sweeps/bench-1000.yaml": None,  # a benchmark of a thousand points: not a golden case
}
RUN_DATASETS = ("requests", "summary", "replicas")
SWEEP_DATASETS = ("points", "curves")
WALL_CLOCK_COLUMNS = {"wall_s"}


def column_hash(values):
    h = hashlib.sha256()
    if values.dtype.kind in "fiub":
        v = values.astype("<f8")
        v[np.isnan(v)] = np.nan  # one NaN bit pattern
        h.update(v.tobytes())
    elif values.dtype.kind in "SO":
        for x in values:
            h.update(x if isinstance(x, bytes) else str(x).encode())
            h.update(b"\0")
    elif values.dtype.kind == "U":
        for x in values:
            h.update(x.encode())
            h.update(b"\0")
    else:
        raise SystemExit(f"golden: unexpected column type {values.dtype}")
    return h.hexdigest()[:16]


def hash_dataset(ds, label, out):
    data = ds[()]
    if data.dtype.names is None:
        out[(label, "")] = (data.size, column_hash(np.ravel(data)))
        return
    for name in data.dtype.names:
        if name in WALL_CLOCK_COLUMNS:
            continue
        out[(label, name)] = (len(data), column_hash(data[name]))


def hash_file(path, datasets, with_timeseries):
    out = {}
    with h5py.File(path, "r") as f:
        for d in datasets:
            if d in f:
                hash_dataset(f[d], d, out)
        if with_timeseries and "timeseries" in f:
            # One checksum per column over every replica's series in turn (replica names
            # included), so that 64 replicas give one line per column, not 64.
            names = sorted(f["timeseries"])
            per = [f["timeseries"][n][()] for n in names]
            out[("timeseries", "<replicas>")] = (len(names), column_hash(np.array(names, "S")))
            for col in per[0].dtype.names if per else ():
                if col in WALL_CLOCK_COLUMNS:
                    continue
                values = np.concatenate([p[col] for p in per])
                out[("timeseries", col)] = (len(values), column_hash(values))
    return out


def needs_reference(text, source):
    """Why this scenario cannot run here, or None."""
    if "shared/reference" in text and not os.path.isdir(ARGS.reference):
        return "../shared/reference is absent"
    marker = "build/profiles/"
    at = text.find(marker)
    if at >= 0:
        rel = text[at:text.find("\n", at)].strip().strip("'\"")
        if not os.path.exists(os.path.join(source, rel)):
            return rel + " is made by the build from ../shared/reference, absent here"
    return None


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"golden: {' '.join(cmd)} exited {p.returncode}:\n{p.stderr[-2000:]}")


def main():
    scen_root = os.path.join(ARGS.source, "scenarios")
    results = {}
    skipped = []
    with tempfile.TemporaryDirectory(prefix="kvfleet-golden-") as tmp:
        for dirpath, _, files in sorted(os.walk(scen_root)):
            for fn in sorted(files):
                if not fn.endswith(".yaml"):
                    continue
                path = os.path.join(dirpath, fn)
                rel = os.path.relpath(path, scen_root)
                with open(path) as f:
                    why = needs_reference(f.read(), ARGS.source)
                if why:
                    skipped.append(f"{rel}: {why}")
                    continue
                out = os.path.join(tmp, "r.h5")
                sweep = rel.startswith("sweeps/")
                if sweep:
                    if rel in SWEEP_SHORTEN and SWEEP_SHORTEN[rel] is None:
                        continue
                    run([ARGS.kvfleet, "sweep", path, "--out", out, "--quiet", "--threads", "2"])
                    hashes = hash_file(out, SWEEP_DATASETS, False)
                else:
                    cmd = [ARGS.kvfleet, "run", path, "--out", out, "--quiet"]
                    for s in SHORTEN.get(rel, []):
                        cmd += ["--set", s]
                    run(cmd)
                    hashes = hash_file(out, RUN_DATASETS, True)
                os.remove(out)
                for (ds, col), v in hashes.items():
                    results[(rel, ds, col)] = v
                print(f"golden: {rel}: {len(hashes)} columns", flush=True)

    for s in skipped:
        print(f"golden: skipped {s}")
    if ARGS.update:
        with open(CHECKSUMS, "w") as f:
            f.write("# scenario\tdataset\tcolumn\trows\tsha256[:16] of the values "
                    "(tests/golden/golden.py --update writes this file)\n")
            for (rel, ds, col), (n, h) in sorted(results.items()):
                f.write(f"{rel}\t{ds}\t{col}\t{n}\t{h}\n")
        print(f"golden: wrote {len(results)} checksums to {CHECKSUMS}")
        return 0

    stored = {}
    with open(CHECKSUMS) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            rel, ds, col, n, h = line.rstrip("\n").split("\t")
            stored[(rel, ds, col)] = (int(n), h)
    skipped_rel = {s.split(":")[0] for s in skipped}
    problems = []
    for key, (n, h) in sorted(stored.items()):
        if key[0] in skipped_rel:
            continue
        if key not in results:
            problems.append(f"{key[0]}: {key[1]}.{key[2]} is no longer written")
        elif results[key] != (n, h):
            got = results[key]
            problems.append(f"{key[0]}: {key[1]}.{key[2]} differs "
                            f"(rows {got[0]} vs stored {n}, hash {got[1]} vs {h})")
    for key in sorted(set(results) - set(stored)):
        problems.append(f"{key[0]}: {key[1]}.{key[2]} is new (no stored checksum)")
    if problems:
        print("golden: results differ from tests/golden/checksums.txt:")
        for p in problems[:200]:
            print("  " + p)
        if len(problems) > 200:
            print(f"  ... and {len(problems) - 200} more")
        print("A change that alters results on purpose regenerates the checksums "
              "(golden.py --update) in a commit of its own saying which scenarios changed and why.")
        return 1
    print(f"golden: {len(results)} column checksums identical "
          f"({len({k[0] for k in results})} scenarios)")
    return 0


def compare(a, b):
    """Two result files (runs or sweeps) hashed as the golden test hashes them."""
    sets = []
    for path in (a, b):
        with h5py.File(path, "r") as f:
            sweep = "points" in f
        sets.append(hash_file(path, SWEEP_DATASETS if sweep else RUN_DATASETS, not sweep))
    ha, hb = sets
    diff = sorted(k for k in set(ha) | set(hb) if ha.get(k) != hb.get(k))
    for ds, col in diff:
        print(f"compare: {ds}.{col} differs ({ha.get((ds, col))} vs {hb.get((ds, col))})")
    if diff:
        return 1
    print(f"compare: {len(ha)} columns identical")
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"))
    ap.add_argument("--kvfleet")
    ap.add_argument("--source")
    ap.add_argument("--reference", default=None)
    ap.add_argument("--update", action="store_true")
    ARGS = ap.parse_args()
    if ARGS.compare:
        sys.exit(compare(*ARGS.compare))
    if not ARGS.kvfleet or not ARGS.source:
        ap.error("--kvfleet and --source are required (or --compare A B)")
    if ARGS.reference is None:
        ARGS.reference = os.path.join(ARGS.source, "..", "shared", "reference")
    sys.exit(main())
