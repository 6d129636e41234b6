#include "sim/metrics/summary.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace kvfleet::sim {

double percentile_sorted(const std::vector<double>& v, double q) {
  const double pos = q / 100.0 * static_cast<double>(v.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
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

Summary summarize(const RunResult& r, int pool) {
  Summary s;
  const std::string pool_name = pool >= 0 ? r.pools.at(static_cast<std::size_t>(pool)).name : "";
  const auto mine = [&](const ReplicaResult& rep) { return pool < 0 || rep.pool == pool_name; };
  std::vector<double> client_e2e;
  double out_ok = 0;
  std::vector<double> ttft, tpot, e2e, queue, first, warm, cold;
  std::set<std::uint64_t> sessions;
  SimTime first_arrival = kTimeNever, last_end = 0;
  double in_tokens = 0, out_tokens = 0;
  for (const auto& q : r.requests) {
    // A disaggregated request counts in its decode pool and in the pool of its prefill.
    if (pool >= 0 && q.pool != pool &&
        !(q.prefill_replica >= 0 &&
          r.replicas[static_cast<std::size_t>(q.prefill_replica)].pool == pool_name))
      continue;
    ++s.requests;
    if (q.attempt == 0)
      ++s.logical_requests;
    else
      ++s.retries;
    if (!q.retried && q.outcome == Outcome::kOk) {
      ++s.logical_ok;
      client_e2e.push_back(to_seconds(q.finish - r.requests[q.origin].arrival));
    }
    if (q.outcome == Outcome::kOk) out_ok += q.generated_tokens;
    if (q.outcome == Outcome::kCancelled || q.outcome == Outcome::kTimedOut ||
        q.outcome == Outcome::kFailed) {  // work nobody received
      s.wasted_gpu_s += q.gpu_s;
      s.wasted_tokens += q.work_tokens;
    }
    first_arrival = std::min(first_arrival, q.arrival);
    if (q.finish >= 0) last_end = std::max(last_end, q.finish);
    if (q.num_preemptions > 0) ++s.preempted_requests;
    s.recomputed_tokens += q.recomputed_tokens;
    if (q.truncated_tokens > 0) ++s.truncated_requests, s.truncated_tokens += q.truncated_tokens;
    if (q.reject_reason == RejectReason::kContextOverflow) ++s.context_overflows;
    if (q.session != 0) sessions.insert(q.session);
    if (q.purpose == kPurposeSummary) {
      ++s.summary_requests;
      s.summary_input_tokens += q.input_tokens;
      s.summary_output_tokens += q.generated_tokens;
    }
    if (q.outcome == Outcome::kOk && q.purpose == kPurposeTurn && q.turn > 0) {
      // Warm: the turn reused more than its stable prefix, i.e. some of its history.
      (q.turn == 1 ? first : (q.cached_tokens + q.loaded_tokens > q.stable_tokens ? warm : cold))
          .push_back(q.ttft_s());
    }
    switch (q.outcome) {
      case Outcome::kOk:
        ++s.ok;
        if (q.purpose != kPurposeTurn) break;  // summarisation: counted apart
        ttft.push_back(q.ttft_s());
        e2e.push_back(q.e2e_s());
        queue.push_back(q.queue_s());
        if (q.generated_tokens > 1) tpot.push_back(q.tpot_s());
        in_tokens += q.input_tokens;
        out_tokens += q.generated_tokens;
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
  s.ttft = latency_stats(std::move(ttft));
  s.ttft_first = latency_stats(std::move(first));
  s.ttft_warm = latency_stats(std::move(warm));
  s.ttft_cold = latency_stats(std::move(cold));
  s.sessions = static_cast<std::int64_t>(sessions.size());
  s.workload_stats = r.workload_stats;
  s.client_e2e = latency_stats(std::move(client_e2e));
  s.tpot = latency_stats(std::move(tpot));
  s.e2e = latency_stats(std::move(e2e));
  s.queue = latency_stats(std::move(queue));
  if (r.stopped_early) last_end = r.end_time;
  s.duration_s = s.requests ? to_seconds(last_end - first_arrival) : 0;
  if (s.duration_s > 0) {
    s.input_tokens_per_s = in_tokens / s.duration_s;
    s.output_tokens_per_s = out_tokens / s.duration_s;
    s.requests_per_s = static_cast<double>(s.ok) / s.duration_s;
  }
  // Time-weighted means run from time 0 to the last completion (or the stop time).
  const double span_s = to_seconds(last_end);
  std::size_t num_replicas = 0;
  for (const auto& rep : r.replicas) {
    if (!mine(rep)) continue;
    ++num_replicas;
    s.gpu_hours += rep.paid_s * rep.gpus / 3600;
    s.replica_failures += rep.failures;
    s.replica_restarts += rep.restarts;
    for (const auto& pr : r.pools)
      if (pr.name == rep.pool) s.cost += rep.paid_s * rep.gpus / 3600 * pr.price_per_hour;
    s.num_preemptions += rep.stats.num_preemptions;
    s.prefix_cache_queries += rep.stats.prefix_cache_queries;
    s.prefix_cache_hits += rep.stats.prefix_cache_hits;
    s.cache_evictions += rep.stats.cache_evictions;
    s.num_swaps += rep.stats.num_swaps;
    s.tier_hit_tokens += rep.stats.tier_hit_tokens;
    s.tier_recomputed_tokens += rep.stats.tier_recomputed_tokens;
    s.steps += rep.stats.steps;
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
  s.cost_per_million_output_tokens =
      out_ok > 0 ? s.cost / out_ok * 1e6 : std::numeric_limits<double>::quiet_NaN();
  for (std::size_t p = 0; p < r.pools.size(); ++p) {
    if (pool >= 0 && static_cast<int>(p) != pool) continue;
    const PoolResult& pr = r.pools[p];
    s.gateway_rejected += pr.gateway_rejected;
    s.gateway_queued += pr.gateway_queued;
    s.scale_ups += pr.scale_ups;
    s.scale_downs += pr.scale_downs;
    s.peak_replicas += pr.peak_replicas;
  }
  // Hotspots: at each sample, max / mean outstanding over the replicas of a pool taking
  // requests (pools apart: their replicas differ); samples where the pool is idle are skipped.
  {
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

std::vector<std::pair<std::string, double>> Summary::flatten() const {
  std::vector<std::pair<std::string, double>> v = {
      {"requests", double(requests)},
      {"ok", double(ok)},
      {"rejected", double(rejected)},
      {"timed_out", double(timed_out)},
      {"cancelled", double(cancelled)},
      {"failed", double(failed)},
      {"unfinished", double(unfinished)},
      {"preempted_requests", double(preempted_requests)},
      {"num_preemptions", double(num_preemptions)},
      {"recomputed_tokens", double(recomputed_tokens)},
  };
  auto add = [&](const std::string& name, const LatencyStats& l) {
    v.push_back({name + "_mean_s", l.mean});
    v.push_back({name + "_p50_s", l.p50});
    v.push_back({name + "_p90_s", l.p90});
    v.push_back({name + "_p99_s", l.p99});
    v.push_back({name + "_max_s", l.max});
  };
  add("time_to_first_token", ttft);
  add("inter_token_latency", tpot);
  add("e2e_request_latency", e2e);
  add("queue_time", queue);
  v.push_back({"duration_s", duration_s});
  v.push_back({"input_tokens_per_s", input_tokens_per_s});
  v.push_back({"output_tokens_per_s", output_tokens_per_s});
  v.push_back({"requests_per_s", requests_per_s});
  v.push_back({"kv_cache_usage_mean", kv_usage_mean});
  v.push_back({"kv_cache_usage_max", kv_usage_max});
  v.push_back({"kv_token_utilization", kv_token_utilization});
  v.push_back({"busy_fraction", busy_fraction});
  v.push_back({"compute_utilization", compute_utilization});
  v.push_back({"memory_bandwidth_utilization", memory_bandwidth_utilization});
  v.push_back({"wait_kv_fraction", wait_kv_fraction});
  v.push_back({"wait_token_budget_fraction", wait_token_budget_fraction});
  v.push_back({"wait_max_seqs_fraction", wait_max_seqs_fraction});
  v.push_back({"steps", double(steps)});
  v.push_back({"prefix_cache_queries", double(prefix_cache_queries)});
  v.push_back({"prefix_cache_hits", double(prefix_cache_hits)});
  v.push_back({"prefix_cache_hit_rate", prefix_cache_hit_rate()});
  v.push_back({"cache_evictions", double(cache_evictions)});
  v.push_back({"num_swaps", double(num_swaps)});
  v.push_back({"sessions", double(sessions)});
  v.push_back({"wasted_tokens", double(wasted_tokens)});
  for (const auto& kv : workload_stats) v.push_back(kv);
  v.push_back({"summary_requests", double(summary_requests)});
  v.push_back({"summary_input_tokens", double(summary_input_tokens)});
  v.push_back({"summary_output_tokens", double(summary_output_tokens)});
  v.push_back({"context_overflows", double(context_overflows)});
  v.push_back({"truncated_requests", double(truncated_requests)});
  v.push_back({"truncated_tokens", double(truncated_tokens)});
  add("time_to_first_token_first_turn", ttft_first);
  add("time_to_first_token_warm", ttft_warm);
  add("time_to_first_token_cold", ttft_cold);
  v.push_back({"tier_hit_tokens", double(tier_hit_tokens)});
  v.push_back({"tier_recomputed_tokens", double(tier_recomputed_tokens)});
  v.push_back({"logical_requests", double(logical_requests)});
  v.push_back({"logical_ok", double(logical_ok)});
  v.push_back({"retries", double(retries)});
  add("client_e2e_latency", client_e2e);
  v.push_back({"gpu_hours", gpu_hours});
  v.push_back({"cost", cost});
  v.push_back({"cost_per_million_output_tokens", cost_per_million_output_tokens});
  v.push_back({"wasted_gpu_s", wasted_gpu_s});
  v.push_back({"hotspot_mean", hotspot_mean});
  v.push_back({"hotspot_max", hotspot_max});
  v.push_back({"replica_failures", double(replica_failures)});
  v.push_back({"replica_restarts", double(replica_restarts)});
  v.push_back({"gateway_rejected", double(gateway_rejected)});
  v.push_back({"gateway_queued", double(gateway_queued)});
  v.push_back({"scale_ups", double(scale_ups)});
  v.push_back({"scale_downs", double(scale_downs)});
  v.push_back({"peak_replicas", double(peak_replicas)});
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
  const std::string kv = "KV usage mean " + pct(s.kv_usage_mean) + ", max " + pct(s.kv_usage_max) +
                         ", " + std::to_string(s.num_preemptions) + " preemptions";
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
