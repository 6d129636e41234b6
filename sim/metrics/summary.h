#pragma once
// Summaries of one run: latency percentiles, throughput, KV usage, outcome counts. Names follow
// vLLM's metrics where the meaning is the same.
#include <functional>
#include <string>
#include <vector>

#include "sim/results/run_result.h"

namespace kvfleet::sim {

// Percentile by linear interpolation between closest ranks (numpy's default), q in [0, 100].
// `sorted` must be sorted ascending and non-empty.
double percentile_sorted(const std::vector<double>& sorted, double q);

struct LatencyStats {
  std::int64_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;  // seconds; NaN when count is 0
};
LatencyStats latency_stats(std::vector<double> values);

// The two-sided 95% Student t quantile for `dof` degrees of freedom (the normal 1.96 past 30):
// a mean of n replicates has the 95% interval mean ± t95(n − 1) · sd / √n.
double t95(int dof);

struct Summary {
  std::int64_t requests = 0;  // arrived
  std::int64_t ok = 0, rejected = 0, timed_out = 0, cancelled = 0, failed = 0, unfinished = 0;
  std::int64_t preempted_requests = 0;  // requests preempted at least once
  LatencyStats ttft, tpot, e2e, queue;
  double duration_s = 0;          // first arrival to last completion (or the stop time)
  double input_tokens_per_s = 0;  // prompt tokens of completed requests / duration
  double output_tokens_per_s = 0;
  double requests_per_s = 0;  // completed
  double kv_usage_mean = 0;   // time-weighted over the run, mean over replicas
  double kv_usage_max = 0;
  double busy_fraction = 0;  // share of the run replicas spent in steps
  // Per GPU, mean over replicas, over the run: achieved / peak FLOP/s and device-memory
  // bandwidth (WorkModel's FLOPs and bytes of every step), and the share of the run each
  // replica's queue held requests, by what kept them waiting (EngineStats::wait_*_s).
  double compute_utilization = 0, memory_bandwidth_utilization = 0;
  double wait_kv_fraction = 0, wait_token_budget_fraction = 0, wait_max_seqs_fraction = 0;
  // Conversations. Latency statistics cover users' turns; summarisation is counted apart.
  std::int64_t summary_requests = 0;
  std::int64_t summary_input_tokens = 0, summary_output_tokens = 0;
  std::int64_t context_overflows = 0;             // turns the application could not send
  std::int64_t truncated_requests = 0;            // turns whose history was cut to fit
  LatencyStats ttft_first, ttft_warm, ttft_cold;  // first turns; later turns with / without reuse
  std::int64_t sessions = 0;
  std::int64_t wasted_tokens = 0;  // tokens computed for requests cancelled, timed out or failed
  std::vector<std::pair<std::string, double>> workload_stats;  // counters the workload keeps
  double workload_stat(const std::string& name) const {
    for (const auto& [k, v] : workload_stats)
      if (k == name) return v;
    return 0;
  }
  // Token states held / KV memory given to requests, time-weighted (PagedAttention's measure of
  // how much reserved KV memory holds tokens).
  double kv_token_utilization = 0;
  // Time the serving frontend (API server) added to each completed request's E2E, mean.
  double frontend_mean_s = 0;
  // The declared counters' totals over the run's replicas and requests (summary_totals(), in
  // that order: steps, num_preemptions, prefix_cache_queries, ..., recomputed_tokens, ...).
  std::vector<std::pair<std::string, double>> totals;
  // A declared total by name (0 before summarize() filled it); an undeclared name is a bug
  // and throws std::logic_error.
  double total(const std::string& name) const;
  double prefix_cache_hit_rate() const {
    const double q = total("prefix_cache_queries");
    return q > 0 ? total("prefix_cache_hits") / q : 0;
  }
  // Fleet. Clients: logical requests (first attempts) and their retries; a logical request
  // succeeds when its last attempt completes; client latency runs from its first attempt.
  std::int64_t logical_requests = 0, logical_ok = 0, retries = 0;
  LatencyStats client_e2e;
  double gpu_hours = 0;  // GPUs held (starting, up, draining, awaiting repair) × time
  double cost = 0;       // gpu_hours × price_per_hour
  double cost_per_million_output_tokens = 0;  // of completed requests; NaN when none
  double wasted_gpu_s = 0;  // GPU-seconds spent on cancelled, timed-out and failed work
  // Hotspots: max / mean outstanding requests across replicas taking requests, sampled over
  // time (1 = perfectly even): load-weighted mean (Σ max / Σ mean) and the worst sample.
  double hotspot_mean = 0, hotspot_max = 0;
  std::int64_t replica_failures = 0, replica_restarts = 0;
  std::int64_t gateway_rejected = 0, gateway_queued = 0, scale_ups = 0, scale_downs = 0;
  int peak_replicas = 0;

