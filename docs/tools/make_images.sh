#!/usr/bin/env bash
# Draws the docs' images that kvfleet's own charts make (docs/sweeps.md, docs/operations.md), with
# the commands those pages show; CI runs it into a scratch folder and checks every image (PNG, the
# size of the one in docs/img). Seconds on two cores; needs a build with Qt6 Charts.
# Usage: docs/tools/make_images.sh [KVFLEET] [OUT_DIR]    (defaults: build/bin/kvfleet, docs/img)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
kvfleet="$(realpath "${1:-$root/build/bin/kvfleet}")"
out="$(mkdir -p "${2:-$root/docs/img}" && cd "${2:-$root/docs/img}" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$root"

# docs/sweeps.md, "Plots": TTFT p99 against load, one line per batch limit.
"$kvfleet" sweep scenarios/sweeps/load-vs-max-seqs.yaml --quiet --out "$work/load.h5"
"$kvfleet" plot "$work/load.h5" --x workload.arrival.rate_per_s --y time_to_first_token_p99_s \
  --series "pools[0].engine.max_num_seqs" --slo 2 --log-y \
  --title "TTFT p99 against load, by batch limit (Llama-3-8B, one H100)" \
  --out "$out/sweep_ttft_vs_load.png"

# docs/sweeps.md, "A single run's dashboard": the latency page of a chat run, and the state page
# of a 16-replica fleet (the hottest replicas and the pool's mean).
"$kvfleet" run scenarios/conversations/chat-100-users.yaml --quiet --out "$work/chat.h5"
"$kvfleet" plot "$work/chat.h5" --slo ttft_p99=2s,tpot_p99=100ms --out "$work/dashboard.png"
cp "$work/dashboard-latency.png" "$out/dashboard_latency.png"
"$kvfleet" run scenarios/fleet/routing-hotspot.yaml --quiet --set "pools[0].replicas=16" \
  --out "$work/fleet.h5"
"$kvfleet" plot "$work/fleet.h5" --out "$work/fleet.png"
cp "$work/fleet-state.png" "$out/dashboard_state.png"

# docs/operations.md: six equal-cost configurations of Llama-3-70B against load.
"$kvfleet" sweep scenarios/sweeps/equal-cost-70b.yaml --quiet --out "$work/equal-cost.h5"
"$kvfleet" plot "$work/equal-cost.h5" --x workload.arrival.rate_per_s \
  --y time_to_first_token_p99_s --series config --log-y --slo 2 \
  --out "$out/equal_cost_70b_ttft.png"

echo "make_images: sweep_ttft_vs_load.png dashboard_latency.png dashboard_state.png" \
  "equal_cost_70b_ttft.png -> $out"
