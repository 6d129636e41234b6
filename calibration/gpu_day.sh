#!/usr/bin/env bash
# A GPU day in one call: on a machine with a GPU and nothing of kvfleet's dependencies installed,
#   1. unpack the Debian packages carried in .devdeps/ (calibration/tools/fetch_gpu_day_deps.sh
#      downloads them on a Debian machine beforehand),
#   2. build what calibration needs (kvfleet, kvfleet-calibrate, the kernels' tests),
#   3. check the CUDA kernels against the CPU references,
#   4. run the full calibration of a model (default Llama-3-8B) on this GPU,
#   5. replay on the new profile: the built-in default scenario, and the measured vLLM runs of
#      ../shared/reference/validation (when present) as they would run on this GPU,
#   6. write one report, report.md, with every step's result and time.
# Budget: at most 10 minutes on an H200 (build about 3, tests 1, calibration 5).
# Results go to $OUT (the device tool's folder) or ./gpu-day-out.
#
# Usage: calibration/gpu_day.sh [--cpu-dry-run] [--model MODEL] [--gpu GPU_PRESET]
#   --cpu-dry-run  no GPU: build without CUDA, skip the GPU kernel tests, calibrate with the CPU
#                  backend (--quick); checks the script end to end on any machine
#   --model        model preset to calibrate (default Llama-3-8B)
#   --gpu          the GPU preset of this machine, for the replays (default: guessed from
#                  nvidia-smi; H200-SXM when that fails)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${OUT:-$root/gpu-day-out}"
build="${KVFLEET_GPU_DAY_BUILD:-/tmp/kvfleet-gpu-day}"
cpu=0
model=Llama-3-8B
gpu=""
while [ $# -gt 0 ]; do
  case "$1" in
    --cpu-dry-run) cpu=1 ;;
    --model) model="$2"; shift ;;
    --gpu) gpu="$2"; shift ;;
    -h|--help) sed -n 2,20p "$0"; exit 0 ;;
    *) echo "gpu_day.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$out"
start=$(date +%s)
report="$out/report.md"
log() { echo "[gpu_day +$(( $(date +%s) - start ))s] $*" | tee -a "$out/log.txt"; }
step() {  # step NAME SECONDS COMMAND...: runs with a time limit, logs rc and duration
  local name="$1" limit="$2"; shift 2
  local t0=$(date +%s)
  timeout "$limit" "$@" >> "$out/log.txt" 2>&1
  local rc=$?
  echo "| $name | $rc | $(( $(date +%s) - t0 )) s |" >> "$out/steps.md"
  log "$name: rc=$rc in $(( $(date +%s) - t0 )) s"
  return $rc
}
: > "$out/steps.md"

