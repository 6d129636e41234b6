#!/usr/bin/env python3
"""Golden test: every shipped scenario gives the results stored beside this script.

For each scenario in scenarios/ (shortened with --set where a full run is long; scenarios that need
../shared/reference, or a profile the build makes from it, are skipped with a message when absent)
and each sweep in scenarios/sweeps/ (shortened likewise), this runs the kvfleet CLI, reads the
result file with h5py and checks every dataset in it (every table, the report, the resolved
scenario): nothing a run writes escapes. Wall-clock columns are left out (WALL_CLOCK_COLUMNS), and
/provenance's rows naming the build, the command line and the input files' hashes
(volatile_provenance).

What "the same results" means (docs/architecture.md, "The golden test"):
- integers, text, categories (by name) and times (float columns of 8 rows or more whose every
  value is a whole number of nanoseconds, as simulated time is) must be identical;
- other floating-point values (accounting: GPU-seconds, utilisations, means) may differ by at most
  TOLERANCE (1e-9) relative to the stored value, where a different summation order is the only
  cause. The store does not hold every value (that would be tens of megabytes): each float column
  has a fingerprint, the hash of its values' cells on a logarithmic grid whose cells span a
  relative size of 2^grid * ln 2 (grid between -28 and -18, finer for short columns), and the few
  values lying within the tolerance of a cell edge are stored exactly in tolerance.tsv and
  compared on their own. So a column passes for certain when no value moved more than 1e-9
  relative, and fails for certain when one moved more than 2^grid relative;
- the report must be identical, line for line (reports/<scenario>.txt, readable in a diff);
- every dataset and column written is declared: listed in docs/outputs.md (generated from the
  declarations in the code by `kvfleet outputs`) with the unit the file carries, and written with
  a description (a sweep's axis columns are its axes' keys, its metric columns /summary's).

Files (all written by --update):
  checksums.txt   scenario, dataset, column, type, rows, exact hash, grid, grid hash
  tolerance.tsv   scenario, dataset, column, row:value ...: float values near a cell edge
  reports/        the text report of every run, as kvfleet wrote it into /report

  golden.py --kvfleet build/bin/kvfleet --source . [--reference ../shared/reference]
            [--only GLOB ...] [--update [--prune]]
  golden.py --compare A.h5 B.h5 [--tolerance 1e-9]  (two result files: identical? largest
                                                      difference of every float column)

Without --update, any difference fails; differences are reported apart as new columns, removed
columns, changed types, changed row counts, changed values, and float columns within the
tolerance (which pass). With --update the store is rewritten for the scenarios that ran; the rows
of scenarios skipped here (no ../shared/reference) or not selected by --only are kept as they
are, and a column or scenario that disappeared is refused unless --prune says to drop it. Update
only in a commit of its own that says which scenarios changed and why.
"""
import argparse
import difflib
import fnmatch
import hashlib
import math
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def set_store(folder):
    global CHECKSUMS, TOLERANCE_FILE, REPORTS
    CHECKSUMS = os.path.join(folder, "checksums.txt")
    TOLERANCE_FILE = os.path.join(folder, "tolerance.tsv")
    REPORTS = os.path.join(folder, "reports")


set_store(HERE)

TOLERANCE = 1e-9  # relative, for float columns that are not times
# The window within which a stored value counts as near a grid boundary: the tolerance plus a
# margin for the rounding of x * (1 +- TOLERANCE) itself.
WINDOW = TOLERANCE * (1 + 1e-6) + 4 * np.finfo(np.float64).eps
GRID_FINEST, GRID_COARSEST = -28, -18

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
WALL_CLOCK_COLUMNS = {"wall_s"}
# /provenance rows that name the build and the command rather than the results (they change with
# every commit and every folder a test runs in): left out, and so are the input files' hashes and
# sizes (input.*), since a profile the build imports records the folder it was imported from; the
# model and GPU numbers are compared. tests/provenance_test.cpp checks the hashes themselves.
VOLATILE_PROVENANCE_KEYS = {b"kvfleet.version", b"kvfleet.commit", b"command_line"}


def volatile_provenance(key):
    return key in VOLATILE_PROVENANCE_KEYS or key.startswith(b"input.")
