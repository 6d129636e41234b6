#!/usr/bin/env python3
"""The golden test's own test: golden.py run against a fake kvfleet on made-up scenarios, checking
that it keeps what it cannot rerun, refuses to drop columns without --prune, tells new, removed
and changed columns apart, passes float differences within 1e-9 relative and fails larger ones,
and fails a one-nanosecond change of a time, a changed integer and a changed report line.

  golden_selftest.py          (Debian's /usr/bin/python3: h5py and numpy)
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "golden.py")

# The fake kvfleet: `run|sweep SCENARIO --out FILE ...` writes the tables the scenario (JSON,
# which is YAML) describes: {"tables": {name: {column: values}}, "report": text}.
FAKE = r'''#!/usr/bin/env python3
import json, sys
import h5py, numpy as np
args = sys.argv[1:]
spec = json.load(open(args[1]))
out = args[args.index("--out") + 1]
with h5py.File(out, "w") as f:
    for name, cols in spec["tables"].items():
        arrays = {c: np.asarray(v) for c, v in cols.items()}
        dt = [(c, a.dtype if a.dtype.kind != "U" else "S16") for c, a in arrays.items()]
        n = len(next(iter(arrays.values())))
        rec = np.zeros(n, dt)
        for c, a in arrays.items():
            rec[c] = a
        ds = f.create_dataset(name, data=rec)
        # Column attributes as kvfleet writes them: a unit (s for *_s) and a description.
        ds.attrs["units"] = [c.endswith("_s") and "s" or "" for c in arrays]
        ds.attrs["descriptions"] = [
            "" if c in spec.get("undescribed", []) else "made up" for c in arrays]
    if "report" in spec:
        f.create_dataset("report", data=spec["report"].encode())
'''

FAILURES = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        FAILURES.append(what)


def base_spec(seed=1):
    rng = np.random.default_rng(seed)
    n = 5000
    t = np.cumsum(rng.integers(1, 10**7, n)) / 1e9  # whole nanoseconds, as simulated time
    return {
        "tables": {
            "requests": {
                "id": list(range(n)),
                "arrival_s": t.tolist(),
                "gpu_s": (rng.random(n) * 3.0).tolist(),
                "outcome": ["ok"] * n,
            },
            "summary": {"mean_s": [0.123456789], "count": [n], "busy_s": [1234.5]},
        },
        "report": "kvfleet run: made up\nTTFT mean 12.3 ms\n",
    }


class Sandbox:
    def __init__(self, tmp):
        self.tmp = tmp
        self.source = os.path.join(tmp, "src")
        self.store = os.path.join(tmp, "store")
        self.reference = os.path.join(tmp, "reference")
        os.makedirs(os.path.join(self.source, "scenarios"))
        os.makedirs(os.path.join(self.source, "docs"))
        self.declare()
        os.makedirs(self.store)
        os.makedirs(self.reference)
        self.kvfleet = os.path.join(tmp, "kvfleet")
        with open(self.kvfleet, "w") as f:
            f.write("#!" + sys.executable + "\n" + FAKE.split("\n", 1)[1])
        os.chmod(self.kvfleet, 0o755)

    def declare(self, units=None):
        """docs/outputs.md of the sandbox: the columns the fake writes, `units` overriding."""
        tables = {"requests": ["id", "arrival_s", "gpu_s", "outcome"],
                  "summary": ["mean_s", "count", "busy_s", "extra"]}
        units = units or {}
        with open(os.path.join(self.source, "docs", "outputs.md"), "w") as f:
            f.write("# Output reference\n\n## Run results (`kvfleet run --out FILE.h5`)\n\n")
            for t, cols in tables.items():
                f.write(f"### `/{t}`\n\n| column | type | unit | description |\n|---|---|---|---|\n")
                for c in cols:
                    u = units.get(f"{t}.{c}", "s" if c.endswith("_s") else "")
                    f.write(f"| `{c}` | number | {u} | made up |\n")
                f.write("\n")

    def scenario(self, name, spec, needs_reference=False):
        if needs_reference:
            spec = dict(spec, note="reads ../shared/reference/traces")
        with open(os.path.join(self.source, "scenarios", name), "w") as f:
            json.dump(spec, f)

    def golden(self, *extra, reference=True):
        cmd = [sys.executable, GOLDEN, "--kvfleet", self.kvfleet, "--source", self.source,
               "--store", self.store,
               "--reference", self.reference if reference else os.path.join(self.tmp, "none")]
        p = subprocess.run(cmd + list(extra), capture_output=True, text=True)
        return p.returncode, p.stdout + p.stderr

    def rows(self):
        with open(os.path.join(self.store, "checksums.txt")) as f:
            return [l for l in f if not l.startswith("#")]


def main():
    with tempfile.TemporaryDirectory(prefix="golden-selftest-") as tmp:
        s = Sandbox(tmp)
        s.scenario("a.yaml", base_spec(1))
        s.scenario("b.yaml", base_spec(2), needs_reference=True)
        rc, out = s.golden("--update")
        check(rc == 0, "an update with every scenario runnable succeeds")
        full = len(s.rows())
        check(full == 2 * 7 + 2, f"it stores every column and report of both scenarios ({full})")
        check(os.path.exists(os.path.join(s.store, "reports", "a.txt")), "reports are stored")

        rc, out = s.golden()
        check(rc == 0 and "0 within the tolerance" in out, "an unchanged run passes")

        rc, out = s.golden("--update", reference=False)
        check(rc == 0 and "skipped b.yaml" in out, "an update without the reference skips b")
        check(len(s.rows()) == full, "... and keeps b's stored rows")
        rc, out = s.golden(reference=False)
        check(rc == 0, "a check without the reference passes on what it ran")

        # A removed column: reported as removed, and an update refuses to drop it without --prune.
        spec = base_spec(1)
        del spec["tables"]["requests"]["gpu_s"]
        s.scenario("a.yaml", spec)
        rc, out = s.golden()
        check(rc == 1 and "removed columns" in out and "requests.gpu_s" in out,
              "a removed column fails and is named as removed")
        rc, out = s.golden("--update")
        check(rc == 1 and "refusing to drop" in out, "an update refuses to drop it")
        check(len(s.rows()) == full, "... and leaves the store as it was")
        rc, out = s.golden("--update", "--prune")
        check(rc == 0 and len(s.rows()) == full - 1, "--prune drops it")
        s.scenario("a.yaml", base_spec(1))
        s.golden("--update")

        # A new column.
        spec = base_spec(1)
        spec["tables"]["summary"]["extra"] = [1]
        s.scenario("a.yaml", spec)
        rc, out = s.golden()
        check(rc == 1 and "new columns" in out and "summary.extra" in out
              and "changed values" not in out, "a new column is reported as new, not as changed")

        # Every output declared: a column docs/outputs.md does not list, a table it does not
        # list, a column written without a description, or with another unit, fails by name.
        spec = base_spec(1)
        spec["tables"]["summary"]["secret"] = [1]
        s.scenario("a.yaml", spec)
        rc, out = s.golden()
        check(rc == 1 and "summary.secret: a column docs/outputs.md does not declare" in out,
              "an undeclared column fails, named")
        spec = base_spec(1)
        spec["tables"]["hidden"] = {"x": [1]}
        s.scenario("a.yaml", spec)
        rc, out = s.golden()
        check(rc == 1 and "/hidden: a table docs/outputs.md does not declare" in out,
              "an undeclared table fails, named")
        spec = base_spec(1)
        spec["undescribed"] = ["gpu_s"]
        s.scenario("a.yaml", spec)
        rc, out = s.golden()
        check(rc == 1 and "requests.gpu_s: written without a description" in out,
              "a column written without a description fails")
        s.scenario("a.yaml", base_spec(1))
        s.declare({"requests.gpu_s": "GPU-s"})
        rc, out = s.golden()
        check(rc == 1 and "requests.gpu_s: unit 's', declared 'GPU-s'" in out,
              "a unit other than the declared one fails")
        s.declare()

        # A changed integer.
        spec = base_spec(1)
        spec["tables"]["summary"]["count"] = [4999]
        s.scenario("a.yaml", spec)
        rc, out = s.golden()
        check(rc == 1 and "changed values" in out and "summary.count" in out,
              "a changed integer is reported as a changed value")

        # A time one nanosecond later.
        spec = base_spec(1)
        t = np.array(spec["tables"]["requests"]["arrival_s"])
        t[100] = (round(t[100] * 1e9) + 1) / 1e9
        spec["tables"]["requests"]["arrival_s"] = t.tolist()
        s.scenario("a.yaml", spec)
        rc, out = s.golden()
        check(rc == 1 and "requests.arrival_s differs (time)" in out,
              "a time moved by one nanosecond fails")

        # Floats within 1e-9 relative, every value moved: pass, reported as within tolerance.
        for col, table in (("gpu_s", "requests"), ("mean_s", "summary"), ("busy_s", "summary")):
            for sign in (1, -1):
                spec = base_spec(1)
                v = np.array(spec["tables"][table][col])
                rng = np.random.default_rng(7)
                spec["tables"][table][col] = (v * (1 + sign * 0.99e-9 *
                                                   rng.random(len(v)))).tolist()
                s.scenario("a.yaml", spec)
                rc, out = s.golden()
                check(rc == 0 and f"{table}.{col}: not bit-identical, within 1e-09" in out,
                      f"{table}.{col} moved by up to 0.99e-9 relative ({sign:+d}) passes")

        # Larger differences fail: one value of a long column by its grid, a single value by 1e-8.
        spec = base_spec(1)
        v = np.array(spec["tables"]["requests"]["gpu_s"])
        v[1234] *= 1 + 2.0**-18
        spec["tables"]["requests"]["gpu_s"] = v.tolist()
        s.scenario("a.yaml", spec)
        rc, out = s.golden()
        check(rc == 1 and "requests.gpu_s differs" in out,
              "one of 5,000 values moved by 2^-18 relative fails")
        for col in ("mean_s", "busy_s"):
            spec = base_spec(1)
            spec["tables"]["summary"][col] = [spec["tables"]["summary"][col][0] * (1 + 1e-8)]
            s.scenario("a.yaml", spec)
            rc, out = s.golden()
            check(rc == 1 and f"summary.{col} differs" in out,
                  f"summary.{col} moved by 1e-8 relative fails")

        # A changed report line.
        spec = base_spec(1)
        spec["report"] = spec["report"].replace("12.3", "12.4")
        s.scenario("a.yaml", spec)
        rc, out = s.golden()
        check(rc == 1 and "report differs" in out and "+TTFT mean 12.4 ms" in out,
              "a changed report line fails and is shown")

        # A deleted scenario: the check names it; an update needs --prune.
        s.scenario("a.yaml", base_spec(1))
        os.remove(os.path.join(s.source, "scenarios", "b.yaml"))
        rc, out = s.golden()
        check(rc == 1 and "no longer exist: b.yaml" in out, "a deleted scenario fails the check")
        rc, out = s.golden("--update")
        check(rc == 1 and "b.yaml: scenario no longer exists" in out,
              "an update refuses to drop a deleted scenario without --prune")
        rc, out = s.golden("--update", "--prune")
        check(rc == 0 and len(s.rows()) == full // 2 and
              not os.path.exists(os.path.join(s.store, "reports", "b.txt")),
              "--prune drops the deleted scenario and its report")

        # --compare reports the largest difference of two files.
        a, b = os.path.join(tmp, "a.h5"), os.path.join(tmp, "b.h5")
        spec = base_spec(1)
        s.scenario("a.yaml", spec)
        subprocess.run([s.kvfleet, "run", os.path.join(s.source, "scenarios", "a.yaml"),
                        "--out", a], check=True)
        v = np.array(spec["tables"]["requests"]["gpu_s"])
        v[17] *= 1 + 5e-10
        spec["tables"]["requests"]["gpu_s"] = v.tolist()
        s.scenario("a.yaml", spec)
        subprocess.run([s.kvfleet, "run", os.path.join(s.source, "scenarios", "a.yaml"),
                        "--out", b], check=True)
        p = subprocess.run([sys.executable, GOLDEN, "--compare", a, b], capture_output=True,
                           text=True)
        check(p.returncode == 0 and "at row 17" in p.stdout and "within 1e-09" in p.stdout,
              "--compare names the row of the largest difference and passes it")
        p = subprocess.run([sys.executable, GOLDEN, "--compare", a, b, "--tolerance", "1e-10"],
                           capture_output=True, text=True)
        check(p.returncode == 1 and "OUTSIDE" in p.stdout, "--compare fails it at 1e-10")

    if FAILURES:
        print(f"golden_selftest: {len(FAILURES)} checks failed")
        return 1
    print("golden_selftest: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
