#include "sim/metrics/summary.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>

namespace kvfleet::sim {

double percentile_sorted(const std::vector<double>& v, double q) {
  const double pos = q / 100.0 * static_cast<double>(v.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

double t95(int dof) {
  static const double t[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                             2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                             2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  return dof >= 1 && dof <= 30 ? t[dof - 1] : 1.96;
}

LatencyStats latency_stats(std::vector<double> v) {
  LatencyStats s;
  s.count = static_cast<std::int64_t>(v.size());
  if (v.empty()) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    s.mean = s.p50 = s.p90 = s.p99 = s.max = nan;
    return s;
  }
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  s.p50 = percentile_sorted(v, 50);
  s.p90 = percentile_sorted(v, 90);
  s.p99 = percentile_sorted(v, 99);
  s.max = v.back();
  return s;
}

namespace {

// The requests' counts, latencies and sessions into `s`; what later parts need back.
struct RequestTotals {
  double out_ok = 0;  // tokens generated for completed requests (turns and summaries)
  SimTime last_end = 0;
};
// What the loop over requests collects beside the counts it adds to the summary directly.
struct Collected {
  std::vector<double> client_e2e, ttft, tpot, e2e, queue, first, warm, cold;
  std::vector<std::uint64_t> sessions;  // distinct ones counted once at the end
  SimTime first_arrival = kTimeNever;
  double in_tokens = 0, out_tokens = 0, frontend_sum = 0;
};

// How one request ended, counted.
void count_outcome(const RequestRecord& q, Summary& s, Collected& c) {
  switch (q.outcome) {
    case Outcome::kOk:
      ++s.ok;
      if (q.purpose != kPurposeTurn) break;  // summarisation: counted apart
      c.ttft.push_back(q.ttft_s());
      c.e2e.push_back(q.e2e_s());
      c.queue.push_back(q.queue_s());
      if (q.generated_tokens > 1) c.tpot.push_back(q.tpot_s());
      c.frontend_sum += q.frontend_s;
      c.in_tokens += q.input_tokens;
      c.out_tokens += q.generated_tokens;
      break;
    case Outcome::kRejected:
      ++s.rejected;
      break;
    case Outcome::kTimedOut:
      ++s.timed_out;
      break;
    case Outcome::kCancelled:
      ++s.cancelled;
      break;
    case Outcome::kFailed:
      ++s.failed;
      break;
    case Outcome::kUnfinished:
    case Outcome::kPending:
      ++s.unfinished;
      break;
  }
}

// One request (an attempt) into the summary's counts and `c`.
void count_request(const RunResult& r, const RequestRecord& q, Summary& s, Collected& c,
                   RequestTotals& t) {
  ++s.requests;
  if (q.attempt == 0)
    ++s.logical_requests;
  else
    ++s.retries;
  if (!q.retried && q.outcome == Outcome::kOk) {
    ++s.logical_ok;
    c.client_e2e.push_back(to_seconds(q.finish - r.requests[q.origin].arrival));
  }
  if (q.outcome == Outcome::kOk) t.out_ok += q.generated_tokens;
  if (q.outcome == Outcome::kCancelled || q.outcome == Outcome::kTimedOut ||
      q.outcome == Outcome::kFailed) {  // work nobody received
    s.wasted_gpu_s += q.gpu_s;
    s.wasted_tokens += q.work_tokens;
  }
  c.first_arrival = std::min(c.first_arrival, q.arrival);
  if (q.finish >= 0) t.last_end = std::max(t.last_end, q.finish);
  if (q.num_preemptions > 0) ++s.preempted_requests;
  if (q.truncated_tokens > 0) ++s.truncated_requests;
  if (q.reject_reason == RejectReason::kContextOverflow) ++s.context_overflows;
  if (q.session != 0) c.sessions.push_back(q.session);
  if (q.purpose == kPurposeSummary) {
    ++s.summary_requests;
    s.summary_input_tokens += q.input_tokens;
    s.summary_output_tokens += q.generated_tokens;
  }
  if (q.outcome == Outcome::kOk && q.purpose == kPurposeTurn && q.turn > 0) {
    // Warm: the turn reused more than its stable prefix, i.e. some of its history.
    (q.turn == 1 ? c.first
                 : (q.cached_tokens + q.loaded_tokens > q.stable_tokens ? c.warm : c.cold))
        .push_back(q.ttft_s());
  }
  count_outcome(q, s, c);
}

RequestTotals add_requests(const RunResult& r, int pool, const std::string& pool_name, Summary& s) {
  RequestTotals t;
  Collected c;
  for (const auto& q : r.requests)
    if (request_in_pool(r, q, pool, pool_name)) count_request(r, q, s, c, t);
  s.ttft = latency_stats(std::move(c.ttft));
  s.ttft_first = latency_stats(std::move(c.first));
  s.ttft_warm = latency_stats(std::move(c.warm));
  s.ttft_cold = latency_stats(std::move(c.cold));
  std::sort(c.sessions.begin(), c.sessions.end());
  s.sessions = std::unique(c.sessions.begin(), c.sessions.end()) - c.sessions.begin();
  s.workload_stats = r.workload_stats;
  s.client_e2e = latency_stats(std::move(c.client_e2e));
  s.tpot = latency_stats(std::move(c.tpot));
  s.e2e = latency_stats(std::move(c.e2e));
  s.queue = latency_stats(std::move(c.queue));
  if (s.e2e.count > 0) s.frontend_mean_s = c.frontend_sum / static_cast<double>(s.e2e.count);
  if (r.stopped_early) t.last_end = r.end_time;
  s.duration_s = s.requests ? to_seconds(t.last_end - c.first_arrival) : 0;
  if (s.duration_s > 0) {
    s.input_tokens_per_s = c.in_tokens / s.duration_s;
    s.output_tokens_per_s = c.out_tokens / s.duration_s;
    s.requests_per_s = static_cast<double>(s.ok) / s.duration_s;
  }
  return t;
}

// The replicas' statistics into `s` (sums; time-weighted means over `span_s`, not yet divided
// by the number of replicas, which is returned).
std::size_t add_replicas(const RunResult& r, const std::string& pool_name, int pool, double span_s,
                         Summary& s) {
  const auto mine = [&](const ReplicaResult& rep) { return pool < 0 || rep.pool == pool_name; };
  std::size_t num_replicas = 0;
  for (const auto& rep : r.replicas) {
    if (!mine(rep)) continue;
    ++num_replicas;
    s.gpu_hours += rep.paid_s * rep.gpus / 3600;
    s.replica_failures += rep.failures;
    s.replica_restarts += rep.restarts;
    for (const auto& pr : r.pools)
      if (pr.name == rep.pool) s.cost += rep.paid_s * rep.gpus / 3600 * pr.price_per_hour;
    s.kv_usage_max = std::max(s.kv_usage_max, rep.stats.max_kv_usage);
    if (span_s > 0) {
      s.kv_usage_mean += rep.stats.kv_usage_time_integral / span_s;
      s.busy_fraction += rep.stats.busy_s / span_s;
      s.compute_utilization += rep.stats.compute_s_at_peak / span_s;
      s.memory_bandwidth_utilization += rep.stats.memory_s_at_peak / span_s;
      s.wait_kv_fraction += rep.stats.wait_kv_s / span_s;
      s.wait_token_budget_fraction += rep.stats.wait_token_budget_s / span_s;
      s.wait_max_seqs_fraction += rep.stats.wait_max_seqs_s / span_s;
    }
  }
  return num_replicas;
}

// The pools' gateway and autoscaler counters into `s`.
void add_pools(const RunResult& r, int pool, Summary& s) {
  for (std::size_t p = 0; p < r.pools.size(); ++p) {
    if (pool >= 0 && static_cast<int>(p) != pool) continue;
    const PoolResult& pr = r.pools[p];
    s.gateway_rejected += pr.gateway_rejected;
    s.gateway_queued += pr.gateway_queued;
    s.scale_ups += pr.scale_ups;
    s.scale_downs += pr.scale_downs;
    s.peak_replicas += pr.peak_replicas;
  }
}

// Hotspots: at each sample, max / mean outstanding over the replicas of a pool taking
// requests (pools apart: their replicas differ); samples where the pool is idle are skipped.
void add_hotspots(const RunResult& r, int pool, Summary& s) {
  double sum_max = 0, sum_mean = 0;
  for (std::size_t p = 0; p < r.pools.size(); ++p) {
    if (pool >= 0 && static_cast<int>(p) != pool) continue;
    std::vector<std::size_t> members;
    for (std::size_t i = 0; i < r.replicas.size() && i < r.timeseries.size(); ++i)
      if (r.replicas[i].pool == r.pools[p].name) members.push_back(i);
    if (members.size() < 2) continue;
    const std::size_t samples = r.timeseries[members[0]].t_s.size();
    for (std::size_t k = 0; k < samples; ++k) {
      double mx = 0, total = 0;
      int up = 0;
      for (auto i : members) {
        const TimeSeries& ts = r.timeseries[i];
        if (k >= ts.t_s.size() || (k < ts.available.size() && !ts.available[k])) continue;
        const double load = ts.num_requests_running[k] + ts.num_requests_waiting[k];
        mx = std::max(mx, load);
        total += load;
        ++up;
      }
      // Below one request per replica, max / mean says more about chance than routing.
      if (up < 2 || total < up) continue;
      sum_max += mx;
      sum_mean += total / up;
      s.hotspot_max = std::max(s.hotspot_max, mx / (total / up));
    }
  }
  // Load-weighted: mean of the max over mean of the mean, so that nearly idle moments (one
  // request on one replica reads as max/mean = N) do not dominate.
  s.hotspot_mean = sum_mean > 0 ? sum_max / sum_mean : 0;
}

}  // namespace

Summary summarize(const RunResult& r, int pool) {
  Summary s;
  const std::string pool_name = pool >= 0 ? r.pools.at(static_cast<std::size_t>(pool)).name : "";
  const auto mine = [&](const ReplicaResult& rep) { return pool < 0 || rep.pool == pool_name; };
  const RequestTotals t = add_requests(r, pool, pool_name, s);
  // Time-weighted means run from time 0 to the last completion (or the stop time).
  const std::size_t num_replicas = add_replicas(r, pool_name, pool, to_seconds(t.last_end), s);
  s.cost_per_million_output_tokens =
      t.out_ok > 0 ? s.cost / t.out_ok * 1e6 : std::numeric_limits<double>::quiet_NaN();
  add_pools(r, pool, s);
  add_hotspots(r, pool, s);
  s.totals = declared_totals(r, pool);
  double held = 0, allocated = 0;
  for (const auto& rep : r.replicas) {
    if (!mine(rep)) continue;
    held += rep.stats.kv_held_token_seconds;
    allocated += rep.stats.kv_allocated_token_seconds;
  }
  s.kv_token_utilization = allocated > 0 ? held / allocated : 0;
  if (num_replicas > 0) {
    s.kv_usage_mean /= static_cast<double>(num_replicas);
    s.busy_fraction /= static_cast<double>(num_replicas);
    for (double* x : {&s.compute_utilization, &s.memory_bandwidth_utilization, &s.wait_kv_fraction,
                      &s.wait_token_budget_fraction, &s.wait_max_seqs_fraction})
      *x /= static_cast<double>(num_replicas);
  }
  return s;
}

namespace {

// Declares the /summary metrics in order: each a name, unit, description and how it is read.
class MetricList {
 public:
  using Get = std::function<double(const Summary&)>;
  void add(std::string name, std::string unit, std::string desc, Get get, bool integer = false) {
    v_.push_back({std::move(name), std::move(unit), std::move(desc), std::move(get), integer});
  }
  // mean, p50, p90, p99 and max of a latency, seconds.
  void latency(const std::string& name, const std::string& what, LatencyStats Summary::*field) {
    const std::pair<const char*, double LatencyStats::*> stats[] = {{"mean", &LatencyStats::mean},
                                                                    {"p50", &LatencyStats::p50},
                                                                    {"p90", &LatencyStats::p90},
                                                                    {"p99", &LatencyStats::p99},
                                                                    {"max", &LatencyStats::max}};
    for (const auto& [stat, member] : stats)
      add(name + "_" + stat + "_s", "s", std::string(stat) + " " + what + " (NaN when none)",
          [field, m = member](const Summary& s) { return (s.*field).*m; });
  }
  void count(const std::string& name, const std::string& unit, const std::string& desc,
             std::int64_t Summary::*field) {
    add(
        name, unit, desc, [field](const Summary& s) { return static_cast<double>(s.*field); },
        true);
  }
  void value(const std::string& name, const std::string& unit, const std::string& desc,
             double Summary::*field) {
    add(name, unit, desc, [field](const Summary& s) { return s.*field; });
  }
  // A declared total (summary_totals()) at this place of /summary.
  void total(const std::string& name) {
    for (const auto& t : summary_totals())
      if (t.name == name) {
        add(
            t.name, t.unit, t.desc, [n = t.name](const Summary& s) { return s.total(n); },
            t.integer);
        return;
      }
    throw std::logic_error("summary_metrics: '" + name + "' is not a declared total");
  }
  // Every declared total not placed above, last (a new counter lands here, so that adding it
  // moves no existing /summary column: sweep files resume by column order).
  void other_totals() {
    for (const auto& t : summary_totals()) {
      bool placed = false;
      for (const auto& m : v_) placed = placed || m.name == t.name;
      if (!placed) total(t.name);
    }
  }
  std::vector<SummaryMetric> v_;
};

// The requests: how they ended, their preemptions and latencies.
void declare_request_metrics(MetricList& m) {
  using S = Summary;
  m.count("requests", "requests", "attempts that arrived (retries are attempts of their own)",
          &S::requests);
  m.count("ok", "requests", "completed all their output tokens", &S::ok);
  m.count("rejected", "requests",
          "refused: by the engine (cannot fit), the application (context overflow) or the "
          "gateway (429)",
          &S::rejected);
  m.count("timed_out", "requests", "the client's timeout ended them", &S::timed_out);
  m.count("cancelled", "requests", "the user left (workload patience)", &S::cancelled);
  m.count("failed", "requests", "lost with a replica (failure, deploy without drain)", &S::failed);
  m.count("unfinished", "requests", "still in the system when simulation.max_time_s stopped it",
          &S::unfinished);
  m.count("preempted_requests", "requests", "preempted at least once", &S::preempted_requests);
  m.total("num_preemptions");
  m.total("recomputed_tokens");
  m.latency("time_to_first_token", "time to first token of completed requests", &S::ttft);
  m.latency("inter_token_latency", "time per output token after the first (TPOT)", &S::tpot);
  m.latency("e2e_request_latency", "end-to-end latency of completed requests", &S::e2e);
  m.latency("queue_time", "time from arrival to the first step that computed the request",
            &S::queue);
  m.value("frontend_mean_s", "s",
          "time the serving frontend (API server: HTTP, tokenisation, streaming, closing the "
          "stream) added to each completed request's E2E, mean; 0 with the frontend off",
          &S::frontend_mean_s);
}

// Throughput, KV memory, utilisation, waits and the engines' counters.
void declare_engine_metrics(MetricList& m) {
  using S = Summary;
  m.value("duration_s", "s", "first arrival to last completion (or the stop time)", &S::duration_s);
  m.value("input_tokens_per_s", "tokens/s", "prompt tokens of completed requests per second",
          &S::input_tokens_per_s);
  m.value("output_tokens_per_s", "tokens/s", "output tokens of completed requests per second",
          &S::output_tokens_per_s);
  m.value("requests_per_s", "requests/s", "completed requests per second", &S::requests_per_s);
  m.value("kv_cache_usage_mean", "fraction",
          "KV blocks held by requests, time-weighted, mean over replicas", &S::kv_usage_mean);
  m.value("kv_cache_usage_max", "fraction", "highest KV usage of any replica", &S::kv_usage_max);
  m.value("kv_token_utilization", "fraction",
          "token states held over KV memory given to requests, time-weighted (PagedAttention's "
          "measure)",
          &S::kv_token_utilization);
  m.value("busy_fraction", "fraction", "share of the run replicas spent in steps",
          &S::busy_fraction);
  m.value("compute_utilization", "fraction",
          "achieved over peak FLOP/s per GPU, over the run, mean over replicas",
          &S::compute_utilization);
  m.value("memory_bandwidth_utilization", "fraction",
          "achieved over peak device-memory bandwidth per GPU, over the run, mean over replicas",
          &S::memory_bandwidth_utilization);
  m.value("wait_kv_fraction", "fraction",
          "share of the run requests waited in engines because KV blocks ran out",
          &S::wait_kv_fraction);
  m.value("wait_token_budget_fraction", "fraction",
          "share of the run requests waited because the step's token budget was spent",
          &S::wait_token_budget_fraction);
  m.value("wait_max_seqs_fraction", "fraction",
          "share of the run requests waited because max_num_seqs requests already ran",
          &S::wait_max_seqs_fraction);
  m.total("steps");
  m.total("prefix_cache_queries");
  m.total("prefix_cache_hits");
  m.add("prefix_cache_hit_rate", "fraction", "prefix_cache_hits / prefix_cache_queries",
        [](const S& s) { return s.prefix_cache_hit_rate(); });
  m.total("cache_evictions");
  m.total("num_swaps");
  m.count("sessions", "sessions", "conversations that started", &S::sessions);
  m.count("wasted_tokens", "tokens", "tokens computed for requests cancelled, timed out or failed",
          &S::wasted_tokens);
}

// Conversations: their lifecycle, summaries, context limits and turns' TTFT.
void declare_conversation_metrics(MetricList& m) {
  using S = Summary;
  // The conversation lifecycle's counters (the workload's own; 0 for other workloads).
  auto workload_count = [&](const char* name, const char* unit, const char* desc) {
    m.add(
        name, unit, desc, [n = std::string(name)](const S& s) { return s.workload_stat(n); }, true);
  };
  workload_count("sessions_gone_idle", "sessions",
                 "times a conversation went idle (workload.idle_timeout_s) and its KV was dropped");
  workload_count("sessions_archived", "sessions",
                 "conversations archived after workload.archive_timeout_s without a message");
  workload_count("summaries", "summaries",
                 "summaries the conversations' context policy asked for (summarize)");
  workload_count("released_blocks", "blocks", "KV blocks dropped for sessions that went idle");
  m.count("summary_requests", "requests", "summarisation requests (summarize policy)",
          &S::summary_requests);
  m.count("summary_input_tokens", "tokens", "their prompt tokens", &S::summary_input_tokens);
  m.count("summary_output_tokens", "tokens", "their output tokens", &S::summary_output_tokens);
  m.count("context_overflows", "requests", "turns the application could not send (too long)",
          &S::context_overflows);
  m.count("truncated_requests", "requests", "turns whose history was cut to fit",
          &S::truncated_requests);
  m.total("truncated_tokens");
  m.latency("time_to_first_token_first_turn", "TTFT of conversations' first turns", &S::ttft_first);
  m.latency("time_to_first_token_warm", "TTFT of later turns that reused cached KV", &S::ttft_warm);
  m.latency("time_to_first_token_cold", "TTFT of later turns that reused none", &S::ttft_cold);
}

// KV tiers, clients' retries, cost and the fleet's lifecycle.
void declare_fleet_metrics(MetricList& m) {
  using S = Summary;
  m.total("tier_hit_tokens");
  m.total("tier_recomputed_tokens");
  m.count("logical_requests", "requests", "requests as clients see them (first attempts)",
          &S::logical_requests);
  m.count("logical_ok", "requests", "of which the last attempt completed", &S::logical_ok);
  m.count("retries", "requests", "attempts after the first", &S::retries);
  m.latency("client_e2e_latency", "latency clients saw, first attempt to last completion",
            &S::client_e2e);
  m.value("gpu_hours", "GPU-hours", "GPUs held (starting, up, draining, awaiting repair) x time",
          &S::gpu_hours);
  m.value("cost", "$", "gpu_hours x price_per_hour", &S::cost);
  m.value("cost_per_million_output_tokens", "$",
          "cost per million output tokens of completed requests (NaN when none)",
          &S::cost_per_million_output_tokens);
  m.value("wasted_gpu_s", "GPU-s", "GPU-seconds spent on cancelled, timed-out and failed work",
          &S::wasted_gpu_s);
  m.value("hotspot_mean", "ratio",
          "max over mean outstanding requests across replicas, load-weighted (1 = even)",
          &S::hotspot_mean);
  m.value("hotspot_max", "ratio", "the worst sample of that ratio", &S::hotspot_max);
  m.count("replica_failures", "failures", "replica failures", &S::replica_failures);
  m.count("replica_restarts", "restarts", "replicas that started again", &S::replica_restarts);
  m.count("gateway_rejected", "requests", "refused by gateways (429)", &S::gateway_rejected);
  m.count("gateway_queued", "requests", "held in gateway queues", &S::gateway_queued);
  m.count("scale_ups", "replicas", "replicas the autoscaler started", &S::scale_ups);
  m.count("scale_downs", "replicas", "replicas the autoscaler drained", &S::scale_downs);
  m.add(
      "peak_replicas", "replicas", "most replicas up or starting at once",
      [](const S& s) { return static_cast<double>(s.peak_replicas); }, true);
}

std::vector<SummaryMetric> declare_summary_metrics() {
  MetricList m;
  declare_request_metrics(m);
  declare_engine_metrics(m);
  declare_conversation_metrics(m);
  declare_fleet_metrics(m);
  m.other_totals();
  return m.v_;
}

}  // namespace

const std::vector<SummaryMetric>& summary_metrics() {
  static const std::vector<SummaryMetric> v = [] {
    auto m = declare_summary_metrics();
    std::set<std::string> names;  // a declared total may not take a name /summary already has
    for (const auto& x : m)
      if (!names.insert(x.name).second)
        throw std::logic_error("summary_metrics: '" + x.name + "' is declared twice");
    return m;
  }();
  return v;
}

namespace {

// Short aliases of the latency stems, vLLM's names on the right.
constexpr std::pair<const char*, const char*> kAliases[] = {{"ttft", "time_to_first_token"},
                                                            {"tpot", "inter_token_latency"},
                                                            {"itl", "inter_token_latency"},
                                                            {"e2e", "e2e_request_latency"},
                                                            {"queue", "queue_time"}};

bool is_metric(const std::string& name) {
  for (const auto& m : summary_metrics())
    if (m.name == name) return true;
  return false;
}

}  // namespace

std::string canonical_metric(const std::string& name) {
  if (is_metric(name)) return name;
  if (is_metric(name + "_s")) return name + "_s";  // a latency without its unit suffix
  for (const auto& [alias, stem] : kAliases) {
    const std::string a = alias;
    if (name.rfind(a + "_", 0) != 0) continue;
    const std::string rest = name.substr(a.size());  // _p99 or _p99_s
    for (const std::string& full : {std::string(stem) + rest, std::string(stem) + rest + "_s"})
      if (is_metric(full)) return full;
  }
  return "";
}

std::string metric_alias(const std::string& stem) {
  for (const auto& [alias, s] : kAliases)
    if (stem == s) return alias;
  return "";
}

std::vector<std::string> metric_aliases(const std::string& canonical) {
  std::vector<std::string> out;
  const bool latency = canonical.size() > 2 && canonical.substr(canonical.size() - 2) == "_s";
  if (latency && is_metric(canonical)) out.push_back(canonical.substr(0, canonical.size() - 2));
  for (const auto& [alias, stem] : kAliases) {
    const std::string s = stem;
    if (canonical.rfind(s + "_", 0) != 0) continue;
    const std::string rest = canonical.substr(s.size());
    if (!latency) continue;
    out.push_back(std::string(alias) + rest.substr(0, rest.size() - 2));
    out.push_back(std::string(alias) + rest);
  }
  return out;
}

std::vector<std::pair<std::string, double>> Summary::flatten() const {
  std::vector<std::pair<std::string, double>> v;
  for (const auto& m : summary_metrics()) {
    v.push_back({m.name, m.get(*this)});
    // A workload's counters that have no declaration follow wasted_tokens (their place in
    // /summary); declared ones (the conversations' lifecycle) are above, with unit and type.
    if (m.name == "wasted_tokens")
      for (const auto& kv : workload_stats) {
        bool declared = false;
        for (const auto& d : summary_metrics()) declared = declared || d.name == kv.first;
        if (!declared) v.push_back(kv);
      }
  }
  return v;
}

Binding binding_resource(const Summary& s) {
  auto pct = [](double x) {
    char b[32];
    std::snprintf(b, sizeof b, "%.0f%%", 100 * x);
    return std::string(b);
  };
  const double waiting =
      s.wait_kv_fraction + s.wait_token_budget_fraction + s.wait_max_seqs_fraction;
  const std::string gpu = "compute utilisation " + pct(s.compute_utilization) +
                          ", memory bandwidth " + pct(s.memory_bandwidth_utilization) + ", busy " +
                          pct(s.busy_fraction);
  const std::string kv =
      "KV usage mean " + pct(s.kv_usage_mean) + ", max " + pct(s.kv_usage_max) + ", " +
      std::to_string(static_cast<std::int64_t>(s.total("num_preemptions"))) + " preemptions";
  const std::string steps = s.memory_bandwidth_utilization > s.compute_utilization
                                ? " (steps limited by memory bandwidth more than FLOPs)"
                                : " (steps limited by FLOPs more than memory bandwidth)";
  if (waiting < 0.05)
    return {"unsaturated",
            "requests waited in engines " + pct(waiting) +
                " of the time: no limit held them back (busy time is no saturation signal: a "
                "continuous-batching engine steps whenever one request runs); " +
                gpu + "; " + kv};
  const std::string waited = "requests waited " + pct(waiting) + " of the time: for KV " +
                             pct(s.wait_kv_fraction) + ", for the token budget " +
                             pct(s.wait_token_budget_fraction) + ", for max_num_seqs " +
                             pct(s.wait_max_seqs_fraction);
  if (s.wait_kv_fraction >= s.wait_token_budget_fraction &&
      s.wait_kv_fraction >= s.wait_max_seqs_fraction)
    return {"memory-bound", waited + "; " + kv + "; " + gpu};
  if (s.wait_token_budget_fraction >= s.wait_max_seqs_fraction)
    return {"compute-bound", waited + steps + "; " + gpu + "; " + kv};
  return {"queue-bound", waited + "; " + kv + "; " + gpu};
}

}  // namespace kvfleet::sim