# Datasets that are text documents rather than tables. The report is stored whole (reports/).
REPORT_DATASET = "report"

HEADER = ("# scenario\tdataset\tcolumn\ttype\trows\thash\tgrid\tgrid_hash   "
          "(tests/golden/golden.py --update writes this file; see its docstring)\n")
TOL_HEADER = ("# scenario\tdataset\tcolumn\trow:value ...: float values within the tolerance "
              "of a cell edge (tests/golden/golden.py --update writes this file)\n")


# ---------------------------------------------------------------------------------------------
# Hashing


def _sha(parts):
    h = hashlib.sha256()
    for p in parts:
        h.update(p)
    return h.hexdigest()[:16]


def text_hash(values):
    parts = []
    for x in values:
        parts.append(x if isinstance(x, bytes) else str(x).encode())
        parts.append(b"\0")
    return _sha(parts)


def canonical_f8(values):
    v = np.asarray(values).astype("<f8")
    v = v.copy()
    v[np.isnan(v)] = np.nan  # one NaN bit pattern
    return v


TIME_MIN_ROWS = 8


def is_time(v):
    """Every finite value a whole number of nanoseconds, as to_seconds() writes simulated time, in
    a column of at least TIME_MIN_ROWS values (in a shorter one, a round number such as 1234.5 s
    of busy time would pass for a time by chance; such columns are compared as floats, on a grid
    of 2^-28 relative)."""
    if len(v) < TIME_MIN_ROWS:
        return False
    fin = v[np.isfinite(v)]
    if fin.size == 0:
        return True
    if np.any(np.abs(fin) > 9e6):  # beyond 2^53 ns the test means nothing
        return False
    return bool(np.all(fin == np.rint(fin * 1e9) / 1e9))


def grid_for(n):
    """Grid exponent of a float column of n values: about four values near a cell edge expected
    (n * 2 * TOLERANCE / (2^grid ln 2)), within [GRID_FINEST, GRID_COARSEST]."""
    want = math.log2(max(n, 1) * 2 * TOLERANCE / (4 * math.log(2)))
    return int(min(GRID_COARSEST, max(GRID_FINEST, math.ceil(want))))


# Cells are laid on log2|x|, shifted by an irrational fraction so that round numbers (integers,
# powers of two, halves), which results hold often, lie inside cells rather than on their edges.
PHASE = 0.3819660112501051  # (3 - sqrt 5) / 2


def _cell_position(v, grid):
    """log2|x| / 2^grid + PHASE: a value's cell is the floor of this (a cell spans a relative
    size of 2^grid * ln 2 in x)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log2(np.abs(v)) / 2.0**grid + PHASE


def grid_keys(v, grid):
    """Per value: (sign, cell). Values that share a key lie in one cell; zero and non-finite
    values get keys of their own."""
    pos = _cell_position(v, grid)
    cell = np.floor(pos)
    sign = np.sign(v)
    special = ~np.isfinite(v) | (v == 0)
    cell[special] = 0
    sign = np.where(np.isnan(v), 2.0, np.where(np.isinf(v), 3.0 * np.sign(v), sign))
    return np.stack([sign, cell], axis=1).astype("<f8")


def near_boundary(v, grid):
    """Indices of values whose tolerance window [x(1-w), x(1+w)] may reach another cell: their
    position lies within w / ln 2 (in log2 units, plus rounding) of a cell edge."""
    with np.errstate(invalid="ignore"):
        pos = _cell_position(v, grid)
    reach = (WINDOW / math.log(2)) / 2.0**grid + 1e-6  # cells; 1e-6 covers log2's rounding
    with np.errstate(invalid="ignore"):
        frac = pos - np.floor(pos)
    near = (frac < reach) | (frac > 1 - reach)
    return np.nonzero(near & np.isfinite(v) & (v != 0))[0]


def grid_hash(v, grid, skip):
    keep = np.ones(len(v), bool)
    keep[list(skip)] = False
    return _sha([grid_keys(v[keep], grid).tobytes()])


class Col:
    """One column's identity as the store keeps it."""

    def __init__(self, type_, rows, hash_, grid=None, ghash=None, near=None):
        self.type, self.rows, self.hash = type_, rows, hash_
        self.grid, self.ghash = grid, ghash
        self.near = near or {}  # row -> stored value (floats near a grid boundary)
        self.values = None  # the values themselves, for the run being checked (not stored)

    def row(self):
        g = "-" if self.grid is None else str(self.grid)
        return [self.type, str(self.rows), self.hash, g, self.ghash or "-"]


