#pragma once
// Capacity search (`kvfleet capacity`): the highest load at which a latency SLO holds, found by
// bracketing and bisection for each replicate seed, reported with a confidence interval over the
// replicates and the workload definition the number belongs to.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kvfleet::sim {

struct Slo {
  std::string name;    // as written: ttft_p99
  std::string metric;  // /summary name: time_to_first_token_p99_s
  double limit_s = 0;
};

// "ttft_p99=2s,tpot_p99=100ms": names ttft, tpot, e2e, queue with _mean, _p50, _p90, _p99,
// _max (or any /summary name ending in _s); limits with unit s, ms or us. Throws InputError
// naming the part that is wrong.
std::vector<Slo> parse_slo(const std::string& text);

struct CapacityOptions {
  std::string load;  // arrival_rate | users
  std::string key;   // scenario key to vary; empty: found from `load`
  int replicates = 3;
  double tolerance = 0.02;        // stop bisecting when (hi − lo) / lo is below
  int threads = 0;                // replicates run in parallel
  std::vector<std::string> sets;  // overrides applied to every run
  std::function<void(std::int64_t seed, double load, bool holds)> on_run;  // after each run
};

struct CapacityResult {
  std::string key;
  double start = 0;              // the scenario's own value of the key
  std::vector<double> per_seed;  // capacity found with each replicate's seed
  std::vector<std::int64_t> seeds;
  double mean = 0, ci95_low = 0, ci95_high = 0;
  int runs = 0;
  std::string workload_yaml;  // the workload section, resolved
  // When the search reached a load the scenario refuses (beyond the key's range, or a setting
  // that no longer fits) while the SLO still held: the first such refusal.
  std::string limited_by;
};

// `scenario_path` empty: the built-in default.
CapacityResult find_capacity(const std::string& scenario_path, const std::vector<Slo>& slo,
                             const CapacityOptions& opt);

}  // namespace kvfleet::sim
