#include "sim/output/results.h"

#include <hdf5.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>

#include "sim/config/params.h"
#include "sim/io/h5.h"
#include "sim/io/text_file.h"

namespace kvfleet::sim {
namespace {

// A replica name usable as one HDF5 link or file name ("pool/3" -> "pool_3").
std::string flat_name(std::string name) {
  for (char& c : name)
    if (c == '/') c = '_';
  return name;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

Table requests_table(const RequestLog& log) {
  Table t;
  auto& id = t.i64("id");
  auto& replica = t.i64("replica");
  auto& outcome = t.str("outcome");
  auto& reason = t.str("reject_reason");
  auto& arrival = t.f64("arrival_s");
  auto& sched = t.f64("first_scheduled_s");
  auto& first = t.f64("first_token_s");
  auto& fin = t.f64("finish_s");
  auto& in = t.i64("input_tokens");
  auto& out = t.i64("output_tokens");
  auto& gen = t.i64("generated_tokens");
  auto& cached = t.i64("cached_tokens");
  auto& loaded = t.i64("loaded_tokens");
  auto& pre = t.i64("num_preemptions");
  auto& rec = t.i64("recomputed_tokens");
  auto& tenant = t.i64("tenant");
  auto& session = t.i64("session");
  auto& prio = t.i64("priority");
  auto& purpose = t.i64("purpose");
  auto& turn = t.i64("turn");
  auto& trunc = t.i64("truncated_tokens");
  auto& queue = t.f64("queue_s");
  auto& ttft = t.f64("ttft_s");
  auto& tpot = t.f64("tpot_s");
  auto& e2e = t.f64("e2e_s");
  auto& pool = t.i64("pool");
  auto& origin = t.i64("origin");
  auto& attempt = t.i64("attempt");
  auto& retried = t.i64("retried");
  auto& gpu_s = t.f64("gpu_s");
  const double nan = std::nan("");
  auto sec = [&](SimTime x) { return x >= 0 ? to_seconds(x) : nan; };
  auto pos = [&](double x) { return x >= 0 ? x : nan; };
  for (const auto& r : log) {
    id.push_back(static_cast<std::int64_t>(r.id));
    replica.push_back(r.replica);
    outcome.emplace_back(outcome_name(r.outcome));
    reason.emplace_back(reject_reason_name(r.reject_reason));
    arrival.push_back(sec(r.arrival));
    sched.push_back(sec(r.first_scheduled));
    first.push_back(sec(r.first_token));
    fin.push_back(sec(r.finish));
    in.push_back(r.input_tokens);
    out.push_back(r.output_tokens);
    gen.push_back(r.generated_tokens);
    cached.push_back(r.cached_tokens);
    loaded.push_back(r.loaded_tokens);
    pre.push_back(r.num_preemptions);
    rec.push_back(r.recomputed_tokens);
    tenant.push_back(r.tenant);
    session.push_back(static_cast<std::int64_t>(r.session));
    prio.push_back(r.priority);
    purpose.push_back(r.purpose);
    turn.push_back(r.turn);
    trunc.push_back(r.truncated_tokens);
    const bool ok = r.outcome == Outcome::kOk;
    queue.push_back(pos(r.queue_s()));
    ttft.push_back(ok ? pos(r.ttft_s()) : nan);
    tpot.push_back(ok ? pos(r.tpot_s()) : nan);
    e2e.push_back(ok ? pos(r.e2e_s()) : nan);
    pool.push_back(r.pool);
    origin.push_back(static_cast<std::int64_t>(r.origin));
    attempt.push_back(r.attempt);
    retried.push_back(r.retried);
    gpu_s.push_back(r.gpu_s);
  }
  return t;
}

Table timeseries_table(const TimeSeries& ts) {
  Table t;
  t.f64("t_s") = ts.t_s;
  auto& run = t.i64("num_requests_running");
  for (auto x : ts.num_requests_running) run.push_back(x);
  auto& wait = t.i64("num_requests_waiting");
  for (auto x : ts.num_requests_waiting) wait.push_back(x);
  t.f64("kv_cache_usage_perc") = ts.kv_cache_usage;
  t.i64("kv_tokens_held") = ts.kv_tokens_held;
  t.i64("kv_tokens_allocated") = ts.kv_tokens_allocated;
  t.i64("num_preemptions_total") = ts.num_preemptions;
  auto& avail = t.i64("available");
  for (auto x : ts.available) avail.push_back(x);
  t.i64("prompt_tokens_total") = ts.prompt_tokens;
  t.i64("generation_tokens_total") = ts.generation_tokens;
  t.f64("busy_fraction") = ts.busy_fraction;
  t.f64("compute_utilization") = ts.compute_utilization;
  t.f64("memory_bandwidth_utilization") = ts.memory_bandwidth_utilization;
  t.f64("kv_used_bytes") = ts.kv_used_bytes;
  return t;
}

Table summary_table(const Summary& s) {
  Table t;
  for (const auto& [k, v] : s.flatten()) t.f64(k).push_back(v);
  return t;
}

Table alerts_table(const AlertReport& a) {
  Table t;
  auto& rule = t.str("rule");
  auto& scope = t.str("scope");
  auto& fire = t.f64("fire_s");
  auto& clear = t.f64("clear_s");
  auto& oom = t.f64("lead_oom_s");
  auto& wave = t.f64("lead_rejection_wave_s");
  auto& slo = t.f64("lead_slo_breach_s");
  for (const auto& f : a.firings) {
    rule.push_back(f.rule);
    scope.push_back(f.scope);
    fire.push_back(f.fire_s);
    clear.push_back(f.clear_s);
    oom.push_back(f.lead_oom_s);
    wave.push_back(f.lead_rejection_wave_s);
    slo.push_back(f.lead_slo_breach_s);
  }
  return t;
}

Table alert_events_table(const AlertReport& a) {
  Table t;
  auto& kind = t.str("event");
  auto& scope = t.str("scope");
  auto& ts = t.f64("t_s");
  auto& detail = t.str("detail");
  for (const auto& e : a.events) {
    kind.push_back(e.kind);
    scope.push_back(e.scope);
    ts.push_back(e.t_s);
    detail.push_back(e.detail);
  }
  return t;
}

// The binding resource of the fleet and of each pool (summary.h, binding_resource).
Table binding_table(const RunResult& r, const Summary& s) {
  Table t;
  auto& scope = t.str("scope");
  auto& res = t.str("resource");
  auto& ev = t.str("evidence");
  auto& cu = t.f64("compute_utilization");
  auto& mu = t.f64("memory_bandwidth_utilization");
  auto& kv = t.f64("kv_cache_usage_mean");
  auto& wkv = t.f64("wait_kv_fraction");
  auto& wtb = t.f64("wait_token_budget_fraction");
  auto& wms = t.f64("wait_max_seqs_fraction");
  auto add = [&](const std::string& name, const Summary& x) {
    const Binding b = binding_resource(x);
    scope.push_back(name);
    res.push_back(b.resource);
    ev.push_back(b.evidence);
    cu.push_back(x.compute_utilization);
    mu.push_back(x.memory_bandwidth_utilization);
    kv.push_back(x.kv_usage_mean);
    wkv.push_back(x.wait_kv_fraction);
    wtb.push_back(x.wait_token_budget_fraction);
    wms.push_back(x.wait_max_seqs_fraction);
  };
  add("fleet", s);
  if (r.pools.size() > 1)
    for (std::size_t p = 0; p < r.pools.size(); ++p)
      add(r.pools[p].name, summarize(r, static_cast<int>(p)));
  return t;
}

Table replicas_table(const RunResult& r) {
  Table t;
  auto& name = t.str("replica");
  auto& pool = t.str("pool");
  auto& steps = t.i64("steps");
  auto& pre = t.i64("num_preemptions");
  auto& pt = t.i64("prompt_tokens");
  auto& gt = t.i64("generation_tokens");
  auto& busy = t.f64("busy_s");
  auto& blocks = t.i64("num_gpu_blocks");
  auto& kvb = t.f64("kv_pool_bytes");
  auto& wb = t.f64("weights_bytes");
  auto& ab = t.f64("activation_peak_bytes");
  auto& ob = t.f64("runtime_overhead_bytes");
  auto& gemm = t.f64("gemm_s");
  auto& pa = t.f64("prefill_attention_s");
  auto& da = t.f64("decode_attention_s");
  auto& comm = t.f64("communication_s");
  auto& ovh = t.f64("overhead_s");
  auto& pq = t.i64("prefix_cache_queries");
  auto& ph = t.i64("prefix_cache_hits");
  auto& ev = t.i64("cache_evictions");
  auto& xfer = t.f64("kv_transfer_s");
  auto& bubble = t.f64("pipeline_bubble_s");
  auto& csp = t.f64("compute_s_at_peak");
  auto& msp = t.f64("memory_s_at_peak");
  auto& wkv = t.f64("wait_kv_s");
  auto& wtb = t.f64("wait_token_budget_s");
  auto& wms = t.f64("wait_max_seqs_s");
  auto& fpre = t.f64("first_preemption_s");
  auto& swaps = t.i64("num_swaps");
  auto& sob = t.f64("swap_out_bytes");
  auto& thit = t.i64("tier_hit_tokens");
  auto& tw = t.f64("tier_bytes_written");
  auto& tr = t.f64("tier_bytes_read");
  for (const auto& x : r.replicas) {
    name.push_back(x.name);
    pool.push_back(x.pool);
    steps.push_back(x.stats.steps);
    pre.push_back(x.stats.num_preemptions);
    pt.push_back(x.stats.prompt_tokens);
    gt.push_back(x.stats.generation_tokens);
    busy.push_back(x.stats.busy_s);
    blocks.push_back(x.memory.num_blocks);
    kvb.push_back(x.memory.kv_pool_bytes);
    wb.push_back(x.memory.weights_bytes);
    ab.push_back(x.memory.activation_peak_bytes);
    ob.push_back(x.memory.runtime_overhead_bytes);
    gemm.push_back(x.stats.cost_sum.gemm_s);
    pa.push_back(x.stats.cost_sum.prefill_attn_s);
    da.push_back(x.stats.cost_sum.decode_attn_s);
    comm.push_back(x.stats.cost_sum.comm_s);
    ovh.push_back(x.stats.cost_sum.overhead_s);
    pq.push_back(x.stats.prefix_cache_queries);
    ph.push_back(x.stats.prefix_cache_hits);
    ev.push_back(x.stats.cache_evictions);
    xfer.push_back(x.stats.cost_sum.kv_transfer_s);
    bubble.push_back(x.stats.cost_sum.pipeline_bubble_s);
    csp.push_back(x.stats.compute_s_at_peak);
    msp.push_back(x.stats.memory_s_at_peak);
    wkv.push_back(x.stats.wait_kv_s);
    wtb.push_back(x.stats.wait_token_budget_s);
    wms.push_back(x.stats.wait_max_seqs_s);
    fpre.push_back(x.stats.first_preemption_s < 0 ? std::nan("") : x.stats.first_preemption_s);
    swaps.push_back(x.stats.num_swaps);
    sob.push_back(x.stats.swap_out_bytes);
    thit.push_back(x.stats.tier_hit_tokens);
    double w = 0, rd = 0;
    for (const auto& tier : x.tiers) w += tier.bytes_written, rd += tier.bytes_read;
    tw.push_back(w);
    tr.push_back(rd);
  }
  return t;
}

Table tenants_table(const RunResult& r) {
  Table t;
  auto& rep = t.str("replica");
  auto& ten = t.i64("tenant");
  auto& q = t.i64("prefix_cache_queries");
  auto& h = t.i64("prefix_cache_hits");
  for (const auto& x : r.replicas)
    for (const auto& [tenant, queries, hits] : x.tenant_prefix) {
      rep.push_back(x.name);
      ten.push_back(tenant);
      q.push_back(queries);
      h.push_back(hits);
    }
  return t;
}

Table sessions_table(const RequestLog& log) {
  struct Acc {
    std::uint32_t tenant = 0;
    std::int32_t priority = 0;
    std::int64_t turns = 0, ok = 0, summaries = 0, overflow = 0;
    std::int64_t prompt = 0, cached = 0, loaded = 0;
    double ttft = 0;
  };
  std::map<std::uint64_t, Acc> by;
  for (const auto& r : log) {
    if (r.session == 0) continue;
    Acc& a = by[r.session];
    a.tenant = r.tenant;
    a.priority = r.priority;
    if (r.purpose == kPurposeSummary) {
      ++a.summaries;
      continue;
    }
    ++a.turns;
    if (r.reject_reason == RejectReason::kContextOverflow) ++a.overflow;
    if (r.outcome != Outcome::kOk) continue;
    ++a.ok;
    a.prompt += r.input_tokens;
    a.cached += r.cached_tokens;
    a.loaded += r.loaded_tokens;
    a.ttft += r.ttft_s();
  }
  Table t;
  auto& id = t.i64("session");
  auto& tenant = t.i64("tenant");
  auto& prio = t.i64("priority");
  auto& turns = t.i64("turns");
  auto& ok = t.i64("turns_ok");
  auto& sums = t.i64("summary_requests");
  auto& over = t.i64("context_overflows");
  auto& prompt = t.i64("prompt_tokens");
  auto& cached = t.i64("cached_tokens");
  auto& loaded = t.i64("loaded_tokens");
  auto& computed = t.i64("recomputed_prompt_tokens");
  auto& ttft = t.f64("ttft_mean_s");
  for (const auto& [k, a] : by) {
    id.push_back(static_cast<std::int64_t>(k));
    tenant.push_back(a.tenant);
    prio.push_back(a.priority);
    turns.push_back(a.turns);
    ok.push_back(a.ok);
    sums.push_back(a.summaries);
    over.push_back(a.overflow);
    prompt.push_back(a.prompt);
    cached.push_back(a.cached);
    loaded.push_back(a.loaded);
    computed.push_back(a.prompt - a.cached - a.loaded);
    ttft.push_back(a.ok ? a.ttft / static_cast<double>(a.ok) : std::nan(""));
  }
  return t;
}

void write_results_h5(const std::string& path, const Scenario& sc, const RunResult& r,
                      const Summary& s) {
  using namespace h5;
  write_file_atomically(path, [&](hid_t file) {
    write_string_dataset(file, "scenario", sc.resolved_yaml);
    write_table(file, "requests", requests_table(r.requests));
    write_table(file, "summary", summary_table(s));
    write_table(file, "replicas", replicas_table(r));
    write_table(file, "tenants", tenants_table(r));
    write_table(file, "sessions", sessions_table(r.requests));
    write_table(file, "binding", binding_table(r, s));
    if (!sc.config.alerts.rules.empty()) {
      write_table(file, "alerts", alerts_table(r.alerts));
      write_table(file, "alert_events", alert_events_table(r.alerts));
    }
    const H5 group = create_group(file, "timeseries");
    for (const auto& ts : r.timeseries)
      write_table(group.id, flat_name(ts.replica).c_str(), timeseries_table(ts));
  });
}

void write_csv(const std::string& path, const Table& t) {
  write_text_atomically(path, [&](std::ostream& o) {
    for (std::size_t i = 0; i < t.columns.size(); ++i)
      o << (i ? "," : "") << csv_field(t.columns[i].name);
    o << "\n";
    for (std::size_t r = 0; r < t.rows(); ++r) {
      for (std::size_t i = 0; i < t.columns.size(); ++i) {
        if (i) o << ",";
        const auto& c = t.columns[i].data;
        if (auto* v = std::get_if<std::vector<std::int64_t>>(&c)) {
          o << (*v)[r];
        } else if (auto* d = std::get_if<std::vector<double>>(&c)) {
          if (!std::isnan((*d)[r])) o << config::format_double((*d)[r]);
        } else {
          o << csv_field(std::get<std::vector<std::string>>(c)[r]);
        }
      }
      o << "\n";
    }
  });
}

void write_results_csv(const std::string& dir, const RunResult& r, const Summary& s) {
  std::filesystem::create_directories(dir);
  const std::filesystem::path d(dir);
  write_csv((d / "requests.csv").string(), requests_table(r.requests));
  write_csv((d / "summary.csv").string(), summary_table(s));
  write_csv((d / "replicas.csv").string(), replicas_table(r));
  write_csv((d / "tenants.csv").string(), tenants_table(r));
  write_csv((d / "sessions.csv").string(), sessions_table(r.requests));
  write_csv((d / "binding.csv").string(), binding_table(r, s));
  if (!r.alerts.firings.empty() || !r.alerts.events.empty()) {
    write_csv((d / "alerts.csv").string(), alerts_table(r.alerts));
    write_csv((d / "alert_events.csv").string(), alert_events_table(r.alerts));
  }
  for (const auto& ts : r.timeseries)
    write_csv((d / ("timeseries_" + flat_name(ts.replica) + ".csv")).string(),
              timeseries_table(ts));
}

}  // namespace kvfleet::sim
