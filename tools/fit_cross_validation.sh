#!/usr/bin/env bash
# The cross-validation table of docs/validation.md, "Fitted on one run, scored on another":
# each run of one GPU fitted alone (kvfleet-calibrate fit) and its calibration replayed on the
# others (kvfleet replay --calibration).
# Usage: tools/fit_cross_validation.sh RUN... [-- FIT OPTIONS]
#   RUN: run folders (meta.json, requests.jsonl) of one GPU, e.g. the vllm/ files of
#   casys-kaist/LLMServingSim bench/examples/RTXPRO6000/* with their config.json beside them.
# Environment: KVFLEET_BUILD_DIR (default build). Writes calibrations to a temporary folder.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${KVFLEET_BUILD_DIR:-$root/build}/bin"
runs=()
while (($#)) && [ "$1" != "--" ]; do runs+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
((${#runs[@]} >= 2)) || { echo "usage: $0 RUN RUN... [-- FIT OPTIONS]" >&2; exit 2; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
printf '| fitted on |'; for b in "${runs[@]}"; do printf ' %s |' "$(basename "$b")"; done; echo
printf '|---|'; for _ in "${runs[@]}"; do printf -- '---|'; done; echo
for a in "${runs[@]}"; do
  "$bin/kvfleet-calibrate" fit "$a" --no-leave-one-out --out "$tmp/cal.yaml" "$@" >"$tmp/fit.log"
  printf '| %s |' "$(basename "$a")"
  for b in "${runs[@]}"; do
    e=$("$bin/kvfleet" replay "$b" -q --calibration "$tmp/cal.yaml" | tail -1 | grep -o '[0-9.]*%')
    printf ' %s |' "$e"
  done
  echo
done
