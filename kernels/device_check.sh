#!/usr/bin/env bash
# Everything of the kernels that needs a GPU, in one call that fits 8 minutes by its own plan:
# each phase runs under its own time limit, the limits sum to at most 480 s, and results.md is
# rewritten after every phase, so a run cut short still reports what it measured.
#
#   phase       budget  what
#   deps          10 s  unpack GoogleTest and Google Benchmark from .devdeps/*.deb
#   build        150 s  configure and build kernels/ alone for sm_90 (tests and benchmark only)
#   targets       45 s  the five benchmark points the H200 targets are read from, into targets.json
#   tests         80 s  CPU reference tests and the GPU tests, sharded over every CPU core (each
#                       shard computes its own CPU references in parallel with the others)
#   sanitizers    60 s  compute-sanitizer memcheck and racecheck on a filtered subset of the tests
#   grid         100 s  the trimmed benchmark grid (about 50 points), into grid.json
#   sdpa          35 s  PyTorch SDPA decode on the same shapes, targets' shape first
#
# Results go to $OUT (the device tool's folder) or ./device-out. GoogleTest and Google Benchmark
# come from .devdeps/*.deb when present (kernels/tools/fetch_device_deps.sh fills it here).
#
# Usage (device tool): kernels/device_check.sh, with carry [".devdeps"] and timeout_s 540.
#   --dry-run        go through every phase with the GPU parts skipped (benchmarks list their
#                    points, sanitizers and SDPA are skipped), then check that the report has
#                    every section and the plan fits 480 s; runs here, without a GPU
#   --prebuilt DIR   use kernels_ref_tests, kernels_gpu_tests and kvfleet-kernel-bench from DIR
#                    instead of building (the build phase is recorded as skipped)
#   --plan           print the plan and its total, and exit
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${OUT:-$root/device-out}"
build="${KVFLEET_DEVICE_BUILD:-/tmp/kvfleet-kernels}"
dry=0
prebuilt=""
plan_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry=1 ;;
    --prebuilt)
      if [ $# -lt 2 ]; then
        echo "device_check.sh: --prebuilt needs the folder of the built programs" >&2
        exit 2
      fi
      prebuilt="$2"
      for p in kernels_ref_tests kernels_gpu_tests kvfleet-kernel-bench; do
        if [ ! -x "$prebuilt/$p" ]; then
          echo "device_check.sh: --prebuilt $prebuilt: no program $p there" >&2
          exit 2
        fi
      done
      shift ;;
    --plan) plan_only=1 ;;
    *) echo "device_check.sh: unknown argument '$1' (see the header for usage)" >&2; exit 2 ;;
  esac
  shift
done

phases=(deps build targets tests sanitizers grid sdpa)
declare -A budget=([deps]=10 [build]=150 [targets]=45 [tests]=80 [sanitizers]=60 [grid]=100 [sdpa]=35)
plan_total=0
for p in "${phases[@]}"; do plan_total=$((plan_total + budget[$p])); done
if [ "$plan_only" = 1 ]; then
  for p in "${phases[@]}"; do printf '%-11s %4d s\n' "$p" "${budget[$p]}"; done
  printf '%-11s %4d s (limit 480 s)\n' total "$plan_total"
  [ "$plan_total" -le 480 ]
  exit
fi

