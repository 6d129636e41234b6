#!/usr/bin/env bash
# Runs every fuzz harness (tests/fuzz/) with libFuzzer and fails on any crash. Builds build-fuzz/
# with clang, AddressSanitizer and UndefinedBehaviorSanitizer first.
# Usage: tools/fuzz.sh                       CI: a fixed seed and a fixed number of executions per
#                                            harness (about 45 s each here), so that a run is
#                                            repeatable; at most 120 s each
#        tools/fuzz.sh SECONDS [HARNESS ...]  explore: a random seed, SECONDS per harness
# A crash leaves its input in build-fuzz/crashes/; copy it into tests/fuzz/regressions/<harness>/
# (the normal ctest replays it) once fixed. A summary with executions and coverage per harness is
# written to build-fuzz/fuzz-report.md.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
ci=1
seconds=120
if [ $# -gt 0 ]; then
  ci=0
  seconds="$1"
  shift
fi
harnesses=("$@")
# Executions per harness in CI (each about 45 s on one core of a 2-core machine).
declare -A ci_runs=([scenario]=40000 [trace]=120000 [profile]=6000 [sweep]=4000 [import]=12000 [runfile]=1500)
[ ${#harnesses[@]} -eq 0 ] && harnesses=(scenario trace profile sweep import runfile)
build=build-fuzz

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DKVFLEET_FUZZ=ON \
    -DKVFLEET_BUILD_TESTS=OFF -DKVFLEET_BUILD_BENCHMARKS=OFF \
    -DKVFLEET_WITH_CUDA=OFF -DKVFLEET_WITH_GUI=OFF -DKVFLEET_WITH_MPI=OFF
fi
targets=()
for h in "${harnesses[@]}"; do targets+=("fuzz_$h"); done
cmake --build "$build" -j "${KVFLEET_JOBS:-2}" --target "${targets[@]}"

mkdir -p "$build/crashes" "$build/logs"
report="$build/fuzz-report.md"
echo "| harness | seconds | executions | coverage (edges) | corpus | crashes |" > "$report"
echo "|---|---|---|---|---|---|" >> "$report"
status=0
run_one() {
  local h="$1"
  local work="$build/corpus/$h"
  # CI starts from the committed seeds only (repeatable); exploring keeps what it found.
  [ "$ci" = 1 ] && rm -rf "$work"
  mkdir -p "$work"
  local seeds=("tests/fuzz/corpus/$h")
  [ -d "tests/fuzz/regressions/$h" ] && seeds+=("tests/fuzz/regressions/$h")
  [ "$h" = scenario ] && seeds+=("scenarios")
  # -timeout: an input that takes 20 s is a hang; KVFLEET_FUZZ_RSS_MB (1.5 GB held after an input),
  # -rss_limit_mb and -malloc_limit_mb (one allocation of 1 GB): a leak or
  # an unbounded allocation. Both count as crashes.
  local t0=$SECONDS
  local bound=()
  [ "$ci" = 1 ] && bound=(-seed=1 -runs="${ci_runs[$h]}")
  # A harness that outlives its time by a minute is stuck (libFuzzer's own out-of-memory report
  # can take many minutes on a large heap): it is stopped and counts as a crash.
  local rc=0
  ASAN_OPTIONS=detect_leaks=0 KVFLEET_FUZZ_RSS_MB=1536 timeout -k 10 $((seconds + 60)) \
    "$build/bin/fuzz_$h" "$work" "${seeds[@]}" "${bound[@]}" \
    -max_total_time="$seconds" -timeout=20 -rss_limit_mb=3072 -malloc_limit_mb=1024 \
    -print_final_stats=1 -artifact_prefix="$build/crashes/$h-" > "$build/logs/$h.log" 2>&1 || rc=$?
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    echo "fuzz: $h did not finish within $((seconds + 60)) s (see $build/logs/$h.log)" \
      > "$build/crashes/$h-stuck"
  fi
  echo $((SECONDS - t0)) > "$build/logs/$h.seconds"
}
pids=()
for h in "${harnesses[@]}"; do
  run_one "$h" &
  pids+=($!)
  # Two at a time: this machine has two cores.
  if [ ${#pids[@]} -ge "${KVFLEET_JOBS:-2}" ]; then
    wait "${pids[0]}" || true
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || true; done

for h in "${harnesses[@]}"; do
  log="$build/logs/$h.log"
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || echo "?")
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || echo "?")
  corpus=$(find "$build/corpus/$h" -type f | wc -l)
  crashes=$(find "$build/crashes" -name "$h-*" -type f | wc -l)
  took=$(cat "$build/logs/$h.seconds" 2>/dev/null || echo "?")
  echo "| $h | $took | $execs | $cov | $corpus | $crashes |" >> "$report"
  if [ "$crashes" -gt 0 ] || grep -q "ERROR: libFuzzer\|ERROR: AddressSanitizer\|runtime error:" "$log"; then
    echo "fuzz: $h crashed; see $log and $build/crashes/$h-*" >&2
    grep -m1 -A15 "ERROR\|runtime error\|invariant broken\|terminate called" "$log" >&2 || true
    status=1
  fi
done
cat "$report"
exit $status
