#include "sim/output/results.h"

#include "sim/simulation/provenance.h"

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
#include "sim/output/run_tables.h"

namespace kvfleet::sim {

std::string timeseries_name(std::string replica) {
  for (char& c : replica)
    if (c == '/') c = '_';
  return replica;
}
namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

namespace {

const double kNaN = std::nan("");

// Row accessors over a vector of records.
template <class T, class F>
auto rows_of(F f) {
  return [f](const std::vector<T>& v, std::size_t i) { return f(v[i]); };
}

// Prefix-cache lookups by (replica, tenant), flattened.
struct TenantRows {
  std::vector<std::tuple<const std::string*, std::uint32_t, std::int64_t, std::int64_t>> rows;
  explicit TenantRows(const RunResult& r) {
    for (const auto& x : r.replicas)
      for (const auto& [tenant, q, h] : x.tenant_prefix) rows.emplace_back(&x.name, tenant, q, h);
  }
};

const TableSpec<TenantRows>& tenants_spec() {
  static const TableSpec<TenantRows> spec = [] {
    TableSpec<TenantRows> t("tenants", "prefix-cache lookups by replica and tenant",
                            [](const TenantRows& v) { return v.rows.size(); });
    t.text("replica", "", "replica name",
           [](const TenantRows& v, std::size_t i) { return *std::get<0>(v.rows[i]); });
    t.integer("tenant", "", "tenant id",
              [](const TenantRows& v, std::size_t i) { return std::get<1>(v.rows[i]); });
    t.integer("prefix_cache_queries", "tokens", "prompt tokens looked up",
              [](const TenantRows& v, std::size_t i) { return std::get<2>(v.rows[i]); });
    t.integer("prefix_cache_hits", "tokens", "of which found cached",
              [](const TenantRows& v, std::size_t i) { return std::get<3>(v.rows[i]); });
    return t;
  }();
  return spec;
}

// One conversation's totals.
struct SessionRow {
  std::uint64_t id = 0;
  std::uint32_t tenant = 0;
  std::int32_t priority = 0;
  std::int64_t turns = 0, ok = 0, summaries = 0, overflow = 0;
  std::int64_t prompt = 0, cached = 0, loaded = 0;
  double ttft = 0;
};

std::vector<SessionRow> session_rows(const RequestLog& log) {
  std::map<std::uint64_t, SessionRow> by;
  for (const auto& r : log) {
    if (r.session == 0) continue;
    SessionRow& a = by[r.session];
    a.id = r.session;
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
  std::vector<SessionRow> v;
  for (auto& [k, a] : by) v.push_back(a);
  return v;
}

const TableSpec<std::vector<SessionRow>>& sessions_spec() {
  using S = SessionRow;
  static const TableSpec<std::vector<SessionRow>> spec = [] {
    TableSpec<std::vector<SessionRow>> t(
        "sessions", "one row per conversation: turns, prompt tokens served from cache or computed",
        [](const std::vector<S>& v) { return v.size(); });
    auto i = [&](const char* n, const char* u, const char* d, auto f) {
      t.integer(n, u, d, rows_of<S>([f](const S& s) { return static_cast<std::int64_t>(f(s)); }));
    };
    i("session", "", "conversation id", [](const S& s) { return s.id; });
    i("tenant", "", "tenant id", [](const S& s) { return s.tenant; });
    i("priority", "", "priority class", [](const S& s) { return s.priority; });
    i("turns", "requests", "user turns", [](const S& s) { return s.turns; });
    i("turns_ok", "requests", "of which completed", [](const S& s) { return s.ok; });
    i("summary_requests", "requests", "summarisation requests",
      [](const S& s) { return s.summaries; });
    i("context_overflows", "requests", "turns the application could not send",
      [](const S& s) { return s.overflow; });
    i("prompt_tokens", "tokens", "prompt tokens of completed turns",
      [](const S& s) { return s.prompt; });
    i("cached_tokens", "tokens", "of which served from prefix caches",
      [](const S& s) { return s.cached; });
    i("loaded_tokens", "tokens", "of which loaded from KV tiers",
      [](const S& s) { return s.loaded; });
    i("recomputed_prompt_tokens", "tokens", "of which computed",
      [](const S& s) { return s.prompt - s.cached - s.loaded; });
    t.number(
        "ttft_mean_s", "s", "mean TTFT of completed turns (NaN: none)",
        rows_of<S>([](const S& s) { return s.ok ? s.ttft / static_cast<double>(s.ok) : kNaN; }));
    return t;
  }();
  return spec;
}

}  // namespace

Table requests_table(const RunResult& r) { return requests_spec().make(r); }

Table timeseries_table(const TimeSeries& ts) { return timeseries_spec().make(ts); }

Table summary_table(const Summary& s) {
  Table t;
  t.desc = "one row: the run's summary (docs/outputs.md lists every metric)";
  const auto& decls = summary_metrics();
  for (const auto& [k, v] : s.flatten()) {
    std::string unit, desc = "a counter the workload keeps";
    bool integer = false;
    for (const auto& m : decls)
      if (m.name == k) unit = m.unit, desc = m.desc, integer = m.integer;
    if (integer)
      t.i64(k, unit, desc).push_back(static_cast<std::int64_t>(v));
    else
      t.f64(k, unit, desc).push_back(v);
  }
  return t;
}

Table replicas_table(const RunResult& r) { return replicas_spec().make(r); }

Table tenants_table(const RunResult& r) { return tenants_spec().make(TenantRows(r)); }

Table sessions_table(const RequestLog& log) { return sessions_spec().make(session_rows(log)); }

Table alerts_table(const AlertReport& a) {
  Table t;
  t.desc = "one row per firing of an alert rule (alerts: in the scenario)";
  auto& rule = t.str("rule", "", "the rule's name");
  auto& scope = t.str("scope", "", "a replica's name, or fleet");
  auto& fire = t.f64("fire_s", "s", "when it fired");
  auto& clear = t.f64("clear_s", "s", "when it cleared (NaN: still firing at the end)");
  auto& oom = t.f64("lead_oom_s", "s",
                    "firing to the first out-of-memory event (positive: warned ahead; NaN: none)");
  auto& wave = t.f64("lead_rejection_wave_s", "s", "firing to the first rejection wave");
  auto& slo = t.f64("lead_slo_breach_s", "s", "firing to the first SLO breach");
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
  t.desc = "the first event of each kind and scope that alerts are scored against";
  auto& kind = t.str("event", "", "out_of_memory, rejection_wave or slo_breach");
  auto& scope = t.str("scope", "", "a replica's name, or fleet");
  auto& ts = t.f64("t_s", "s", "when it happened");
  auto& detail = t.str("detail", "", "what happened, in words");
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
  t.desc =
      "what limited the run, for the fleet and for each pool (memory-, compute-, "
      "queue-bound or unsaturated)";
  auto& scope = t.str("scope", "", "fleet, or a pool's name");
  auto& res = t.str("resource", "", "memory-bound, compute-bound, queue-bound or unsaturated");
  auto& ev = t.str("evidence", "", "the numbers that show it, in one sentence");
  auto& cu = t.f64("compute_utilization", "fraction", "achieved over peak FLOP/s");
  auto& mu = t.f64("memory_bandwidth_utilization", "fraction",
                   "achieved over peak device-memory bandwidth");
  auto& kv = t.f64("kv_cache_usage_mean", "fraction", "KV usage, time-weighted");
  auto& wkv = t.f64("wait_kv_fraction", "fraction", "share of the run requests waited for KV");
  auto& wtb = t.f64("wait_token_budget_fraction", "fraction",
                    "share of the run requests waited for the token budget");
  auto& wms = t.f64("wait_max_seqs_fraction", "fraction",
                    "share of the run requests waited for max_num_seqs");
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

std::vector<TableDoc> run_table_docs() {
  std::vector<TableDoc> d = {requests_spec().doc()};
  TableDoc summary{"summary", "one row: the run's summary", {}};
  for (const auto& m : summary_metrics())
    summary.columns.push_back({m.name, m.integer ? "integer" : "number", m.unit, m.desc});
  d.push_back(summary);
  d.push_back(replicas_spec().doc());
  d.push_back(timeseries_spec().doc());
  d.push_back(tenants_spec().doc());
  d.push_back(sessions_spec().doc());
  const RunResult none;
  d.push_back(doc_of("binding", binding_table(none, Summary{})));
  d.push_back(doc_of("alerts", alerts_table(AlertReport{})));
  d.push_back(doc_of("alert_events", alert_events_table(AlertReport{})));
  d.push_back(doc_of("provenance", provenance_table_for_sweep("")));
  d.back().desc +=
      " (rows: kvfleet.version, kvfleet.commit, command_line; per pool pools[i].model.<key> and "
      "pools[i].gpu.<key> for every model and GPU key (docs/scenarios.md) and "
      "pools[i].weight_dtype; per input file input.<scenario key>.sha256 and .bytes). No date: "
      "the same run writes the same bytes";
  return d;
}

void write_results_h5(const std::string& path, const Scenario& sc, const RunResult& r,
                      const Summary& s, const std::string& report,
                      const std::string* scenario_text) {
  using namespace h5;
  write_file_atomically(path, [&](hid_t file) {
    write_string_dataset(file, "scenario", scenario_text ? *scenario_text : sc.resolved_yaml,
                         "the scenario as run: every key, defaults filled in (YAML)");
    write_string_dataset(file, "report", report, "the text report kvfleet run prints");
    write_table(file, "requests", requests_table(r));
    write_table(file, "summary", summary_table(s));
    write_table(file, "replicas", replicas_table(r));
    write_table(file, "tenants", tenants_table(r));
    write_table(file, "sessions", sessions_table(r.requests));
    write_table(file, "binding", binding_table(r, s));
    write_table(file, "provenance", provenance_table(sc));
    if (!sc.config.alerts.rules.empty()) {
      write_table(file, "alerts", alerts_table(r.alerts));
      write_table(file, "alert_events", alert_events_table(r.alerts));
    }
    const H5 group = create_group(file, "timeseries");
    for (const auto& ts : r.timeseries) {
      const std::string name = timeseries_name(ts.replica);
      write_table(group.id, name.c_str(), timeseries_table(ts));
      // The replica's name as /replicas and /requests spell it (h100/0 for h100_0).
      const H5 ds{check_id(H5Dopen2(group.id, name.c_str(), H5P_DEFAULT), "timeseries"), H5Dclose};
      set_text_attribute(ds.id, "replica", ts.replica);
    }
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
        } else if (auto* cat = std::get_if<Categorical>(&c)) {
          o << csv_field(cat->name(r));
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
  write_csv((d / "requests.csv").string(), requests_table(r));
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
    write_csv((d / ("timeseries_" + timeseries_name(ts.replica) + ".csv")).string(),
              timeseries_table(ts));
}

}  // namespace kvfleet::sim
