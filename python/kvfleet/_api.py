"""The kvfleet package's functions: run, load, sweep, load_sweep, capacity, metrics, parameters.

Every table comes from the C++ declarations of the output tables (docs/outputs.md): a pandas
DataFrame whose ``attrs`` hold ``description`` (what a row is), ``units`` and ``descriptions``
(dicts by column). Categorical columns (``replica``, ``pool``, ``purpose`` of the requests) are
pandas Categoricals of names; a request that reached no replica has NaN there.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import sys
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import pandas as pd

from . import _core

InputError = _core.InputError
InputError.__doc__ = (
    "Bad input (a scenario key, an override, an SLO, a sweep axis): the message names where "
    "and which key. Attributes: where, key, problem. A ValueError."
)


def _input_error(where: str, key: str, problem: str) -> Exception:
    """An InputError raised by the Python side, with the same attributes as the C++ ones."""
    parts = [p for p in (where, key) if p]
    e = InputError(": ".join(parts + [problem]))
    e.where, e.key, e.problem = where, key, problem
    return e

#: A scenario: a path (str or os.PathLike) to a YAML file, YAML text, a dict with the YAML's
#: structure, or None for the built-in default scenario (scenarios/default.yaml).
ScenarioLike = Union[str, "os.PathLike[str]", Mapping[str, Any], None]
#: Overrides of scenario keys, as ``kvfleet run --set``: a dict {key: value} or "key=value"
#: strings. Keys are dotted paths with list indices: ``pools[0].engine.max_num_seqs``.
SetsLike = Union[Mapping[str, Any], Sequence[str], None]


def _source(scenario: ScenarioLike) -> Tuple[str, str, str, str]:
    """(path, text, name, base_dir) for the C++ ScenarioSource."""
    if scenario is None:
        return "", "", "", ""
    if isinstance(scenario, Mapping):
        # JSON is YAML: the dict's structure goes through the same parser and checks.
        return "", json.dumps(scenario), "<scenario dict>", os.getcwd()
    if isinstance(scenario, os.PathLike):
        return os.fspath(scenario), "", "", ""
    if isinstance(scenario, str):
        if "\n" in scenario or (":" in scenario and not os.path.exists(scenario)):
            return "", scenario, "<scenario text>", os.getcwd()
        if not scenario:
            raise _input_error("", "scenario", "empty: give a path, YAML text, a dict or None")
        if not os.path.exists(scenario):
            raise _input_error(scenario, "", "scenario file not found")
        return scenario, "", "", ""
    raise TypeError(
        "scenario must be a path, YAML text, a dict or None, not " + type(scenario).__name__
    )


def _flag(name: str, v: Any) -> bool:
    """A true/false option: only a bool (a string "no" is not false)."""
    if not isinstance(v, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, not {type(v).__name__}")
    return bool(v)


def _count(name: str, v: Any, lo: int, hi: int) -> int:
    """An integer option in [lo, hi], else InputError naming it (Python's ints are unbounded)."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, not {type(v).__name__}")
    if not lo <= int(v) <= hi:
        raise _input_error("", name, f"must be between {lo} and {hi} (got {v})")
    return int(v)


def _fraction(name: str, v: Any, lo: float, hi: float) -> float:
    """A real option in [lo, hi], else InputError naming it."""
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, not {type(v).__name__}")
    try:
        float(v)
    except OverflowError:
        raise _input_error("", name, f"must be between {lo:g} and {hi:g} (got a number "
                           "beyond a double's range)") from None
    if not (lo <= float(v) <= hi):
        raise _input_error("", name, f"must be between {lo:g} and {hi:g} (got {v})")
    return float(v)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple, dict)):
        return json.dumps(v)
    if isinstance(v, float):
        return repr(v)
    return str(v)


def _sets(sets: SetsLike, seed: Optional[int] = None) -> List[str]:
    out: List[str] = []
    if isinstance(sets, Mapping):
        out = [f"{k}={_value(v)}" for k, v in sets.items()]
    elif sets is not None:
        if isinstance(sets, str):
            raise TypeError("set must be a dict or a list of 'key=value' strings, not one string")
        out = [str(s) for s in sets]
    if seed is not None:
        out.append(f"seed={_count('seed', seed, 0, 2**63 - 1)}")
    return out


