#!/usr/bin/env python3
"""Writes the markdown report of a device run (kernels/device_check.sh) from whatever its phases
left in the output folder, so that a run cut short still reports what it measured:

  phases.tsv          one line per phase: name, status, seconds, budget seconds, note
  nvidia-smi.txt      the GPU and driver
  targets.json        kvfleet-kernel-bench --grid=targets (the four H200 targets' points)
  grid.json           kvfleet-kernel-bench --grid=trimmed
  sdpa.json           kernels/tools/sdpa_baseline.py
  tests-*.txt         GoogleTest output (reference tests, GPU test shards)
  sanitizer-*.txt     compute-sanitizer output (memcheck, racecheck)

Benchmark JSON that a killed run left unterminated is read up to its last complete point.
Usage: kernel_report.py OUT_DIR  (writes the report to standard output)"""
import glob
import json
import os
import re
import sys

DT = {0: "fp16", 1: "bf16", 2: "fp8"}
LLAMA = dict(block=16, qh=32, kvh=8, hd=128)


def parse_name(name):
    parts = name.split("/")
    args = {}
    for p in parts[1:]:
        if ":" in p:
            k, v = p.split(":", 1)
            try:
                args[k] = int(v)
            except ValueError:
                args[k] = v
    return parts[0], args


def load_bench_json(path):
    """(context, rows, complete) from Google Benchmark's JSON, tolerating a truncated file."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return {}, [], None
    complete = True
    try:
        data = json.loads(text)
    except ValueError:
        complete = False
        data = {"context": {}, "benchmarks": []}
        dec = json.JSONDecoder()
        m = re.search(r'"context"\s*:\s*', text)
        if m:
            try:
                data["context"], _ = dec.raw_decode(text, m.end())
            except ValueError:
                pass
        m = re.search(r'"benchmarks"\s*:\s*\[', text)
        pos = m.end() if m else len(text)
        while pos < len(text):
            while pos < len(text) and text[pos] in " \t\r\n,":
                pos += 1
            try:
                obj, pos = dec.raw_decode(text, pos)
            except ValueError:
                break
            data["benchmarks"].append(obj)
    rows = []
    for b in data.get("benchmarks", []):
        if b.get("run_type", "iteration") != "iteration":
            continue
        kind, args = parse_name(b["name"])
        if b.get("error_occurred"):
            rows.append(dict(kind=kind, args=args, error=b.get("error_message", "error")))
            continue
        scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b.get("time_unit", "ns")]
        rows.append(dict(kind=kind, args=args, s=b["real_time"] * scale, GBps=b.get("GBps"),
                         frac=b.get("frac_copy_bw"), TFLOPs=b.get("TFLOPs"),
                         splits=b.get("splits")))
    return data.get("context", {}), rows, complete


def find(rows, kind, **want):
    for r in rows:
        if r["kind"] == kind and "error" not in r and \
                all(r["args"].get(k) == v for k, v in want.items()):
            return r
    return None


def us(r):
    return f"{r['s'] * 1e6:.1f} µs" if r else "—"


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def phases_section(out):
    text = read(os.path.join(out, "phases.tsv"))
    print("## Phases\n")
    if not text:
        print("No phase ran (phases.tsv is missing).\n")
        return
    print("| phase | status | seconds | budget (s) | note |")
    print("|---|---|---|---|---|")
    total = budget = 0
    for line in text.splitlines():
        f = line.split("\t")
        if len(f) < 5:
            continue
        print(f"| {f[0]} | {f[1]} | {f[2]} | {f[3]} | {f[4]} |")
        try:
            total += float(f[2])
            budget += float(f[3])
        except ValueError:
            pass
    print(f"| total | | {total:.0f} | {budget:.0f} | |\n")


def phase_outputs(out, heading, prefix):
    """Prints the section heading and returns the phase's output files (saying "Not run." when
    there are none)."""
    print(f"## {heading}\n")
    files = sorted(glob.glob(os.path.join(out, prefix + "*.txt")))
    if not files:
        print("Not run.\n")
    return files


def tests_section(out):
    files = phase_outputs(out, "Tests", "tests-")
    if not files:
        return
    counts = {"PASSED": 0, "FAILED": 0, "SKIPPED": 0}
    failed = []
    for path in files:
        text = read(path) or ""
        for kind in counts:
            for m in re.finditer(rf"^\[\s+{kind}\s+\] (\d+) tests?", text, re.M):
                counts[kind] += int(m.group(1))
        failed += re.findall(r"^\[  FAILED  \] (\S+)(?:, where|\s*\(\d+ ms\))", text, re.M)
    print(f"{len(files)} test outputs: {counts['PASSED']} passed, {counts['FAILED']} failed, "
          f"{counts['SKIPPED']} skipped.\n")
    for name in sorted(set(failed))[:40]:
        print(f"- FAILED `{name}`")
    if failed:
        print()


def sanitizer_section(out):
    files = phase_outputs(out, "compute-sanitizer", "sanitizer-")
    if not files:
        return
    for path in files:
        text = read(path) or ""
        tool = os.path.basename(path)[len("sanitizer-"):-4]
        m = re.findall(r"ERROR SUMMARY: (\d+) error", text)
        summary = f"{m[-1]} errors" if m else "no summary (cut short or not run)"
        print(f"- {tool}: {summary}")
    print()


def targets_section(rows, sdpa):
    print("## Targets\n")
    print("| target | measured | verdict |")
    print("|---|---|---|")
    d = find(rows, "decode", batch=64, ctx=4096, dtype=1, splits=0, **LLAMA)
    if d:
        ok = d["frac"] is not None and d["frac"] >= 0.8
        print(f"| decode bf16 64 × 4096 ≥ 80% of copy bandwidth | {d['GBps']:.0f} GB/s = "
              f"{100 * d['frac']:.0f}% ({us(d)}) | {'PASS' if ok else 'MISS'} |")
        s = sdpa.get((64, 4096))
        if s and "seconds" in s:
            ok = d["s"] <= s["seconds"]
            print(f"| … and at least as fast as PyTorch SDPA ({s['backend']}) | kvfleet {us(d)}, "
                  f"SDPA {s['us']:.1f} µs ({s['GBps']:.0f} GB/s) | {'PASS' if ok else 'MISS'} |")
        else:
            print(f"| … and at least as fast as PyTorch SDPA | SDPA not measured: "
                  f"{(s or {}).get('refused', 'no row')} | — |")
    else:
        print("| decode bf16 64 × 4096 ≥ 80% of copy bandwidth | not measured | — |")
    d1 = find(rows, "decode", batch=1, ctx=32768, dtype=1, splits=0, **LLAMA)
    d1off = find(rows, "decode", batch=1, ctx=32768, dtype=1, splits=1, **LLAMA)
    if d1:
        ok = d1["frac"] is not None and d1["frac"] >= 0.6
        extra = f"; without split-KV {us(d1off)}" if d1off else ""
        print(f"| decode bf16 1 × 32768, split-KV ({int(d1['splits'] or 0)} splits) ≥ 60% | "
              f"{d1['GBps']:.0f} GB/s = {100 * d1['frac']:.0f}% ({us(d1)}){extra} | "
              f"{'PASS' if ok else 'MISS'} |")
    else:
        print("| decode bf16 1 × 32768, split-KV ≥ 60% | not measured | — |")
    f8 = find(rows, "decode", batch=64, ctx=4096, dtype=2, splits=0, **LLAMA)
    if d and f8:
        sp = d["s"] / f8["s"]
        print(f"| fp8 KV 64 × 4096 ≥ 1.6× faster than bf16 | {sp:.2f}× ({us(f8)} vs {us(d)}) | "
              f"{'PASS' if sp >= 1.6 else 'MISS'} |")
    else:
        print("| fp8 KV 64 × 4096 ≥ 1.6× faster than bf16 | not measured | — |")
    c = find(rows, "decode_contiguous", batch=64, ctx=4096, qh=32, kvh=8, hd=128, dtype=1)
    if d and c:
        cost = d["s"] / c["s"] - 1
        print(f"| paging costs ≤ 5% (64 × 4096 bf16) | paged {us(d)}, contiguous {us(c)}: "
              f"{100 * cost:+.1f}% | {'PASS' if cost <= 0.05 else 'MISS'} |")
    else:
        print("| paging costs ≤ 5% (64 × 4096 bf16) | not measured | — |")
    print()


def grid_section(rows, sdpa):
    if not rows:
        print("## Benchmark grid\n\nNot measured.\n")
        return
    print("## Decode, Llama-3-8B attention shape (32/8 heads, head dim 128, block 16)\n")
    print("GB/s (fraction of copy bandwidth):\n")
    ctxs = sorted({r["args"]["ctx"] for r in rows if r["kind"] == "decode"})
    batches = sorted({r["args"]["batch"] for r in rows if r["kind"] == "decode"})
    for dt in (0, 1, 2):
        lines = []
        for b in batches:
            cells = []
            for cx in ctxs:
                r = find(rows, "decode", batch=b, ctx=cx, dtype=dt, splits=0, **LLAMA)
                cells.append(f"{r['GBps']:.0f} ({100 * r['frac']:.0f}%)" if r and r["frac"] else "—")
            if any(c != "—" for c in cells):
                lines.append(f"| {b} | " + " | ".join(cells) + " |")
        if lines:
            print(f"\n{DT[dt]} KV:\n")
            print("| batch \\ context | " + " | ".join(str(x) for x in ctxs) + " |")
            print("|---" * (len(ctxs) + 1) + "|")
            print("\n".join(lines))
    print("\n## Every point (time, GB/s, TFLOP/s)\n")
    print("| kernel | arguments | time | GB/s | TFLOP/s |")
    print("|---|---|---|---|---|")
    for r in rows:
        a = ", ".join(f"{k} {v}" for k, v in r["args"].items()
                      if k not in ("min_time", "iterations", "manual_time"))
        if "error" in r:
            print(f"| {r['kind']} | {a} | error: {r['error']} | — | — |")
            continue
        gb = f"{r['GBps']:.0f}" if r["GBps"] else "—"
        tf = f"{r['TFLOPs']:.1f}" if r["TFLOPs"] else "—"
        print(f"| {r['kind']} | {a} | {r['s'] * 1e6:.1f} µs | {gb} | {tf} |")
    if sdpa:
        print("\n## PyTorch SDPA decode over contiguous K/V (same shapes)\n")
        print("| batch | context | backend | time | GB/s | kvfleet paged bf16 |")
        print("|---|---|---|---|---|---|")
        for (b, cx), s in sorted(sdpa.items()):
            k = find(rows, "decode", batch=b, ctx=cx, dtype=1, splits=0, **LLAMA)
            if "seconds" in s:
                print(f"| {b} | {cx} | {s['backend']} | {s['us']:.1f} µs | {s['GBps']:.0f} | {us(k)} |")
            else:
                print(f"| {b} | {cx} | refused: {s.get('refused')} | — | — | {us(k)} |")
    print()


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    if not os.path.isdir(out):
        print(f"kernel_report.py: {out}: no such folder", file=sys.stderr)
        return 2
    print("# kvfleet kernels: device run\n")
    smi = read(os.path.join(out, "nvidia-smi.txt"))
    gpu = next((l.strip() for l in (smi or "").splitlines() if "NVIDIA" in l and "|" in l), None)
    tctx, trows, tdone = load_bench_json(os.path.join(out, "targets.json"))
    gctx, grows, gdone = load_bench_json(os.path.join(out, "grid.json"))
    ctx = tctx or gctx
    if ctx:
        copy = float(ctx.get("copy_d2d_GBps", "nan"))
        print(f"GPU: {ctx.get('gpu', '?')}, {ctx.get('sm_count', '?')} SMs, driver "
              f"{ctx.get('driver_version', '?')}, CUDA runtime {ctx.get('runtime_version', '?')}; "
              f"measured device-to-device copy {copy:.0f} GB/s (read + written), "
              f"host-to-device {float(ctx.get('copy_h2d_GBps', 'nan')):.1f} GB/s, "
              f"device-to-host {float(ctx.get('copy_d2h_GBps', 'nan')):.1f} GB/s.\n")
    else:
        print(f"GPU: {gpu or 'none seen (no benchmark context, no nvidia-smi line)'}.\n")
    phases_section(out)
    sdpa = {}
    text = read(os.path.join(out, "sdpa.json"))
    if text:
        try:
            for r in json.loads(text)["rows"]:
                sdpa[(r["batch"], r["ctx"])] = r
        except (ValueError, KeyError) as e:
            print(f"(SDPA baseline unreadable: {e})\n")
    targets_section(trows + grows, sdpa)
    if tdone is False or gdone is False:
        print("A benchmark was cut short: its JSON was read up to the last complete point.\n")
    tests_section(out)
    sanitizer_section(out)
    grid_section(grows, sdpa)
    return 0


if __name__ == "__main__":
    sys.exit(main())
