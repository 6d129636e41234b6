#pragma once
// What a run produced (RunResult): every request's record, each replica's time series and
// counters, each pool's, and the alert rules' firings. The simulation fills it; metrics/
// (summary, alerts) compute from it and output/ (report, files, exports) write it. It sits above
// the engine and the fleet (whose counters it holds) and below everything that reads it.
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/core/time.h"
#include "sim/engine/memory.h"
#include "sim/engine/replica.h"
#include "sim/request/request_log.h"

namespace kvfleet::sim {

// Something an operator wants to be warned of, the first time it happens.
struct AlertEvent {
  std::string kind;   // out_of_memory, rejection_wave, slo_breach
  std::string scope;  // a replica's name, or "fleet"
  double t_s = 0;
  std::string detail;
};

struct AlertFiring {
  std::string rule;
  std::string scope;  // a replica's name, or "fleet"
  double fire_s = 0;
  double clear_s = std::numeric_limits<double>::quiet_NaN();  // NaN: still firing at the end
  // Seconds from the firing to each first event: positive = warned ahead, negative = fired after
  // it, NaN = the event never happened. Out of memory is the rule's replica's own first event
  // (the fleet's first for fleet rules).
  double lead_oom_s, lead_rejection_wave_s, lead_slo_breach_s;
};

struct AlertReport {
  std::vector<AlertEvent> events;  // the first of each kind and scope, by time
  std::vector<AlertFiring> firings;
  const AlertEvent* first(const std::string& kind, const std::string& scope) const;
};

// One replica's state sampled every simulation.timeseries_interval_s. Counters are cumulative.
struct TimeSeries {
  std::string replica;
  std::vector<double> t_s;
  std::vector<std::int32_t> num_requests_running;
  std::vector<std::int32_t> num_requests_waiting;
  std::vector<double> kv_cache_usage;             // fraction of blocks in use
  std::vector<std::int64_t> kv_tokens_held;       // token states held by requests
  std::vector<std::int64_t> kv_tokens_allocated;  // KV memory given to requests, in tokens
  std::vector<std::int64_t> num_preemptions;
  std::vector<std::int64_t> prompt_tokens;
  std::vector<std::int64_t> generation_tokens;
  std::vector<std::int32_t> available;  // 1 while it takes requests (up, not draining)
  // Since the previous sample, per GPU: share of the time in steps, and achieved over peak
  // FLOP/s and device-memory bandwidth (WorkModel; a step counts in the interval it starts in).
  std::vector<double> busy_fraction;
  std::vector<double> compute_utilization;
  std::vector<double> memory_bandwidth_utilization;
  std::vector<double> kv_used_bytes;  // KV memory given to requests, per GPU
};

struct ReplicaResult {
  std::string name;
  std::string pool;
  EngineStats stats;
  MemoryBudget memory;
  // Prefix-cache lookups by tenant: (tenant, queried tokens, hit tokens), by tenant id.
  std::vector<std::tuple<std::uint32_t, std::int64_t, std::int64_t>> tenant_prefix;
  struct Tier {
    std::string name;
    std::int64_t blocks = 0;  // held at the end
    double bytes_written = 0, bytes_read = 0;
    std::int64_t evictions = 0;
  };
  std::vector<Tier> tiers;
  int gpus = 1;
  double paid_s = 0;  // time it held its GPUs (starting, up, draining, failed awaiting repair)
  std::int64_t failures = 0, restarts = 0;
};

// One pool's gateway and fleet counters.
struct PoolResult {
  std::string name;
  double price_per_hour = 0;  // per GPU
  std::int64_t gateway_rejected = 0, gateway_queued = 0;
  std::int64_t scale_ups = 0, scale_downs = 0;
  int peak_replicas = 0;  // most replicas up or starting at once
};

struct RunResult {
  RequestLog requests;
  std::vector<TimeSeries> timeseries;
  std::vector<ReplicaResult> replicas;
  std::vector<PoolResult> pools;
  SimTime end_time = 0;        // when the last event ran
  std::uint64_t events = 0;    // events processed
  bool stopped_early = false;  // simulation.max_time_s cut the run
  bool cancelled = false;      // stopped by a cancel token (Simulation::set_cancel): incomplete
  std::vector<std::pair<std::string, double>> workload_stats;  // e.g. sessions gone idle
  std::vector<std::vector<StepTrace>>
      steps;  // per replica, when Simulation::record_steps was asked
  std::vector<std::vector<BatchTrace>> batches;  // per replica, when record_batches was asked
  AlertReport alerts;  // the scenario's alert rules on this run (empty without rules)
};

}  // namespace kvfleet::sim
