#include "sim/output/report.h"

#include "sim/metrics/fidelity.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace kvfleet::sim {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

// Latency in the unit that reads best: ms below 1 s.
std::string lat(double s) {
  if (std::isnan(s)) return "-";
  return s < 1 ? fmt("%.1f ms", s * 1e3) : fmt("%.2f s", s);
}

std::string pad(const std::string& s, std::size_t w) {
  return s.size() >= w ? s : std::string(w - s.size(), ' ') + s;
}

void fleet_line(std::ostream& o, const char* label, const Summary& s) {
  o << label << fmt("%.2f", s.gpu_hours) << " GPU-hours";
  if (s.cost > 0)
    o << ", $" << fmt("%.2f", s.cost) << " ($"
      << (std::isnan(s.cost_per_million_output_tokens)
              ? std::string("-")
              : fmt("%.2f", s.cost_per_million_output_tokens))
      << " per million output tokens)";
  o << "; " << fmt("%.1f", s.wasted_gpu_s)
    << " GPU-s wasted on cancelled, timed-out and failed work";
  if (s.hotspot_mean > 0)
    o << "; hotspot (max/mean load) mean " << fmt("%.2f", s.hotspot_mean) << ", max "
      << fmt("%.2f", s.hotspot_max);
  o << "\n";
  if (s.replica_failures || s.replica_restarts || s.scale_ups || s.scale_downs)
    o << "    replicas: " << s.replica_failures << " failures, " << s.replica_restarts
      << " starts (repairs, deploys, scale-ups), " << s.scale_ups << " scaled up, " << s.scale_downs
      << " scaled down, at most " << s.peak_replicas << " up or starting\n";
  if (s.gateway_rejected || s.gateway_queued)
    o << "    gateway: " << s.gateway_queued << " queued, " << s.gateway_rejected
      << " rejected with retry-after\n";
}

// `pools`: each pool's summary when there are several, else empty.
void print_fleet(std::ostream& o, const RunResult& r, const Summary& s,
                 const std::vector<Summary>& pools) {
  o << "\n";
  fleet_line(o, "Fleet: ", s);
  for (std::size_t p = 0; p < pools.size(); ++p) {
    const Summary& ps = pools[p];
    o << "  pool " << r.pools[p].name << ": " << ps.requests << " requests, " << ps.ok
      << " completed; TTFT p50 " << lat(ps.ttft.p50) << ", p99 " << lat(ps.ttft.p99)
      << "; TPOT p99 " << lat(ps.tpot.p99) << "; E2E p99 " << lat(ps.e2e.p99) << "\n";
    fleet_line(o, "    ", ps);
  }
}

std::string left(const std::string& s, std::size_t w) {
  return s.size() >= w ? s + " " : s + std::string(w - s.size(), ' ');
}

// Seconds of warning before an event, as text: "12.0 s ahead", "3.0 s late" or "no event".
std::string lead_text(double lead) {
  if (std::isnan(lead)) return "none in the run";
  return lead >= 0 ? fmt("%.1f s ahead", lead) : fmt("%.1f s late", -lead);
}

void print_alerts(std::ostream& o, const AlertsConfig& cfg, const AlertReport& a) {
  o << "\nAlert events (first of each kind):";
  if (a.events.empty()) o << " none";
  o << "\n";
  for (const auto& e : a.events)
    o << "  " << fmt("%9.1f s  ", e.t_s) << left(e.kind, 15) << left(e.scope, 10) << e.detail
      << "\n";
  for (const auto& rule : cfg.rules) {
    std::vector<const AlertFiring*> mine;
    for (const auto& f : a.firings)
      if (f.rule == rule.name) mine.push_back(&f);
    o << "Alert " << rule.name << " (" << rule.scope << "): fired " << mine.size()
      << (mine.size() == 1 ? " time" : " times") << "\n";
    constexpr std::size_t kShown = 5;  // all of them in /alerts and alerts.csv
    for (std::size_t i = 0; i < mine.size() && i < kShown; ++i) {
      const AlertFiring& f = *mine[i];
      o << "  " << fmt("%9.1f s  ", f.fire_s) << left(f.scope, 10) << "lead before out of memory "
        << lead_text(f.lead_oom_s) << "; rejection wave " << lead_text(f.lead_rejection_wave_s)
        << "; SLO breach " << lead_text(f.lead_slo_breach_s) << "\n";
    }
    if (mine.size() > kShown) o << "  ... " << mine.size() - kShown << " more in /alerts\n";
  }
}

