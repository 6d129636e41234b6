#!/usr/bin/python3
"""Fits per-operation roofline efficiencies to every public GPU profile, and measures how well
they carry over to a GPU or a model the fit has not seen (docs/validation.md, "A roofline fitted
from every public profile").

Run with Debian's python3 (numpy, scipy, pandas from apt: tools/debian-packages.txt):

    /usr/bin/python3 calibration/tools/fit_roofline.py [--reference ../shared/reference] \
        [--json out.json]

Reads (each skipped with a message when absent), every time in the files' own units:
  profiles/llmservingsim/<GPU>/<org>/<model>/bf16/tp<N>/{dense,per_sequence,attention}.csv
      (casys-kaist/LLMServingSim; one transformer layer, microseconds)
  profiles/vidur/profiling/compute/<gpu>/<org>/<model>/mlp.csv   (microsoft/vidur; milliseconds)
  profiles/frontier/profiling/compute/a800/.../{mlp,attention}.csv (Frontier; Vidur's format)
Left out: frontier's h800 `linear_op.csv` example, whose times do not shrink with tensor
parallelism (a floor of about 24 us at every degree: launch and host time, not the GEMM).

Models, per GPU, against the datasheet's dense bf16 rate P and memory bandwidth B:
  linear layer (m tokens, n outputs, k inputs):
      t = t0 + max(2mnk / (P * ec * m / (m + m_half)), 2(nk + mk + mn) / (B * em))
  decode attention (per layer): t = t0_att + KV bytes read / (B * ea_mem)
  prefill attention (per layer): t = t0_att + 4 * heads * head_dim * (query, key) pairs / (P * ea_flop)
A GPU the fit has not seen takes the median of the others' parameters ("leave one GPU out"); a
model takes its GPU's parameters fitted on the other models ("leave one model out").
"""
import argparse
import glob
import json
import os
import sys

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

# Dense (no sparsity) bf16 tensor rate with fp32 accumulation and memory bandwidth, from the
# vendors' datasheets (the same figures as kvfleet's GPU presets where there is one).
DATASHEET = {
    "A100": (312e12, 2039e9, "A100-80GB preset; NVIDIA A100 datasheet"),
    "A40": (149.7e12, 696e9, "NVIDIA A40 datasheet (149.7 TFLOP/s bf16 dense, 696 GB/s)"),
    "A800": (312e12, 2039e9, "NVIDIA A800 80GB: the A100's compute and memory"),
    "H100": (989.4e12, 3350e9, "H100-SXM preset; NVIDIA H100 datasheet"),
    "RTX4090": (165.2e12, 1008e9, "RTX-4090 preset; NVIDIA Ada whitepaper"),
    "RTXPRO6000": (503.8e12, 1597e9, "RTX-PRO-6000 preset; NVIDIA RTX PRO 6000 Blackwell datasheet"),
}
LSS_GPU = {"RTX4090": "RTX4090", "RTXPRO6000": "RTXPRO6000"}


