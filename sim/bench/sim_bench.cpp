// kvfleet-sim-bench: simulator speed. Reports simulated requests per wall-clock second
// (items_per_second) for one replica of Llama-3-8B on an H100 SXM serving ShareGPT-like requests
// (lognormal, means 161 in and 338 out) at 80% of the replica's measured capacity, for runs of
// increasing length: the cost per request must not grow with the run.
#include <benchmark/benchmark.h>

#include <string>

#include "sim/metrics/summary.h"
#include "sim/simulation/scenario.h"
#include "sim/simulation/simulation.h"

namespace {

using namespace kvfleet::sim;

std::string scenario(double rate, long n) {
  return "seed: 1\nworkload:\n  impl: synthetic\n  num_requests: " + std::to_string(n) +
         "\n  arrival: {impl: poisson, rate_per_s: " + std::to_string(rate) +
         "}\n  input_tokens: {impl: lognormal, mean: 161, sigma: 1.0, max: 2048}\n"
         "  output_tokens: {impl: lognormal, mean: 338, sigma: 0.8, max: 2048}\n"
         "pools:\n  - model: Llama-3-8B\n    gpu: H100-SXM\n"
         "    engine: {max_num_seqs: 256, max_num_batched_tokens: 8192}\n"
         "simulation: {timeseries_interval_s: 1.0}\n";
}

// Saturated throughput (completed requests per simulated second) with every request queued.
double capacity_per_s() {
  static const double cap = [] {
    Scenario sc = load_scenario_text(scenario(1e6, 20000), "<bench>", ".", {});
    Simulation s(sc);
    return summarize(s.run()).requests_per_s;
  }();
  return cap;
}

void BM_OneReplicaShareGPT80(benchmark::State& state) {
  const long n = state.range(0);
  const double rate = 0.8 * capacity_per_s();
  Scenario sc = load_scenario_text(scenario(rate, n), "<bench>", ".", {});
  double busy = 0;
  for (auto _ : state) {
    Simulation s(sc);
    RunResult r = s.run();
    benchmark::DoNotOptimize(r.requests.data());
    busy = summarize(r).busy_fraction;
  }
  state.SetItemsProcessed(state.iterations() * n);
  state.counters["capacity_req_per_s"] = capacity_per_s();
  state.counters["arrival_rate_per_s"] = rate;
  state.counters["busy_fraction"] = busy;
  state.counters["ns_per_request"] =
      benchmark::Counter(static_cast<double>(state.iterations() * n),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_OneReplicaShareGPT80)
    ->Arg(25'000)
    ->Arg(50'000)
    ->Arg(100'000)
    ->Arg(200'000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The same load with prefix caching doing work and a CPU tier: prompts start with one of ten
// tenants' 64-token system prompts (the user part keeps the mean at 161 tokens), under the
// session-aware retention policy.
void BM_OneReplicaShareGPT80_PrefixTiers(benchmark::State& state) {
  const long n = state.range(0);
  const double rate = 0.8 * capacity_per_s();
  Scenario sc = load_scenario_text(
      scenario(rate, n), "<bench>", ".",
      {"workload.tenants=10", "workload.shared_prefix_tokens=64",
       "workload.input_tokens={impl: lognormal, mean: 97, sigma: 1.0, max: 1984}",
       "pools[0].engine.kv_tiers=[{name: cpu, capacity_gib: 64, read_GBps: 25, write_GBps: 25}]",
       "pools[0].engine.retention={impl: session_aware}"});
  double hit = 0;
  for (auto _ : state) {
    Simulation s(sc);
    RunResult r = s.run();
    hit = summarize(r).prefix_cache_hit_rate();
  }
  state.SetItemsProcessed(state.iterations() * n);
  state.counters["prefix_hit_rate"] = hit;
}
BENCHMARK(BM_OneReplicaShareGPT80_PrefixTiers)
    ->Arg(100'000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The fleet benchmark: scenarios/fleet/fleet-64-hour.yaml (64 H100 replicas, multi-turn chat at
// 80% load, prefix-aware routing), cut at the given simulated seconds (3600 = the full hour).
void BM_Fleet64Replicas(benchmark::State& state) {
  const long seconds = state.range(0);
  Scenario sc = load_scenario_file(KVFLEET_SOURCE_DIR "/scenarios/fleet/fleet-64-hour.yaml",
                                   {"simulation.max_time_s=" + std::to_string(seconds)});
  std::size_t requests = 0;
  for (auto _ : state) {
    Simulation s(sc);
    RunResult r = s.run();
    requests = r.requests.size();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * requests));
  state.counters["requests"] = static_cast<double>(requests);
}
BENCHMARK(BM_Fleet64Replicas)
    ->Arg(300)
    ->Arg(3600)
    ->Unit(benchmark::kSecond)
    ->UseRealTime()
    ->Iterations(1);

// How the fleet benchmark's cost grows (docs/performance.md): the same workload per replica
// (2.7 new sessions per second per replica, fleet-64-hour's 173 for 64) on N replicas for S
// simulated seconds. Wall time per simulated request and per engine step should stay flat as
// N and S grow.
void BM_FleetScaling(benchmark::State& state) {
  const long replicas = state.range(0), seconds = state.range(1);
  const double rate = 173.0 * static_cast<double>(replicas) / 64.0;
  Scenario sc = load_scenario_file(KVFLEET_SOURCE_DIR "/scenarios/fleet/fleet-64-hour.yaml",
                                   {"simulation.max_time_s=" + std::to_string(seconds),
                                    "pools[0].replicas=" + std::to_string(replicas),
                                    "workload.session_arrival.rate_per_s=" + std::to_string(rate)});
  std::size_t requests = 0;
  std::int64_t steps = 0;
  for (auto _ : state) {
    Simulation s(sc);
    RunResult r = s.run();
    requests = r.requests.size();
    steps = 0;
    for (const auto& x : r.replicas) steps += x.stats.steps;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * requests));
  state.counters["requests"] = static_cast<double>(requests);
  state.counters["steps"] = static_cast<double>(steps);
  // Per-item costs (seconds per request, per step), from the iteration's real time.
  state.counters["s_per_request"] = benchmark::Counter(
      static_cast<double>(requests),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["s_per_step"] =
      benchmark::Counter(static_cast<double>(steps), benchmark::Counter::kIsIterationInvariantRate |
                                                         benchmark::Counter::kInvert);
}
BENCHMARK(BM_FleetScaling)
    ->Args({8, 600})
    ->Args({64, 600})
    ->Args({512, 600})
    ->Args({64, 300})
    ->Args({64, 1200})
    ->Args({64, 3600})
    ->Unit(benchmark::kSecond)
    ->UseRealTime()
    ->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
