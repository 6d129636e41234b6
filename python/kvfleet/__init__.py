"""kvfleet: a discrete-event simulator of LLM serving fleets, from Python.

The simulator is the same C++ core the ``kvfleet`` command runs; results come back as pandas
DataFrames whose ``attrs`` carry each column's unit and description (the declarations that
also document the HDF5 files, docs/outputs.md).

>>> import kvfleet
>>> r = kvfleet.run()                                   # the built-in default scenario
>>> r.summary["time_to_first_token_p99_s"]
>>> r.requests.groupby("outcome").size()
>>> df = kvfleet.sweep(axes={"workload.arrival.rate_per_s": [10, 20, 40]})
>>> kvfleet.capacity(slo="ttft_p99=2s")

Scenarios are given as a path, YAML text, a dict (the YAML's structure) or None (the built-in
default); ``set`` overrides keys as ``kvfleet run --set`` does. Bad input raises
:class:`InputError` naming the key; Ctrl-C interrupts a run (KeyboardInterrupt).
"""
from __future__ import annotations

from ._api import (
    CapacityResult,
    InputError,
    Result,
    SizingResult,
    capacity,
    load,
    load_sweep,
    metrics,
    outputs,
    parameters,
    run,
    size,
    sweep,
)

from .plot import plot_run, plot_sweep

__all__ = [
    "CapacityResult",
    "InputError",
    "Result",
    "SizingResult",
    "capacity",
    "load",
    "load_sweep",
    "metrics",
    "outputs",
    "parameters",
    "plot_run",
    "plot_sweep",
    "run",
    "size",
    "sweep",
]
__version__ = "0.1.0"