// One latency row: the name, mean, p50, p90 and p99, and the metric's name in files (with its
// short alias), <stat> standing for mean, p50, p90, p99 or max.
void latency_row(std::ostream& o, const char* name, const LatencyStats& l,
                 const char* metric = nullptr) {
  o << "  " << name << pad(lat(l.mean), 10) << pad(lat(l.p50), 10) << pad(lat(l.p90), 10)
    << pad(lat(l.p99), 10);
  if (metric) {
    const std::string alias = metric_alias(metric);
    o << "   " << metric << "_<stat>_s" << (alias.empty() ? "" : " (" + alias + "_<stat>)");
  }
  o << "\n";
}

// Each pool: its GPUs and parallelism, engine limits and memory budget per GPU.
void print_pools(std::ostream& o, const Scenario& sc) {
  const ScenarioConfig& c = sc.config;
  for (std::size_t p = 0; p < c.pools.size(); ++p) {
    const auto& pc = c.pools[p];
    const auto& info = sc.pools[p];
    const auto& m = info.memory;
    o << "\nPool " << pc.name << ": " << pc.replicas << " × " << info.gpu.name;
    if (pc.tensor_parallel > 1) o << " ×" << pc.tensor_parallel << " (tensor parallel)";
    if (pc.pipeline_parallel > 1)
      o << " ×" << pc.pipeline_parallel << " (pipeline stages of " << m.stage_layers << " layers)";
    if (pc.data_parallel > 1) {
      o << " ×" << pc.data_parallel << " (data-parallel ranks"
        << (info.model.moe()
                ? std::string(", experts ") + (pc.expert_parallel ? "placed whole" : "sliced") +
                      " over " + std::to_string(pc.tensor_parallel * pc.data_parallel) +
                      " GPUs, ranks in lockstep"
                : std::string())
        << ")";
    }
    o << ", " << info.model.name << " weights " << m.weight_dtype << ", KV " << m.kv_dtype
      << ", cost model " << pc.cost_model.impl << "\n";
    o << "  engine: max_num_seqs " << pc.engine.max_num_seqs << ", max_num_batched_tokens "
      << pc.engine.max_num_batched_tokens << ", block_size " << pc.engine.block_size
      << ", chunked prefill " << (pc.engine.enable_chunked_prefill ? "on" : "off")
      << ", max_model_len " << info.max_model_len << "\n";
    o << "  memory budget per GPU:\n";
    o << "    device                " << fmt("%8.2f GiB", m.device_bytes / kGiB) << "\n";
    o << "    usable (× " << fmt("%.2f", pc.engine.gpu_memory_utilization) << ")       "
      << fmt("%8.2f GiB", m.usable_bytes / kGiB) << "\n";
    o << "    weights               " << fmt("%8.2f GiB", m.weights_bytes / kGiB) << "\n";
    o << "    activation peak       " << fmt("%8.2f GiB", m.activation_peak_bytes / kGiB)
      << (pc.engine.activation_peak_gib > 0 ? " (given)" : " (estimated)") << "\n";
    o << "    runtime overhead      " << fmt("%8.2f GiB", m.runtime_overhead_bytes / kGiB) << "\n";
    o << "    KV pool               " << fmt("%8.2f GiB", m.kv_pool_bytes / kGiB) << "  = "
      << m.num_blocks << " blocks × " << pc.engine.block_size
      << " tokens = " << m.kv_capacity_tokens(pc.engine.block_size) << " tokens at "
      << fmt("%.1f", m.kv_bytes_per_token / 1024) << " KiB/token"
      << (m.blocks_overridden ? " (num_gpu_blocks_override)" : "") << "\n";
    o << "    margin (unused)       " << fmt("%8.2f GiB", m.margin_bytes / kGiB) << "\n";
    if (m.blocks_overridden) {
      o << "    (the budget leaves   " << fmt("%8.2f GiB", m.computed_pool_bytes / kGiB)
        << " for KV; num_gpu_blocks_override sets the pool instead)\n";
      if (m.override_exceeds_budget())
        o << "  WARNING: num_gpu_blocks_override gives a KV pool larger than the memory budget "
             "leaves (this GPU could not hold it): check the override, the model, its "
             "precision and the GPU\n";
    }
    o << "  sequences that fit in the KV pool at once:";
    for (double ctx : c.simulation.report_context_tokens) {
      const auto blocks_per_seq =
          (static_cast<std::int64_t>(ctx) + pc.engine.block_size - 1) / pc.engine.block_size;
      o << " " << static_cast<std::int64_t>(ctx) << " tokens: " << m.num_blocks / blocks_per_seq
        << ";";
    }
    o << "\n";
  }
}

