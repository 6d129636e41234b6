// The dashboard's pages as chart specs (no Qt: run_dashboard.cpp draws them, and the run-file
// fuzz harness builds them from whatever a file holds).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>

#include "gui/charts/run_dashboard.h"
#include "sim/core/error.h"

namespace kvfleet::charts {

namespace {

using Getter = std::vector<double> RunData::Replica::*;

// The replicas drawn one line each: all of them up to max_lines; past that the hottest (highest
// mean KV cache usage, then most requests waiting) that fit beside one mean line per pool, in the
// order of /replicas.
std::vector<std::size_t> shown_replicas(const RunData& run, const DashboardOptions& o) {
  std::vector<std::size_t> all(run.replicas.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  if (all.size() <= o.max_lines) return all;
  auto mean = [](const std::vector<double>& v) {
    double sum = 0;
    std::size_t n = 0;
    for (double x : v)
      if (std::isfinite(x)) sum += x, ++n;
    return n ? sum / static_cast<double>(n) : -1.0;
  };
  std::vector<std::pair<double, double>> heat(all.size());
  for (std::size_t i = 0; i < all.size(); ++i)
    heat[i] = {mean(run.replicas[i].kv_usage), mean(run.replicas[i].waiting)};
  const std::size_t k =
      o.max_lines > run.pools.size() ? o.max_lines - run.pools.size() : std::size_t{1};
  std::stable_sort(all.begin(), all.end(),
                   [&](std::size_t a, std::size_t b) { return heat[a] > heat[b]; });
  all.resize(std::min(k, all.size()));
  std::sort(all.begin(), all.end());
  return all;
}

// Samples per point drawn: a line of more than kMaxPoints samples is drawn as the mean of every
// `bin` consecutive ones (NaN left out), at their mean time; a chart of thousands of one-second
// samples per replica is noise.
constexpr std::size_t kMaxPoints = 300;
std::size_t samples_per_point(const RunData& run) {
  std::size_t most = 0;
  for (const auto& r : run.replicas) most = std::max(most, r.t_s.size());
  return most <= kMaxPoints ? 1 : (most + kMaxPoints - 1) / kMaxPoints;
}

Series binned(Series s, std::size_t bin) {
  if (bin <= 1) return s;
  Series out{s.name, {}, {}};
  out.dashed = s.dashed;
  for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); i += bin) {
    double t = 0, v = 0;
    std::size_t nt = 0, nv = 0;
    for (std::size_t j = i; j < std::min(i + bin, s.x.size()) && j < s.y.size(); ++j) {
      if (std::isfinite(s.x[j])) t += s.x[j], ++nt;
      if (std::isfinite(s.y[j])) v += s.y[j], ++nv;
    }
    if (nt == 0) continue;
    out.x.push_back(t / static_cast<double>(nt));
    out.y.push_back(nv ? v / static_cast<double>(nv) : std::nan(""));
  }
  return out;
}

// One line per shown replica and, when some are not shown, one dashed line per pool: the mean
// over all its replicas at each sample time. `rate` turns a cumulative counter into its rate
// per second.
LineChartSpec over_time(const RunData& run, const std::vector<std::size_t>& shown, std::size_t bin,
                        const std::string& title, const std::string& y_label, Getter get,
                        bool rate = false) {
  LineChartSpec spec;
  spec.title = title;
  spec.x_label = "simulated time (s)";
  spec.y_label = y_label;
  auto values = [&](const RunData::Replica& r) {
    std::vector<double> v = r.*get;
    if (!rate) return v;
    std::vector<double> out(v.size(), std::nan(""));
    for (std::size_t i = 1; i < v.size() && i < r.t_s.size(); ++i) {
      const double dt = r.t_s[i] - r.t_s[i - 1];
      if (dt > 0) out[i] = (v[i] - v[i - 1]) / dt;
    }
    return out;
  };
  for (std::size_t i : shown) {
    const auto& r = run.replicas[i];
    spec.series.push_back(binned({r.name, r.t_s, values(r)}, bin));
  }
  if (shown.size() == run.replicas.size()) return spec;
  for (const auto& p : run.pools) {
    std::map<double, std::pair<double, int>> acc;
    int n = 0;
    for (const auto& r : run.replicas) {
      if (r.pool != p) continue;
      ++n;
      const auto v = values(r);
      for (std::size_t i = 0; i < v.size() && i < r.t_s.size(); ++i) {
        if (!std::isfinite(v[i]) || !std::isfinite(r.t_s[i])) continue;
        auto& e = acc[r.t_s[i]];
        e.first += v[i];
        e.second += 1;
      }
    }
    if (n == 0) continue;
    Series s;
    s.name = p + ": mean of its " + std::to_string(n) + " replicas";
    s.dashed = true;
    for (const auto& [t, e] : acc) {
      s.x.push_back(t);
      s.y.push_back(e.first / e.second);
    }
    spec.series.push_back(binned(std::move(s), bin));
  }
  return spec;
}

// The empirical CDF of `v` with at most ~400 points (every value when fewer).
Series cdf(const std::string& name, std::vector<double> v) {
  std::sort(v.begin(), v.end());
  Series s;
  s.name = name + " (" + std::to_string(v.size()) + " requests)";
  const std::size_t n = v.size();
  const std::size_t step = std::max<std::size_t>(1, n / 400);
  for (std::size_t i = 0; i < n; i += step) {
    s.x.push_back(v[i]);
    s.y.push_back(static_cast<double>(i + 1) / static_cast<double>(n));
  }
  if (n > 0 && (s.x.empty() || s.y.back() < 1)) {
    s.x.push_back(v.back());
    s.y.push_back(1);
  }
  return s;
}

LineChartSpec latency_cdf(const RunData& run, const std::vector<sim::Slo>& slo,
                          const std::string& title, const std::string& stem,
                          double RunData::Request::*field) {
  LineChartSpec spec;
  spec.title = title;
  spec.x_label = stem + " (s, log scale)";
  spec.y_label = "share of completed requests";
  spec.log_x = true;
  spec.y_max = 1;
  const bool by_pool = run.pools.size() > 1;
  for (const auto& p : by_pool ? run.pools : std::vector<std::string>{""}) {
    std::vector<double> v;
    for (const auto& q : run.requests)
      if (q.ok && (!by_pool || q.pool == p) && std::isfinite(q.*field) && q.*field > 0)
        v.push_back(q.*field);
    if (!v.empty()) spec.series.push_back(cdf(by_pool ? p : "all pools", std::move(v)));
  }
  // The SLO on this latency: its limit (a vertical line) and its percentile (a horizontal one).
  for (const auto& s : slo) {
    if (s.kind != sim::Slo::Kind::kLatency || s.metric.rfind(stem + "_", 0) != 0) continue;
    const std::string stat = s.metric.substr(stem.size() + 1, s.metric.size() - stem.size() - 3);
    if (stat.size() > 1 && stat[0] == 'p' && std::isdigit(static_cast<unsigned char>(stat[1]))) {
      spec.y_limit = std::stod(stat.substr(1)) / 100;
      spec.y_limit_label = stat;
    }
    spec.x_mark = s.limit_s;
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g s", s.limit_s);
    spec.x_mark_label = "SLO: " + s.name + " \u2264 " + limit;  // no '<': legends are rich text
    break;
  }
  return spec;
}

// Prompt tokens served from prefix caches over prompt tokens of requests scheduled, by arrival
// time (bins of about 1% of the run, at least the sampling interval), per pool.
LineChartSpec hit_rate(const RunData& run) {
  LineChartSpec spec;
  spec.title = "Prefix-cache hit rate (prompt tokens served from cache, by arrival)";
  spec.x_label = "arrival time (s)";
  spec.y_label = "hit rate (fraction)";
  spec.y_max = 1;
  double end = 0;
  for (const auto& q : run.requests)
    if (std::isfinite(q.arrival_s)) end = std::max(end, q.arrival_s);
  double bin = std::max(run.sample_interval_s, end / 100);
  if (!(bin > 0) || !std::isfinite(bin)) bin = 1;  // a file's odd interval: plain seconds
  const bool by_pool = run.pools.size() > 1;
  for (const auto& p : by_pool ? run.pools : std::vector<std::string>{""}) {
    std::map<long, std::pair<double, double>> acc;  // bin -> (cached, input)
    for (const auto& q : run.requests) {
      if (!q.scheduled || (by_pool && q.pool != p) || !(q.input_tokens > 0) ||
          !(q.arrival_s >= 0 && q.arrival_s / bin < 1e15))
        continue;
      auto& e = acc[static_cast<long>(q.arrival_s / bin)];
      e.first += q.cached_tokens;
      e.second += q.input_tokens;
    }
    Series s;
    s.name = by_pool ? p : "all pools";
    for (const auto& [b, e] : acc) {
      s.x.push_back((static_cast<double>(b) + 0.5) * bin);
      s.y.push_back(e.first / e.second);
    }
    if (!s.x.empty()) spec.series.push_back(std::move(s));
  }
  return spec;
}

}  // namespace