def _frame(table: Dict[str, Any]) -> pd.DataFrame:
    """A DataFrame from a table as _core returns it, with units and descriptions in attrs."""
    data: Dict[str, Any] = {}
    units: Dict[str, str] = {}
    descriptions: Dict[str, str] = {}
    for name, kind, unit, desc, values in table["columns"]:
        if kind == "category":
            codes, names = values
            data[name] = pd.Categorical.from_codes(np.asarray(codes, dtype=np.int64), names)
        elif kind == "text":
            data[name] = pd.Series(values, dtype=object)
        else:
            data[name] = values
        units[name] = unit
        descriptions[name] = desc
    df = pd.DataFrame(data)
    df.attrs = {"description": table["description"], "units": units, "descriptions": descriptions}
    return df


class Summary(dict):
    """The run's summary: metric name -> value (int for counts, float otherwise; NaN where a
    latency has no completed request). ``units`` and ``descriptions`` give each metric's."""

    units: Dict[str, str]
    descriptions: Dict[str, str]

    @classmethod
    def from_frame(cls, df: pd.DataFrame) -> "Summary":
        s = cls()
        for c in df.columns:
            v = df[c].iloc[0]
            s[c] = int(v) if np.issubdtype(df[c].dtype, np.integer) else float(v)
        s.units = dict(df.attrs.get("units", {}))
        s.descriptions = dict(df.attrs.get("descriptions", {}))
        return s


class Result:
    """What a run produced (:func:`run`) or a result file holds (:func:`load`).

    Attributes:
        summary: the run's summary (:class:`Summary`, a dict of metric -> value).
        requests: one row per attempt of a request (DataFrame).
        timeseries: every replica's sampled state, one row per replica per sample, with a
            ``replica`` column first (DataFrame).
        replicas: one row per replica: memory budget and counters (DataFrame).
        tenants, sessions, binding: prefix-cache lookups per tenant, one row per conversation,
            and what limited the run (DataFrames).
        scenario: the scenario as run, every default filled in (YAML text).
    """

    def __init__(self, tables: Dict[str, pd.DataFrame], timeseries: pd.DataFrame, scenario: str,
                 report: Optional[str], source: str):
        self.requests = tables["requests"]
        self.replicas = tables["replicas"]
        self.tenants = tables.get("tenants")
        self.sessions = tables.get("sessions")
        self.binding = tables.get("binding")
        self.summary = Summary.from_frame(tables["summary"])
        self.timeseries = timeseries
        self.scenario = scenario
        self._report = report
        self._source = source

    def report(self) -> str:
        """The text report ``kvfleet run`` prints for this run."""
        if self._report is None:
            raise ValueError(
                f"{self._source}: the file holds no report (written by a kvfleet older than the "
                "Python package); run it again to get one"
            )
        return self._report

    def units(self, table: str = "summary") -> Dict[str, str]:
        """Units of a table's columns (summary, requests, timeseries, replicas, ...)."""
        if table == "summary":
            return dict(self.summary.units)
        return dict(getattr(self, table).attrs["units"])

    def __repr__(self) -> str:
        s = self.summary
        return (
            f"<kvfleet.Result {self._source}: {s.get('requests', 0)} requests, "
            f"{s.get('ok', 0)} ok, TTFT p99 {s.get('time_to_first_token_p99_s', math.nan):.3g} s>"
        )


def _timeseries(parts: List[Tuple[str, pd.DataFrame]]) -> pd.DataFrame:
    names = [n for n, _ in parts]
    frames = []
    for code, (name, df) in enumerate(parts):
        df = df.copy()
        df.insert(0, "replica", pd.Categorical.from_codes([code] * len(df), names))
        frames.append(df)
    if frames:
        out = pd.concat(frames, ignore_index=True)
        attrs = dict(parts[0][1].attrs)
    else:
        out = pd.DataFrame({"replica": pd.Categorical([], categories=[])})
        attrs = {"description": "", "units": {}, "descriptions": {}}
    attrs["units"] = {"replica": "", **attrs.get("units", {})}
    attrs["descriptions"] = {"replica": "replica name, as in replicas", **attrs.get("descriptions", {})}
    out.attrs = attrs
    return out


def run(scenario: ScenarioLike = None, set: SetsLike = None, seed: Optional[int] = None) -> Result:
    """Simulates a scenario and returns its :class:`Result`.

    Args:
        scenario: a path, YAML text, a dict, or None for the built-in default.
        set: overrides of scenario keys ({"pools[0].engine.max_num_seqs": 64}).
        seed: the scenario's seed (same as set={"seed": N}).

    Raises:
        InputError: a key, value or file is wrong (the message names it).
        KeyboardInterrupt: Ctrl-C; the run stops at its next time-series sample.
    """
    path, text, name, base_dir = _source(scenario)
    d = _core.run(path, text, name, base_dir, _sets(set, seed))
    tables = {k: _frame(d[k]) for k in ("requests", "summary", "replicas", "tenants", "sessions",
                                        "binding")}
    ts = _timeseries([(rep, _frame(t)) for rep, t in d["timeseries"]])
    return Result(tables, ts, d["scenario"], d["report"], path or name or "<built-in default>")