def column(values, enum=None):
    """Col of one column's values (a numpy array); enum: code -> name for categorical columns."""
    values = np.asarray(values)
    n = len(values)
    if enum is not None:
        names = [enum.get(int(c), f"<code {int(c)}>") for c in values]
        return Col("category", n, text_hash(names))
    kind = values.dtype.kind
    if kind in "SOU":
        return Col("text", n, text_hash(values))
    if kind in "iub":
        return Col("integer", n, _sha([values.astype("<i8").tobytes()]))
    if kind == "f":
        v = canonical_f8(values)
        h = _sha([v.tobytes()])
        if is_time(v):
            c = Col("time", n, h)
        else:
            grid = grid_for(n)
            near = near_boundary(v, grid)
            c = Col("float", n, h, grid, grid_hash(v, grid, near),
                    {int(i): float(v[i]) for i in near})
        c.values = v
        return c
    raise SystemExit(f"golden: unexpected column type {values.dtype}")


def table_columns(data, label, out):
    if data.dtype.names is None:
        out[(label, "")] = column(np.ravel(data))
        return
    for name in data.dtype.names:
        if name in WALL_CLOCK_COLUMNS:
            continue
        enum = h5py.check_enum_dtype(data.dtype[name])
        out[(label, name)] = column(data[name], {v: k for k, v in enum.items()} if enum else None)


# Absolute paths of this checkout and of the folder above it (../shared/reference), replaced in
# text datasets (the resolved scenario names its traces and profiles by absolute path, the report
# names the scenario file) so that the store is the same in every checkout.
PATH_PREFIXES = []


def normalise_paths(text):
    for prefix, token in PATH_PREFIXES:
        text = text.replace(prefix, token)
    return text


def as_text(x):
    if isinstance(x, bytes):
        return x.decode("utf-8", "replace")
    return str(x)


def read_file(path):
    """(columns, report text or None) of one result file: every dataset in it. A group whose
    datasets are tables of one shape (timeseries/<replica>) gives one column per table column
    over all its tables in name order, and a column of the table names."""
    out = {}
    report = None
    with h5py.File(path, "r") as f:
        def walk(group, prefix):
            nonlocal report
            for name in sorted(group):
                obj = group[name]
                label = prefix + name
                if isinstance(obj, h5py.Group):
                    kids = [obj[k] for k in sorted(obj)]
                    if kids and all(isinstance(k, h5py.Dataset) and k.dtype.names for k in kids) \
                            and len({k.dtype.names for k in kids}) == 1:
                        per = [k[()] for k in kids]
                        out[(label, "<tables>")] = column(np.array(sorted(obj), "S"))
                        for col in kids[0].dtype.names:
                            if col in WALL_CLOCK_COLUMNS:
                                continue
                            enum = h5py.check_enum_dtype(kids[0].dtype[col])
                            out[(label, col)] = column(
                                np.concatenate([p[col] for p in per]),
                                {v: k for k, v in enum.items()} if enum else None)
                    else:
                        walk(obj, label + "/")
                    continue
                data = obj[()]
                if label == REPORT_DATASET:
                    report = as_text(data)
                    out[(label, "")] = Col("text", 1, text_hash([report.encode()]))
                elif np.ndim(data) == 0 and not isinstance(data, np.ndarray):
                    out[(label, "")] = Col("text", 1, text_hash([normalise_paths(as_text(data))]))
                else:
                    data = np.asarray(data)
                    if label == "provenance" and data.dtype.names and "key" in data.dtype.names:
                        data = data[[not volatile_provenance(k) for k in data["key"]]]
                    table_columns(data, label, out)
        walk(f, "")
    return out, report


# ---------------------------------------------------------------------------------------------
# Declarations: every dataset and column a run or sweep writes is in docs/outputs.md (generated
# by `kvfleet outputs` from the declarations in the code; docs_test keeps it current), with the
# unit declared there, and carries a description in the file.