mkdir -p "$out"
export root out build deps=/tmp/kvfleet-deps PYTHONUNBUFFERED=1
rm -f "$out"/phases.tsv "$out"/tests-*.txt "$out"/sanitizer-*.txt "$out"/results.md
start=$(date +%s)
log() { echo "[device_check +$(( $(date +%s) - start ))s] $*" | tee -a "$out/log.txt"; }
report() {
  python3 "$root/kernels/tools/kernel_report.py" "$out" > "$out/results.md.part" 2>> "$out/log.txt" &&
    mv "$out/results.md.part" "$out/results.md"
}
# record PHASE STATUS SECONDS NOTE: one line of phases.tsv, then the report again.
record() {
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${budget[$1]}" "$4" >> "$out/phases.tsv"
  log "phase $1: $2 in $3 s${4:+ ($4)}"
  report
}
# phase NAME COMMAND...: runs COMMAND (a program, or a function of this script) under the
# phase's time limit, which stops its whole process group, and records how it ended.
phase() {
  local name="$1"
  shift
  local t0=$(date +%s)
  if declare -F "$1" > /dev/null; then
    timeout --signal=TERM --kill-after=5 "${budget[$name]}" \
      bash -c "$(declare -f "$1"); $(printf '%q ' "$@")" >> "$out/log.txt" 2>&1
  else
    timeout --signal=TERM --kill-after=5 "${budget[$name]}" "$@" >> "$out/log.txt" 2>&1
  fi
  local rc=$?
  local status="ok"
  [ "$rc" -ne 0 ] && status="failed (exit $rc)"
  [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && status="cut at its limit"
  record "$name" "$status" "$(( $(date +%s) - t0 ))" "${phase_note:-}"
  phase_note=""
  return "$rc"
}
skip() { record "$1" "skipped" 0 "$2"; }

log "plan: ${plan_total} s in ${#phases[@]} phases (limit 480 s)$([ "$dry" = 1 ] && echo '; dry run')"
{ nvidia-smi; nvcc --version; } > "$out/nvidia-smi.txt" 2>&1 || true

# deps
unpack() {
  mkdir -p "$deps"
  for f in "$root"/.devdeps/*.deb; do dpkg -x "$f" "$deps" || return 1; done
}
if [ -n "$prebuilt" ]; then
  skip deps "prebuilt binaries from $prebuilt"
elif compgen -G "$root/.devdeps/*.deb" > /dev/null; then
  phase_note="$(ls "$root"/.devdeps/*.deb | wc -l) packages"
  phase deps unpack
  export CMAKE_PREFIX_PATH="$deps/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
  skip deps "no .devdeps: GoogleTest and Google Benchmark must be installed"
fi

# build
if [ -n "$prebuilt" ]; then
  bin="$prebuilt"
  skip build "prebuilt"
else
  bin="$build/bin"
  build_kernels() {
    local gen=()
    command -v ninja > /dev/null && gen=(-G Ninja)
    cmake -S "$root/kernels" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DKVFLEET_CUDA_ARCHITECTURES=90-real &&
      cmake --build "$build" -j "$(nproc)" --target kernels_ref_tests kernels_gpu_tests \
        kvfleet-kernel-bench
  }
  if ! phase build build_kernels; then
    log "build failed; see log.txt"
    exit 1
  fi
fi

# bench PHASE GRID FILE: one benchmark grid into FILE.json (a dry run lists its points).
bench() {
  if [ "$dry" = 1 ]; then
    local n
    n=$("$bin/kvfleet-kernel-bench" --grid="$2" --benchmark_list_tests=true 2>/dev/null | wc -l)
    skip "$1" "dry run: $n points listed"
  else
    phase "$1" "$bin/kvfleet-kernel-bench" --grid="$2" --benchmark_out="$out/$3.json" \
      --benchmark_out_format=json --benchmark_format=console
  fi
}

bench targets targets targets

export bin
# tests: the CPU reference tests beside the GPU tests in one shard per core
shards=$(nproc)
[ "$shards" -gt 16 ] && shards=16
export shards dry
run_tests() {
  # A dry run checks the script's flow, not the kernels (ctest runs the reference tests in full):
  # one eighth of the reference tests, so that it fits its 80 s on a loaded machine as well.
  local ref_shards=1
  [ "$dry" = 1 ] && ref_shards=8
  GTEST_TOTAL_SHARDS=$ref_shards GTEST_SHARD_INDEX=0 "$bin/kernels_ref_tests" --gtest_brief=1 \
    > "$out/tests-ref.txt" 2>&1 &
  local pids=($!)
  for ((i = 0; i < shards; ++i)); do
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i "$bin/kernels_gpu_tests" --gtest_brief=1 \
      > "$out/tests-gpu-$i.txt" 2>&1 &
    pids+=($!)
  done
  local rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  return $rc
}
phase_note="$shards GPU test shards$([ "$dry" = 1 ] && echo ', no GPU: GPU cases skip')"
phase tests run_tests
tests_rc=$?

# sanitizers: a filtered subset (every kernel, two shapes, KV write), memcheck then racecheck
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
subset='AllShapes/GpuKernels.*/bf16_d128_b16_g4:AllShapes/GpuKernels.*/fp8_d64_b32_g8:AllDtypes/GpuKvWrite.*/0'
race_subset='AllShapes/GpuKernels.*/bf16_d128_b16_g4'
export sanitizer subset race_subset
sanitize() {
  local rc=0
  "$sanitizer" --tool memcheck --error-exitcode 1 "$bin/kernels_gpu_tests" --gtest_brief=1 \
    --gtest_filter="$subset" > "$out/sanitizer-memcheck.txt" 2>&1 || rc=1
  "$sanitizer" --tool racecheck --error-exitcode 1 "$bin/kernels_gpu_tests" --gtest_brief=1 \
    --gtest_filter="$race_subset" > "$out/sanitizer-racecheck.txt" 2>&1 || rc=1
  return $rc
}
if [ "$dry" = 1 ]; then
  skip sanitizers "dry run: memcheck on '$subset', racecheck on '$race_subset'"
elif [ ! -x "$sanitizer" ]; then
  skip sanitizers "compute-sanitizer not found"
else
  phase sanitizers sanitize
fi

bench grid trimmed grid

# sdpa
if [ "$dry" = 1 ]; then
  skip sdpa "dry run"
elif ! python3 -c 'import torch; assert torch.cuda.is_available()' 2> /dev/null; then
  skip sdpa "PyTorch with CUDA not available"
else
  phase sdpa python3 "$root/kernels/tools/sdpa_baseline.py" --out "$out/sdpa.json"
fi

report
log "done in $(( $(date +%s) - start )) s"
cat "$out/results.md"
if [ "$dry" = 1 ]; then
  # The dry run's own check: every phase recorded, every section written, the plan within 480 s.
  ok=1
  for p in "${phases[@]}"; do
    grep -q "^$p	" "$out/phases.tsv" || { echo "dry run: phase $p not recorded" >&2; ok=0; }
  done
  for h in "## Phases" "## Targets" "## Tests" "## compute-sanitizer" "## Benchmark grid"; do
    grep -q "^$h" "$out/results.md" || { echo "dry run: section '$h' missing" >&2; ok=0; }
  done
  [ "$plan_total" -le 480 ] || { echo "dry run: the plan takes $plan_total s" >&2; ok=0; }
  [ "$tests_rc" -eq 0 ] || { echo "dry run: the tests failed" >&2; ok=0; }
  [ "$ok" = 1 ] && echo "dry run: every phase went through; results.md complete; plan $plan_total s"
  [ "$ok" = 1 ]
  exit
fi
[ "$tests_rc" -eq 0 ]