# What h5py, numpy and the decoding raise on a damaged or foreign file: turned into InputError
# naming the file and the dataset or column (never KeyError: 1 or a UnicodeDecodeError alone).
_READ_ERRORS = (KeyError, TypeError, ValueError, IndexError, AttributeError, OSError,
                UnicodeDecodeError, OverflowError)


def _h5_frame(ds: Any, where: str = "", name: str = "") -> pd.DataFrame:
    import h5py

    name = name or getattr(ds, "name", "") or ""
    if not isinstance(ds, h5py.Dataset) or ds.dtype.names is None or ds.ndim != 1:
        raise _input_error(where, name.lstrip("/"),
                           "not a table (a one-dimensional compound dataset)")
    try:
        arr = ds[()]
    except _READ_ERRORS as e:
        raise _input_error(where, name.lstrip("/"), f"cannot be read ({e})") from None
    data: Dict[str, Any] = {}
    for col_name in arr.dtype.names or ():
        at = f"{name.lstrip('/')}.{col_name}"
        try:
            col = arr[col_name]
            enum = h5py.check_enum_dtype(ds.dtype.fields[col_name][0])
            if enum is not None:
                by_code = {int(v): k for k, v in enum.items() if int(v) >= 0}
                if sorted(by_code) != list(range(len(by_code))):
                    raise ValueError("its category codes are not 0, 1, 2, ...")
                names = [by_code[i] for i in range(len(by_code))]
                codes = col.astype(np.int64)
                if len(codes) and (codes.min() < -1 or codes.max() >= len(names)):
                    raise ValueError("a value is not one of its categories")
                data[col_name] = pd.Categorical.from_codes(codes, names)
            elif col.dtype.kind == "S":
                data[col_name] = pd.Series([x.decode("utf-8") for x in col], dtype=object)
            elif col.dtype.kind in "iufb":
                data[col_name] = col
            else:
                raise TypeError(f"a column of type {col.dtype} (expected numbers or text)")
        except _READ_ERRORS as e:
            raise _input_error(where, at, f"cannot be read ({type(e).__name__}: {e})") from None
    df = pd.DataFrame(data)

    def texts(key: str) -> List[str]:
        v = ds.attrs.get(key)
        if v is None or isinstance(v, (bytes, str)):
            return []
        return [x.decode("utf-8", "replace") if isinstance(x, bytes) else str(x) for x in v]

    try:
        cols = list(df.columns)
        units, descs = texts("units"), texts("descriptions")
        desc = ds.attrs.get("description", "")
        df.attrs = {
            "description": desc.decode("utf-8", "replace") if isinstance(desc, bytes)
            else str(desc),
            "units": dict(zip(cols, units)) if len(units) == len(cols) else {},
            "descriptions": dict(zip(cols, descs)) if len(descs) == len(cols) else {},
        }
    except _READ_ERRORS as e:
        raise _input_error(where, name.lstrip("/"),
                           f"attributes cannot be read ({type(e).__name__}: {e})") from None
    return df


def _h5_text(f: Any, name: str, where: str = "") -> Optional[str]:
    if name not in f:
        return None
    try:
        v = f[name][()]
        if isinstance(v, bytes):
            return v.decode("utf-8")
        if isinstance(v, str):
            return v
    except _READ_ERRORS as e:
        raise _input_error(where, name, f"cannot be read ({type(e).__name__}: {e})") from None
    raise _input_error(where, name, "not a text (a scalar string)")


