#!/usr/bin/env python3
"""Turns kvfleet-kernel-bench's JSON (and the SDPA baseline's) into the markdown results table of
docs/kernels.md: the issue's four targets with PASS/MISS, the decode grid, prefill, KV write and
GEMM points. Usage: kernel_report.py KERNEL_BENCH.json [SDPA.json] [nvidia-smi.txt]"""
import json
import sys

DT = {0: "fp16", 1: "bf16", 2: "fp8"}


def parse(name):
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


def load(path):
    with open(path) as f:
        data = json.load(f)
    rows = []
    for b in data.get("benchmarks", []):
        if b.get("run_type", "iteration") != "iteration" or b.get("error_occurred"):
            continue
        kind, args = parse(b["name"])
        scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b.get("time_unit", "ns")]
        rows.append(dict(kind=kind, args=args, s=b["real_time"] * scale,
                         GBps=b.get("GBps"), frac=b.get("frac_copy_bw"), TFLOPs=b.get("TFLOPs"),
                         splits=b.get("splits")))
    return data.get("context", {}), rows


def find(rows, kind, **want):
    for r in rows:
        if r["kind"] == kind and all(r["args"].get(k) == v for k, v in want.items()):
            return r
    return None


def main():
    try:
        ctx, rows = load(sys.argv[1])
    except (OSError, ValueError) as e:
        print(f"No kernel benchmark results ({e}): see log.txt and bench.txt.")
        return 1
    sdpa = {}
    if len(sys.argv) > 2:
        try:
            with open(sys.argv[2]) as f:
                s = json.load(f)
            for r in s["rows"]:
                sdpa[(r["batch"], r["ctx"])] = r
        except (OSError, ValueError, KeyError) as e:
            print(f"(SDPA baseline unreadable: {e})", file=sys.stderr)
    copy = float(ctx.get("copy_d2d_GBps", "nan"))
    print(f"GPU: {ctx.get('gpu', '?')}, {ctx.get('sm_count', '?')} SMs, driver "
          f"{ctx.get('driver_version', '?')}, CUDA runtime {ctx.get('runtime_version', '?')}; "
          f"measured device-to-device copy {copy:.0f} GB/s (read + written), "
          f"host-to-device {float(ctx.get('copy_h2d_GBps', 'nan')):.1f} GB/s, "
          f"device-to-host {float(ctx.get('copy_d2h_GBps', 'nan')):.1f} GB/s.\n")
    llama = dict(block=16, qh=32, kvh=8, hd=128)

    def us(r):
        return f"{r['s'] * 1e6:.1f} µs" if r else "—"

    print("| target | measured | verdict |")
    print("|---|---|---|")
    d = find(rows, "decode", batch=64, ctx=4096, dtype=1, splits=0, **llama)
    s = sdpa.get((64, 4096))
    if d:
        ok = d["frac"] is not None and d["frac"] >= 0.8
        print(f"| decode bf16 64 × 4096 ≥ 80% of copy bandwidth | {d['GBps']:.0f} GB/s = "
              f"{100 * d['frac']:.0f}% ({us(d)}) | {'PASS' if ok else 'MISS'} |")
        if s and "seconds" in s:
            ok = d["s"] <= s["seconds"]
            print(f"| … and at least as fast as PyTorch SDPA ({s['backend']}) | kvfleet {us(d)}, "
                  f"SDPA {s['us']:.1f} µs ({s['GBps']:.0f} GB/s) | {'PASS' if ok else 'MISS'} |")
        else:
            print(f"| … and at least as fast as PyTorch SDPA | SDPA not measured: "
                  f"{(s or {}).get('refused', 'no row')} | — |")
    d1 = find(rows, "decode", batch=1, ctx=32768, dtype=1, splits=0, **llama)
    d1off = find(rows, "decode", batch=1, ctx=32768, dtype=1, splits=1, **llama)
    if d1:
        ok = d1["frac"] is not None and d1["frac"] >= 0.6
        extra = f"; without split-KV {us(d1off)}" if d1off else ""
        print(f"| decode bf16 1 × 32768, split-KV ({int(d1['splits'] or 0)} splits) ≥ 60% | "
              f"{d1['GBps']:.0f} GB/s = {100 * d1['frac']:.0f}% ({us(d1)}){extra} | "
              f"{'PASS' if ok else 'MISS'} |")
    f8 = find(rows, "decode", batch=64, ctx=4096, dtype=2, splits=0, **llama)
    if d and f8:
        sp = d["s"] / f8["s"]
        print(f"| fp8 KV 64 × 4096 ≥ 1.6× faster than bf16 | {sp:.2f}× ({us(f8)} vs {us(d)}) | "
              f"{'PASS' if sp >= 1.6 else 'MISS'} |")
    c = find(rows, "decode_contiguous", batch=64, ctx=4096, qh=32, kvh=8, hd=128, dtype=1)
    if d and c:
        cost = d["s"] / c["s"] - 1
        print(f"| paging costs ≤ 5% (64 × 4096 bf16) | paged {us(d)}, contiguous {us(c)}: "
              f"{100 * cost:+.1f}% | {'PASS' if cost <= 0.05 else 'MISS'} |")

    print("\nDecode, Llama-3-8B attention shape (32/8 heads, head dim 128, block 16), GB/s "
          "(fraction of copy bandwidth):\n")
    ctxs = sorted({r["args"]["ctx"] for r in rows if r["kind"] == "decode"})
    batches = sorted({r["args"]["batch"] for r in rows if r["kind"] == "decode"})
    for dt in (0, 1, 2):
        print(f"\n{DT[dt]} KV:\n")
        print("| batch \\ context | " + " | ".join(str(x) for x in ctxs) + " |")
        print("|---" * (len(ctxs) + 1) + "|")
        for b in batches:
            cells = []
            for cx in ctxs:
                r = find(rows, "decode", batch=b, ctx=cx, dtype=dt, splits=0, **llama)
                cells.append(f"{r['GBps']:.0f} ({100 * r['frac']:.0f}%)" if r and r["frac"] else "—")
            if any(c != "—" for c in cells):
                print(f"| {b} | " + " | ".join(cells) + " |")

    print("\nOther points (time, GB/s, TFLOP/s):\n")
    print("| kernel | arguments | time | GB/s | TFLOP/s |")
    print("|---|---|---|---|---|")
    for r in rows:
        if r["kind"] == "decode" and all(r["args"].get(k) == v for k, v in llama.items()) \
                and r["args"].get("splits") == 0:
            continue
        a = ", ".join(f"{k} {v}" for k, v in r["args"].items() if k not in ("min_time", "iterations"))
        gb = f"{r['GBps']:.0f}" if r["GBps"] else "—"
        tf = f"{r['TFLOPs']:.1f}" if r["TFLOPs"] else "—"
        print(f"| {r['kind']} | {a} | {r['s'] * 1e6:.1f} µs | {gb} | {tf} |")
    if sdpa:
        print("\nPyTorch SDPA decode over contiguous K/V (same shapes):\n")
        print("| batch | context | backend | time | GB/s | kvfleet paged bf16 |")
        print("|---|---|---|---|---|---|")
        for (b, cx), s in sorted(sdpa.items()):
            k = find(rows, "decode", batch=b, ctx=cx, dtype=1, splits=0, **llama)
            if "seconds" in s:
                print(f"| {b} | {cx} | {s['backend']} | {s['us']:.1f} µs | {s['GBps']:.0f} | {us(k)} |")
            else:
                print(f"| {b} | {cx} | refused: {s.get('refused')} | — | — | {us(k)} |")


if __name__ == "__main__":
    sys.exit(main())