// A declared total (summary_totals()) as the integer it counts.
std::int64_t count_of(const Summary& s, const char* name) {
  return static_cast<std::int64_t>(s.total(name));
}

// What happened to the requests: completed, rejected (and why), timed out, preempted.
void print_requests(std::ostream& o, const RunResult& r, const Summary& s) {
  o << "\nRequests: " << s.requests << " arrived, " << s.ok << " completed, " << s.rejected
    << " rejected";
  if (s.unfinished) o << ", " << s.unfinished << " unfinished (stopped at max_time_s)";
  if (s.timed_out) o << ", " << s.timed_out << " timed out";
  if (s.cancelled) o << ", " << s.cancelled << " cancelled";
  if (s.failed) o << ", " << s.failed << " failed";
  if (s.wasted_tokens) o << " (" << s.wasted_tokens << " tokens of work wasted)";
  o << "\n  preempted: " << s.preempted_requests << " requests (" << count_of(s, "num_preemptions")
    << " preemptions";
  if (count_of(s, "num_swaps"))
    o << ", " << count_of(s, "num_swaps") << " of them swapped to host memory";
  o << ", " << count_of(s, "recomputed_tokens") << " tokens recomputed)\n";
  if (s.rejected) {
    constexpr int kReasons = static_cast<int>(RejectReason::kQueueTimeout) + 1;
    std::int64_t by[kReasons] = {};
    for (const auto& q : r.requests)
      if (q.outcome == Outcome::kRejected) ++by[static_cast<int>(q.reject_reason)];
    o << "  rejected because:";
    for (int i = 1; i < kReasons; ++i)
      if (by[i]) o << " " << reject_reason_name(static_cast<RejectReason>(i)) << " " << by[i];
    o << "\n";
  }
}

// TTFT by priority class, when there is more than one.
void print_by_priority(std::ostream& o, const RunResult& r) {
  std::vector<std::vector<double>> by(1);
  for (const auto& q : r.requests) {
    if (q.outcome != Outcome::kOk || q.priority < 0) continue;
    if (static_cast<std::size_t>(q.priority) >= by.size()) by.resize(q.priority + 1);
    by[q.priority].push_back(q.ttft_s());
  }
  if (by.size() > 1)
    for (std::size_t p = 0; p < by.size(); ++p) {
      if (by[p].empty()) continue;
      char name[64];
      std::snprintf(name, sizeof name, "  TTFT, priority %-2zu (%6zu req) ", p, by[p].size());
      o << name;
      const LatencyStats l = latency_stats(by[p]);
      o << pad(lat(l.mean), 10) << pad(lat(l.p50), 10) << pad(lat(l.p90), 10) << pad(lat(l.p99), 10)
        << "\n";
    }
}