def load(path: Union[str, "os.PathLike[str]"]) -> Result:
    """Reads a run's result file (``kvfleet run --out FILE.h5``) into a :class:`Result`."""
    import h5py

    p = os.fspath(path)
    if not os.path.isfile(p):
        raise _input_error(p, "", "result file not found")
    try:
        f = h5py.File(p, "r")
    except OSError as e:
        raise _input_error(p, "", f"not an HDF5 file ({e})") from None
    with f:
        for need in ("requests", "summary", "replicas"):
            if need not in f:
                kind = "a sweep file (use kvfleet.load_sweep)" if "points" in f else "not a run's"
                raise _input_error(p, need, f"dataset missing: {kind} result file")
        tables = {k: _h5_frame(f[k], p, k) for k in ("requests", "summary", "replicas",
                                                     "tenants", "sessions", "binding") if k in f}
        if "replica" not in tables["replicas"].columns:
            raise _input_error(p, "replicas.replica", "column missing")
        if len(tables["summary"]) != 1:
            raise _input_error(p, "summary", f"has {len(tables['summary'])} rows, not one")
        for c in tables["summary"].columns:
            if tables["summary"][c].dtype.kind not in "iuf":
                raise _input_error(p, f"summary.{c}", "is not a number")
        parts = []
        if "timeseries" in f:
            group = f["timeseries"]
            if not isinstance(group, h5py.Group):
                raise _input_error(p, "timeseries", "not a group of tables")
            for key in group:
                ds = group[key]
                rep = ds.attrs.get("replica", key)
                rep = rep.decode("utf-8", "replace") if isinstance(rep, bytes) else str(rep)
                parts.append((rep, _h5_frame(ds, p, "timeseries/" + key)))
            # In the order of /replicas, as run() gives them (HDF5 lists members by name:
            # h100_10 before h100_2).
            order = {name: i for i, name in enumerate(tables["replicas"]["replica"])}
            parts.sort(key=lambda part: order.get(part[0], len(order)))
        try:
            series = _timeseries(parts)
        except _READ_ERRORS as e:
            raise _input_error(p, "timeseries", f"cannot be joined ({e})") from None
        return Result(tables, series, _h5_text(f, "scenario", p) or "",
                      _h5_text(f, "report", p), p)


def _axes(axes: Union[Mapping[str, Any], Sequence[Tuple[str, Any]]]) -> List[Dict[str, Any]]:
    items = list(axes.items()) if isinstance(axes, Mapping) else [tuple(a) for a in axes]
    out: List[Dict[str, Any]] = []
    for key, values in items:
        if isinstance(values, Mapping):  # cases: {name: {key: value}}
            out.append({"key": key, "cases": [
                {"name": str(n), "set": _sets(s)} for n, s in values.items()]})
        else:
            if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) and not \
                    isinstance(values, np.ndarray):
                raise TypeError(f"axis {key}: values must be a list, not {type(values).__name__}")
            out.append({"key": key, "values": [
                v.item() if isinstance(v, np.generic) else v for v in values]})
    return out


def _points_frame(points: pd.DataFrame, metric_names: Sequence[str]) -> pd.DataFrame:
    # Counts of failed points are stored as -1 (integers): missing values here.
    failed = points["status"] != "ok" if "status" in points else None
    if failed is not None and failed.any():
        for m in metric_names:
            if m in points and np.issubdtype(points[m].dtype, np.integer):
                attrs = points.attrs
                points[m] = points[m].astype("Int64").mask(failed)
                points.attrs = attrs
    return points


def _sweep_file(base: Any) -> Optional[Tuple[str, str, str]]:
    """(text, name, folder) when `base` is a sweep file (a path whose YAML has axes: or sample:
    at the top) or a sweep as a dict; None for a scenario."""
    if isinstance(base, Mapping) and ("axes" in base or "sample" in base):
        return json.dumps(base), "<kvfleet.sweep>", os.getcwd()
    if isinstance(base, (str, os.PathLike)) and "\n" not in os.fspath(base):
        p = os.fspath(base)
        if os.path.isfile(p):
            with open(p, encoding="utf-8", errors="replace") as f:
                text = f.read(16 << 20)
            if re.search(r"^(axes|sample)\s*:", text, re.M):
                return text, p, os.path.dirname(os.path.abspath(p))
    return None


