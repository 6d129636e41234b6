#!/usr/bin/env python3
"""Runs the Slurm recipes of docs/sweeps.md against a fake scheduler (ctest slurm_recipe).

The scripts are taken from the page (the code blocks after "<!-- slurm: array -->", "merge" and
"mpi"), so the page cannot drift from what works. Stand-ins: `sbatch` is this script, which reads
the #SBATCH lines and runs the job script once per array task with SLURM_ARRAY_TASK_ID,
SLURM_ARRAY_TASK_COUNT and SLURM_CPUS_PER_TASK set, as Slurm does; `srun` is a shell script on
PATH that starts SLURM_NTASKS ranks with mpiexec. Each recipe's file must hold exactly the points
of the same sweep run in one process (/points and /curves compared with h5py).

Uses /usr/bin/python3 with Debian's python3-h5py. Usage:
  slurm_recipe.py --kvfleet build/bin/kvfleet --docs docs/sweeps.md --source . [--mpiexec PATH]
Without --mpiexec (kvfleet built without MPI) the MPI recipe is skipped, saying so.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np


def blocks(page):
    text = open(page, encoding="utf-8").read()
    found = dict(re.findall(r"<!-- slurm: (\w+) -->\s*```sh\n(.*?)```", text, re.S))
    for need in ("array", "merge", "mpi"):
        if need not in found:
            sys.exit(f"slurm_recipe: {page} has no '<!-- slurm: {need} -->' code block")
    return found


def sbatch_options(script):
    opts = {}
    for key, value in re.findall(r"^#SBATCH --([\w-]+)=(\S+)", script, re.M):
        opts[key] = value
    return opts


def same_points(a, b):
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        for name in ("points", "curves"):
            x, y = fa[name][()], fb[name][()]
            if x.dtype.names != y.dtype.names or len(x) != len(y):
                return f"/{name}: columns or rows differ"
            for col in x.dtype.names:
                u, v = x[col], y[col]
                equal = (np.array_equal(u, v, equal_nan=True) if u.dtype.kind == "f"
                         else np.array_equal(u, v))
                if not equal:
                    return f"/{name}.{col} differs"
    return ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kvfleet", required=True)
    ap.add_argument("--docs", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--mpiexec")
    a = ap.parse_args()
    recipe = blocks(a.docs)
    kv = os.path.abspath(a.kvfleet)
    work = tempfile.mkdtemp(prefix="kvfleet-slurm-")
    fails = []
    try:
        fake_bin = os.path.join(work, "bin")
        os.makedirs(fake_bin)
        os.symlink(kv, os.path.join(fake_bin, "kvfleet"))
        env = dict(os.environ, PATH=fake_bin + os.pathsep + os.environ.get("PATH", ""))
        base = os.path.join(os.path.abspath(a.source), "scenarios", "default.yaml")
        with open(os.path.join(work, "sweep.yaml"), "w") as f:
            f.write(f"base: {base}\nset: [workload.num_requests=200]\naxes:\n"
                    "  - {key: workload.arrival.rate_per_s, values: [10, 20, 30]}\n"
                    "  - {key: \"pools[0].engine.max_num_seqs\", values: [16, 64]}\n"
                    "replicates: 2\nmetrics: [time_to_first_token_p99_s, requests_per_s]\n")
        subprocess.run([kv, "sweep", "sweep.yaml", "--quiet", "--out", "one.h5"], cwd=work,
                       env=env, check=True)

        # The job array, as sbatch would run it, then the merge.
        opts = sbatch_options(recipe["array"])
        first, last = (int(x) for x in opts["array"].split("-"))
        for task in range(first, last + 1):
            task_env = dict(env, SLURM_ARRAY_TASK_ID=str(task),
                            SLURM_ARRAY_TASK_COUNT=str(last - first + 1),
                            SLURM_CPUS_PER_TASK=opts.get("cpus-per-task", "1"),
                            SLURM_JOB_ID="1000", SLURM_ARRAY_JOB_ID="1000")
            p = subprocess.run(["bash", "-c", recipe["array"]], cwd=work, env=task_env,
                               capture_output=True, text=True)
            if p.returncode != 0:
                fails.append(f"array task {task}: exit {p.returncode}: {p.stderr[-400:]}")
        p = subprocess.run(["bash", "-c", recipe["merge"]], cwd=work, env=env,
                           capture_output=True, text=True)
        if p.returncode != 0:
            fails.append(f"merge: exit {p.returncode}: {p.stderr[-400:]}")
        elif diff := same_points(os.path.join(work, "one.h5"), os.path.join(work, "sweep.h5")):
            fails.append("the array's merged file against one process: " + diff)
        else:
            print(f"slurm_recipe: job array of {last - first + 1} shards + merge: the same "
                  "points as one process")

        # One MPI job through a stand-in srun.
        if not a.mpiexec:
            print("slurm_recipe: MPI recipe skipped (kvfleet built without MPI)")
        else:
            os.remove(os.path.join(work, "sweep.h5"))
            with open(os.path.join(fake_bin, "srun"), "w") as f:
                f.write("#!/bin/sh\n# Stand-in for srun: SLURM_NTASKS ranks through mpiexec.\n"
                        "while [ $# -gt 0 ]; do case \"$1\" in --*) shift;; *) break;; esac; done\n"
                        f"exec {a.mpiexec} -n \"$SLURM_NTASKS\" --oversubscribe \"$@\"\n")
            os.chmod(os.path.join(fake_bin, "srun"), 0o755)
            opts = sbatch_options(recipe["mpi"])
            mpi_env = dict(env, SLURM_NTASKS=opts.get("ntasks", "1"),
                           SLURM_CPUS_PER_TASK=opts.get("cpus-per-task", "1"),
                           OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
            p = subprocess.run(["bash", "-c", recipe["mpi"]], cwd=work, env=mpi_env,
                               capture_output=True, text=True, timeout=600)
            if p.returncode != 0:
                fails.append(f"MPI job: exit {p.returncode}: {p.stderr[-400:]}")
            elif diff := same_points(os.path.join(work, "one.h5"), os.path.join(work, "sweep.h5")):
                fails.append("the MPI job's file against one process: " + diff)
            else:
                print(f"slurm_recipe: MPI job of {opts.get('ntasks')} ranks: the same points as "
                      "one process")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for f in fails:
        print("FAIL " + f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
