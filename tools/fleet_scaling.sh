#!/usr/bin/env bash
# The fleet scaling table of docs/performance.md: scenarios/fleet/fleet-64-hour.yaml's workload
# at the same load per replica (2.7 new sessions per second per replica) on N replicas for H
# simulated hours (with sessions enough for the run), each case one `kvfleet run` (report only, no result file) under
# /usr/bin/time: wall time, peak memory, engine events and events per second.
#
#   tools/fleet_scaling.sh [KVFLEET] [CASES...]     CASES as N:H, default 8:0.25 8:1 8:4 64:0.25
#                                                   64:1 64:4 512:0.25 512:1 512:4
# Prints a Markdown table. A case that fails or runs out of memory prints its exit status.
set -euo pipefail
kvfleet=${1:-build/bin/kvfleet}
shift || true
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(8:0.25 8:1 8:4 64:0.25 64:1 64:4 512:0.25 512:1 512:4)
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| replicas | simulated hours | requests | events | wall time | events/s | peak memory |"
echo "|---|---|---|---|---|---|---|"
for c in "${cases[@]}"; do
  n=${c%%:*}
  h=${c#*:}
  rate=$(awk -v n="$n" 'BEGIN { printf "%.6f", 173 * n / 64 }')
  secs=$(awk -v h="$h" 'BEGIN { printf "%.0f", h * 3600 }')
  # Enough sessions for the whole run (the scenario's 1,000,000 last 64 replicas about 1.6 h).
  sessions=$(awk -v r="$rate" -v s="$secs" 'BEGIN { printf "%.0f", r * s * 1.5 + 1000 }')
  set +e
  /usr/bin/time -v "$kvfleet" run "$here/scenarios/fleet/fleet-64-hour.yaml" \
    --set "pools[0].replicas=$n" --set "workload.session_arrival.rate_per_s=$rate" \
    --set "workload.num_sessions=$sessions" --set "simulation.max_time_s=$secs" >"$tmp/out" 2>"$tmp/time"
  rc=$?
  set -e
  if [ $rc -ne 0 ]; then
    echo "| $n | $h | | | exit $rc | | $(awk -F': ' '/Maximum resident/ { printf "%.0f MB", $2 / 1024 }' "$tmp/time") |"
    continue
  fi
  requests=$(awk '/^Requests:/ { print $2; exit }' "$tmp/out")
  read -r wall events < <(sed -n 's/^Simulated .* in \([0-9.]*\) s of wall time (.*, \([0-9]*\) events).*/\1 \2/p' "$tmp/out")
  mem=$(awk -F': ' '/Maximum resident/ { printf "%.0f MB", $2 / 1024 }' "$tmp/time")
  eps=$(awk -v e="$events" -v w="$wall" 'BEGIN { printf "%.2fM", e / w / 1e6 }')
  echo "| $n | $h | $requests | $events | $wall s | $eps | $mem |"
done
