#!/usr/bin/env python3
"""kernel_report.py on the files a device run leaves, including a benchmark JSON cut short by its
time limit: the report keeps every complete point, says the file was cut, and marks what was not
measured. (The numbers here are made up to exercise the parser; they describe no GPU.)"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
POINT = ('{"name": "decode/batch:64/ctx:4096/block:16/qh:32/kvh:8/hd:128/dtype:%d/splits:0/'
         'min_time:0.100/manual_time", "run_type": "iteration", "real_time": %s, '
         '"time_unit": "us", "GBps": %s, "frac_copy_bw": %s, "splits": 1}')


def main():
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "targets.json"), "w") as f:
            f.write('{\n "context": {"gpu": "test GPU", "sm_count": "132", "copy_d2d_GBps": "4000"},\n'
                    ' "benchmarks": [\n  ' + POINT % (1, "300.0", "3580", "0.895") + ',\n  ' +
                    POINT % (2, "200.0", "2700", "0.675") + ',\n  {"name": "decode/batch:1/ctx:327')
        with open(os.path.join(d, "phases.tsv"), "w") as f:
            f.write("targets\tcut at its limit\t45\t45\t\ntests\tok\t30\t80\t16 shards\n")
        with open(os.path.join(d, "tests-gpu-0.txt"), "w") as f:
            f.write("[  PASSED  ] 10 tests.\n[  FAILED  ] 1 test, listed below:\n"
                    "[  FAILED  ] AllShapes/GpuKernels.PagedDecodeMatchesReference/bf16_d64_b8_g1, where\n")
        r = subprocess.run([sys.executable, os.path.join(HERE, "kernel_report.py"), d],
                           capture_output=True, text=True)
        text = r.stdout
        checks = [
            r.returncode == 0,
            "| decode bf16 64 × 4096 ≥ 80% of copy bandwidth | 3580 GB/s = 90% (300.0 µs) | PASS |" in text,
            "| fp8 KV 64 × 4096 ≥ 1.6× faster than bf16 | 1.50× (200.0 µs vs 300.0 µs) | MISS |" in text,
            "| decode bf16 1 × 32768, split-KV ≥ 60% | not measured | — |" in text,
            "cut short" in text,
            "| targets | cut at its limit | 45 | 45 |" in text,
            "10 passed, 1 failed" in text,
            "FAILED `AllShapes/GpuKernels.PagedDecodeMatchesReference/bf16_d64_b8_g1`" in text,
            "## compute-sanitizer\n\nNot run." in text,
        ]
        if not all(checks):
            print(text, r.stderr)
            print("failed checks:", [i for i, c in enumerate(checks) if not c])
            return 1
    missing = subprocess.run([sys.executable, os.path.join(HERE, "kernel_report.py"),
                              os.path.join(d, "no-such-folder")], capture_output=True, text=True)
    if missing.returncode != 2 or "no such folder" not in missing.stderr:
        print("a missing folder:", missing.returncode, missing.stderr)
        return 1
    print("kernel_report: truncated JSON, phases, tests and missing parts reported")
    return 0


if __name__ == "__main__":
    sys.exit(main())