def profile_rows(ref, extra_lss=()):
    """Every operation of every public profile: linear layers, the small per-token kernels
    (norms, rotary, activation, embedding), the sampler, and attention."""
    rows, small, sampler, attn = [], [], [], []

    def add(gpu, src, model, tp, op, m, n, k, t):
        if t > 0 and m > 0:
            rows.append(dict(gpu=gpu, src=src, model=model, tp=tp, op=op, m=m, n=n, k=k, t=t))

    # LLMServingSim bundles: the profiled (possibly reduced) model's shapes from meta.yaml.
    import yaml
    metas = sorted(glob.glob(os.path.join(ref, "profiles/llmservingsim/*/*/*/*/meta.yaml")))
    for root in extra_lss:
        metas += sorted(glob.glob(os.path.join(root, "*/*/*/*/meta.yaml")))
    seen = set()
    for meta in metas:
        key = tuple(meta.split(os.sep)[-5:])
        if key in seen:  # the same bundle in the reference and in LLMServingSim's repository
            continue
        seen.add(key)
        y = yaml.safe_load(open(meta))
        gpu = LSS_GPU.get(y.get("hardware"))
        if gpu is None:
            continue
        shapes = shapes_of_bundle(y)
        if shapes is None:
            print(f"fit: {meta}: model shapes unknown, skipped", file=sys.stderr)
            continue
        model = y["model"].split("/")[-1]
        for tpdir in sorted(glob.glob(os.path.join(os.path.dirname(meta), "tp*"))):
            tp = int(os.path.basename(tpdir)[2:])
            H, heads, kv, hd, inter, vocab, moe = shapes
            ops = {"qkv_proj": ((heads + 2 * kv) * hd // tp, H), "o_proj": (H, heads * hd // tp)}
            if not moe:
                ops["gate_up_proj"] = (2 * inter // tp, H)
                ops["down_proj"] = (H, inter // tp)
            d = pd.read_csv(os.path.join(tpdir, "dense.csv"))
            for op, (n, k) in ops.items():
                for r in d[d.layer == op].itertuples():
                    add(gpu, "llmservingsim", model, tp, op, r.tokens, n, k, r.time_us * 1e-6)
            p = pd.read_csv(os.path.join(tpdir, "per_sequence.csv"))
            for r in p[p.layer == "lm_head"].itertuples():
                add(gpu, "llmservingsim", model, tp, "lm_head", r.sequences, vocab // tp, H,
                    r.time_us * 1e-6)
            for r in p[p.layer == "sampler"].itertuples():
                sampler.append(dict(gpu=gpu, model=model, tp=tp, S=r.sequences, V=vocab // tp,
                                    t=r.time_us * 1e-6))
            width = {"layernorm": H, "final_layernorm": H, "embedding": H,
                     "rotary_emb": (heads + kv) * hd // tp, "qk_norm": (heads + kv) * hd // tp,
                     "act_fn": inter // tp}
            for layer, kind in (("layernorm", "norm"), ("final_layernorm", "norm"),
                                ("embedding", "embedding"), ("rotary_emb", "rotary"),
                                ("qk_norm", "qk_norm"), ("act_fn", "act")):
                if kind == "act" and moe:
                    continue
                for r in d[d.layer == layer].itertuples():
                    small.append(dict(gpu=gpu, src="llmservingsim", model=model, tp=tp,
                                      kind=kind, T=r.tokens, width=width[layer],
                                      t=r.time_us * 1e-6))
            a = pd.read_csv(os.path.join(tpdir, "attention.csv"))
            for r in a.itertuples():
                attn.append(dict(gpu=gpu, model=model, tp=tp, heads=heads // tp,
                                 kvh=max(1, kv // tp), hd=hd, chunk=r.prefill_chunk,
                                 prefix=r.kv_prefill, n=r.n_decode, kv=r.kv_decode,
                                 t=r.time_us * 1e-6))

    def vidur(gpu, path, model, src):
        d = pd.read_csv(path)
        tpcol = "num_tensor_parallel_workers" if "num_tensor_parallel_workers" in d else None
        for r in d.itertuples():
            H, heads, kv = r.n_embd, r.n_head, r.n_kv_head
            tp = getattr(r, tpcol) if tpcol else 1
            hd, inter = H // heads, r.n_expanded_embd
            gated = str(r.use_gated_mlp) == "True"
            ops = {"attn_pre_proj": ((heads + 2 * kv) * hd // tp, H),
                   "attn_post_proj": (H, heads * hd // tp),
                   "mlp_up_proj": ((2 if gated else 1) * inter // tp, H),
                   "mlp_down_proj": (H, inter // tp)}
            for op, (n, k) in ops.items():
                c = f"time_stats.{op}.median"
                v = d.at[r.Index, c] if c in d.columns else np.nan
                if np.isfinite(v):
                    add(gpu, src, model, tp, op, r.num_tokens, n, k, v * 1e-3)
            widths = {"input_layernorm": ("norm", H), "post_attention_layernorm": ("norm", H),
                      "emb": ("embedding", H), "attn_rope": ("rotary", (heads + kv) * hd // tp),
                      "mlp_act": ("act", inter // tp)}
            for op, (kind, width) in widths.items():
                c = f"time_stats.{op}.median"
                v = d.at[r.Index, c] if c in d.columns else np.nan
                if np.isfinite(v) and v > 0:
                    small.append(dict(gpu=gpu, src=src, model=model, tp=tp, kind=kind,
                                      T=r.num_tokens, width=width, t=v * 1e-3))

    for f in sorted(glob.glob(os.path.join(ref, "profiles/vidur/profiling/compute/*/*/*/mlp.csv"))):
        parts = f.split(os.sep)
        vidur(parts[-4].upper(), f, parts[-2], "vidur")
    a800 = os.path.join(ref, "profiles/frontier/profiling/compute/a800/meta-llama/Llama-2-7b-hf/mlp.csv")
    if os.path.exists(a800):
        vidur("A800", a800, "Llama-2-7b-hf", "frontier")
    fa = os.path.join(os.path.dirname(a800), "attention.csv")
    if os.path.exists(fa):
        d = pd.read_csv(fa)
        for r in d.itertuples():
            tp = r.num_tensor_parallel_workers
            heads, kvh, hd = r.n_q_head // tp, max(1, r.n_kv_head // tp), r.n_embd // r.n_q_head
            if str(r.is_prefill) == "True":
                t = d.at[r.Index, "time_stats.attn_prefill.median"]
                attn.append(dict(gpu="A800", model="Llama-2-7b-hf", tp=tp, heads=heads, kvh=kvh,
                                 hd=hd, chunk=r.prefill_chunk_size, prefix=r.kv_cache_size, n=0,
                                 kv=0, t=t * 1e-3))
            else:
                t = d.at[r.Index, "time_stats.attn_decode.median"]
                attn.append(dict(gpu="A800", model="Llama-2-7b-hf", tp=tp, heads=heads, kvh=kvh,
                                 hd=hd, chunk=0, prefix=0, n=r.batch_size, kv=r.kv_cache_size,
                                 t=t * 1e-3))
    frames = dict(gemm=pd.DataFrame(rows), small=pd.DataFrame(small),
                  sampler=pd.DataFrame(sampler), attn=pd.DataFrame(attn))
    for k in ("small", "sampler", "attn"):
        if len(frames[k]):
            frames[k] = frames[k][frames[k].t > 0]
    return frames


def shapes_of_bundle(y):
    """(hidden, heads, kv heads, head dim, intermediate, vocab, moe) of the full model (its
    published config.json). The profiler runs one layer, and emulates tensor parallelism on one
    GPU by shrinking heads, intermediate size and vocabulary (meta.yaml's hf_overrides show the
    last degree it profiled): folder tpN holds the shapes of the full model divided by N."""
    known = {  # the published config.json values (kvfleet's presets)
        "meta-llama/Llama-3.1-8B": dict(hidden_size=4096, num_attention_heads=32,
                                        num_key_value_heads=8, head_dim=128,
                                        intermediate_size=14336, vocab_size=128256, moe=False),
        "Qwen/Qwen3-32B": dict(hidden_size=5120, num_attention_heads=64, num_key_value_heads=8,
                               head_dim=128, intermediate_size=25600, vocab_size=151936,
                               moe=False),
        "Qwen/Qwen3-30B-A3B-Instruct-2507": dict(hidden_size=2048, num_attention_heads=32,
                                                 num_key_value_heads=4, head_dim=128,
                                                 intermediate_size=6144, vocab_size=151936,
                                                 moe=True),
    }
    c = known.get(y.get("model"))
    if c is None:
        return None
    return (c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"],
            c["intermediate_size"], c["vocab_size"], c["moe"])


def gemm_pred(p, d, P, B):
    ec, mh, em, t0 = p
    m, n, k = d.m.values, d.n.values, d.k.values
    flops, nbytes = 2.0 * m * n * k, 2.0 * (n * k + m * k + m * n)
    return t0 + np.maximum(flops / (P * ec * m / (m + mh)), nbytes / (B * em))


def fit_gemm(d, P, B):
    # Every measured curve (model, degree, operation) weighs the same.
    w = 1 / np.sqrt(d.groupby(["model", "tp", "op"]).m.transform("size").values)
    f = lambda p: w * np.log(gemm_pred(p, d, P, B) / d.t.values)
    best = None
    for x0 in ([0.7, 32, 0.8, 4e-6], [0.9, 64, 0.9, 2e-6], [0.5, 16, 0.6, 6e-6]):
        r = least_squares(f, x0, bounds=([0.05, 0, 0.05, 0], [1.5, 4096, 1.5, 5e-5]))
        if best is None or r.cost < best.cost:
            best = r
    return best.x


def fit_gemm_flat(d, P, B):
    """The roofline's own form: constant efficiencies, no launch time, no small-batch falloff."""
    w = 1 / np.sqrt(d.groupby(["model", "tp", "op"]).m.transform("size").values)
    f = lambda p: w * np.log(gemm_pred([p[0], 0, p[1], 0], d, P, B) / d.t.values)
    r = least_squares(f, [0.7, 0.85], bounds=([0.05, 0.05], [1.5, 1.5]))
    return np.array([r.x[0], 0, r.x[1], 0])


def fit_log(model, x0, lo, hi, d):
    """Least squares on log time, every (model, degree) curve weighing the same."""
    keys = [k for k in ("model", "tp", "kind") if k in d.columns]
    w = 1 / np.sqrt(d.groupby(keys).t.transform("size").values)
    f = lambda p: w * np.log(model(p, d) / d.t.values)
    return least_squares(f, x0, bounds=(lo, hi)).x


def small_pred(p, d, B):
    t0, c = p
    return t0 + c * d["T"].values * d.width.values * 2.0 / B


def sampler_pred(p, d, B):
    a, c = p
    return a + c * d.S.values * d.V.values * 4.0 / B


def attn_parts(d):
    kvb = 2.0 * d.kvh.values * d.hd.values * 2  # bytes of one token's K and V, one layer
    pairs = d.chunk.values * d.prefix.values + 0.5 * d.chunk.values * (d.chunk.values + 1)
    flops = 4.0 * d.heads.values * d.hd.values * pairs
    pbytes = (d.prefix.values + d.chunk.values) * kvb
    dbytes = d.n.values * d.kv.values * kvb
    return flops, pbytes, dbytes


def attn_pred(p, d, P, B):
    """One kernel serves the step's prefill chunk and decode sequences (vLLM's FlashAttention):
    t0 + the prefill's max(FLOPs, its prefix's KV bytes) + the decodes' bytes and per-sequence
    time; decode and prefill read KV at their own efficiencies (ea, ea_prefix)."""
    t0, ts, ea, eap, eak = p
    flops, pbytes, dbytes = attn_parts(d)
    pre = np.where(d.chunk.values > 0, np.maximum(flops / (P * eap), pbytes / (B * eak)), 0)
    dec = d.n.values * ts + dbytes / (B * ea)
    return t0 + pre + dec


def family_table(name, frames, fit, pred, keys, fmt):
    """Fits `fit(d, gpu)` per GPU; prints own and leave-one-GPU-out errors (median of the
    others' parameters); returns {gpu: params}."""
    fits = {g: fit(d, g) for g, d in frames.groupby("gpu")}
    print(f"\n{name}:")
    print("| GPU | points | " + " | ".join(keys) + " | own fit | GPU left out |")
    print("|---|---|" + "---|" * len(keys) + "---|---|")
    res = {}
    for g, d in frames.groupby("gpu"):
        own = ape(pred(fits[g], d, g), d.t.values)
        others = [fits[h] for h in fits if h != g]
        logo = ape(pred(np.median(others, axis=0), d, g), d.t.values) if others else (np.nan, np.nan)
        vals = " | ".join(f(v) for f, v in zip(fmt, fits[g]))
        lo = f"{100*logo[0]:.1f}% / {100*logo[1]:.1f}%" if others else "no other GPU"
        print(f"| {g} | {len(d)} | {vals} | {100*own[0]:.1f}% / {100*own[1]:.1f}% | {lo} |")
        res[g] = dict(params=[float(x) for x in fits[g]], error_median=own[0], error_mean=own[1],
                      logo_error_median=float(logo[0]), logo_error_mean=float(logo[1]))
    return res


# kvfleet's GPU preset each fitted GPU is (sim/model/presets.cpp); the others keep their name.
PRESET = {"A100": "A100-80GB", "H100": "H100-SXM", "RTX4090": "RTX-4090",
          "RTXPRO6000": "RTX-PRO-6000"}


def ridge(g):
    """The datasheet's ridge point, bf16 FLOP/s over memory bytes/s."""
    P, B, _ = DATASHEET[g]
    return P / B


def gemm_median(fits, g):
    """What a GPU left out gets (sim/cost/fitted.cpp, fit_for): the median of the other GPUs'
    linear-layer fits, with the falloff m_half carried over as a fraction of each GPU's ridge
    point and scaled to this one's (a GPU with more compute per byte needs more tokens to fill
    it)."""
    others = [h for h in fits if h != g]
    p = np.median([fits[h] for h in others], axis=0)
    p[1] = np.median([fits[h][1] / ridge(h) for h in others]) * ridge(g)
    return p


def cpp_table(out, F):
    """kvfleet's table of public fits (sim/cost/public_fits.inc): one entry per GPU with what
    was fitted on it. Per-token kernels and the sampler only from vLLM's own kernels
    (LLMServingSim's bundles): Vidur's and Frontier's are PyTorch eager, several times slower."""
    D, small = F["gemm"], F["small"]
    lines = ["// Generated by calibration/tools/fit_roofline.py --emit-cpp sim/cost/public_fits.inc",
             "// from the public profiles in ../shared/reference (docs/validation.md, \"A roofline",
             "// fitted from every public profile\"); ctest fit_roofline fails when the profiles no",
             "// longer fit these numbers. Do not edit by hand.",
             "// Fields: ridge (the datasheet's bf16 FLOP/s over bytes/s); gemm {ec, m_half, em,",
             "// t0_s}; attention {t0_s, per_seq_s, ea, ea_flop, ea_prefix}; kernels {t0_s, c};",
             "// sampler {a_s, c}."]
    num = lambda v: f"{v:.4g}"
    def fit(v):
        return "{true, {" + ", ".join(num(x) for x in v) + "}}"
    for g in sorted(set(D.gpu) | set(small.gpu)):
        d = D[D.gpu == g]
        srcs = sorted(set(d.src))
        models = sorted(set(d.model))
        tps = sorted(set(int(x) for x in d.tp))
        source = (f"{'+'.join(srcs)} {g}: {len(models)} model{'s' if len(models) != 1 else ''}, "
                  f"TP {tps[0]}" + (f"-{tps[-1]}" if len(tps) > 1 else ""))
        parts = [f'.name = "{PRESET.get(g, g)}"', f'.source = "{source}"',
                 f".ridge = {num(ridge(g))}"]
        if g in out["gemm"]:
            v = out["gemm"][g]
            parts.append(".gemm = " + fit([v["ec"], v["m_half"], v["em"], v["t0_s"]]))
        for kind in ("decode", "prefill", "mixed"):
            v = out.get("attention_" + kind, {}).get(g)
            if v:
                parts.append(f".attention_{kind} = " + fit(v["params"]))
        vllm = set(small[(small.gpu == g) & (small.src == "llmservingsim")].kind)
        for kind in ("norm", "rotary", "act", "embedding", "qk_norm"):
            v = out["small"].get(kind, {}).get(g)
            if v and kind in vllm:
                parts.append(f".{kind} = " + fit(v["params"]))
        v = out["sampler"].get(g)
        if v:
            parts.append(".sampler = " + fit(v["params"]))
        lines.append("{" + ",\n ".join(parts) + "},")
    return "\n".join(lines) + "\n"


def compare_tables(a, b, rtol=2e-3):
    """'' when the two tables say the same (numbers within rtol), else what differs."""
    import re
    pat = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
    na, nb = pat.findall(a), pat.findall(b)
    if pat.sub("#", a) != pat.sub("#", b) or len(na) != len(nb):
        return "other entries or fields"
    worst = max((abs(float(x) / float(y) - 1) if float(y) else abs(float(x))
                 for x, y in zip(na, nb)), default=0)
    return f"numbers differ by up to {100 * worst:.2g}%" if worst > rtol else ""


def ape(pred, t):
    e = np.abs(pred / t - 1)
    return float(np.median(e)), float(np.mean(e))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference", default=os.path.join(os.path.dirname(__file__), "../../../shared/reference"))
    ap.add_argument("--json", help="write the fitted parameters and errors here")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless the fit still holds what docs/validation.md says (ctest "
                         "fit_roofline); 77 when the reference is absent")
    ap.add_argument("--llmservingsim", action="append", default=[],
                    help="also read the bundles of this folder (LLMServingSim's profiler/perf: "
                         "<GPU>/<org>/<model>/<variant>/meta.yaml)")
    ap.add_argument("--emit-cpp", metavar="FILE",
                    help="write the fitted parameters as kvfleet's table of public fits "
                         "(sim/cost/public_fits.inc, read by the `fitted` cost model)")
    a = ap.parse_args()
    if not os.path.isdir(os.path.join(a.reference, "profiles")):
        print(f"fit: {a.reference}/profiles is absent: nothing to fit", file=sys.stderr)
        return 77 if a.check else 2
    F = profile_rows(a.reference, a.llmservingsim)
    D = F["gemm"]
    out = {"gemm": {}, "gemm_logo": {}, "gemm_lomo": {}}
    print("Linear layers: points per GPU and source")
    print(D.groupby(["gpu", "src"]).size().to_string())
    fits = {}
    print("\n| GPU | curves | points | ec | m_half | em | t0 (us) | error, own fit (median / mean) | leave this GPU out (median / mean) | kvfleet's datasheet roofline today |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for g, d in D.groupby("gpu"):
        P, B, _ = DATASHEET[g]
        fits[g] = fit_gemm(d, P, B)
    for g, d in D.groupby("gpu"):
        P, B, _ = DATASHEET[g]
        own = ape(gemm_pred(fits[g], d, P, B), d.t.values)
        others = gemm_median(fits, g)
        logo = ape(gemm_pred(others, d, P, B), d.t.values)
        # kvfleet's roofline before this fit: 70% of the FLOP rate, 85% of the bandwidth.
        today = ape(gemm_pred([0.7, 0, 0.85, 0], d, P, B), d.t.values)
        curves = d.groupby(["model", "tp", "op"]).ngroups
        ec, mh, em, t0 = fits[g]
        print(f"| {g} | {curves} | {len(d)} | {ec:.3f} | {mh:.0f} | {em:.3f} | {t0*1e6:.1f} | "
              f"{100*own[0]:.1f}% / {100*own[1]:.1f}% | {100*logo[0]:.1f}% / {100*logo[1]:.1f}% | "
              f"{100*today[0]:.1f}% / {100*today[1]:.1f}% |")
        out["gemm"][g] = dict(ec=ec, m_half=mh, em=em, t0_s=t0, error_median=own[0], error_mean=own[1])
        out["gemm_logo"][g] = dict(error_median=logo[0], error_mean=logo[1])
    print("\nThe roofline's own form (constant efficiencies: kvfleet's `roofline` cost model):")
    print("| GPU | flop efficiency | memory efficiency | error, own fit (median / mean) | leave this GPU out: efficiencies | error |")
    print("|---|---|---|---|---|---|")
    flat = {}
    for g, d in D.groupby("gpu"):
        P, B, _ = DATASHEET[g]
        flat[g] = fit_gemm_flat(d, P, B)
    for g, d in D.groupby("gpu"):
        P, B, _ = DATASHEET[g]
        own = ape(gemm_pred(flat[g], d, P, B), d.t.values)
        others = np.median([flat[h] for h in flat if h != g], axis=0)
        logo = ape(gemm_pred(others, d, P, B), d.t.values)
        print(f"| {g} | {flat[g][0]:.3f} | {flat[g][2]:.3f} | {100*own[0]:.1f}% / {100*own[1]:.1f}% | "
              f"{others[0]:.3f} / {others[2]:.3f} | {100*logo[0]:.1f}% / {100*logo[1]:.1f}% |")
        out.setdefault("flat", {})[g] = dict(flop_efficiency=flat[g][0], memory_efficiency=flat[g][2],
                                             error_median=own[0], error_mean=own[1],
                                             logo_flop_efficiency=others[0],
                                             logo_memory_efficiency=others[2],
                                             logo_error_median=logo[0], logo_error_mean=logo[1])
    med = np.median([flat[h] for h in flat], axis=0)
    print(f"| median of all | {med[0]:.3f} | {med[2]:.3f} | | | |")
    out.setdefault("flat", {})["median"] = dict(flop_efficiency=med[0], memory_efficiency=med[2])

    # The small per-token kernels, one fit per kind and GPU: t = t0 + c × tokens × width × 2 / B.
    small = F["small"]
    out["small"] = {}
    for kind, dk in small.groupby("kind"):
        out["small"][kind] = family_table(
            f"Per-token kernel '{kind}': t = t0 + c x tokens x width x 2 bytes / B", dk,
            lambda d, g: fit_log(lambda p, d: small_pred(p, d, DATASHEET[g][1]), [3e-6, 2],
                                 [0, 0.01], [1e-4, 100], d),
            lambda p, d, g: small_pred(p, d, DATASHEET[g][1]), ["t0", "c"],
            [lambda v: f"{v*1e6:.2f} us", lambda v: f"{v:.2f}"])
    out["sampler"] = family_table(
        "Sampler (per step): t = a + c x sequences x vocabulary x 4 bytes / B", F["sampler"],
        lambda d, g: fit_log(lambda p, d: sampler_pred(p, d, DATASHEET[g][1]), [2e-5, 2],
                             [0, 0.01], [1e-2, 1000], d),
        lambda p, d, g: sampler_pred(p, d, DATASHEET[g][1]), ["a", "c"],
        [lambda v: f"{v*1e6:.1f} us", lambda v: f"{v:.2f}"])
    A = F["attn"]
    kinds = np.where(A.chunk > 0, np.where(A.n > 0, "mixed", "prefill"), "decode")
    for kind in ("decode", "prefill", "mixed"):
        Ak = A[kinds == kind]
        if not len(Ak):
            continue
        out["attention_" + kind] = family_table(
            f"Attention per layer, {kind} batches only", Ak,
            lambda d, g: fit_log(lambda p, d: attn_pred(p, d, *DATASHEET[g][:2]),
                                 [5e-6, 1e-7, 0.8, 0.5, 0.5], [0, 0, 0.05, 0.02, 0.01],
                                 [1e-3, 1e-4, 5, 1.5, 5], d),
            lambda p, d, g: attn_pred(p, d, *DATASHEET[g][:2]),
            ["t0", "ts", "ea", "ea_flop", "ea_prefix"],
            [lambda v: f"{v*1e6:.1f} us", lambda v: f"{v*1e9:.0f} ns", lambda v: f"{v:.3f}",
             lambda v: f"{v:.3f}", lambda v: f"{v:.3f}"])
    out["attention"] = family_table(
        "Attention per layer: t = t0 + max(FLOPs / (P ea_flop), prefill KV / (B ea_prefix)) + "
        "decodes x ts + decode KV / (B ea)", F["attn"],
        lambda d, g: fit_log(lambda p, d: attn_pred(p, d, *DATASHEET[g][:2]),
                             [5e-6, 1e-7, 0.8, 0.5, 0.5], [0, 0, 0.05, 0.02, 0.01],
                             [1e-3, 1e-4, 5, 1.5, 5], d),
        lambda p, d, g: attn_pred(p, d, *DATASHEET[g][:2]),
        ["t0", "ts", "ea", "ea_flop", "ea_prefix"],
        [lambda v: f"{v*1e6:.1f} us", lambda v: f"{v*1e9:.0f} ns", lambda v: f"{v:.3f}",
         lambda v: f"{v:.3f}", lambda v: f"{v:.3f}"])

    print("\nLeave one model out (GPUs with more than one model):")
    print("| GPU | model | error (median / mean) |")
    print("|---|---|---|")
    for g, d in D.groupby("gpu"):
        models = sorted(d.model.unique())
        if len(models) < 2:
            continue
        P, B, _ = DATASHEET[g]
        for mo in models:
            p = fit_gemm(d[d.model != mo], P, B)
            dm = d[d.model == mo]
            e = ape(gemm_pred(p, dm, P, B), dm.t.values)
            print(f"| {g} | {mo} | {100*e[0]:.1f}% / {100*e[1]:.1f}% |")
            out["gemm_lomo"].setdefault(g, {})[mo] = dict(error_median=e[0], error_mean=e[1])
    if a.json:
        json.dump(out, open(a.json, "w"), indent=1, default=float)
    table = cpp_table(out, F)
    if a.emit_cpp:
        with open(a.emit_cpp, "w") as f:
            f.write(table)
    if a.check:
        shipped = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                               "../../sim/cost/public_fits.inc")
        diff = compare_tables(open(shipped).read(), table)
        if diff:
            print(f"fit: sim/cost/public_fits.inc is not what the profiles fit ({diff}); "
                  "regenerate it with --emit-cpp sim/cost/public_fits.inc", file=sys.stderr)
            return 1
        print("fit: sim/cost/public_fits.inc holds what the profiles fit")
        # What docs/validation.md reports: every GPU's own fit within 10% (median), the datacenter
        # GPUs within 10% when left out, and the two workstation cards not (the finding).
        bad = [g for g, v in out["gemm"].items() if v["error_median"] > 0.10]
        bad += [g + " left out" for g in ("A100", "A40", "A800", "H100")
                if out["gemm_logo"][g]["error_median"] > 0.10]
        bad += [g + " left out (expected > 30%)" for g in ("RTX4090",)
                if out["gemm_logo"][g]["error_median"] < 0.30]
        if bad:
            print("fit: no longer what docs/validation.md says: " + ", ".join(bad), file=sys.stderr)
            return 1
        print("fit: holds what docs/validation.md says")
    return 0


if __name__ == "__main__":
    sys.exit(main())
