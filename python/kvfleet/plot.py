"""Charts with matplotlib (``pip install kvfleet[plot]``), without Qt.

:func:`plot_sweep` draws a sweep's metric against an axis, one line per value of another axis,
the mean over replicates with its 95% interval as a band; :func:`plot_run` draws a run's
latency distributions and the busiest replicas' state over time. Both return a matplotlib
Figure (``fig.savefig("x.png")``); axis titles carry the columns' units from the files'
declarations.
"""
from __future__ import annotations

import os
from typing import Any, Dict, Optional, Sequence, Union

import numpy as np
import pandas as pd

# Student's t for a two-sided 95% interval, by degrees of freedom (1.96 beyond 30).
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
        9: 2.262, 10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 25: 2.060, 30: 2.042}


def _t95(dof: int) -> float:
    if dof <= 0:
        return float("nan")
    for k in sorted(_T95):
        if dof <= k:
            return _T95[k]
    return 1.96


def _pyplot():
    try:
        import matplotlib
        if not os.environ.get("MPLBACKEND") and not os.environ.get("DISPLAY"):
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:  # pragma: no cover - depends on the install
        raise ImportError("kvfleet's charts need matplotlib: pip install 'kvfleet[plot]'") from e
    return plt


def _label(df: pd.DataFrame, column: str) -> str:
    unit = df.attrs.get("units", {}).get(column, "")
    return f"{column} ({unit})" if unit else column


def plot_sweep(sweep: Union[str, "os.PathLike[str]", pd.DataFrame], x: str, y: str,
               series: Optional[str] = None, where: Optional[Dict[str, Any]] = None,
               log_x: bool = False, log_y: bool = False, slo: Optional[float] = None,
               title: Optional[str] = None, ax: Any = None):
    """A sweep's metric `y` against axis `x` (a path or :func:`kvfleet.load_sweep`'s DataFrame).

    One line per value of `series` (an axis); `where` keeps the points whose axes have the given
    values; the other varied axes must be fixed by `where` or be the replicates' seeds. Each
    point is the mean over replicates; the band is its 95% interval (Student's t) with three or
    more, the replicates' range with two, labelled so. `slo` draws a horizontal target line.
    """
    from ._api import _input_error, load_sweep

    df = load_sweep(sweep) if not isinstance(sweep, pd.DataFrame) else sweep
    for col in [x, y] + ([series] if series else []) + list((where or {}).keys()):
        if col not in df.columns:
            raise _input_error("", col, "not a column of this sweep (axes and metrics: " +
                               ", ".join(c for c in df.columns if c not in
                                         ("point", "replicate", "seed", "status", "error")) + ")")
    ok = df[df["status"] == "ok"] if "status" in df.columns else df
    for key, value in (where or {}).items():
        ok = ok[ok[key] == value]
    ok = ok[pd.notna(ok[x]) & pd.notna(ok[y])]  # a point without a value has nothing to draw
    if ok.empty:
        raise _input_error("", "where", "no point of the sweep with a value of both "
                           f"{x} and {y} is left to plot")
    plt = _pyplot()
    fig = ax.figure if ax is not None else plt.figure(figsize=(8, 5))
    ax = ax if ax is not None else fig.add_subplot(1, 1, 1)
    groups = [(None, ok)] if not series else list(ok.groupby(series, sort=True, observed=True))
    most_replicates = int(ok.groupby([series, x] if series else [x], observed=True)[y]
                          .count().max())
    # Two replicates give a 95% interval twelve standard errors wide (Student's t with one degree
    # of freedom): below three, the band is the replicates' range instead, and says so.
    as_range = most_replicates < 3
    for value, g in groups:
        stats = g.groupby(x, sort=True)[y].agg(["mean", "std", "count", "min", "max"])
        label = None if series is None else f"{series} = {value:g}" if isinstance(
            value, (int, float, np.number)) else f"{series} = {value}"
        line, = ax.plot(stats.index, stats["mean"], marker="o", label=label)
        n = stats["count"]
        if (n >= 2).any():
            if as_range:
                low, high = stats["min"], stats["max"]
            else:
                half = stats["std"] / np.sqrt(n) * [_t95(int(k) - 1) for k in n]
                low, high = stats["mean"] - half, stats["mean"] + half
            ax.fill_between(stats.index, low, high, color=line.get_color(), alpha=0.2,
                            linewidth=0)
    if slo is not None:
        ax.axhline(slo, color="black", linestyle="--", linewidth=1, label=f"SLO {slo:g}")
    ax.set_xlabel(_label(df, x))
    ax.set_ylabel(_label(df, y))
    if log_x:
        ax.set_xscale("log")
    if log_y:
        ax.set_yscale("log")
    note = ("one replicate per point" if most_replicates == 1 else
            f"mean of {most_replicates} replicates, their range shaded" if as_range else
            f"mean of {most_replicates} replicates, 95% interval shaded")
    ax.set_title(title or f"{y} against {x}\n({note})", fontsize=10)
    if series or slo is not None:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    return fig