def sweep(
    base: Any = None,
    axes: Union[Mapping[str, Any], Sequence[Tuple[str, Any]], None] = None,
    set: SetsLike = None,
    replicates: int = 1,
    seed: Optional[int] = None,
    metrics: Optional[Sequence[str]] = None,
    threads: int = 0,
    curves: bool = False,
    out: Union[str, "os.PathLike[str]", None] = None,
    resume: bool = False,
    progress: Union[bool, Callable[[int, int], Any]] = False,
) -> Union[pd.DataFrame, Tuple[pd.DataFrame, pd.DataFrame]]:
    """Runs a grid of scenario variations on all cores and returns one row per point.

    Args:
        base: the scenario every point starts from (path, YAML text, dict or None), or a sweep
            file (a path to the YAML ``kvfleet sweep`` takes, ``sample:`` included) or a sweep as
            a dict; then axes, set, replicates, seed and metrics come from it.
        axes: {key: [values]} (the grid is their product, first axis slowest), or
            {label: {case_name: {key: value, ...}}} for named cases.
        set: overrides applied to every point.
        replicates: runs per combination, with seeds seed, seed+1, ...
        seed: the first replicate's seed (default: the scenario's).
        metrics: /summary metrics to keep (default: all).
        threads: threads to use (0: all cores).
        curves: also return the latency percentiles 1..99 of every point.
        out: also write the results file ``kvfleet sweep --out`` writes (the same bytes), with a
            checkpoint every 10 s; Ctrl-C writes the points finished so far before
            KeyboardInterrupt.
        resume: with out, skip the points the file already holds (as ``--resume``).
        progress: True prints points done on stderr; a callable gets (done, to_do).

    Returns:
        The points DataFrame (point, replicate, seed, one column per axis, status, error,
        wall_s when out is not given, metrics), or (points, curves) when curves is true. A failed
        point says why in ``error``; its metrics are missing. ``points.attrs["axes"]`` names the
        axis columns, ``points.attrs["metrics"]`` the metric columns.
    """
    curves, resume = _flag("curves", curves), _flag("resume", resume)
    if isinstance(metrics, (str, bytes)):
        raise TypeError("metrics must be a list of names, not one string")
    file = _sweep_file(base)
    if file is None and isinstance(base, (str, os.PathLike)) and "\n" not in os.fspath(base) \
            and os.fspath(base).endswith((".yaml", ".yml")) and not os.path.isfile(base):
        raise _input_error(os.fspath(base), "", "file not found (a scenario or sweep file)")
    if file is not None:
        for name, given in (("axes", axes), ("set", set), ("seed", seed), ("metrics", metrics)):
            if given is not None:
                raise _input_error("", name, "comes from the sweep file: give one or the other")
        if replicates != 1:
            raise _input_error("", "replicates", "comes from the sweep file: give one or the other")
        yaml_text, sweep_name, sweep_dir = file
        text, name = "", ""
    else:
        if not axes:
            raise _input_error("", "axes", "give at least one {key: [values]}")
        spec: Dict[str, Any] = {"axes": _axes(axes),
                                "replicates": _count("replicates", replicates, 1, 1_000_000),
                                "curves": bool(curves)}
        path, text, name, _ = _source(base)
        if path:
            spec["base"] = os.path.abspath(path)
        if set is not None:
            spec["set"] = _sets(set)
        if seed is not None:
            spec["seed"] = _count("seed", seed, 0, 2**53)
        if metrics is not None:
            spec["metrics"] = list(metrics)
        yaml_text, sweep_name, sweep_dir = json.dumps(spec), "<kvfleet.sweep>", os.getcwd()
    if resume and out is None:
        raise _input_error("", "resume", "needs out=: the results file to resume")
    report: Any = None
    if progress is True:
        last = [0.0]

        def report(done: int, to_do: int) -> None:
            now = time.monotonic()
            if done < to_do and now - last[0] < 1.0:
                return
            last[0] = now
            sys.stderr.write(f"\rkvfleet.sweep: {done}/{to_do} points" +
                             ("\n" if done >= to_do else ""))
            sys.stderr.flush()
    elif callable(progress):
        report = progress
    elif progress is not False:
        raise TypeError("progress must be True, False or a callable(done, to_do)")
    d = _core.sweep(yaml_text, sweep_name, sweep_dir, text, name,
                    _count("threads", threads, 0, 4096), os.fspath(out) if out else "",
                    bool(resume), report)
    points = _points_frame(_frame(d["points"]), d["metrics"])
    points.attrs["scenario"] = d["scenario"]
    points.attrs["axes"] = list(d["axes"])
    points.attrs["metrics"] = list(d["metrics"])
    if curves:
        return points, _frame(d["curves"])
    return points