  // Flat (name, value) pairs in the order of summary_metrics(): the /summary table.
  std::vector<std::pair<std::string, double>> flatten() const;
};

// The declaration of one /summary metric (and sweep metric): its name, unit and description,
// and how it is read from a Summary. Summary::flatten() and the /summary table follow these;
// counters a workload keeps (Summary::workload_stats) come after wasted_tokens.
struct SummaryMetric {
  std::string name, unit, desc;
  std::function<double(const Summary&)> get;
  bool integer = false;  // a count: written as an integer column
};
const std::vector<SummaryMetric>& summary_metrics();

// A counter declared beside its field with a Total (EngineStats::declare,
// RequestRecord::declare_counters): its /summary metric is its total over the run's replicas or
// requests, under the field's name. The report's counters, the GUI's table of points and
// OpenMetrics walk these; adding a declared total adds it to every surface.
struct SummaryTotal {
  std::string name, unit, desc;
  std::string label;  // words for the GUI: the declaration's, else the name with spaces
  bool integer = false;
  bool per_replica = false;  // EngineStats (else RequestRecord)
  Total how = Total::kSum;
};
const std::vector<SummaryTotal>& summary_totals();
// The declared totals of a run, fleet-wide or of one pool (index; -1: all), in summary_totals()'
// order: what summarize() puts in Summary::totals.
std::vector<std::pair<std::string, double>> declared_totals(const RunResult& r, int pool = -1);
// Whether a request counts in `pool` (-1: all; `pool_name` its name): its own pool, or for a
// disaggregated request the pool of its prefill as well.
bool request_in_pool(const RunResult& r, const RequestRecord& q, int pool,
                     const std::string& pool_name);

// One vocabulary: a /summary metric has one name in the report, HDF5, CSV, sweep files, --slo,
// --y and the Python package, following vLLM's metric names (time_to_first_token,
// inter_token_latency, e2e_request_latency, queue_time). Short aliases are accepted wherever a
// user writes a metric: ttft, tpot (or itl), e2e and queue for those four stems, with or without
// the trailing _s of a latency (ttft_p99, ttft_p99_s). canonical_metric returns the metric's
// name for a name or an alias, "" when it names none.
std::string canonical_metric(const std::string& name);
// The short alias of a latency stem ("ttft" for time_to_first_token), "" when it has none.
std::string metric_alias(const std::string& stem);
// The aliases of a canonical metric name, for documentation ("ttft_p99, ttft_p99_s").
std::vector<std::string> metric_aliases(const std::string& canonical);

// The whole fleet, or one pool (index into r.pools) when `pool` >= 0.
Summary summarize(const RunResult& r, int pool = -1);

// What limited a run, named for operators with the numbers that show it:
//  - memory-bound: requests waited mostly because KV blocks ran out (or were preempted for them);
//    more KV memory (fp8 KV, more GPUs, shorter context) is the fix;
//  - compute-bound: they waited mostly because each step's token budget was spent: the GPU's
//    steps are as large as allowed; faster or more GPUs are the fix;
//  - queue-bound: they waited mostly because max_num_seqs requests already ran, with KV and
//    token budget to spare; the concurrency limit is the bottleneck;
//  - unsaturated: requests waited in engines less than 5% of the time. (Busy time says nothing
//    here: a continuous-batching engine steps whenever a single request runs.)
struct Binding {
  std::string resource;  // memory-bound, compute-bound, queue-bound or unsaturated
  std::string evidence;  // one sentence with the numbers
};
Binding binding_resource(const Summary& s);

}  // namespace kvfleet::sim