// Latencies by load stage (workload.load), when the workload ran in stages.
void print_by_stage(std::ostream& o, const RunResult& r) {
  std::vector<std::vector<double>> ttft, tpot;
  std::vector<std::int64_t> sent;
  for (const auto& q : r.requests) {
    if (q.stage < 0 || q.purpose != kPurposeTurn) continue;
    const auto k = static_cast<std::size_t>(q.stage);
    if (k >= sent.size()) ttft.resize(k + 1), tpot.resize(k + 1), sent.resize(k + 1, 0);
    ++sent[k];
    if (q.outcome != Outcome::kOk) continue;
    ttft[k].push_back(q.ttft_s());
    if (q.generated_tokens > 1) tpot[k].push_back(q.tpot_s());
  }
  if (!sent.empty()) o << "By load stage (workload.load; requests.csv column stage):\n";
  for (std::size_t k = 0; k < sent.size(); ++k) {
    if (sent[k] == 0) continue;
    for (int m = 0; m < 2; ++m) {
      const auto& v = m == 0 ? ttft[k] : tpot[k];
      char name[64];
      std::snprintf(name, sizeof name, "  %s, stage %-2zu (%6zu ok) ", m == 0 ? "TTFT" : "TPOT", k,
                    ttft[k].size());
      o << name;
      if (v.empty()) {
        o << "no completed request\n";
        continue;
      }
      const LatencyStats l = latency_stats(v);
      o << pad(lat(l.mean), 10) << pad(lat(l.p50), 10) << pad(lat(l.p90), 10) << pad(lat(l.p99), 10)
        << "\n";
    }
  }
}

// Latencies: overall with the cost model's expected error, as clients with retries see them, by
// priority class and by load stage.
void print_latencies(std::ostream& o, const Scenario& sc, const RunResult& r, const Summary& s) {
  const ScenarioConfig& c = sc.config;
  // Each latency row ends with the metric's one name (files, sweeps, --slo, --y, the Python
  // package; short aliases in parentheses), <stat> standing for mean, p50, p90, p99 or max.
  o << "\nLatency of completed requests   " << pad("mean", 10) << pad("p50", 10) << pad("p90", 10)
    << pad("p99", 10) << "   metric (alias)\n";
  latency_row(o, "TTFT (time to first token)    ", s.ttft, "time_to_first_token");
  latency_row(o, "TPOT (time per output token)  ", s.tpot, "inter_token_latency");
  latency_row(o, "E2E (end-to-end)              ", s.e2e, "e2e_request_latency");
  latency_row(o, "queue (arrival to scheduled)  ", s.queue, "queue_time");
  if (s.frontend_mean_s > 0)
    o << "  as a client measures them: the API server (HTTP, tokenisation, streaming) adds "
      << fmt("%.1f ms", 1e3 * s.frontend_mean_s)
      << " to each request on average (pools[].frontend; frontend_mean_s)\n";
  {
    // The expected error of the cost model that produced them (docs/validation.md), once per
    // kind of pool.
    std::vector<std::string> seen;
    for (std::size_t p = 0; p < c.pools.size(); ++p) {
      const std::string line =
          expected_error(c.pools[p].cost_model.impl, sc.pools[p].model.moe()).describe();
      if (std::find(seen.begin(), seen.end(), line) != seen.end()) continue;
      seen.push_back(line);
      o << "  expected error" << (c.pools.size() > 1 ? " (pool " + c.pools[p].name + ")" : "")
        << ": " << line << "; docs/validation.md\n";
    }
  }
  if (s.retries > 0) {
    o << "Clients: " << s.logical_requests << " requests, " << s.retries << " retries ("
      << fmt("%.2f",
             static_cast<double>(s.requests) / std::max<std::int64_t>(1, s.logical_requests))
      << " attempts per request); " << s.logical_ok << " succeeded in the end ("
      << fmt("%.1f%%", 100.0 * s.logical_ok / std::max<std::int64_t>(1, s.logical_requests))
      << ")\n";
    latency_row(o, "E2E seen by clients (retries) ", s.client_e2e, "client_e2e_latency");
  }
  print_by_priority(o, r);
  print_by_stage(o, r);
}

// Conversations: sessions, summarisation, context overflows and TTFT by turn kind.
void print_conversations(std::ostream& o, const Summary& s) {
  if (s.sessions > 0) {
    o << "\nConversations: " << s.sessions << " sessions";
    if (s.summary_requests)
      o << "; " << s.summary_requests << " summarisation requests (" << s.summary_input_tokens
        << " tokens in, " << s.summary_output_tokens << " out), not in the latencies above";
    if (s.context_overflows) o << "; " << s.context_overflows << " turns did not fit the context";
    if (s.truncated_requests)
      o << "; " << s.truncated_requests << " turns truncated (" << count_of(s, "truncated_tokens")
        << " history tokens cut)";
    o << "\n";
    if (s.workload_stat("sessions_gone_idle") > 0 || s.workload_stat("sessions_archived") > 0)
      o << "  lifecycle: " << s.workload_stat("sessions_gone_idle")
        << " times a session went idle (" << s.workload_stat("released_blocks")
        << " KV blocks dropped), " << s.workload_stat("sessions_archived")
        << " sessions archived\n";
    latency_row(o, "TTFT, first turns             ", s.ttft_first,
                "time_to_first_token_first_turn");
    latency_row(o, "TTFT, later turns, warm       ", s.ttft_warm, "time_to_first_token_warm");
    latency_row(o, "TTFT, later turns, cold       ", s.ttft_cold, "time_to_first_token_cold");
  }
}

