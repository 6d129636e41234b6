#!/usr/bin/env python3
"""I/O fault loop: every command that writes files, run with its Nth I/O call failing.

Each command runs once under tests/faults/failio.c (LD_PRELOAD) counting the I/O calls it makes
on files under its output folder (opens for writing, writes, fsync, close, rename, mkdir); then
once per N with the Nth call failing (ENOSPC; a second pass with EIO and the disk staying full
from the Nth call on). After each failing run it checks kvfleet's contract (docs/reliability.md):

- the exit status is 2 with a one-line message on stderr (never 1, a signal or a crash), or 0
  with every output byte-identical to the run without faults (a call whose failure does not
  matter, such as the note of who holds a lock);
- after exit 2 every output path holds exactly what it held before (the previous file intact, a
  folder's files unchanged, nothing new), and no temporary (NAME.tmp-PID) or lock is left.

Uses /usr/bin/python3's standard library only. Usage:
  io_faults.py --kvfleet build/bin/kvfleet --calibrate build/bin/kvfleet-calibrate \
      --failio build/tests/faults/libfailio.so --source . [--reference ../shared/reference]
      [--every] [--only NAME]
Without --every, a command with many calls runs the first 40 and about 40 more spread over the
rest (CI); --every loops over every call.
"""
import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

PREVIOUS = b"previous contents, to be kept intact\n"


def digest_tree(path):
    """{relative name: sha256} of a file or of every file in a folder; None if absent."""
    if os.path.isfile(path):
        with open(path, "rb") as f:
            return {"": hashlib.sha256(f.read()).hexdigest()}
    if os.path.isdir(path):
        out = {}
        for root, _, files in os.walk(path):
            for name in files:
                p = os.path.join(root, name)
                with open(p, "rb") as f:
                    out[os.path.relpath(p, path)] = hashlib.sha256(f.read()).hexdigest()
        return out
    return None


class Case:
    """One command: its arguments (with {out} for the output folder), outputs, and set-up."""

    def __init__(self, name, args, outputs, deterministic=True, resume=None):
        self.name, self.args, self.outputs = name, args, outputs
        self.deterministic, self.resume = deterministic, resume


def cases(kv, cal, src, work, reference):
    scen = os.path.join(src, "scenarios", "default.yaml")
    small = ["--set", "workload.num_requests=40"]
    bench = os.path.join(src, "tests", "data", "bench", "vllm-bench", "detailed.json")
    sweep = os.path.join(work, "sweep.yaml")
    with open(sweep, "w") as f:
        f.write(
            "base: %s\nset: [workload.num_requests=30]\naxes:\n"
            "  - key: workload.arrival.rate_per_s\n    values: [2, 4]\n"
            "metrics: [time_to_first_token_p99_s]\n" % scen)
    run_h5 = os.path.join(work, "run.h5")
    parts = [os.path.join(work, "part%d.h5" % k) for k in range(2)]
    sweep_h5 = os.path.join(work, "sweep.h5")

    def prepare_inputs():
        subprocess.run([kv, "run", scen, "-q", "--out", run_h5] + small, check=True)
        for k, p in enumerate(parts):
            subprocess.run([kv, "sweep", sweep, "-q", "--shard", "%d/2" % k, "--out", p],
                           check=True)
        subprocess.run([kv, "sweep", sweep, "-q", "--out", sweep_h5], check=True)

    prepare_inputs()
    c = [
        Case("run-outputs", [kv, "run", scen, "-q", "--out", "{out}/o.h5", "--csv", "{out}/csv",
                             "--prometheus", "{out}/prom", "--prometheus-epoch", "0",
                             "--trace", "{out}/t.json"] + small,
             ["o.h5", "csv/", "prom/", "t.json"]),
        # A sweep's checkpoints replace its file while it runs, by design: after a failure the
        # file holds the previous version or a checkpoint that --resume completes.
        Case("sweep-checkpoints", [kv, "sweep", sweep, "-q", "--checkpoint-s", "0.000001",
                                   "--out", "{out}/s.h5"], ["s.h5"],
             resume=[kv, "sweep", sweep, "-q", "--resume", "--out", "{out}/s.h5"]),
        Case("merge", [kv, "merge", "{out}/m.h5"] + parts, ["m.h5"]),
        Case("replay", [kv, "replay", bench, "--gpu", "H100-SXM", "--out", "{out}/r.h5",
                        "--write-scenario", "{out}/r.yaml"], ["r.h5", "r.yaml", "r.trace.csv"]),
        Case("calibrate-roofline", [cal, "roofline", "--model", "Llama-3-8B", "--gpu", "A100-80GB",
                                    "--out", "{out}/prof.h5"], ["prof.h5"]),
    ]
    bundle = os.path.join(reference or "", "profiles", "llmservingsim", "RTX4090", "meta-llama",
                          "Llama-3.1-8B", "bf16")
    if reference and os.path.isdir(bundle):
        c.append(Case("calibrate-import", [cal, "import", "--format", "llmservingsim", bundle,
                                           "--out", "{out}/imp.h5"], ["imp.h5"]))
    else:
        print("calibrate-import: skipped (no ../shared/reference; the profile writer is the one "
              "calibrate-roofline exercises)")
    if shutil.which(kv + "-plot") or os.path.exists(kv + "-plot"):
        c += [
            Case("run-plots", [kv, "run", scen, "-q", "--plots", "{out}/plots"] + small,
                 ["plots/"], deterministic=False),
            Case("plot-png", [kv, "plot", sweep_h5, "--x", "workload.arrival.rate_per_s", "--y", "time_to_first_token_p99_s",
                              "--out", "{out}/x.png"], ["x.png"], deterministic=False),
            Case("plot-svg", [kv, "plot", sweep_h5, "--x", "workload.arrival.rate_per_s", "--y", "time_to_first_token_p99_s",
                              "--out", "{out}/x.svg"], ["x.svg"], deterministic=False),
            Case("plot-run-pdf", [kv, "plot", run_h5, "--out", "{out}/d.pdf"], ["d.pdf"],
                 deterministic=False),
            Case("plot-run-folder", [kv, "plot", run_h5, "--out", "{out}/pages/"], ["pages/"],
                 deterministic=False),
        ]
    # Not here: schema, outputs, presets, model-from-hf and capacity print to standard output
    # only (a failed write there is exit 2 by main's check of std::cout).
    return c


