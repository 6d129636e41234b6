#pragma once
// Sizing (`kvfleet size`): how many replicas of a pool serve a target load within an SLO, and
// what they cost. For each replicate seed, the smallest replica count at which every target of
// the SLO holds at the target load, found by doubling then bisection over whole replicas, each
// step a full simulation of the fleet (routing, hot spots and queues included, not a capacity
// per replica multiplied out). The answer is the most any seed needed. The same SLO check as
// `kvfleet capacity` (capacity.h, check_slo).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/metrics/fidelity.h"
#include "sim/sweep/capacity.h"

namespace kvfleet::sim {

struct ScenarioSource;

struct SizingOptions {
  // arrival_rate | users, as capacity, or output_tokens_per_s: the target is output tokens per
  // second, served by the request arrival rate that offers them (the target divided by the
  // workload's mean output tokens per request, measured on one run at its own settings).
  std::string load = "arrival_rate";
  std::string key;    // the load's scenario key ("" = from `load`)
  double target = 0;  // the load to serve (> 0)
  std::string pool;   // the pool sized ("" = the first)
  int replicates = 3;
  int threads = 0;
  int max_replicas = 1024;        // the search stops here: not met beyond
  double price_per_hour = -1;     // per GPU; < 0 = the pool's price_per_hour
  std::vector<std::string> sets;  // overrides applied to every run
  std::function<void()> poll;     // on the calling thread while runs go on (may throw)
};

struct SizingResult {
  std::string pool, load_key;
  double target = 0;  // the value of load_key served
  // A target in output tokens/s: the tokens asked for, and the mean output tokens per request
  // that turned it into `target` requests/s, measured over `measured_completed` requests that
  // completed (of `measured_arrived`) in one run of the scenario at its own settings.
  double target_output_tokens_per_s = 0, output_tokens_per_request = 0;
  std::int64_t measured_completed = 0, measured_arrived = 0;
  std::vector<std::int64_t> seeds;
  std::vector<int> per_seed;  // replicas needed with each seed (0 = not met up to the maximum)
  int replicas = 0;           // the answer: the most any seed needed
  int gpus_per_replica = 1;   // tensor x pipeline x data parallel
  int gpus = 0;
  // With the answer's replica count (the seed that needed the most): what the fleet served over
  // the run (first arrival to last completion, drain included).
  double output_tokens_per_s = 0, requests_per_s = 0, duration_s = 0;
  double price_per_hour = 0;  // per GPU (0: no price known)
  // Where the price comes from: "--price-per-hour", "pools[].price_per_hour" (the scenario's),
  // or the GPU preset's list price with its source (gpu_list_price); "" without a price.
  std::string price_source;
  double cost_per_hour = 0;                  // gpus x price_per_hour
  double cost_per_month = 0;                 // x 730 hours
  double usd_per_million_output_tokens = 0;  // the fleet's cost over the run / tokens generated
  std::string
      limited_by;       // with one replica fewer (first seed that needed the answer): what failed
  std::string not_met;  // the SLO held at no replica count up to max_replicas: why
  int runs = 0;
  ExpectedError expected;  // of the pool's cost model (docs/validation.md)
};

SizingResult find_replicas(const ScenarioSource& source, const std::vector<Slo>& slo,
                           const SizingOptions& opt);

}  // namespace kvfleet::sim
