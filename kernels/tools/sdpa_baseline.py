#!/usr/bin/env python3
"""PyTorch's scaled_dot_product_attention decoding one query token per sequence over contiguous
K and V, for the shapes kernels/device_check.sh compares against kvfleet's kernels. Flash
backend (grouped-query through enable_gqa) when it accepts the inputs, else the backend that does,
named in the output. Timed with CUDA events, 10 calls between two events, rotating among copies
of K/V whose total exceeds the L2 cache three times; median of 20 such timings after warm-up."""
import argparse
import json
import math
import os
import statistics

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

SHAPES = [  # batch, context; Llama-3-8B attention: 32 query heads, 8 KV heads, head dim 128
    (1, 4096), (1, 32768), (8, 8192), (32, 4096), (64, 4096), (64, 8192), (128, 2048), (256, 1024),
]


def bench(batch, ctx, qh=32, kvh=8, hd=128, dtype=torch.bfloat16):
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 50 << 20)
    each = 2 * batch * ctx * kvh * hd * 2
    copies = max(1, min(8, math.ceil(3 * l2 / each)))
    kv = [(torch.randn(batch, kvh, ctx, hd, device="cuda", dtype=dtype),
           torch.randn(batch, kvh, ctx, hd, device="cuda", dtype=dtype)) for _ in range(copies)]
    q = torch.randn(batch, qh, 1, hd, device="cuda", dtype=dtype)
    result = {"batch": batch, "ctx": ctx, "qh": qh, "kvh": kvh, "hd": hd, "dtype": "bf16"}
    for name, backend, expand in (("flash", SDPBackend.FLASH_ATTENTION, False),
                                  ("efficient", SDPBackend.EFFICIENT_ATTENTION, False),
                                  ("flash (K/V expanded to all query heads)",
                                   SDPBackend.FLASH_ATTENTION, True)):
        try:
            pairs = kv
            if expand:
                pairs = [(k.repeat_interleave(qh // kvh, 1), v.repeat_interleave(qh // kvh, 1))
                         for k, v in kv]
            with sdpa_kernel(backend):
                def call(i):
                    k, v = pairs[i % len(pairs)]
                    return F.scaled_dot_product_attention(q, k, v, enable_gqa=not expand)
                for i in range(3):
                    call(i)
                torch.cuda.synchronize()
                times = []
                start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                i = 0
                for _ in range(20):
                    start.record()
                    for _ in range(10):
                        call(i)
                        i += 1
                    stop.record()
                    stop.synchronize()
                    times.append(start.elapsed_time(stop) / 10 * 1e-3)
            t = statistics.median(times)
            bytes_ = each * (qh // kvh if expand else 1) + 2 * batch * qh * hd * 2
            result.update(backend=name, seconds=t, us=t * 1e6, GBps=bytes_ / t / 1e9)
            return result
        except Exception as e:  # this backend refused the inputs: try the next
            result.setdefault("refused", []).append(f"{name}: {type(e).__name__}: {str(e)[:200]}")
        finally:
            torch.cuda.empty_cache()
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rows = []
    meta = {"torch": torch.__version__, "cuda": torch.version.cuda,
            "gpu": torch.cuda.get_device_name(0)}
    # The targets' shape first; the file is rewritten after every shape, so a run cut short by
    # its time limit still leaves what it measured.
    for b, c in sorted(SHAPES, key=lambda x: x != (64, 4096)):
        r = bench(b, c)
        print(json.dumps(r), flush=True)
        rows.append(r)
        with open(args.out + ".part", "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
        os.replace(args.out + ".part", args.out)


if __name__ == "__main__":
    main()