def fill_previous(out, outputs):
    """Puts a previous version at every output path: a file, or a folder (NAME/) holding one."""
    for name in outputs:
        p = os.path.join(out, name)
        if not name.endswith("/"):
            with open(p, "wb") as f:
                f.write(PREVIOUS)
        else:
            os.makedirs(p)
            with open(os.path.join(p, "previous.txt"), "wb") as f:
                f.write(PREVIOUS)


def run_case(case, out, failio, env_extra):
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    fill_previous(out, case.outputs)
    before = {n: digest_tree(os.path.join(out, n.rstrip("/"))) for n in case.outputs}
    env = dict(os.environ, LD_PRELOAD=failio, FAILIO_DIR=out, **env_extra)
    args = [a.replace("{out}", out) for a in case.args]
    p = subprocess.run(args, env=env, capture_output=True, timeout=300)
    after = {n: digest_tree(os.path.join(out, n.rstrip("/"))) for n in case.outputs}
    names = [n.rstrip("/") for n in case.outputs]
    leftovers = sorted(n for n in os.listdir(out)
                       if ".tmp-" in n or n.endswith(".lock") or n not in names)
    return p, before, after, leftovers


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kvfleet", required=True)
    ap.add_argument("--calibrate", required=True)
    ap.add_argument("--failio", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--reference", help="../shared/reference, when present: adds an import")
    ap.add_argument("--every", action="store_true")
    ap.add_argument("--only")
    a = ap.parse_args()
    failio = os.path.abspath(a.failio)
    work = tempfile.mkdtemp(prefix="kvfleet-faults-")
    failures, runs = [], 0
    try:
        for case in cases(os.path.abspath(a.kvfleet), os.path.abspath(a.calibrate),
                          os.path.abspath(a.source), work, a.reference):
            if a.only and case.name != a.only:
                continue
            out = os.path.join(work, "out-" + case.name)
            count_file = os.path.join(work, "count")
            p, _, clean, _ = run_case(case, out, failio, {"FAILIO_COUNT": count_file})
            if p.returncode != 0:
                failures.append("%s: fails without faults (exit %d): %s" %
                                (case.name, p.returncode, p.stderr.decode()[-400:]))
                continue
            calls = int(open(count_file).read())
            if case.resume:
                # What --resume makes of a complete file (its provenance names --resume).
                subprocess.run([x.replace("{out}", out) for x in case.resume], check=True,
                               capture_output=True, timeout=300)
                resumed_clean = {n: digest_tree(os.path.join(out, n.rstrip("/")))
                                 for n in case.outputs}
            if args_every(a):
                plan = list(range(1, calls + 1))
            else:
                plan = sorted(set(list(range(1, min(calls, 40) + 1)) +
                                  list(range(41, calls + 1, max(1, (calls - 40) // 40)))))
            modes = [("ENOSPC", "0"), ("EIO", "1")]
            checked = 0
            for errno_name, persist in modes:
                for n in plan:
                    runs += 1
                    checked += 1
                    p, before, after, left = run_case(case, out, failio, {
                        "FAILIO_NTH": str(n), "FAILIO_ERRNO": errno_name,
                        "FAILIO_PERSIST": persist})
                    err = p.stderr.decode(errors="replace").strip()
                    where = "%s: call %d of %d failing (%s%s)" % (
                        case.name, n, calls, errno_name, ", and every later one" if persist == "1"
                        else "")
                    if p.returncode == 0:
                        if case.deterministic and after != clean:
                            failures.append(where + ": exit 0 but the outputs differ from a run "
                                            "without faults")
                        elif not case.deterministic and any(v is None or v == before[k]
                                                            for k, v in after.items()):
                            failures.append(where + ": exit 0 but an output was not written")
                        continue
                    if p.returncode != 2:
                        failures.append(where + ": exit %d: %s" % (p.returncode, err[-600:]))
                        continue
                    if not err or "\n" in err:
                        failures.append(where + ": exit 2 without a one-line message: " +
                                        repr(err[-600:]))
                    if after != before and case.resume:
                        r = subprocess.run([x.replace("{out}", out) for x in case.resume],
                                           capture_output=True, timeout=300)
                        resumed = {n: digest_tree(os.path.join(out, n.rstrip("/")))
                                   for n in case.outputs}
                        if r.returncode != 0 or resumed != resumed_clean:
                            failures.append(where + ": the checkpoint left does not resume to "
                                            "the same file (exit %d)" % r.returncode)
                    elif after != before:
                        changed = [k for k in before if after[k] != before[k]]
                        failures.append(where + ": exit 2 but outputs changed: %s (%s)" %
                                        (changed, err[-200:]))
                    if left:
                        failures.append(where + ": left behind: %s" % left)
            print("%-20s %4d I/O calls, %4d failing runs checked" % (case.name, calls, checked),
                  flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for f in failures[:60]:
        print("FAIL " + f)
    if len(failures) > 60:
        print("... and %d more" % (len(failures) - 60))
    print("%d failing runs, %d broke the contract" % (runs, len(failures)))
    return 1 if failures else 0


def args_every(a):
    return a.every


if __name__ == "__main__":
    sys.exit(main())