def plot_run(run: Any, top: int = 4, title: Optional[str] = None):
    """A run's dashboard (a :class:`kvfleet.Result` or a result file's path): TTFT and E2E
    distributions of the requests served, and over time the `top` busiest replicas' running and
    waiting requests and KV cache use (with the fleet's mean)."""
    from ._api import Result, _input_error, load

    r = run if isinstance(run, Result) else load(run)
    need = {"requests": (r.requests, ("outcome", "ttft_s", "e2e_s")),
            "timeseries": (r.timeseries, ("replica", "t_s", "num_requests_running",
                                          "kv_cache_usage_perc"))}
    for table, (df, cols) in need.items():
        for col in cols:
            if df is None or col not in df.columns:
                raise _input_error(getattr(r, "_source", ""), f"{table}.{col}",
                                   "column missing: the dashboard needs it")
    plt = _pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    ok = r.requests[r.requests["outcome"] == "ok"]
    for ax, col in ((axes[0][0], "ttft_s"), (axes[0][1], "e2e_s")):
        v = np.sort(ok[col].dropna().to_numpy())
        if len(v):
            ax.plot(v, np.arange(1, len(v) + 1) / len(v))
            for q in (0.5, 0.99):
                ax.axvline(np.quantile(v, q), color="grey", linestyle=":", linewidth=1)
        ax.set_xlabel(_label(r.requests, col))
        ax.set_ylabel("fraction of requests served")
        ax.set_title(f"{col}: {len(v)} requests (p50, p99 dotted)", fontsize=10)
        ax.grid(True, alpha=0.3)
    ts = r.timeseries
    busiest = (ts.groupby("replica", observed=True)["num_requests_running"].mean()
               .sort_values(ascending=False).head(max(1, top)).index)
    # More than 300 samples per line: each point the mean of `k` consecutive samples (as kvfleet
    # plot's dashboard draws it); thousands of one-second samples are noise at this size.
    longest = int(ts.groupby("replica", observed=True).size().max()) if len(ts) else 0
    k = max(1, -(-longest // 300))

    def binned(t, v):
        t, v = np.asarray(t, dtype=float), np.asarray(v, dtype=float)
        if k == 1:
            return t, v
        n = len(t) // k * k
        tail = [] if n == len(t) else [slice(n, len(t))]
        parts = [slice(i, i + k) for i in range(0, n, k)] + tail
        return (np.array([np.nanmean(t[p]) for p in parts]),
                np.array([np.nanmean(v[p]) if np.isfinite(v[p]).any() else np.nan
                          for p in parts]))

    for ax, col in ((axes[1][0], "num_requests_running"), (axes[1][1], "kv_cache_usage_perc")):
        for rep in busiest:
            part = ts[ts["replica"] == rep]
            ax.plot(*binned(part["t_s"], part[col]), label=str(rep), linewidth=1)
        replicas = ts["replica"].nunique()
        if replicas > len(busiest):
            mean = ts.groupby("t_s")[col].mean()
            ax.plot(*binned(mean.index, mean.to_numpy()), color="black", linewidth=2,
                    label=f"mean of all {replicas}")
        ax.set_xlabel(_label(ts, "t_s"))
        ax.set_ylabel(_label(ts, col))
        shown = f"the {len(busiest)} busiest of {replicas} replicas" if replicas > len(
            busiest) else f"{replicas} replica{'s' if replicas > 1 else ''}"
        every = f"\neach point the mean of {k} samples" if k > 1 else ""
        ax.set_title(f"{col}, {shown}{every}", fontsize=10)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
        ax.grid(True, alpha=0.3)
    fig.suptitle(title or getattr(r, "_source", ""), fontsize=11)
    fig.tight_layout()
    return fig


__all__: Sequence[str] = ["plot_sweep", "plot_run"]