DECLARED, UNDECLARED = {}, []
SCALAR_DATASETS = {"run": {"scenario", "report"}, "sweep": {"sweep", "scenario"}}


def declared_outputs(source):
    """{"run"|"sweep": {table: {column: unit}}} from docs/outputs.md."""
    out, kind, table = {}, None, None
    with open(os.path.join(source, "docs", "outputs.md")) as f:
        for line in f:
            if line.startswith("## "):
                kind = "run" if "kvfleet run" in line else "sweep" if "kvfleet sweep" in line \
                    else None
                table = None
                if kind:
                    out.setdefault(kind, {})
            elif kind and line.startswith("### `/"):
                table = line.split("`")[1][1:]
                out[kind].setdefault(table, {})
            elif kind and table and line.startswith("| `"):
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                out[kind][table][cells[0].strip("`")] = cells[2]
    return out


def undeclared(path, declared):
    """What the file at `path` writes that docs/outputs.md does not declare, in words."""
    problems = []
    with h5py.File(path, "r") as f:
        kind = "sweep" if "points" in f else "run"
        tables = declared.get(kind, {})
        axes, metrics = set(), {}
        if kind == "sweep":
            import yaml
            spec = yaml.safe_load(as_text(f["sweep"][()])) or {}
            axes = {a.get("key", "") for a in spec.get("axes", []) or []}
            axes |= {a.get("key", "") for a in (spec.get("sample") or {}).get("axes", []) or []}
            metrics = dict(declared.get("run", {}).get("summary", {}))

        def check_table(ds, name):
            cols = tables.get(name)
            if cols is None:
                problems.append(f"/{ds.name.lstrip('/')}: a table docs/outputs.md does not declare")
                return
            units = [as_text(u) for u in ds.attrs.get("units", [])]
            descs = [as_text(d) for d in ds.attrs.get("descriptions", [])]
            for i, col in enumerate(ds.dtype.names):
                where = f"/{ds.name.lstrip('/')}.{col}"
                unit = units[i] if i < len(units) else None
                if col in cols:
                    if unit is not None and unit != cols[col]:
                        problems.append(f"{where}: unit {unit!r}, declared {cols[col]!r}")
                elif name == "points" and col in metrics:
                    if unit is not None and unit != metrics[col]:
                        problems.append(f"{where}: unit {unit!r}, /summary declares "
                                        f"{metrics[col]!r}")
                elif not (name == "points" and col in axes):
                    problems.append(f"{where}: a column docs/outputs.md does not declare")
                if i >= len(descs) or not descs[i].strip():
                    problems.append(f"{where}: written without a description")

        def walk(group):
            for key in sorted(group):
                obj = group[key]
                name = obj.name.lstrip("/")
                if isinstance(obj, h5py.Group):
                    if name == "timeseries":
                        for member in sorted(obj):
                            check_table(obj[member], "timeseries/<replica>")
                    else:
                        walk(obj)
                elif obj.dtype.names:
                    check_table(obj, name)
                elif name not in SCALAR_DATASETS[kind]:
                    problems.append(f"/{name}: a dataset docs/outputs.md does not declare")
        walk(f)
    return problems


# ---------------------------------------------------------------------------------------------
# The store


def load_store():
    stored = {}
    if os.path.exists(CHECKSUMS):
        with open(CHECKSUMS) as f:
            for line in f:
                if line.startswith("#") or not line.strip():
                    continue
                rel, ds, col, type_, n, h, g, gh = line.rstrip("\n").split("\t")
                stored[(rel, ds, col)] = Col(type_, int(n), h, None if g == "-" else int(g),
                                             None if gh == "-" else gh)
    if os.path.exists(TOLERANCE_FILE):
        with open(TOLERANCE_FILE) as f:
            for line in f:
                if line.startswith("#") or not line.strip():
                    continue
                rel, ds, col, entries = line.rstrip("\n").split("\t")
                for entry in entries.split(" "):
                    row, value = entry.split(":", 1)
                    stored[(rel, ds, col)].near[int(row)] = float(value)
    return stored


def report_path(rel):
    return os.path.join(REPORTS, os.path.splitext(rel)[0] + ".txt")