// Throughput, KV usage, the prefix cache (with tiers and tenants).
void print_throughput_and_cache(std::ostream& o, const RunResult& r, const Summary& s) {
  o << "\nThroughput over " << fmt("%.1f s", s.duration_s) << ": " << fmt("%.1f", s.requests_per_s)
    << " requests/s, " << fmt("%.0f", s.input_tokens_per_s) << " input tokens/s, "
    << fmt("%.0f", s.output_tokens_per_s) << " output tokens/s\n";
  o << "KV cache usage: mean " << fmt("%.1f%%", 100 * s.kv_usage_mean) << ", max "
    << fmt("%.1f%%", 100 * s.kv_usage_max) << " (time-weighted, blocks held by requests); "
    << fmt("%.1f%%", 100 * s.kv_token_utilization) << " of that memory holds token states"
    << (s.kv_token_utilization > 1 ? " (over 100%: blocks shared by prefix caching)" : "") << "\n";

  const std::int64_t queries = count_of(s, "prefix_cache_queries");
  if (queries > 0) {
    const std::int64_t tier_hits = count_of(s, "tier_hit_tokens");
    const std::int64_t tier_recomputed = count_of(s, "tier_recomputed_tokens");
    o << "Prefix cache: " << fmt("%.1f%%", 100 * s.prefix_cache_hit_rate())
      << " of prompt tokens hit (" << count_of(s, "prefix_cache_hits") << " of " << queries << "), "
      << count_of(s, "cache_evictions") << " cached blocks evicted\n";
    if (tier_hits + tier_recomputed > 0)
      o << "  KV tiers: " << tier_hits << " prompt tokens loaded ("
        << fmt("%.1f%%", 100.0 * tier_hits / queries) << " of prompt tokens), " << tier_recomputed
        << " found but cheaper to recompute\n";
    for (const auto& rep : r.replicas)
      for (const auto& t : rep.tiers)
        o << "    " << rep.name << " " << t.name << ": " << t.blocks << " blocks held, "
          << fmt("%.2f GB", t.bytes_written / 1e9) << " written, "
          << fmt("%.2f GB", t.bytes_read / 1e9) << " read, " << t.evictions << " evicted\n";
    std::vector<std::tuple<std::uint32_t, std::int64_t, std::int64_t>> tenants;
    for (const auto& rep : r.replicas)
      for (const auto& [t, q, h] : rep.tenant_prefix) {
        const std::uint32_t tenant = t;  // (clang 14 does not capture structured bindings)
        auto it = std::find_if(tenants.begin(), tenants.end(),
                               [&](const auto& x) { return std::get<0>(x) == tenant; });
        if (it == tenants.end())
          tenants.emplace_back(t, q, h);
        else
          std::get<1>(*it) += q, std::get<2>(*it) += h;
      }
    if (tenants.size() > 1) {
      std::sort(tenants.begin(), tenants.end());
      o << "  by tenant:";
      for (const auto& [t, q, h] : tenants)
        o << " " << t << ": " << fmt("%.1f%%", q ? 100.0 * h / q : 0.0);
      o << "\n";
    }
  }
}

