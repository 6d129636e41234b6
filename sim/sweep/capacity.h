#pragma once
// Capacity search (`kvfleet capacity`): the highest load at which a latency SLO holds, found by
// bracketing and bisection for each replicate seed, reported with a confidence interval over the
// replicates and the workload definition the number belongs to.
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sim/metrics/fidelity.h"

namespace kvfleet::sim {

struct Summary;
struct Scenario;
struct ScenarioSource;
class CancelToken;

// One target of an SLO: a latency at most limit_s, or a share of the requests that arrived:
// reject_rate (rejected: by the engine, the gateway, or the application for a context
// overflow), timeout_rate (the client gave up) or refused_rate (either; the GUI's "Refused at
// most") at most `fraction`, goodput (completed) at least `fraction`.
struct Slo {
  enum class Kind { kLatency, kRejectRate, kGoodput, kTimeoutRate, kRefusedRate };
  Kind kind = Kind::kLatency;
  std::string name;     // as written: ttft_p99
  std::string metric;   // /summary name: time_to_first_token_p99_s ("" for the shares)
  double limit_s = 0;   // latency
  double fraction = 0;  // reject_rate, goodput
  // Whether a run's summary meets this target.
  bool holds(const Summary& s) const;
  // "ttft_p99 <= 2 s", "reject_rate <= 1%", "goodput >= 99%".
  std::string describe() const;
  // What a run's summary measured for it, as text: "28.1 ms", "3.2%" ("none completed" for a
  // latency without completed requests).
  std::string measured(const Summary& s) const;
};

// "ttft_p99=2s,tpot_p99=100ms,reject_rate=1%": latencies named ttft, tpot, e2e, queue with
// _mean, _p50, _p90, _p99, _max (or any /summary name ending in _s) with a unit s, ms or us;
// reject_rate, timeout_rate (requests the client gave up on, client.timeout_s), refused_rate
// (rejected or timed out) and goodput with a percentage (1%) or a fraction (0.01). Throws
// InputError naming the part that is wrong.
std::vector<Slo> parse_slo(const std::string& text);

struct CapacityOptions {
  std::string load;  // arrival_rate | users
  std::string key;   // scenario key to vary; empty: found from `load`
  int replicates = 3;
  double tolerance = 0.02;        // stop bisecting when (hi − lo) / lo is below
  int threads = 0;                // replicates run in parallel
  std::vector<std::string> sets;  // overrides applied to every run
  // The search is repeated with every step this much slower and faster (pools[].step_time_scale)
  // to show how far the answer moves with the cost model's error; 0 = not.
  double step_time_sensitivity = 0.02;
  std::function<void(std::int64_t seed, double load, bool holds)> on_run;  // after each run
  // On the calling thread about every 0.1 s while runs go on; an exception it throws stops the
  // search (the runs in flight end between events) and reaches the caller.
  std::function<void()> poll;
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
  // When the SLO held at no load the search tried (the capacity is 0): which target failed at
  // the lowest load tried, and what it measured there.
  std::string not_met;
  // With step_time_sensitivity s > 0: the capacity (mean over the seeds) with every step s
  // slower and s faster.
  double sensitivity = 0;
  double slower_steps = NAN, faster_steps = NAN;
  // The expected error of the cost model that prices the steps (docs/validation.md; the pool
  // with the largest expected TPOT error), and the capacity band it implies, linearised from
  // the sensitivity runs: mean × (1 ± d ln(capacity) / d ln(step time) × TPOT error). NaN
  // without validated runs or sensitivity runs.
  ExpectedError expected;
  double expected_low = NAN, expected_high = NAN;
};

// The scenario key a load is varied by: `key` when given, else workload.users for "users" and
// the arrival (or session arrival) rate for "arrival_rate"; `value` receives the scenario's own
// value of it. Throws InputError when the workload has no such key or it is not a number.
std::string load_key(const Scenario& base, const std::string& load, const std::string& key,
                     double* value = nullptr);

// One run of `source` with `sets` against the SLO: whether every target holds (and at least one
// request completed), what failed in words ("ttft_p99 measured 3.1 s against ttft_p99 <= 2 s"),
// and the run's summary; `cancelled` when `cancel` stopped it.
struct SloCheck {
  bool ok = false, cancelled = false;
  std::string failed;
  std::shared_ptr<const Summary> summary;
};
// The highest value of the load key that means more load: the workload's num_sessions for
// closed-loop users (more users than conversations have nothing to send), else infinity. The
// capacity search, sizing and the GUI's load sweep all ask it.
double load_cap(const Scenario& base, const std::string& key);

SloCheck check_slo(const ScenarioSource& source, const std::vector<std::string>& sets,
                   const std::vector<Slo>& slo, const CancelToken* cancel = nullptr);

// Throws InputError naming the option: replicates outside 1..1000, a tolerance outside 1e-6..1
// (or NaN), negative threads. find_capacity checks first.
void check_capacity_options(const CapacityOptions& opt);

// `scenario_path` empty: the built-in default.
CapacityResult find_capacity(const std::string& scenario_path, const std::vector<Slo>& slo,
                             const CapacityOptions& opt);
CapacityResult find_capacity(const ScenarioSource& source, const std::vector<Slo>& slo,
                             const CapacityOptions& opt);

}  // namespace kvfleet::sim