std::vector<DashboardPage> run_dashboard(const RunData& run, const DashboardOptions& o) {
  const std::string name = run.title.empty() ? "" : run.title + ": ";
  const std::vector<std::size_t> shown = shown_replicas(run, o);
  const std::size_t bin = samples_per_point(run);
  std::string which = "replica state over time";
  std::vector<std::string> notes;
  if (shown.size() < run.replicas.size())
    notes.push_back("the " + std::to_string(shown.size()) + " hottest of " +
                    std::to_string(run.replicas.size()) +
                    " replicas by mean KV cache usage; dashed: each pool's mean");
  if (bin > 1) {
    char every[128];
    std::snprintf(every, sizeof every, "each point the mean of %zu samples (%g s)", bin,
                  static_cast<double>(bin) * run.sample_interval_s);
    notes.push_back(every);
  }
  DashboardPage state{kDashboardPages[0], name + which, {}};
  for (const auto& n : notes) state.note += (state.note.empty() ? "" : "; ") + n;
  using R = RunData::Replica;
  state.charts.push_back(
      over_time(run, shown, bin, "KV cache usage", "fraction of KV blocks", &R::kv_usage));
  state.charts.back().y_max = 1;
  state.charts.push_back(over_time(run, shown, bin, "Running requests", "requests", &R::running));
  state.charts.push_back(over_time(run, shown, bin, "Waiting requests", "requests", &R::waiting));
  state.charts.push_back(
      over_time(run, shown, bin, "Output throughput", "tokens/s", &R::generation_tokens, true));
  state.charts.push_back(
      over_time(run, shown, bin, "Compute utilisation", "achieved / peak FLOP/s", &R::compute));
  state.charts.back().y_max = 1;
  state.charts.push_back(over_time(run, shown, bin, "Memory-bandwidth utilisation",
                                   "achieved / peak bandwidth", &R::bandwidth));
  state.charts.back().y_max = 1;
  std::vector<sim::Slo> slo = o.slo;
  if (slo.empty() && !run.scenario_slo.empty()) {
    try {
      slo = sim::parse_slo(run.scenario_slo);
    } catch (const sim::InputError&) {
      // The file's alert thresholds are not an SLO kvfleet reads: the CDFs go without one.
    }
  }
  DashboardPage latency{
      kDashboardPages[1], name + "latency of completed requests and prefix caching", {}};
  using Q = RunData::Request;
  latency.charts.push_back(
      latency_cdf(run, slo, "TTFT: time to first token", "time_to_first_token", &Q::ttft_s));
  latency.charts.push_back(
      latency_cdf(run, slo, "TPOT: time per output token", "inter_token_latency", &Q::tpot_s));
  latency.charts.push_back(
      latency_cdf(run, slo, "E2E: end-to-end latency", "e2e_request_latency", &Q::e2e_s));
  latency.charts.push_back(hit_rate(run));
  return {state, latency};
}

}  // namespace kvfleet::charts
