#!/usr/bin/env bash
# Everything of the kernels that needs a GPU, in one call of under 8 minutes:
#   1. build kernels/ alone for sm_90 (no simulator dependencies needed),
#   2. run the CPU reference tests and the GPU tests against the references,
#   3. run kvfleet-kernel-bench's whole grid (JSON),
#   4. time PyTorch's scaled_dot_product_attention (flash backend) decoding over contiguous K/V
#      of the same shapes, in the same run,
#   5. write results.md: the issue's targets side by side, measured.
# Results go to $OUT (the device tool's folder) or ./device-out. GoogleTest and Google Benchmark
# come from .devdeps/*.deb when present (kernels/tools/fetch_device_deps.sh fills it here).
# Usage (device tool): kernels/device_check.sh, with carry [".devdeps"].
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${OUT:-$root/device-out}"
build="${KVFLEET_DEVICE_BUILD:-/tmp/kvfleet-kernels}"
mkdir -p "$out"
start=$(date +%s)
log() { echo "[device_check +$(( $(date +%s) - start ))s] $*" | tee -a "$out/log.txt"; }

deps=/tmp/kvfleet-deps
if compgen -G "$root/.devdeps/*.deb" > /dev/null; then
  mkdir -p "$deps"
  for f in "$root"/.devdeps/*.deb; do dpkg -x "$f" "$deps"; done
  export CMAKE_PREFIX_PATH="$deps/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  log "unpacked $(ls "$root"/.devdeps/*.deb | wc -l) packages from .devdeps"
fi

{ nvidia-smi; nvcc --version; } > "$out/nvidia-smi.txt" 2>&1
log "GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1)"

gen=()
command -v ninja > /dev/null && gen=(-G Ninja)
log "configure and build (sm_90)"
if ! cmake -S "$root/kernels" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
     -DKVFLEET_CUDA_ARCHITECTURES=90-real >> "$out/log.txt" 2>&1 ||
   ! cmake --build "$build" -j "$(nproc)" >> "$out/log.txt" 2>&1; then
  log "build failed; see log.txt"
  exit 1
fi
log "built"

log "tests"
timeout 240 "$build/bin/kernels_ref_tests" --gtest_brief=1 > "$out/tests.txt" 2>&1
ref_rc=$?
timeout 240 "$build/bin/kernels_gpu_tests" --gtest_brief=1 >> "$out/tests.txt" 2>&1
gpu_rc=$?
log "reference tests rc=$ref_rc, GPU tests rc=$gpu_rc: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/tests.txt" | tr '\n' ' ')"

log "kernel benchmark grid"
timeout 300 "$build/bin/kvfleet-kernel-bench" --benchmark_out="$out/kernel_bench.json" \
  --benchmark_out_format=json --benchmark_format=console > "$out/bench.txt" 2>&1
log "benchmark rc=$? ($(grep -c '"name"' "$out/kernel_bench.json" 2>/dev/null) points)"

log "PyTorch SDPA baseline"
PYTHONUNBUFFERED=1 timeout 120 python3 "$root/kernels/tools/sdpa_baseline.py" \
  --out "$out/sdpa.json" >> "$out/log.txt" 2>&1
log "sdpa rc=$?"

python3 "$root/kernels/tools/kernel_report.py" "$out/kernel_bench.json" "$out/sdpa.json" \
  "$out/nvidia-smi.txt" > "$out/results.md" 2>> "$out/log.txt"
log "report rc=$?"
cat "$out/results.md"
[ "$ref_rc" -eq 0 ] && [ "$gpu_rc" -eq 0 ]