def load_sweep(path: Union[str, "os.PathLike[str]"], curves: bool = False):
    """Reads a sweep's result file (``kvfleet sweep --out FILE.h5``): the points DataFrame, or
    (points, curves) when curves is true."""
    import h5py

    p = os.fspath(path)
    if not os.path.isfile(p):
        raise _input_error(p, "", "sweep file not found")
    try:
        f = h5py.File(p, "r")
    except OSError as e:
        raise _input_error(p, "", f"not an HDF5 file ({e})") from None
    with f:
        if "points" not in f:
            raise _input_error(p, "points", "dataset missing: not a sweep file")
        points = _h5_frame(f["points"], p, "points")
        # The metric columns follow error and wall_s, which only --timing writes (docs/outputs.md,
        # /points).
        cols = list(points.columns)
        after = "wall_s" if "wall_s" in cols else "error"
        metric_names = cols[cols.index(after) + 1:] if after in cols else []
        try:
            points = _points_frame(points, metric_names)
        except _READ_ERRORS as e:
            raise _input_error(p, "points", f"cannot be read ({type(e).__name__}: {e})") from None
        # The axis columns lie between seed and status (docs/outputs.md, /points).
        if "seed" in cols and "status" in cols:
            points.attrs["axes"] = cols[cols.index("seed") + 1:cols.index("status")]
        points.attrs["metrics"] = list(metric_names)
        points.attrs["scenario"] = _h5_text(f, "scenario", p) or ""
        if curves:
            if "curves" not in f:
                raise _input_error(p, "curves", "dataset missing")
            return points, _h5_frame(f["curves"], p, "curves")
        return points


@dataclasses.dataclass
class CapacityResult:
    """The highest load at which an SLO holds (:func:`capacity`).

    Attributes:
        key: the scenario key varied (workload.arrival.rate_per_s, workload.users, ...).
        mean, ci95_low, ci95_high: the capacity over the replicate seeds, with a 95% interval.
        per_seed, seeds: each seed's capacity, and the seeds used.
        runs: simulations run. start: the scenario's own value of the key.
        slo: the targets, as checked. limited_by: set when the search hit a load the scenario
            refuses while the SLO still held. not_met: set when the SLO held at no load tried
            (mean 0): which target failed at the lowest load, and what it measured.
            workload: the workload section, resolved (YAML).
        step_sensitivity, slower_steps, faster_steps: the capacity with every step that fraction
            slower and faster (NaN when not searched).
        expected_error: the cost model's expected error from the validation report (dict:
            cost_model, moe, runs, ttft, tpot, e2e as fractions, text), and expected_low,
            expected_high the capacity band it implies (NaN without validated runs).
    """

    key: str
    mean: float
    ci95_low: float
    ci95_high: float
    per_seed: List[float]
    seeds: List[int]
    runs: int
    start: float
    slo: List[str]
    limited_by: str
    workload: str
    step_sensitivity: float = 0.0
    slower_steps: float = float("nan")
    faster_steps: float = float("nan")
    expected_error: Optional[Dict[str, Any]] = None
    expected_low: float = float("nan")
    expected_high: float = float("nan")
    not_met: str = ""

    def __str__(self) -> str:
        band = ("" if self.expected_low != self.expected_low else
                f", about {self.expected_low:.4g} to {self.expected_high:.4g} by the cost model's"
                " expected error")
        cm = self.expected_error["cost_model"] if self.expected_error else "?"
        if self.not_met:
            return f"{self.key}: the SLO holds at no load tried ({self.not_met})"
        return (f"{self.key} = {self.mean:.4g} ({cm}{band}; "
                f"{(self.expected_error or {}).get('text', '')})")


def capacity(
    scenario: ScenarioLike = None,
    slo: str = "ttft_p99=2s",
    load: str = "arrival_rate",
    key: Optional[str] = None,
    replicates: int = 3,
    tolerance: float = 0.02,
    threads: int = 0,
    set: SetsLike = None,
    step_sensitivity: float = 0.02,
    grid: Optional[Union[Mapping[str, Any], Sequence[Tuple[str, Any]]]] = None,
    progress: bool = False,
) -> Union[CapacityResult, pd.DataFrame]:
    """Finds the highest load at which the SLO holds, as ``kvfleet capacity`` does.

    With ``grid`` ({key: [values], ...}, as :func:`sweep`'s axes), the capacity of every
    combination of values, searched one after the other exactly as a single call would (each
    with ``set`` and the point's values applied), comes back as a DataFrame: one row per point,
    the grid's keys as columns (in their own types), then capacity, ci95_low, ci95_high,
    expected_low, expected_high, slower_steps, faster_steps, runs, limited_by, not_met;
    ``attrs`` names the axes, the SLO and the varied load key.

    Args:
        scenario: path, YAML text, dict or None (built-in default).
        slo: targets, e.g. "ttft_p99=2s,tpot_p99=100ms,reject_rate=1%".
        load: "arrival_rate" or "users" (which key is varied), unless key names one.
        key: the scenario key to vary.
        replicates: seeds searched (in parallel), for the 95% interval.
        tolerance: bisection stops when (hi - lo) / lo is below this.
        threads: 0 for all cores.
        set: overrides applied to every run.
        step_sensitivity: also search with every step this fraction slower and faster (0: not).
        grid: keys and their values: one capacity per combination, as a DataFrame.
        progress: with a grid, one line per point on stderr.
    """
    if grid is not None:
        return _capacity_grid(scenario, grid, progress, slo=slo, load=load, key=key,
                              replicates=replicates, tolerance=tolerance, threads=threads,
                              set=set, step_sensitivity=step_sensitivity)
    _load_name(load, key)
    path, text, name, base_dir = _source(scenario)
    d = _core.capacity(path, text, name, base_dir, slo, load, key or "",
                       _count("replicates", replicates, 1, 1000), float(tolerance),
                       _count("threads", threads, 0, 4096), _sets(set),
                       _fraction("step_sensitivity", step_sensitivity, 0.0, 0.5))
    return CapacityResult(key=d["key"], mean=d["mean"], ci95_low=d["ci95_low"],
                          ci95_high=d["ci95_high"], per_seed=list(d["per_seed"]),
                          seeds=list(d["seeds"]), runs=d["runs"], start=d["start"],
                          slo=list(d["slo"]), limited_by=d["limited_by"],
                          workload=d["workload"], step_sensitivity=d["step_sensitivity"],
                          slower_steps=d["slower_steps"], faster_steps=d["faster_steps"],
                          expected_error=dict(d["expected_error"]),
                          expected_low=d["expected_low"], expected_high=d["expected_high"],
                          not_met=d.get("not_met", ""))


