#!/usr/bin/env python3
"""The kernels' resources from ptxas, occupancy per SM and bytes in flight per SM, as markdown.

Compiles each kernel translation unit with nvcc --resource-usage for sm_80 and sm_90 (no GPU
needed), parses registers, spills, stack and shared memory per kernel, and computes from them the
CTAs that fit on one SM (registers, shared memory, threads, CTA slots) and, for decode, the bytes
each SM keeps in flight: every warp has one 4 KB chunk of K and V in flight while it computes the
previous one (cp.async double buffering), so CTAs/SM x 4 warps x 4 KB. That is compared with the
figure Little's law asks for to cover the memory latency: bandwidth x latency / SMs.

Usage: resource_table.py [--nvcc PATH] [--include DIR] [--out FILE]
(docs/kernels-resources.md is this script's output: python3 kernels/tools/resource_table.py
 --nvcc /usr/local/cuda/bin/nvcc --out docs/kernels-resources.md)
(run from the repository root; the include directory must hold the generated "kernels/" headers
of a configured build, by default build/include/kernels)."""
import argparse
import os
import re
import shutil
import subprocess
import sys

ARCHS = {
    # arch: (registers per SM, shared memory per SM usable by CTAs, max threads, max CTAs, reserved smem per CTA)
    "sm_80": (65536, 164 * 1024, 2048, 32, 1024),
    "sm_90": (65536, 228 * 1024, 2048, 32, 1024),
}
# Memory bandwidth, loaded latency and SM count of the GPUs the targets name.
GPUS = {
    "sm_80": ("A100 80GB SXM", 2.04e12, 600e-9, 108),
    "sm_90": ("H200 SXM", 4.8e12, 700e-9, 132),
}
THREADS = 128
STAGE_BYTES = 4096
WARPS = THREADS // 32

PAT_FN = re.compile(r"Function properties for (\S+)")
PAT_SPILL = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
PAT_USED = re.compile(r"Used (\d+) registers.*?(?:, (\d+) bytes smem)?$")


def demangle(names):
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True)
    return out.stdout.splitlines()


def compile_usage(nvcc, include, src, arch):
    cmd = [nvcc, "-I", include, "-O3", "-DNDEBUG", f"--generate-code=arch=compute_{arch[3:]},code=[{arch}]",
           "--expt-relaxed-constexpr", "-std=c++20", "-x", "cu", "-c", src, "-o", os.devnull,
           "--resource-usage"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"nvcc failed on {src}:\n{r.stderr}")
    rows = []
    cur = None
    for line in r.stderr.splitlines():
        m = PAT_FN.search(line)
        if m:
            cur = {"mangled": m.group(1)}
            rows.append(cur)
            continue
        if cur is None:
            continue
        m = PAT_SPILL.search(line)
        if m:
            cur["stack"], cur["spill_st"], cur["spill_ld"] = map(int, m.groups())
        m = PAT_USED.search(line)
        if m:
            cur["regs"] = int(m.group(1))
            sm = re.search(r"(\d+) bytes smem", line)
            cur["smem"] = int(sm.group(1)) if sm else 0
    names = demangle([r["mangled"] for r in rows])
    for r, n in zip(rows, names):
        r["name"] = n
    return [r for r in rows if "regs" in r]


def ctas_per_sm(arch, regs, smem, threads=THREADS):
    reg_sm, smem_sm, max_threads, max_ctas, reserved = ARCHS[arch]
    warps = threads // 32
    regs_per_warp = ((regs * 32 + 255) // 256) * 256
    by_regs = reg_sm // (regs_per_warp * warps)
    by_smem = smem_sm // (((smem + 127) // 128) * 128 + reserved) if smem else max_ctas
    by_threads = max_threads // threads
    return min(by_regs, by_smem, by_threads, max_ctas), by_regs, by_smem


def short(name):
    name = name.replace("kvfleet::kernels::cuda::", "").replace("__nv_", "")
    name = re.sub(r"\(.*\)$", "", name)
    return name


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nvcc", default="nvcc")
    ap.add_argument("--include", default="build/include/kernels")
    ap.add_argument("--out")
    a = ap.parse_args()
    if shutil.which(a.nvcc) is None:
        print(f"resource_table.py: --nvcc {a.nvcc}: no such program", file=sys.stderr)
        return 2
    if not os.path.isdir(os.path.join(a.include, "kernels")):
        print(f"resource_table.py: --include {a.include}: holds no kernels/ headers (configure a "
              "build first)", file=sys.stderr)
        return 2
    lines = []
    for arch in ARCHS:
        gpu, bw, lat, sms = GPUS[arch]
        need = bw * lat / sms
        lines.append(f"\n#### {arch} (in flight needed on {gpu}: {bw / 1e12:.2f} TB/s × "
                     f"{lat * 1e9:.0f} ns / {sms} SMs = {need / 1024:.1f} KB per SM)\n")
        lines.append("| kernel | registers | spills (st/ld bytes) | shared memory | CTAs/SM (by registers, by shared memory) | warps/SM | bytes in flight per SM |")
        lines.append("|---|---|---|---|---|---|---|")
        for dt in ("f16", "bf16", "fp8"):
            for kind in ("decode", "prefill"):
                src = f"kernels/cuda/{kind}_{dt}.cu"
                for r in compile_usage(a.nvcc, a.include, src, arch):
                    n = short(r["name"])
                    if "split_reduce" in n and dt != "bf16":
                        continue
                    threads = THREADS
                    # Dynamic shared memory, which ptxas does not see: prefill_smem_bytes and
                    # prefill_mma_smem_bytes.
                    m = re.match(r".*prefill_kernel<[^,]+, [^,]+, (\d+)>", n)
                    if m:
                        d = int(m.group(1))
                        r["smem"] += 4 * (32 * d + 32 * (d + 1) + 32 * 33 + 3 * 32)
                    m = re.match(r".*prefill_mma_kernel<[^,]+, [^,]+, (\d+)>", n)
                    if m:
                        d = int(m.group(1))
                        r["smem"] += 2 * (64 + 2 * 64) * (d + 8) + 8 * 64
                    ctas, by_r, by_s = ctas_per_sm(arch, r["regs"], r["smem"], threads)
                    flight = "—"
                    if "decode_kernel<" in n:
                        flight = f"{ctas * WARPS * STAGE_BYTES / 1024:.0f} KB"
                    lines.append(f"| `{n}` | {r['regs']} | {r.get('spill_st', 0)}/{r.get('spill_ld', 0)} | "
                                 f"{r['smem']} B | {ctas} ({by_r}, {by_s}) | {ctas * threads // 32} | {flight} |")
    text = "\n".join(lines) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    sys.exit(main())
