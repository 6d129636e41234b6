"""Tests of the kvfleet Python package (run by ctest as python_package).

The package is imported from build/python (PYTHONPATH set by ctest); the kvfleet CLI from
build/bin is the reference: what Python returns must equal what the CLI writes.
"""
import json
import math
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

import kvfleet

SOURCE = os.environ.get("KVFLEET_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BINARY = os.environ.get("KVFLEET_BINARY_DIR", os.path.join(SOURCE, "build"))
CLI = os.path.join(BINARY, "bin", "kvfleet")
DEFAULT = os.path.join(SOURCE, "scenarios", "default.yaml")
SHORT = {"workload.num_requests": 400}


def same(a, b):
    """Summaries equal, NaN equal to NaN."""
    return a.keys() == b.keys() and all(
        a[k] == b[k] or (isinstance(a[k], float) and math.isnan(a[k]) and math.isnan(b[k]))
        for k in a)


def cli(*args, cwd=None):
    return subprocess.run([CLI, *args], cwd=cwd, check=True, capture_output=True, text=True)


@pytest.fixture(scope="module")
def default_run():
    return kvfleet.run(set=SHORT)


def test_summary_has_integer_counts_and_units(default_run):
    s = default_run.summary
    assert isinstance(s["requests"], int) and s["requests"] == 400
    assert isinstance(s["ok"], int)
    assert isinstance(s["time_to_first_token_p99_s"], float)
    assert s.units["time_to_first_token_p99_s"] == "s"
    assert "time to first token" in s.descriptions["time_to_first_token_p99_s"]


def test_percentiles_recomputed_from_requests_equal_summary(default_run):
    r = default_run
    ok = r.requests[r.requests.outcome == "ok"]
    for col, metric in (("ttft_s", "time_to_first_token"), ("tpot_s", "inter_token_latency"),
                        ("e2e_s", "e2e_request_latency")):
        for q in (50, 90, 99):
            want = r.summary[f"{metric}_p{q}_s"]
            got = float(np.percentile(ok[col].to_numpy(), q))  # linear, as the simulator
            assert got == pytest.approx(want, rel=1e-12), (metric, q)


def test_tables_carry_units_and_descriptions(default_run):
    r = default_run
    for df in (r.requests, r.replicas, r.timeseries, r.sessions, r.tenants):
        assert set(df.attrs["units"]) == set(df.columns)
        assert set(df.attrs["descriptions"]) == set(df.columns)
        assert all(df.attrs["descriptions"][c] for c in df.columns)
        assert df.attrs["description"]
    assert r.requests.attrs["units"]["ttft_s"] == "s"
    assert r.requests.attrs["units"]["input_tokens"] == "tokens"


def test_categories_are_names(default_run):
    r = default_run
    req = r.requests
    for col in ("replica", "pool", "purpose"):
        assert isinstance(req[col].dtype, pd.CategoricalDtype), col
    assert list(req.replica.cat.categories) == list(r.replicas.replica)
    assert set(req.purpose.unique()) == {"turn"}
    assert set(r.timeseries.replica.unique()) == set(r.replicas.replica)


def test_request_refused_before_a_replica_has_no_replica():
    # A gateway that admits almost no KV demand and queues nothing refuses most of a burst
    # before any replica sees it.
    r = kvfleet.run(DEFAULT, set={**SHORT, "workload.arrival.rate_per_s": 2000,
                                  "pools[0].admission.enabled": True,
                                  "pools[0].admission.kv_demand_limit": 0.001,
                                  "pools[0].admission.max_queue": 0})
    refused = r.requests[r.requests.replica.isna()]
    assert len(refused) > 0
    assert set(refused.outcome) == {"rejected"}
    assert r.summary["gateway_rejected"] == len(refused)


def test_scenario_as_path_text_and_dict_agree(default_run):
    with open(DEFAULT) as f:
        text = f.read()
    from_path = kvfleet.run(DEFAULT, set=SHORT)
    from_text = kvfleet.run(text, set=SHORT)
    assert same(from_path.summary, default_run.summary)
    assert same(from_text.summary, default_run.summary)
    import yaml  # python3-yaml ships with Debian's Python tools

    from_dict = kvfleet.run(yaml.safe_load(text), set=SHORT)
    assert same(from_dict.summary, default_run.summary)
    pd.testing.assert_frame_equal(from_dict.requests, default_run.requests)


def test_seed_argument_equals_set_seed():
    a = kvfleet.run(set=SHORT, seed=7)
    b = kvfleet.run(set={**SHORT, "seed": 7})
    c = kvfleet.run(set=SHORT, seed=8)
    assert same(a.summary, b.summary)
    assert not same(a.summary, c.summary)
    assert "seed: 7" in a.scenario


def test_set_accepts_strings_and_values():
    a = kvfleet.run(set=["workload.num_requests=200", "pools[0].engine.max_num_seqs=8"])
    b = kvfleet.run(set={"workload.num_requests": 200, "pools[0].engine.max_num_seqs": 8})
    assert same(a.summary, b.summary)
    assert a.summary["requests"] == 200


@pytest.mark.parametrize("kwargs, key", [
    ({"set": {"pools[0].engine.max_num_seqs": -3}}, "pools[0].engine.max_num_seqs"),
    ({"set": {"pools[0].engine.no_such_key": 1}}, "pools[0].engine.no_such_key"),
    ({"scenario": {"workload": {"impl": "nope"}}}, "workload.impl"),
])
def test_input_errors_name_the_key(kwargs, key):
    with pytest.raises(kvfleet.InputError) as e:
        kvfleet.run(**kwargs)
    assert isinstance(e.value, ValueError)
    assert e.value.key == key
    assert key in str(e.value)


def test_missing_scenario_file_is_an_input_error(tmp_path):
    with pytest.raises(kvfleet.InputError, match="not found") as e:
        kvfleet.run(str(tmp_path / "nope.yaml"))
    assert e.value.where == str(tmp_path / "nope.yaml") and e.value.key == ""
    with pytest.raises(TypeError):
        kvfleet.run(42)


def test_load_equals_the_cli_file_and_the_run(tmp_path):
    out = tmp_path / "r.h5"
    cli("run", DEFAULT, "-q", "--out", str(out), "--set", "workload.num_requests=400")
    loaded = kvfleet.load(out)
    ran = kvfleet.run(DEFAULT, set=SHORT)
    assert same(loaded.summary, ran.summary)
    assert loaded.summary.units == ran.summary.units
    for name in ("requests", "replicas", "timeseries", "sessions", "tenants"):
        a, b = getattr(loaded, name), getattr(ran, name)
        pd.testing.assert_frame_equal(a, b, check_dtype=True)
        assert a.attrs["units"] == b.attrs["units"], name
        assert a.attrs["descriptions"] == b.attrs["descriptions"], name
    assert loaded.report() == ran.report()
    assert loaded.scenario == ran.scenario


def test_load_keeps_the_replicas_order(tmp_path):
    # HDF5 lists /timeseries members by name (h100_10 before h100_2); load() gives run()'s order.
    out = tmp_path / "eleven.h5"
    cli("run", DEFAULT, "-q", "--out", str(out), "--set", "workload.num_requests=300",
        "--set", "pools[0].replicas=11")
    loaded = kvfleet.load(out)
    ran = kvfleet.run(DEFAULT, set={"workload.num_requests": 300, "pools[0].replicas": 11})
    assert list(loaded.timeseries.replica.cat.categories) == list(ran.replicas.replica)
    pd.testing.assert_frame_equal(loaded.timeseries, ran.timeseries)


def test_load_refuses_what_is_not_a_run(tmp_path):
    with pytest.raises(kvfleet.InputError, match="not found"):
        kvfleet.load(tmp_path / "missing.h5")
    junk = tmp_path / "junk.h5"
    junk.write_text("not hdf5")
    with pytest.raises(kvfleet.InputError, match="not an HDF5 file"):
        kvfleet.load(junk)


def _damaged_copies(tmp_path, source, edits):
    """Copies of a result file, each with one dataset replaced (h5py), for the readers below."""
    import h5py

    out = []
    for i, (name, edit) in enumerate(edits):
        dst = tmp_path / f"damaged{i}.h5"
        with h5py.File(source, "r") as src, h5py.File(dst, "w") as f:
            for k in src:
                src.copy(k, f)
            edit(f)
        out.append((name, dst))
    return out


def _replace(name, make):
    def edit(f):
        del f[name]
        make(f, name)
    return edit


def test_damaged_result_files_raise_input_error_naming_file_and_column(tmp_path):
    """A malformed result file raises kvfleet.InputError (a ValueError) naming the file and the
    dataset or column; it once raised KeyError: 1, h5py's TypeError or UnicodeDecodeError."""
    run = tmp_path / "run.h5"
    subprocess.run([CLI, "run", DEFAULT, "-q", "--set", "workload.num_requests=50", "--out",
                    str(run)], check=True)
    import h5py

    with h5py.File(run, "r") as f:
        replicas = f["replicas"][()]
        requests, requests_type = f["requests"][()], f["requests"].dtype

    def bad_utf8(f, name):
        arr = replicas.copy()
        arr["pool"] = b"\xff\xfe"
        f.create_dataset(name, data=arr)

    def bad_enum(f, name):
        # The requests table with its replica codes beyond the categories.
        arr = requests.copy()
        arr["replica"] = 99
        f.create_dataset(name, data=arr, dtype=requests_type)

    cases = _damaged_copies(tmp_path, run, [
        ("summary", _replace("summary", lambda f, n: f.create_dataset(n, data=[1, 2, 3]))),
        ("summary", _replace("summary", lambda f, n: f.create_dataset(n, data=np.zeros((2, 2))))),
        ("replicas.pool", _replace("replicas", bad_utf8)),
        ("requests.replica", _replace("requests", bad_enum)),
        ("scenario", _replace("scenario", lambda f, n: f.create_dataset(n, data=[1.5]))),
        ("timeseries", _replace("timeseries", lambda f, n: f.create_dataset(n, data=[1]))),
    ])
    for where, path in cases:
        with pytest.raises(kvfleet.InputError) as e:
            kvfleet.load(path)
        assert str(path) in str(e.value), str(e.value)
        assert where in str(e.value), str(e.value)
        assert isinstance(e.value, ValueError)


def test_damaged_sweep_files_raise_input_error(tmp_path):
    import h5py

    bad = tmp_path / "points-not-a-table.h5"
    with h5py.File(bad, "w") as f:
        f.create_dataset("points", data=np.arange(4))
    with pytest.raises(kvfleet.InputError, match="points: not a table"):
        kvfleet.load_sweep(bad)
    junk = tmp_path / "junk.h5"
    junk.write_text("not hdf5")
    with pytest.raises(kvfleet.InputError, match="not an HDF5 file"):
        kvfleet.load_sweep(junk)


def test_a_seed_that_is_not_an_integer_is_refused():
    with pytest.raises(TypeError, match="seed"):
        kvfleet.run(DEFAULT, set=SHORT, seed=1.7)


def test_sweep_equals_the_cli_sweep(tmp_path):
    axes = {"workload.arrival.rate_per_s": [10, 30], "pools[0].engine.max_num_seqs": [8, 64]}
    metrics = ["time_to_first_token_p99_s", "ok", "num_preemptions"]
    # An alias is accepted and the column has the metric's one name.
    df = kvfleet.sweep(axes=axes, set=SHORT, replicates=2, metrics=["ttft_p99", *metrics[1:]])
    assert len(df) == 8
    assert list(df.columns[3:5]) == list(axes)
    assert df.ok.dtype == np.int64
    assert (df.status == "ok").all()
    spec = {"set": [f"{k}={v}" for k, v in SHORT.items()], "replicates": 2, "metrics": metrics,
            "axes": [{"key": k, "values": v} for k, v in axes.items()]}
    sweep_file = tmp_path / "s.yaml"
    sweep_file.write_text(json.dumps(spec))
    cli("sweep", str(sweep_file), "--quiet", "--out", str(tmp_path / "s.h5"))
    ref = kvfleet.load_sweep(tmp_path / "s.h5")
    cols = ["point", "replicate", "seed", *axes, *metrics]
    pd.testing.assert_frame_equal(df[cols], ref[cols])
    assert df.attrs["units"]["time_to_first_token_p99_s"] == "s"


def test_sweep_threads_do_not_change_results():
    axes = {"workload.arrival.rate_per_s": [10, 20, 40]}
    one = kvfleet.sweep(axes=axes, set=SHORT, threads=1)
    two = kvfleet.sweep(axes=axes, set=SHORT, threads=2)
    pd.testing.assert_frame_equal(one.drop(columns="wall_s"), two.drop(columns="wall_s"))


def test_sweep_with_text_base_cases_and_curves():
    base = {"workload": {"impl": "synthetic", "num_requests": 200,
                         "arrival": {"impl": "poisson", "rate_per_s": 5},
                         "input_tokens": {"impl": "fixed", "value": 100},
                         "output_tokens": {"impl": "fixed", "value": 50}},
            "pools": [{"name": "a", "gpu": "L40S"}]}
    axes = {"config": {"small": {"pools[0].engine.max_num_seqs": 4},
                       "large": {"pools[0].engine.max_num_seqs": 128}}}
    points, curves = kvfleet.sweep(base, axes=axes, curves=True)
    assert list(points.config) == ["small", "large"]
    assert len(curves) == 2 * 3 * 99
    assert set(curves.metric) == {"ttft", "tpot", "e2e"}


def test_sweep_errors_name_the_key():
    with pytest.raises(kvfleet.InputError, match="no_such"):
        kvfleet.sweep(axes={"pools[0].engine.no_such": [1, 2]})
    with pytest.raises(kvfleet.InputError, match="metric"):
        kvfleet.sweep(axes={"workload.num_requests": [100]}, metrics=["no_such_metric"])


def test_failed_points_have_missing_counts():
    # Each value loads alone; the contiguous layout with prefix caching fails when it runs.
    df = kvfleet.sweep(axes={"pools[0].engine.kv_layout": ["paged", "contiguous"],
                             "pools[0].engine.enable_prefix_caching": [False, True]},
                       set={**SHORT, "pools[0].engine.enable_prefix_caching": False},
                       metrics=["ok", "time_to_first_token_p99_s"])
    assert list(df.status) == ["ok", "ok", "ok", "failed"]
    assert df.ok.isna().tolist() == [False, False, False, True]
    assert df.ok.iloc[0] == 400
    assert "contiguous layout has no prefix cache" in df.error.iloc[3]


def test_capacity_matches_the_cli():
    c = kvfleet.capacity(slo="ttft_p99=300ms", replicates=2, set=SHORT, threads=1)
    assert c.key == "workload.arrival.rate_per_s"
    assert c.seeds == [42, 43]
    assert c.ci95_low <= c.mean <= c.ci95_high
    out = cli("capacity", "--slo", "ttft_p99=300ms", "--replicates", "2", "--set",
              "workload.num_requests=400").stdout
    assert f"{c.mean:.4g}" in out or f"{c.mean:.3g}" in out, out
    # Error bars: the same sensitivity and expected error as the CLI prints.
    assert c.step_sensitivity == 0.02
    assert c.slower_steps <= c.mean <= c.faster_steps
    assert f"{c.slower_steps:.4g}" in out and f"{c.faster_steps:.4g}" in out, out
    assert c.expected_error["cost_model"] == "roofline" and c.expected_error["runs"] >= 1
    assert c.expected_error["text"] in out
    assert c.expected_low <= c.mean <= c.expected_high
    assert "roofline" in str(c)
    with pytest.raises(kvfleet.InputError, match="step_sensitivity"):
        kvfleet.capacity(step_sensitivity=0.9)


def test_capacity_over_a_grid_is_a_frame_of_single_searches():
    grid = {"pools[0].engine.max_num_seqs": [16, 64]}
    opts = dict(slo="ttft_p99=300ms", replicates=1, set=SHORT, threads=1, step_sensitivity=0)
    df = kvfleet.capacity(grid=grid, **opts)
    assert list(df["pools[0].engine.max_num_seqs"]) == [16, 64]
    assert df["pools[0].engine.max_num_seqs"].dtype.kind == "i"
    assert df.attrs["axes"] == ["pools[0].engine.max_num_seqs"]
    assert df.attrs["key"] == "workload.arrival.rate_per_s"
    for _, row in df.iterrows():
        one = kvfleet.capacity(set={**SHORT, "pools[0].engine.max_num_seqs":
                                    int(row["pools[0].engine.max_num_seqs"])}, **{
            k: v for k, v in opts.items() if k != "set"})
        assert row["capacity"] == one.mean and row["runs"] == one.runs
        assert row["ci95_low"] <= row["capacity"] <= row["ci95_high"]
    # 16 sequences at once serve less than 64 at a TTFT target.
    assert df["capacity"].iloc[0] < df["capacity"].iloc[1]
    with pytest.raises(kvfleet.InputError, match="given twice"):
        kvfleet.capacity(grid={"pools[0].engine.max_num_seqs": [16, 16]}, **opts)
    with pytest.raises(kvfleet.InputError, match="no values"):
        kvfleet.capacity(grid={"pools[0].engine.max_num_seqs": []}, **opts)
    with pytest.raises(kvfleet.InputError, match="no_such"):
        kvfleet.capacity(grid={"no_such.key": [1]}, **opts)


def test_capacity_refuses_a_bad_slo():
    with pytest.raises(kvfleet.InputError, match="ttft_p42"):
        kvfleet.capacity(slo="ttft_p42=1s")


@pytest.mark.parametrize("call, key", [
    (lambda: kvfleet.capacity(replicates=0), "replicates"),
    (lambda: kvfleet.capacity(tolerance=float("nan")), "--tolerance"),
    (lambda: kvfleet.sweep(axes={"seed": [1]}, threads=10**12), "threads"),
    (lambda: kvfleet.sweep(axes={"workload.num_requests": [10]}, replicates=0), "replicates"),
    (lambda: kvfleet.run(""), "scenario"),
])
def test_options_out_of_range_are_named(call, key):
    with pytest.raises(kvfleet.InputError) as e:
        call()
    assert key in (e.value.key or e.value.where), str(e.value)


def test_outputs_are_declared(default_run):
    o = kvfleet.outputs()
    req = o[(o.file == "run") & (o.table == "requests")]
    assert list(req.column) == list(default_run.requests.columns)
    assert req.set_index("column").loc["replica", "type"] == "category"
    assert o[(o.table == "summary") & (o.column == "ok")].type.item() == "integer"
    assert {"points", "curves"} <= set(o[o.file == "sweep"].table)


def test_metrics_and_parameters_are_declared():
    m = kvfleet.metrics()
    assert "time_to_first_token_p99_s" in set(m.name)
    assert m.set_index("name").loc["ok", "type"] == "integer"
    assert "ttft_p99" in m.set_index("name").loc["time_to_first_token_p99_s", "aliases"]
    p = kvfleet.parameters()
    assert "pools[].engine.max_num_seqs" in set(p.key)


@pytest.mark.parametrize("call", ["run", "sweep"])
def test_ctrl_c_interrupts(call):
    # A run of several minutes in a child process; SIGINT once it has started must end it with
    # KeyboardInterrupt (the run stops at its next sample), long before it would finish.
    fleet = os.path.join(SOURCE, "scenarios", "fleet", "fleet-64-hour.yaml")
    work = {"run": f"kvfleet.run({fleet!r}, set={{'simulation.max_time_s': 3600}})",
            "sweep": f"kvfleet.sweep({fleet!r}, axes={{'pools[0].engine.max_num_seqs': [128, 256]}}, threads=2)"}[call]
    code = (
        "import kvfleet, sys\n"
        "print('started', flush=True)\n"
        "try:\n"
        "    %s\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted', flush=True)\n"
        "    sys.exit(3)\n"
        "print('finished', flush=True)\n"
    ) % work
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                         env=dict(os.environ))
    assert p.stdout.readline().strip() == "started"
    time.sleep(1.0)
    p.send_signal(signal.SIGINT)
    try:
        out, _ = p.communicate(timeout=120)  # a hang guard, not a timing assertion
    except subprocess.TimeoutExpired:
        p.kill()
        pytest.fail("Ctrl-C did not stop the run")
    assert p.returncode == 3, out
    assert "interrupted" in out