def _load_name(load: Any, key: Optional[str], tokens: bool = False) -> None:
    """The `load` argument of capacity and size, named as Python names it (the CLI's --metric);
    size also takes 'output_tokens_per_s'."""
    names = ("arrival_rate", "users") + (("output_tokens_per_s",) if tokens else ())
    if not key and load not in names:
        raise _input_error("load", repr(load),
                           "is not " + ", ".join(repr(n) for n in names) + " (or give key=)")


def _capacity_grid(scenario: ScenarioLike, grid: Any, progress: bool, set: SetsLike,
                   **options: Any) -> pd.DataFrame:
    import itertools

    axes = _axes(grid)
    if not axes:
        raise _input_error("grid", "", "names no key: give {key: [values], ...}")
    for a in axes:
        if "cases" in a:
            raise _input_error("grid", a["key"], "takes a list of values, not named cases")
        if not a["values"]:
            raise _input_error("grid", a["key"], "has no values")
        if len({_value(v) for v in a["values"]}) != len(a["values"]):
            raise _input_error("grid", a["key"], "a value is given twice")
    base = _sets(set)
    keys = [a["key"] for a in axes]
    combos = list(itertools.product(*[a["values"] for a in axes]))
    rows: List[Dict[str, Any]] = []
    result: Optional[CapacityResult] = None
    for i, values in enumerate(combos):
        point = base + [f"{k}={_value(v)}" for k, v in zip(keys, values)]
        result = capacity(scenario, set=point, **options)
        row: Dict[str, Any] = dict(zip(keys, values))
        row.update(capacity=result.mean, ci95_low=result.ci95_low, ci95_high=result.ci95_high,
                   expected_low=result.expected_low, expected_high=result.expected_high,
                   slower_steps=result.slower_steps, faster_steps=result.faster_steps,
                   runs=result.runs, limited_by=result.limited_by, not_met=result.not_met)
        rows.append(row)
        if progress:
            shown = ", ".join(f"{k}={_value(v)}" for k, v in zip(keys, values))
            print(f"capacity {i + 1}/{len(combos)}: {shown}: {result.mean:.4g}",
                  file=sys.stderr, flush=True)
    df = pd.DataFrame(rows)
    df.attrs["axes"] = keys
    df.attrs["key"] = result.key if result else ""
    df.attrs["slo"] = list(result.slo) if result else []
    df.attrs["expected_error"] = dict(result.expected_error or {}) if result else {}
    return df