// The engine's steps and what their time went to, GPU utilisation and the binding resource
// (per pool when there are several; their summaries are returned for the fleet section).
std::vector<Summary> print_engine(std::ostream& o, const RunResult& r, const Summary& s) {
  StepCost sum;
  for (const auto& rep : r.replicas) {
    sum.gemm_s += rep.stats.cost_sum.gemm_s;
    sum.prefill_attn_s += rep.stats.cost_sum.prefill_attn_s;
    sum.decode_attn_s += rep.stats.cost_sum.decode_attn_s;
    sum.comm_s += rep.stats.cost_sum.comm_s;
    sum.overhead_s += rep.stats.cost_sum.overhead_s;
    sum.kv_transfer_s += rep.stats.cost_sum.kv_transfer_s;
    sum.pipeline_bubble_s += rep.stats.cost_sum.pipeline_bubble_s;
  }
  const double tot = sum.total_s();
  o << "Engine: " << count_of(s, "steps") << " steps, busy " << fmt("%.0f%%", 100 * s.busy_fraction)
    << " of the time";
  if (tot > 0)
    o << "; step time: linear layers " << fmt("%.0f%%", 100 * sum.gemm_s / tot)
      << ", prefill attention " << fmt("%.0f%%", 100 * sum.prefill_attn_s / tot)
      << ", decode attention " << fmt("%.0f%%", 100 * sum.decode_attn_s / tot) << ", communication "
      << fmt("%.0f%%", 100 * sum.comm_s / tot) << ", overhead "
      << fmt("%.0f%%", 100 * sum.overhead_s / tot) << ", KV transfers "
      << fmt("%.0f%%", 100 * sum.kv_transfer_s / tot);
  if (sum.pipeline_bubble_s > 0)
    o << ", pipeline bubble " << fmt("%.0f%%", 100 * sum.pipeline_bubble_s / tot);
  o << "\n";
  o << "GPU utilisation (per GPU, mean over replicas): compute "
    << fmt("%.0f%%", 100 * s.compute_utilization) << " of peak FLOP/s, memory bandwidth "
    << fmt("%.0f%%", 100 * s.memory_bandwidth_utilization) << " of peak\n";
  const Binding b = binding_resource(s);
  o << "Binding resource: " << b.resource << " — " << b.evidence << "\n";
  std::vector<Summary> pools;  // summarised once, for the binding lines and the fleet section
  if (r.pools.size() > 1)
    for (std::size_t p = 0; p < r.pools.size(); ++p)
      pools.push_back(summarize(r, static_cast<int>(p)));
  for (std::size_t p = 0; p < pools.size(); ++p) {
    const Binding pb = binding_resource(pools[p]);
    o << "  pool " << r.pools[p].name << ": " << pb.resource << " — " << pb.evidence << "\n";
  }
  return pools;
}

// One metric of the Counters and Other metrics lists: its /summary name, its value (a count as
// an integer) and its unit, in columns.
std::string metric_line(const std::string& name, double value, bool integer,
                        const std::string& unit) {
  const bool whole = integer && std::isfinite(value) && value == std::floor(value);
  return "  " + name + std::string(name.size() < 26 ? 26 - name.size() : 1, ' ') +
         pad(whole ? std::to_string(static_cast<std::int64_t>(value)) : fmt("%.6g", value), 14) +
         " " + unit;
}

// Every declared total (summary_totals(): the counters of EngineStats and RequestRecord that
// add up), by its /summary name, so that a new counter is in the report without a line here.
void print_counters(std::ostream& o, const Summary& s) {
  o << "\nCounters (totals over replicas and requests; /summary names):\n";
  std::string zero;
  for (const auto& t : summary_totals()) {
    const double v = s.total(t.name);
    if (v == 0) {
      zero += (zero.empty() ? "" : ", ") + t.name;
      continue;
    }
    o << metric_line(t.name, v, t.integer, t.unit)
      << (t.how == Total::kMax
              ? std::string(" (the most of any ") + (t.per_replica ? "replica" : "request") + ")"
              : "")
      << "\n";
  }
  if (!zero.empty()) o << "  zero: " << zero << "\n";
}