# 1. Dependencies carried as .deb files, unpacked outside / (they could break the system).
deps=/tmp/kvfleet-gpu-day-deps
if compgen -G "$root/.devdeps/*.deb" > /dev/null; then
  mkdir -p "$deps"
  for f in "$root"/.devdeps/*.deb; do dpkg -x "$f" "$deps"; done
  export CMAKE_PREFIX_PATH="$deps/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export CPATH="$deps/usr/include${CPATH:+:$CPATH}"
  log "unpacked $(ls "$root"/.devdeps/*.deb | wc -l) packages from .devdeps"
fi

if [ "$cpu" -eq 0 ]; then
  { nvidia-smi; nvcc --version; } > "$out/nvidia-smi.txt" 2>&1
  log "GPU: $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>&1 | head -1)"
  if [ -z "$gpu" ]; then
    case "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)" in
      *H200*) gpu=H200-SXM ;; *H100*) gpu=H100-SXM ;; *A100*) gpu=A100-80GB ;;
      *B200*) gpu=B200 ;; *L40S*) gpu=L40S ;; *4090*) gpu=RTX-4090 ;;
      *"RTX PRO 6000"*) gpu=RTX-PRO-6000 ;; *) gpu=H200-SXM ;;
    esac
  fi
fi
[ -z "$gpu" ] && gpu=H200-SXM

# 2. Build: the simulator and calibration, no GUI, no MPI, no benchmarks.
gen=()
command -v ninja > /dev/null && gen=(-G Ninja)
cuda=ON
[ "$cpu" -eq 1 ] && cuda=OFF
targets=(kvfleet kvfleet-calibrate kernels_ref_tests)
[ "$cpu" -eq 0 ] && targets+=(kernels_gpu_tests)
step "configure" 120 cmake -S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DKVFLEET_WITH_CUDA=$cuda -DKVFLEET_WITH_GUI=OFF -DKVFLEET_WITH_MPI=OFF \
  -DKVFLEET_BUILD_BENCHMARKS=OFF -DKVFLEET_CUDA_ARCHITECTURES=native ||
  { log "configure failed; see log.txt"; exit 1; }
step "build" 420 cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" ||
  { log "build failed; see log.txt"; exit 1; }

# 3. Kernels against the CPU references.
step "kernel reference tests" 240 "$build/bin/kernels_ref_tests" --gtest_brief=1
ref_rc=$?
gpu_rc=skipped
if [ "$cpu" -eq 0 ]; then
  step "kernel GPU tests" 240 "$build/bin/kernels_gpu_tests" --gtest_brief=1
  gpu_rc=$?
fi

# 4. Calibration.
cal=(--model "$model" --out "$out/profile.h5")
if [ "$cpu" -eq 1 ]; then cal+=(--backend cpu --quick); else cal+=(--backend gpu); fi
step "calibration of $model" 420 "$build/bin/kvfleet-calibrate" "${cal[@]}"
cal_rc=$?

# 5. Replays on the new profile.
replays=""
if [ "$cal_rc" -eq 0 ]; then
  t0=$(date +%s)
  timeout 120 "$build/bin/kvfleet" run --set "pools[0].model=$model" --set "pools[0].gpu=$gpu" \
    --set pools[0].cost_model.impl=profile --set "pools[0].cost_model.path=$out/profile.h5" \
    --out "$out/default.h5" > "$out/default.txt" 2>&1
  rc=$?
  echo "| default scenario on the profile | $rc | $(( $(date +%s) - t0 )) s |" >> "$out/steps.md"
  log "default scenario on the profile: rc=$rc"
  for run in "$root"/../shared/reference/validation/*/; do
    [ -f "$run/meta.json" ] || continue
    name=$(basename "$run")
    # Only runs of a model with the calibrated architecture and dimensions replay on it (the
    # profile refuses others, naming both).
    if "$build/bin/kvfleet" replay "$run" --profile "$out/profile.h5" --gpu "$gpu" -q \
         > "$out/replay-$name.md" 2>&1; then
      replays+="$name "
      log "replayed $name on the new profile"
    else
      log "did not replay $name: $(tail -1 "$out/replay-$name.md")"
    fi
  done
fi

# 6. One report.
{
  echo "# kvfleet GPU day"
  echo
  echo "$(date -u +%Y-%m-%dT%H:%M:%SZ), $( [ "$cpu" -eq 1 ] && echo "CPU dry run (no GPU)" || head -1 "$out/nvidia-smi.txt" 2>/dev/null)"
  echo "GPU preset for the replays: $gpu; model calibrated: $model; total $(( $(date +%s) - start )) s"
  echo
  echo "| step | exit code | time |"
  echo "|---|---|---|"
  cat "$out/steps.md"
  echo
  echo "## Kernels against the CPU references"
  echo
  echo "reference tests rc=$ref_rc, GPU tests rc=$gpu_rc"
  echo
  echo '```'
  grep -hE '^\[  (PASSED|FAILED|SKIPPED) ' "$out/log.txt" | head -20
  echo '```'
  echo
  echo "## Calibration (held-out error per operation)"
  echo
  [ "$cpu" -eq 1 ] && echo "A CPU dry run times the CPU references: the profile prices a CPU, not a GPU." && echo
  echo '```'
  awk '/held-out error per operation/{f=1; print; next} f && /^  /{print; next} f{exit}' "$out/log.txt"
  echo '```'
  echo
  echo "## The built-in default scenario on the new profile ($model on $gpu)"
  echo
  echo '```'
  sed -n '/^Latency of completed requests/,/^Throughput/p' "$out/default.txt" 2>/dev/null
  echo '```'
  echo
  echo "## Replays on the new profile"
  echo
  echo "Measured latencies are from the runs' own GPUs (see each run's meta.json): on another GPU the"
  echo "table says how the same workload would run here, not how faithful the profile is."
  for f in "$out"/replay-*.md; do
    [ -f "$f" ] || continue
    echo
    echo "### $(basename "$f" .md | sed 's/^replay-//')"
    echo
    if grep -q '^Replay of' "$f"; then sed -n '/^Replay of/,$p' "$f"; else echo "not replayed: $(tail -1 "$f")"; fi
  done
} > "$report"
log "report: $report"
cat "$report"
[ "$ref_rc" -eq 0 ] && [ "$cal_rc" -eq 0 ] && { [ "$gpu_rc" = skipped ] || [ "$gpu_rc" -eq 0 ]; }