@dataclasses.dataclass
class SizingResult:
    """How many replicas of a pool serve a target load within an SLO (:func:`size`).

    Attributes:
        pool, key, target: the pool sized, the scenario key of the load and its value.
        replicas: the answer, the most any seed needed; per_seed, seeds: each seed's count.
        gpus_per_replica, gpus: GPUs of one replica, and of the answer.
        requests_per_s, output_tokens_per_s, duration_s: what that fleet served over the run.
        price_per_hour (per GPU), cost_per_hour, cost_per_month (730 h),
            usd_per_million_output_tokens: 0 without a price. price_source: where the price
            comes from (the argument, the scenario's pools[].price_per_hour, or the GPU preset's
            list price and its source).
        limited_by: what fewer replicas miss. not_met: set when no count up to the maximum held.
        runs: simulations run. expected_error: the cost model's expected error, in words.
        target_output_tokens_per_s, output_tokens_per_request, measured_completed,
            measured_arrived: with load="output_tokens_per_s", the tokens asked for and the mean
            output tokens per request (over the requests that completed, of those that arrived,
            in one run at the scenario's own settings) that made `target` requests/s; else 0.
    """

    pool: str
    key: str
    target: float
    replicas: int
    per_seed: List[int]
    seeds: List[int]
    gpus_per_replica: int
    gpus: int
    requests_per_s: float
    output_tokens_per_s: float
    duration_s: float
    price_per_hour: float
    price_source: str
    cost_per_hour: float
    cost_per_month: float
    usd_per_million_output_tokens: float
    limited_by: str
    not_met: str
    runs: int
    slo: List[str]
    expected_error: str
    target_output_tokens_per_s: float = 0.0
    output_tokens_per_request: float = 0.0
    measured_completed: int = 0
    measured_arrived: int = 0

    def __str__(self) -> str:
        if self.not_met:
            return f"{self.pool}: the SLO holds at no replica count tried: {self.not_met}"
        cost = (f", ${self.cost_per_month:,.0f}/month, ${self.usd_per_million_output_tokens:.3f}"
                f" per million output tokens" if self.price_per_hour > 0 else "")
        asked = (f" ({self.target_output_tokens_per_s:g} output tokens/s at "
                 f"{self.output_tokens_per_request:.4g} per request)"
                 if self.output_tokens_per_request > 0 else "")
        return (f"{self.pool}: {self.replicas} replicas ({self.gpus} GPUs) for {self.key} = "
                f"{self.target:g}{asked}{cost}; expected error {self.expected_error}")


def size(
    scenario: ScenarioLike = None,
    slo: str = "ttft_p99=2s",
    target: float = 0.0,
    load: str = "arrival_rate",
    key: Optional[str] = None,
    pool: Optional[str] = None,
    price_per_hour: Optional[float] = None,
    max_replicas: int = 1024,
    replicates: int = 3,
    threads: int = 0,
    set: SetsLike = None,
) -> SizingResult:
    """How many replicas (and GPUs) of a pool serve `target` within the SLO, and what they
    cost, as ``kvfleet size`` finds it (the same search: the fewest replicas at which every
    target holds with every seed, each count a full simulation of the fleet). With
    ``load="output_tokens_per_s"`` the target is output tokens per second, served as the request
    arrival rate that offers them (the result's ``target``): the target over the workload's mean
    output tokens per request, measured on one run at its own settings."""
    _load_name(load, key, tokens=True)
    if pool is not None and (not isinstance(pool, str) or not pool):
        raise _input_error("pool", repr(pool), "name a pool of the scenario (None: the first)")
    path, text, name, base_dir = _source(scenario)
    d = _core.size(path, text, name, base_dir, slo,
                   _fraction("target", target, 1e-12, 1e12), load, key or "", pool or "",
                   -1.0 if price_per_hour is None else _fraction("price_per_hour", price_per_hour,
                                                                  0.0, 1e6),
                   _count("max_replicas", max_replicas, 1, 100000),
                   _count("replicates", replicates, 1, 1000),
                   _count("threads", threads, 0, 4096), _sets(set))
    return SizingResult(**{k: (list(v) if isinstance(v, (list, tuple)) else v)
                           for k, v in d.items()})


def metrics() -> pd.DataFrame:
    """Every /summary metric: its one name (files, sweeps, --slo, --y), unit, type (integer for
    counts), description and the short aliases accepted for it (ttft_p99)."""
    return pd.DataFrame(_core.metrics(),
                        columns=["name", "unit", "type", "description", "aliases"])


def outputs() -> pd.DataFrame:
    """Every table of a run's and a sweep's result files, as declared (docs/outputs.md): file
    (run or sweep), table, column, type (integer, number, text, category), unit, description."""
    rows = []
    for file, tables in (("run", _core.run_tables()), ("sweep", _core.sweep_tables())):
        for table, _desc, cols in tables:
            rows += [(file, table, *c) for c in cols]
    return pd.DataFrame(rows, columns=["file", "table", "column", "type", "unit", "description"])


def parameters() -> pd.DataFrame:
    """Every scenario parameter: key (list elements as []), type, unit, default, description."""
    return pd.DataFrame(_core.parameters(),
                        columns=["key", "type", "unit", "default", "description"])