def write_store(cols, reports, dropped_reports):
    with open(CHECKSUMS, "w") as f:
        f.write(HEADER)
        for key in sorted(cols):
            f.write("\t".join(list(key) + cols[key].row()) + "\n")
    with open(TOLERANCE_FILE, "w") as f:
        f.write(TOL_HEADER)
        for key in sorted(cols):
            near = sorted(cols[key].near.items())
            if near:
                f.write("\t".join(list(key) + [" ".join(f"{r}:{v!r}" for r, v in near)]) + "\n")
    for rel, text in reports.items():
        path = report_path(rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    for rel in dropped_reports:
        if os.path.exists(report_path(rel)):
            os.remove(report_path(rel))


def stored_report(rel):
    try:
        with open(report_path(rel)) as f:
            return f.read()
    except FileNotFoundError:
        return None


# ---------------------------------------------------------------------------------------------
# Comparison


def rel_diff(a, b):
    if a == b or (math.isnan(a) and math.isnan(b)):
        return 0.0
    if not (math.isfinite(a) and math.isfinite(b)):
        return math.inf
    return abs(a - b) / abs(a) if a != 0 else math.inf


def within_tolerance(got, want):
    """For a float column whose exact hash differs: (passes, largest relative difference among
    the stored values near a boundary)."""
    if want.grid is None or got.values is None or got.type != "float":
        return False, None
    v = got.values
    if any(r >= len(v) for r in want.near):
        return False, None
    largest = 0.0
    for r, x in want.near.items():
        d = rel_diff(x, float(v[r]))
        largest = max(largest, d)
        if d > TOLERANCE:
            return False, d
    return grid_hash(v, want.grid, want.near) == want.ghash, largest


def classify(stored, results, ran):
    """Differences between the store and this run's results, for the scenarios in `ran`, by kind:
    dict kind -> list of messages. Kinds: new, removed, type, rows, changed, tolerance."""
    found = {k: [] for k in ("new", "removed", "type", "rows", "changed", "tolerance")}
    for key in sorted(set(stored) | set(results)):
        rel = key[0]
        if rel not in ran:
            continue
        where = f"{rel}: {key[1]}.{key[2]}" if key[2] else f"{rel}: {key[1]}"
        want, got = stored.get(key), results.get(key)
        if want is None:
            found["new"].append(f"{where} ({got.type}, {got.rows} rows) is new")
        elif got is None:
            found["removed"].append(f"{where} is no longer written")
        elif got.type != want.type:
            # A float column that now happens to hold whole nanoseconds (or no longer does) is a
            # change of values, not of type.
            if {got.type, want.type} == {"float", "time"}:
                found["changed"].append(f"{where} differs ({want.type} -> {got.type})")
            else:
                found["type"].append(f"{where} type {want.type} -> {got.type}")
        elif got.rows != want.rows:
            found["rows"].append(f"{where} has {got.rows} rows, stored {want.rows}")
        elif got.hash != want.hash:
            ok, largest = within_tolerance(got, want)
            if ok:
                exact = (f"largest difference among the {len(want.near)} values held exactly: "
                         f"{largest:.3g}; every other value " if want.near else "every value ")
                found["tolerance"].append(
                    f"{where}: not bit-identical, within {TOLERANCE:g} relative ({exact}within "
                    f"2^{want.grid} by its grid)")
            else:
                more = f", a value near a grid boundary moved {largest:.3g} relative" \
                    if largest is not None and largest > TOLERANCE else ""
                found["changed"].append(f"{where} differs ({want.type}{more})")
    return found


def report_diff(rel, got):
    want = stored_report(rel)
    if want is None:
        return [f"{rel}: report is new"]
    if want == got:
        return []
    lines = list(difflib.unified_diff(want.splitlines(), got.splitlines(), "stored", "now",
                                      n=0, lineterm=""))
    shown = [f"{rel}: report differs:"] + ["    " + l for l in lines[2:22]]
    if len(lines) > 22:
        shown.append(f"    ... {len(lines) - 22} more diff lines")
    return shown


TITLES = {
    "new": "new columns (no stored checksum)",
    "removed": "removed columns (stored, no longer written)",
    "type": "changed types",
    "rows": "changed row counts",
    "changed": "changed values",
    "tolerance": "float columns within the tolerance (pass)",
}


def print_found(found, limit=60):
    for kind in ("new", "removed", "type", "rows", "changed", "tolerance"):
        items = found[kind]
        if not items:
            continue
        print(f"golden: {len(items)} {TITLES[kind]}:")
        for m in items[:limit]:
            print("  " + m)
        if len(items) > limit:
            print(f"  ... and {len(items) - limit} more")


# ---------------------------------------------------------------------------------------------
# Running the scenarios


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


def all_scenarios(source):
    scen_root = os.path.join(os.path.abspath(source), "scenarios")
    for dirpath, _, files in sorted(os.walk(scen_root)):
        for fn in sorted(files):
            if fn.endswith(".yaml"):
                path = os.path.join(dirpath, fn)
                yield os.path.relpath(path, scen_root), path


def run_scenarios(selected):
    """(columns by (scenario, dataset, column), reports by scenario, scenarios run, skipped)."""
    results, reports, ran, skipped = {}, {}, set(), []
    with tempfile.TemporaryDirectory(prefix="kvfleet-golden-") as tmp:
        for rel, path in selected:
            with open(path) as f:
                why = needs_reference(f.read(), ARGS.source)
            if why:
                skipped.append(f"{rel}: {why}")
                continue
            out = os.path.join(tmp, "r.h5")
            if rel.startswith("sweeps/"):
                if rel in SWEEP_SHORTEN and SWEEP_SHORTEN[rel] is None:
                    continue
                run([ARGS.kvfleet, "sweep", path, "--out", out, "--quiet", "--threads", "2"])
            else:
                cmd = [ARGS.kvfleet, "run", path, "--out", out, "--quiet"]
                for s in SHORTEN.get(rel, []):
                    cmd += ["--set", s]
                run(cmd)
            cols, report = read_file(out)
            for problem in undeclared(out, DECLARED):
                UNDECLARED.append(f"{rel}: {problem}")
            os.remove(out)
            if report is not None:
                report = normalise_paths(report)
                cols[(REPORT_DATASET, "")] = Col("text", 1, text_hash([report.encode()]))
            for (ds, col), c in cols.items():
                results[(rel, ds, col)] = c
            if report is not None:
                reports[rel] = report
            ran.add(rel)
            print(f"golden: {rel}: {len(cols)} columns", flush=True)
    return results, reports, ran, skipped


def main():
    global DECLARED
    DECLARED = declared_outputs(ARGS.source)
    everything = list(all_scenarios(ARGS.source))
    existing = {rel for rel, _ in everything}
    if ARGS.only:
        selected = [(r, p) for r, p in everything if any(fnmatch.fnmatch(r, g) for g in ARGS.only)]
        if not selected:
            raise SystemExit(f"golden: --only {' '.join(ARGS.only)} matches no scenario")
    else:
        selected = everything
    results, reports, ran, skipped = run_scenarios(selected)
    for s in skipped:
        print(f"golden: skipped {s}")

    if UNDECLARED:
        print(f"golden: {len(UNDECLARED)} outputs written without a declaration "
              "(docs/outputs.md, from `kvfleet outputs`):")
        for u in UNDECLARED[:60]:
            print("  " + u)
        return 1

    stored = load_store()
    found = classify(stored, results, ran)
    report_lines = []
    for rel in sorted(ran):
        if rel in reports:
            report_lines += report_diff(rel, reports[rel])
        elif stored_report(rel) is not None:
            report_lines.append(f"{rel}: report is no longer written")
    # Scenarios stored but gone from scenarios/ (a deleted or renamed file).
    gone = sorted({k[0] for k in stored} - existing)

    if ARGS.update:
        print_found(found)
        for line in report_lines:
            print("golden: " + line)
        drops = found["removed"] + [f"{rel}: scenario no longer exists" for rel in gone]
        if drops and not ARGS.prune:
            print(f"golden: refusing to drop {len(drops)} stored entries without --prune:")
            for m in drops[:60]:
                print("  " + m)
            return 1
        kept = {k: c for k, c in stored.items()
                if k[0] not in ran and k[0] in existing}
        new = dict(kept)
        new.update(results)
        write_store(new, reports, gone)
        print(f"golden: wrote {len(new)} checksums ({len(results)} from {len(ran)} scenarios run, "
              f"{len(kept)} kept from {len({k[0] for k in kept})} scenarios not run here), "
              f"{sum(len(c.near) for c in new.values())} values near grid boundaries, "
              f"{len(reports)} reports")
        return 0

    print_found(found)
    failed = any(found[k] for k in ("new", "removed", "type", "rows", "changed"))
    if report_lines:
        failed = True
        print("golden: reports:")
        for line in report_lines:
            print("  " + line)
    if gone:
        failed = True
        print("golden: stored scenarios that no longer exist: " + ", ".join(gone))
    if failed:
        print("A change that alters results on purpose regenerates the store "
              "(golden.py --update) in a commit of its own saying which scenarios changed and why.")
        return 1
    print(f"golden: {len(results)} columns and {len(reports)} reports checked "
          f"({len(ran)} scenarios): {len(results) - len(found['tolerance'])} identical, "
          f"{len(found['tolerance'])} within the tolerance")
    return 0


def compare(a, b):
    """Two result files (runs or sweeps) column by column: which differ, and for float columns
    the largest relative difference over every value."""
    ca, ra = read_file(a)
    cb, rb = read_file(b)
    status = 0
    largest_all = 0.0
    for key in sorted(set(ca) | set(cb)):
        name = f"{key[0]}.{key[1]}" if key[1] else key[0]
        x, y = ca.get(key), cb.get(key)
        if x is None or y is None:
            print(f"compare: {name} only in {'B' if x is None else 'A'}")
            status = 1
        elif (x.type, x.rows) != (y.type, y.rows):
            print(f"compare: {name}: {x.type}, {x.rows} rows vs {y.type}, {y.rows} rows")
            status = 1
        elif x.hash != y.hash:
            if x.values is not None and y.values is not None and x.type == "float":
                va, vb = x.values, y.values
                same = (va == vb) | (np.isnan(va) & np.isnan(vb))
                with np.errstate(divide="ignore", invalid="ignore"):
                    d = np.where(same, 0.0, np.abs(vb - va) / np.abs(va))
                d[~same & ~np.isfinite(d)] = np.inf
                worst = float(np.max(d))
                largest_all = max(largest_all, worst)
                row = int(np.argmax(d))
                verdict = "within" if worst <= ARGS.tolerance else "OUTSIDE"
                print(f"compare: {name}: largest relative difference {worst:.3g} at row {row} "
                      f"({va[row]!r} vs {vb[row]!r}), {verdict} {ARGS.tolerance:g}")
                if worst > ARGS.tolerance:
                    status = 1
            else:
                print(f"compare: {name} differs ({x.type})")
                status = 1
    if ra != rb:
        print("compare: the reports differ")
        status = 1
    if status == 0:
        print(f"compare: {len(ca)} columns: integers, text and times identical, floats within "
              f"{ARGS.tolerance:g} (largest relative difference {largest_all:.3g})")
    return status


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"))
    ap.add_argument("--tolerance", type=float, default=TOLERANCE)
    ap.add_argument("--kvfleet")
    ap.add_argument("--source")
    ap.add_argument("--reference", default=None)
    ap.add_argument("--only", nargs="+", metavar="GLOB",
                    help="run only the scenarios (relative to scenarios/) matching these globs")
    ap.add_argument("--store", default=HERE,
                    help="folder of checksums.txt, tolerance.tsv and reports/ (default: beside "
                    "this script; the golden tool's own test uses another)")
    ap.add_argument("--update", action="store_true")
    ap.add_argument("--prune", action="store_true",
                    help="with --update: drop stored columns and scenarios no longer written")
    ARGS = ap.parse_args()
    if ARGS.compare:
        sys.exit(compare(*ARGS.compare))
    if not ARGS.kvfleet or not ARGS.source:
        ap.error("--kvfleet and --source are required (or --compare A B)")
    if ARGS.prune and not ARGS.update:
        ap.error("--prune goes with --update")
    set_store(ARGS.store)
    src = os.path.abspath(ARGS.source)
    PATH_PREFIXES.extend([(src + os.sep, "<source>/"), (os.path.dirname(src) + os.sep, "<source>/../")])
    if ARGS.reference is None:
        ARGS.reference = os.path.join(ARGS.source, "..", "shared", "reference")
    sys.exit(main())
