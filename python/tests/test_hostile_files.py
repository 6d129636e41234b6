"""Result files damaged at random (a seeded campaign, repeatable): kvfleet.load, kvfleet.load_sweep
and the [plot] extra's plot_run / plot_sweep return or raise kvfleet.InputError naming the file;
never KeyError, TypeError, UnicodeDecodeError or any other exception of h5py, numpy or pandas.

Each case copies a real result file (kvfleet run / kvfleet sweep, written once) with h5py and
applies one to three damages: a dataset or column removed, a column of another type, values that
are NaN, infinite, negative or huge, a table emptied, two-dimensional or not a table, a text that
is not UTF-8 or is a number, a group where a dataset was and the reverse, the column attributes
(units, descriptions) replaced. The C++ readers of the same files have their own libFuzzer
harnesses (tests/fuzz/runfile_fuzz.cpp, sweep_fuzz.cpp). Run by ctest as python_package, under
/usr/bin/python3 (Debian's h5py, numpy and pandas).
"""
import os
import random
import subprocess

import numpy as np
import pytest

import kvfleet

SOURCE = os.environ.get("KVFLEET_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BINARY = os.environ.get("KVFLEET_BINARY_DIR", os.path.join(SOURCE, "build"))
CLI = os.path.join(BINARY, "bin", "kvfleet")
DEFAULT = os.path.join(SOURCE, "scenarios", "default.yaml")
CASES = 120  # per kind of file


def _members(f):
    """Every dataset and group below the root, by path."""
    import h5py

    out = []
    f.visititems(lambda name, obj: out.append((name, isinstance(obj, h5py.Dataset))))
    return out


def _bad_values(dtype, n, rnd):
    if dtype.kind == "f":
        return np.array([rnd.choice([np.nan, np.inf, -np.inf, -1.0, 1e300, -0.0, 0.0])
                         for _ in range(n)], dtype=dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.array([rnd.choice([info.min, info.max, 0, -1 if dtype.kind == "i" else 0, 7])
                         for _ in range(n)], dtype=dtype)
    if dtype.kind == "S":
        return np.array([rnd.choice([b"", b"\xff\xfe", b"x" * dtype.itemsize, b"ok"])
                         for _ in range(n)], dtype=dtype)
    return None


def _damage_table(f, name, rnd):
    """One damage to the compound dataset `name`; returns what was done."""
    ds = f[name]
    arr = ds[()]
    attrs = dict(ds.attrs)
    names = list(arr.dtype.names)
    col = rnd.choice(names)
    kind = rnd.randrange(8)
    new = arr
    if kind == 0 and len(names) > 1:  # a column removed
        keep = [n for n in names if n != col]
        new = np.empty(arr.shape, dtype=[(n, arr.dtype.fields[n][0]) for n in keep])
        for n in keep:
            new[n] = arr[n]
        what = f"{name}.{col} removed"
    elif kind == 1:  # a column of another type
        to = rnd.choice(["S4", "f8", "i4", "f4"])
        dt = [(n, to if n == col else arr.dtype.fields[n][0]) for n in names]
        new = np.zeros(arr.shape, dtype=dt)
        for n in names:
            if n != col:
                new[n] = arr[n]
        what = f"{name}.{col} as {to}"
    elif kind == 2:  # bad values
        vals = _bad_values(arr.dtype.fields[col][0], len(arr), rnd)
        if vals is None:
            return f"{name}: nothing"
        new = arr.copy()
        new[col] = vals
        what = f"{name}.{col} bad values"
    elif kind == 3:  # emptied
        new = arr[:0]
        what = f"{name} emptied"
    elif kind == 4:  # two-dimensional
        new = np.stack([arr, arr]) if len(arr) else arr.reshape(0, 1)
        what = f"{name} 2-D"
    elif kind == 5:  # not a table
        new = rnd.choice([np.arange(3), np.array([b"x", b"y"]), np.float64(1.5)])
        what = f"{name} not a table"
    elif kind == 6:  # attributes replaced
        key = rnd.choice(list(attrs) or ["units"])
        attrs[key] = rnd.choice([np.arange(2), b"\xff", 3.5])
        what = f"{name} attribute {key}"
    else:  # rows duplicated or reversed
        new = np.concatenate([arr, arr[::-1]])
        what = f"{name} rows repeated"
    del f[name]
    d = f.create_dataset(name, data=new)
    if kind != 6:
        attrs = {k: v for k, v in attrs.items() if rnd.random() < 0.8}
    for k, v in attrs.items():
        try:
            d.attrs[k] = v
        except (UnicodeEncodeError, TypeError, ValueError):
            # An attribute an earlier damage made unreadable as text: written as raw bytes.
            d.attrs[k] = np.void(b"\xff\xfe")
    return what


def _damage(f, rnd):
    members = _members(f)
    name, is_dataset = rnd.choice(members)
    if not is_dataset:
        if rnd.random() < 0.5:
            del f[name]
            return f"{name} removed"
        del f[name]
        f.create_dataset(name, data=np.arange(2))
        return f"{name} a dataset"
    ds = f[name]
    if ds.dtype.names is not None and ds.ndim == 1:
        return _damage_table(f, name, rnd)
    k = rnd.randrange(4)
    del f[name]
    if k == 0:
        return f"{name} removed"
    if k == 1:
        f.create_dataset(name, data=np.void(b"\xff\xfe\x00"))
        return f"{name} opaque bytes"
    if k == 2:
        f.create_dataset(name, data=b"\xff\xfe not utf-8")
        return f"{name} not UTF-8"
    f.create_group(name)
    return f"{name} a group"


def _campaign(tmp_path, source, seed, read, label):
    import h5py

    rnd = random.Random(seed)
    outcomes = {"read": 0, "refused": 0}
    for i in range(CASES):
        dst = tmp_path / f"{label}-{i}.h5"
        with h5py.File(source, "r") as src, h5py.File(dst, "w") as f:
            for k in src:
                src.copy(k, f)
            done = [_damage(f, rnd) for _ in range(rnd.randint(1, 3))]
        try:
            read(dst)
            outcomes["read"] += 1
        except kvfleet.InputError as e:
            assert str(dst) in str(e), f"case {i} ({done}): the message names no file: {e}"
            outcomes["refused"] += 1
        except Exception as e:  # noqa: BLE001 - what this test is about
            pytest.fail(f"case {i} of {label} ({'; '.join(done)}): {type(e).__name__}: {e}")
        dst.unlink()
    # The campaign reaches both outcomes (a damage the readers tolerate, and one they refuse).
    print(f"{label}: {CASES} damaged files, {outcomes['read']} read, {outcomes['refused']} "
          "refused by name")
    assert outcomes["read"] > 0 and outcomes["refused"] > 0, outcomes
    return outcomes


def _has_matplotlib():
    try:
        import matplotlib  # noqa: F401
        return True
    except ImportError:
        return False


def test_damaged_run_files(tmp_path):
    run = tmp_path / "run.h5"
    subprocess.run([CLI, "run", DEFAULT, "-q", "--set", "workload.num_requests=60", "--out",
                    str(run)], check=True)
    plot = _has_matplotlib()

    def read(p):
        r = kvfleet.load(p)
        if plot:
            import matplotlib.pyplot as plt

            try:
                fig = kvfleet.plot_run(r)
            except kvfleet.InputError as e:
                # The frame is the file's: the error names the column, and here the file too.
                raise kvfleet.InputError(f"{p}: {e}") from e
            plt.close(fig)

    _campaign(tmp_path, run, 20261202, read, "run")


def test_damaged_sweep_files(tmp_path):
    out = tmp_path / "sweep.h5"
    spec = tmp_path / "sweep.yaml"
    spec.write_text(f"base: {DEFAULT}\nset: [workload.num_requests=40]\naxes:\n"
                    "  - {key: 'pools[0].engine.max_num_seqs', values: [16, 64]}\n"
                    "  - {key: workload.arrival.rate_per_s, values: [5, 20]}\n"
                    "replicates: 2\nmetrics: [requests_per_s, time_to_first_token_p99_s]\n")
    subprocess.run([CLI, "sweep", str(spec), "--quiet", "--out", str(out)], check=True)
    plot = _has_matplotlib()

    def read(p):
        points = kvfleet.load_sweep(p)
        kvfleet.load_sweep(p, curves=True)
        if plot and len(points.attrs.get("axes", [])) > 0 and len(points.attrs.get("metrics", [])):
            import matplotlib.pyplot as plt

            try:
                axes = points.attrs["axes"]
                fig = kvfleet.plot_sweep(points, x=axes[0], y=points.attrs["metrics"][0],
                                         series=axes[1] if len(axes) > 1 else None)
            except kvfleet.InputError as e:
                raise kvfleet.InputError(f"{p}: {e}") from e
            plt.close(fig)

    _campaign(tmp_path, out, 7, read, "sweep")