// /summary metrics the sections above show in words ("3 timed out", "0.04 GPU-hours") or only
// where they apply (latency stems, named with _<stat>_s: conversation turns, clients), rather
// than by name.
constexpr const char* kShownInWords[] = {"timed_out",
                                         "unfinished",
                                         "preempted_requests",
                                         "context_overflows",
                                         "truncated_requests",
                                         "duration_s",
                                         "frontend_mean_s",
                                         "wait_kv_fraction",
                                         "wait_token_budget_fraction",
                                         "wait_max_seqs_fraction",
                                         "wasted_tokens",
                                         "sessions",
                                         "sessions_gone_idle",
                                         "sessions_archived",
                                         "summaries",
                                         "released_blocks",
                                         "summary_requests",
                                         "summary_input_tokens",
                                         "summary_output_tokens",
                                         "logical_requests",
                                         "logical_ok",
                                         "retries",
                                         "gpu_hours",
                                         "cost_per_million_output_tokens",
                                         "wasted_gpu_s",
                                         "hotspot_mean",
                                         "hotspot_max",
                                         "replica_failures",
                                         "replica_restarts",
                                         "gateway_rejected",
                                         "gateway_queued",
                                         "scale_ups",
                                         "scale_downs",
                                         "peak_replicas",
                                         "client_e2e_latency",
                                         "time_to_first_token_first_turn",
                                         "time_to_first_token_warm",
                                         "time_to_first_token_cold"};

// Whether `text` names `name` as a whole word.
bool names(const std::string& text, const std::string& name) {
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (std::size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1))
    if ((at == 0 || !word(text[at - 1])) &&
        (at + name.size() >= text.size() || !word(text[at + name.size()])))
      return true;
  return false;
}

// Every /summary metric (declared, and a workload's own counters) that `text` neither names nor
// shows in words, with its value and unit: a metric added to summary_metrics() reaches the
// report without a line of this file.
void print_other_metrics(std::ostream& o, const std::string& text, const Summary& s) {
  std::string lines;
  for (const auto& [name, value] : s.flatten()) {
    std::string stem = name;  // a latency statistic: its stem, as the latency rows name it
    for (const char* stat : {"_mean_s", "_p50_s", "_p90_s", "_p99_s", "_max_s"})
      if (stem.ends_with(stat)) stem = stem.substr(0, stem.size() - std::strlen(stat));
    bool shown = names(text, name) || (stem != name && names(text, stem + "_<stat>_s"));
    for (const char* w : kShownInWords) shown = shown || name == w || stem == w;
    if (shown) continue;
    std::string unit;
    bool integer = true;  // a workload's own counter (undeclared) is a count
    for (const auto& m : summary_metrics())
      if (m.name == name) unit = m.unit, integer = m.integer;
    lines += metric_line(name, value, integer, unit) + "\n";
  }
  if (!lines.empty()) o << "\nOther metrics (/summary names):\n" << lines;
}

// The report's sections, in order.
void print_body(std::ostream& o, const Scenario& sc, const RunResult& r, const Summary& s) {
  const ScenarioConfig& c = sc.config;
  o << "kvfleet run: " << c.name << "  (" << sc.file << ", seed " << c.seed << ")\n";
  if (!c.description.empty()) o << "  " << c.description << "\n";
  print_pools(o, sc);
  print_requests(o, r, s);
  print_latencies(o, sc, r, s);
  print_conversations(o, s);
  print_throughput_and_cache(o, r, s);
  const std::vector<Summary> pools = print_engine(o, r, s);
  print_counters(o, s);
  print_fleet(o, r, s, pools);
  if (!c.alerts.rules.empty()) print_alerts(o, c.alerts, r.alerts);
}

}  // namespace

void print_report(std::ostream& o, const Scenario& sc, const RunResult& r, const Summary& s) {
  std::ostringstream body;  // written out once the metrics it does not name are known
  print_body(body, sc, r, s);
  // The names the lines above have in files, sweeps, --slo, --y and Python (one vocabulary).
  const std::string names =
      "\nMetric names (files, sweeps, --slo, --y, Python): requests, ok, rejected; "
      "requests_per_s, input_tokens_per_s, output_tokens_per_s; kv_cache_usage_mean, "
      "kv_cache_usage_max, kv_token_utilization; prefix_cache_hit_rate; busy_fraction, "
      "compute_utilization, memory_bandwidth_utilization; latencies as above; every one: "
      "kvfleet outputs\n";
  o << body.str();
  print_other_metrics(o, body.str() + names, s);
  o << names;
}

std::string report_text(const Scenario& sc, const RunResult& r, const Summary& s) {
  std::ostringstream o;
  print_report(o, sc, r, s);
  return o.str();
}

}  // namespace kvfleet::sim