def test_plots_are_figures_with_units_and_the_replicates_said(tmp_path):
    """kvfleet.plot_sweep and plot_run (the [plot] extra, matplotlib without Qt) draw PNGs."""
    import matplotlib
    matplotlib.use("Agg")
    axes = {"workload.arrival.rate_per_s": [10, 30], "pools[0].engine.max_num_seqs": [8, 64]}
    out = tmp_path / "s.h5"
    spec = {"set": [f"{k}={v}" for k, v in SHORT.items()], "replicates": 2,
            "metrics": ["time_to_first_token_p99_s"],
            "axes": [{"key": k, "values": v} for k, v in axes.items()]}
    (tmp_path / "s.yaml").write_text(json.dumps(spec))
    subprocess.run([CLI, "sweep", str(tmp_path / "s.yaml"), "--quiet", "--out", str(out)],
                   check=True)
    fig = kvfleet.plot_sweep(out, x="workload.arrival.rate_per_s", y="time_to_first_token_p99_s",
                             series="pools[0].engine.max_num_seqs", slo=1.0)
    ax = fig.axes[0]
    assert ax.get_ylabel() == "time_to_first_token_p99_s (s)"
    assert "mean of 2 replicates, their range shaded" in ax.get_title()
    assert len(ax.get_lines()) == 3  # two series and the SLO
    fig.savefig(tmp_path / "s.png")
    assert (tmp_path / "s.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(kvfleet.InputError, match="not a column"):
        kvfleet.plot_sweep(out, x="nope", y="time_to_first_token_p99_s")
    r = kvfleet.run(DEFAULT, set={"workload.num_requests": 200, "pools[0].replicas": 6})
    fig = kvfleet.plot_run(r, top=2)
    assert "the 2 busiest of 6 replicas" in fig.axes[2].get_title()
    fig.savefig(tmp_path / "r.png")
    assert (tmp_path / "r.png").read_bytes()[:4] == b"\x89PNG"
    # A run of more than 300 samples per replica: each point the mean of consecutive samples.
    long_run = kvfleet.run(DEFAULT, set={"workload.num_requests": 1500,
                                         "workload.arrival.rate_per_s": 2})
    samples = long_run.timeseries.groupby("replica", observed=True).size().max()
    assert samples > 600
    fig = kvfleet.plot_run(long_run)
    k = -(-samples // 300)
    assert f"each point the mean of {k} samples" in fig.axes[2].get_title()
    assert len(fig.axes[2].get_lines()[0].get_xdata()) <= 300


def test_the_console_script_runs_the_cli(capfd):
    """`kvfleet` after a pip install is kvfleet._cli.main, which runs the bundled program."""
    p = subprocess.run([sys.executable, "-m", "kvfleet._cli", "presets"], capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr
    assert "Llama-3-8B" in p.stdout
    p = subprocess.run([sys.executable, "-m", "kvfleet._cli", "run", "--set", "nope=1"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "nope" in p.stderr


def test_sweep_takes_a_sweep_file_writes_the_cli_file_and_resumes(tmp_path):
    """kvfleet.sweep(file, out=...) writes the bytes `kvfleet sweep --out` writes; progress is
    reported; an interrupt keeps the finished points in the file; resume=True completes it."""
    sweep_file = tmp_path / "s.yaml"
    sweep_file.write_text(
        f"base: {DEFAULT}\nset: [workload.num_requests=60000]\n"
        "axes:\n  - {key: workload.arrival.rate_per_s, values: [10, 20, 30, 40]}\n"
        "replicates: 2\nmetrics: [time_to_first_token_p99_s, ok]\n")
    cli_out = tmp_path / "cli.h5"
    cli("sweep", str(sweep_file), "--quiet", "--out", str(cli_out))
    seen = []
    out = tmp_path / "py.h5"
    df = kvfleet.sweep(sweep_file, out=out, threads=1,
                       progress=lambda done, to_do: seen.append((done, to_do)))
    assert seen and seen[-1] == (8, 8)
    assert df.attrs["axes"] == ["workload.arrival.rate_per_s"]
    assert df.attrs["metrics"] == ["time_to_first_token_p99_s", "ok"]
    loaded = kvfleet.load_sweep(out)
    assert loaded.attrs["axes"] == ["workload.arrival.rate_per_s"]
    pd.testing.assert_frame_equal(loaded, kvfleet.load_sweep(cli_out))

    # Interrupted after the first report: KeyboardInterrupt, and the points done are in the file.
    part = tmp_path / "part.h5"

    def stop(done, to_do):
        if done >= 1:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        kvfleet.sweep(sweep_file, out=part, threads=1, progress=stop)
    kept = kvfleet.load_sweep(part)
    assert 1 <= len(kept) < 8
    calls = []
    done = kvfleet.sweep(sweep_file, out=part, resume=True, threads=1,
                         progress=lambda d, t: calls.append(t))
    assert calls[-1] == 8 - len(kept)  # only the missing points ran
    pd.testing.assert_frame_equal(kvfleet.load_sweep(part), kvfleet.load_sweep(cli_out))
    assert len(done) == 8
    with pytest.raises(kvfleet.InputError, match="resume"):
        kvfleet.sweep(sweep_file, resume=True)
    with pytest.raises(kvfleet.InputError, match="axes"):
        kvfleet.sweep(sweep_file, axes={"workload.arrival.rate_per_s": [1]})


def test_size_equals_the_cli():
    """kvfleet.size and `kvfleet size` are one search: the same replicas, runs and cost."""
    args = dict(slo="ttft_p99=2s,tpot_p99=100ms", target=100, price_per_hour=2.5, replicates=2)
    z = kvfleet.size(DEFAULT, set={"workload.num_requests": 3000}, **args)
    out = cli("size", DEFAULT, "--slo", args["slo"], "--target", "100", "--price-per-hour", "2.5",
              "--replicates", "2", "--set", "workload.num_requests=3000").stdout
    assert f"replicas needed: {z.replicas} ({z.gpus} GPUs" in out, out
    assert f"{z.runs} runs" in out
    assert f"${z.cost_per_month:.0f} per month" in out
    assert z.limited_by and z.usd_per_million_output_tokens > 0
    with pytest.raises(kvfleet.InputError, match="pool"):
        kvfleet.size(DEFAULT, slo="ttft_p99=2s", target=10, pool="nope")


def test_size_for_output_tokens_per_second_equals_the_cli():
    """A target in output tokens/s is the request rate that offers it, in Python and the CLI."""
    slo = "ttft_p99=2s,tpot_p99=100ms"
    z = kvfleet.size(DEFAULT, slo=slo, target=30000, load="output_tokens_per_s", replicates=1,
                     set={"workload.num_requests": 2000})
    assert z.key == "workload.arrival.rate_per_s"
    assert z.target_output_tokens_per_s == 30000
    assert z.target == pytest.approx(30000 / z.output_tokens_per_request, rel=1e-12)
    assert z.measured_arrived == 2000 and 0 < z.measured_completed <= 2000
    out = cli("size", DEFAULT, "--slo", slo, "--target", "30000", "--metric",
              "output_tokens_per_s", "--replicates", "1", "--set",
              "workload.num_requests=2000").stdout
    assert f"= {z.target:.6g} requests/s at {z.output_tokens_per_request:.4g} output tokens" in out
    assert f"replicas needed: {z.replicas} ({z.gpus} GPUs" in out, out
    assert "output tokens/s at" in str(z)
    with pytest.raises(kvfleet.InputError, match="output_tokens_per_s"):
        kvfleet.capacity(DEFAULT, load="output_tokens_per_s")


def test_options_of_the_wrong_kind_are_refused_by_name():
    """Found by a hostile campaign: these once split a string into metric letters, took "no" as
    true, raised OverflowError, or said nothing of the missing file."""
    axes = {"workload.arrival.rate_per_s": [10]}
    with pytest.raises(TypeError, match="metrics must be a list"):
        kvfleet.sweep(axes=axes, metrics="ttft_p99")
    with pytest.raises(TypeError, match="resume must be True or False"):
        kvfleet.sweep(axes=axes, resume="no")
    with pytest.raises(TypeError, match="curves must be True or False"):
        kvfleet.sweep(axes=axes, curves="no")
    with pytest.raises(kvfleet.InputError, match="target"):
        kvfleet.size(DEFAULT, slo="ttft_p99=2s", target=10**400)
    with pytest.raises(kvfleet.InputError, match="file not found"):
        kvfleet.sweep("/no/such/sweep.yaml")
    # The Python argument is named, not the CLI's --metric; an empty pool is not "the first".
    with pytest.raises(kvfleet.InputError, match="^load: 'foo'"):
        kvfleet.size(DEFAULT, slo="ttft_p99=2s", target=10, load="foo")
    with pytest.raises(kvfleet.InputError, match="^load: 'foo'"):
        kvfleet.capacity(DEFAULT, load="foo")
    with pytest.raises(kvfleet.InputError, match="^pool: ''"):
        kvfleet.size(DEFAULT, slo="ttft_p99=2s", target=10, pool="")


def test_damaged_run_files_for_the_dashboard(tmp_path):
    import h5py

    run = tmp_path / "run.h5"
    subprocess.run([CLI, "run", DEFAULT, "-q", "--set", "workload.num_requests=50", "--out",
                    str(run)], check=True)
    empty = tmp_path / "empty-summary.h5"
    with h5py.File(run, "r") as src, h5py.File(empty, "w") as f:
        for k in src:
            src.copy(k, f)
        summary = f["summary"][()][:0]
        del f["summary"]
        f.create_dataset("summary", data=summary)
    with pytest.raises(kvfleet.InputError, match="summary: has 0 rows"):
        kvfleet.load(empty)
    r = kvfleet.load(run)
    r.requests = r.requests.drop(columns=["outcome"])
    with pytest.raises(kvfleet.InputError, match="requests.outcome: column missing"):
        kvfleet.plot_run(r)


def test_a_calibration_file_corrects_the_fitted_cost_model(tmp_path):
    # What `kvfleet-calibrate fit` writes, taken as the scenario key pools[].calibration.
    cal = tmp_path / "cal.yaml"
    cal.write_text("kvfleet_calibration: 1\ngpu: H100-SXM\npool:\n"
                   "  cost_model: {impl: fitted, adjust: {gemm_bandwidth: 0.5}}\n")
    base = {"workload.num_requests": 200, "pools[0].cost_model.impl": "fitted"}
    plain = kvfleet.run(set=base)
    fitted = kvfleet.run(set={**base, "pools[0].calibration": str(cal)})
    assert "gemm_bandwidth: 0.5" in fitted.scenario
    assert fitted.summary["inter_token_latency_mean_s"] > plain.summary["inter_token_latency_mean_s"]
    other = tmp_path / "a100.yaml"
    other.write_text("kvfleet_calibration: 1\ngpu: A100-80GB\npool: {}\n")
    with pytest.raises(kvfleet.InputError, match="A100-80GB"):
        kvfleet.run(set={**base, "pools[0].calibration": str(other)})
