#include "sim/metrics/alerts.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "sim/metrics/summary.h"
#include "sim/results/run_result.h"

namespace kvfleet::sim {

void AlertRule::check(config::Reader& r) const {
  if (conditions.empty()) r.fail_key("conditions", "a rule needs at least one condition");
}

const AlertEvent* AlertReport::first(const std::string& kind, const std::string& scope) const {
  for (const auto& e : events)
    if (e.kind == kind && e.scope == scope) return &e;
  return nullptr;
}

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// One signal of one replica at each sample.
std::vector<double> replica_signal(const TimeSeries& ts, const std::string& name) {
  auto as_double = [](const auto& c) { return std::vector<double>(c.begin(), c.end()); };
  if (name == "kv_cache_usage") return ts.kv_cache_usage;
  if (name == "num_requests_waiting") return as_double(ts.num_requests_waiting);
  if (name == "num_requests_running") return as_double(ts.num_requests_running);
  if (name == "busy_fraction") return ts.busy_fraction;
  if (name == "compute_utilization") return ts.compute_utilization;
  if (name == "memory_bandwidth_utilization") return ts.memory_bandwidth_utilization;
  // preemptions_per_s, from the cumulative count
  std::vector<double> v(ts.t_s.size(), 0.0);
  for (std::size_t k = 1; k < v.size(); ++k) {
    const double dt = ts.t_s[k] - ts.t_s[k - 1];
    if (dt > 0) v[k] = static_cast<double>(ts.num_preemptions[k] - ts.num_preemptions[k - 1]) / dt;
  }
  return v;
}

// The fleet's signal: usage and utilisation averaged over replicas, counts and rates summed.
std::vector<double> fleet_signal(const std::vector<TimeSeries>& all, const std::string& name) {
  const bool mean = name == "kv_cache_usage" || name == "busy_fraction" ||
                    name == "compute_utilization" || name == "memory_bandwidth_utilization";
  std::vector<double> v;
  for (const auto& ts : all) {
    const std::vector<double> x = replica_signal(ts, name);
    if (v.size() < x.size()) v.resize(x.size(), 0);
    for (std::size_t k = 0; k < x.size(); ++k) v[k] += x[k];
  }
  if (mean && !all.empty())
    for (double& x : v) x /= static_cast<double>(all.size());
  return v;
}

// Firings of one rule on one scope's signals (sampled at `t`).
void fire(const AlertRule& rule, const std::string& scope, const std::vector<double>& t,
          const std::vector<std::vector<double>>& signals, std::vector<AlertFiring>& out) {
  const std::size_t n = t.size();
  double active_since = kNaN;
  bool firing = false;
  for (std::size_t k = 0; k < n; ++k) {
    bool all = true;
    for (std::size_t c = 0; c < rule.conditions.size() && all; ++c) {
      const AlertCondition& cond = rule.conditions[c];
      const std::vector<double>& v = signals[c];
      if (cond.op == "rising") {
        // The latest sample at least window_s before this one.
        const auto back = std::upper_bound(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(k),
                                           t[k] - cond.window_s + 1e-9);
        all = back != t.begin() && v[k] > v[static_cast<std::size_t>(back - t.begin()) - 1];
      } else if (cond.op == ">") {
        all = v[k] > cond.threshold;
      } else if (cond.op == ">=") {
        all = v[k] >= cond.threshold;
      } else if (cond.op == "<") {
        all = v[k] < cond.threshold;
      } else {
        all = v[k] <= cond.threshold;
      }
    }
    if (!all) {
      active_since = kNaN;
      if (firing) out.back().clear_s = t[k];
      firing = false;
      continue;
    }
    if (std::isnan(active_since)) active_since = t[k];
    if (!firing && t[k] - active_since >= rule.for_s - 1e-9) {
      firing = true;
      out.push_back({rule.name, scope, t[k], kNaN, kNaN, kNaN, kNaN});
    }
  }
}

// The first time `count` of the sorted times fall within a trailing `window` (the last of them).
double first_wave(const std::vector<double>& times, int count, double window) {
  for (std::size_t i = 0, j = 0; i < times.size(); ++i) {
    while (times[i] - times[j] > window) ++j;
    if (static_cast<int>(i - j + 1) >= count) return times[i];
  }
  return kNaN;
}

// The first sample time at which the p99 of the values stamped in the trailing window exceeds
// `target` (with at least `min_n` of them). `stamped` is sorted by time.
double first_breach(std::vector<std::pair<double, double>> stamped, const std::vector<double>& t,
                    double window, int min_n, double target, double* p99_at) {
  std::sort(stamped.begin(), stamped.end());
  std::vector<double> w;
  std::size_t lo = 0, hi = 0;
  for (double now : t) {
    while (hi < stamped.size() && stamped[hi].first <= now) ++hi;
    while (lo < hi && stamped[lo].first <= now - window) ++lo;
    if (static_cast<int>(hi - lo) < min_n) continue;
    w.clear();
    for (std::size_t i = lo; i < hi; ++i) w.push_back(stamped[i].second);
    std::sort(w.begin(), w.end());
    const double p = percentile_sorted(w, 99);
    if (p > target) {
      *p99_at = p;
      return now;
    }
  }
  return kNaN;
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

// Each replica's first preemption (KV blocks ran out for a running request), and the fleet's.
void add_oom_events(const RunResult& r, AlertReport& rep) {
  double fleet_oom = kNaN;
  std::string fleet_oom_replica;
  for (const auto& x : r.replicas) {
    if (x.stats.first_preemption_s < 0) continue;
    rep.events.push_back({"out_of_memory", x.name, x.stats.first_preemption_s,
                          "KV blocks ran out for a running request (first preemption)"});
    if (std::isnan(fleet_oom) || x.stats.first_preemption_s < fleet_oom) {
      fleet_oom = x.stats.first_preemption_s;
      fleet_oom_replica = x.name;
    }
  }
  if (!std::isnan(fleet_oom))
    rep.events.push_back({"out_of_memory", "fleet", fleet_oom, "first on " + fleet_oom_replica});
}

// The first wave of the gateway's rejections and the first SLO breach, from the requests.
void add_request_events(const AlertsConfig& cfg, const RunResult& r, const std::vector<double>& t,
                        AlertReport& rep) {
  std::vector<double> rejected;
  std::vector<std::pair<double, double>> ttft, tpot;
  for (const auto& q : r.requests) {
    // Load-shedding rejections only: a request that can never fit is not a wave of overload.
    if (q.outcome == Outcome::kRejected && retryable(q.reject_reason) && q.finish >= 0)
      rejected.push_back(to_seconds(q.finish));
    if (q.first_token >= 0) ttft.emplace_back(to_seconds(q.first_token), q.ttft_s());
    if (q.outcome == Outcome::kOk && q.generated_tokens > 1)
      tpot.emplace_back(to_seconds(q.finish), q.tpot_s());
  }
  std::sort(rejected.begin(), rejected.end());
  const double wave = first_wave(rejected, cfg.rejection_wave_count, cfg.rejection_wave_window_s);
  if (!std::isnan(wave))
    rep.events.push_back({"rejection_wave", "fleet", wave,
                          std::to_string(cfg.rejection_wave_count) +
                              " rejected by the gateway within " +
                              fmt("%g s", cfg.rejection_wave_window_s)});
  double slo = kNaN;
  std::string slo_detail;
  double p = 0;
  if (cfg.slo_ttft_p99_s > 0) {
    slo = first_breach(ttft, t, cfg.slo_window_s, cfg.slo_min_requests, cfg.slo_ttft_p99_s, &p);
    if (!std::isnan(slo)) slo_detail = "TTFT p99 " + fmt("%.3g s", p);
  }
  if (cfg.slo_tpot_p99_s > 0) {
    const double b =
        first_breach(tpot, t, cfg.slo_window_s, cfg.slo_min_requests, cfg.slo_tpot_p99_s, &p);
    if (!std::isnan(b) && (std::isnan(slo) || b < slo)) {
      slo = b;
      slo_detail = "TPOT p99 " + fmt("%.3g s", p);
    }
  }
  if (!std::isnan(slo))
    rep.events.push_back({"slo_breach", "fleet", slo,
                          slo_detail + " over the trailing " + fmt("%g s", cfg.slo_window_s)});
}

// Every rule's firings, each rule's in time order over all replicas.
void add_firings(const AlertsConfig& cfg, const RunResult& r, const std::vector<double>& t,
                 AlertReport& rep) {
  for (const auto& rule : cfg.rules) {
    const std::size_t begin = rep.firings.size();
    if (rule.scope == "fleet") {
      std::vector<std::vector<double>> sig;
      for (const auto& c : rule.conditions) sig.push_back(fleet_signal(r.timeseries, c.signal));
      fire(rule, "fleet", t, sig, rep.firings);
    } else {
      for (const auto& ts : r.timeseries) {
        std::vector<std::vector<double>> sig;
        for (const auto& c : rule.conditions) sig.push_back(replica_signal(ts, c.signal));
        fire(rule, ts.replica, ts.t_s, sig, rep.firings);
      }
    }
    std::stable_sort(
        rep.firings.begin() + static_cast<std::ptrdiff_t>(begin), rep.firings.end(),
        [](const AlertFiring& a, const AlertFiring& b) { return a.fire_s < b.fire_s; });
  }
}

}  // namespace

AlertReport evaluate_alerts(const AlertsConfig& cfg, const RunResult& r) {
  AlertReport rep;
  if (cfg.rules.empty()) return rep;
  const std::vector<double> no_t;
  const std::vector<double>& t = r.timeseries.empty() ? no_t : r.timeseries.front().t_s;
  add_oom_events(r, rep);
  add_request_events(cfg, r, t, rep);
  std::stable_sort(rep.events.begin(), rep.events.end(),
                   [](const AlertEvent& a, const AlertEvent& b) { return a.t_s < b.t_s; });
  add_firings(cfg, r, t, rep);
  auto lead = [](const AlertEvent* e, double fire_s) { return e ? e->t_s - fire_s : kNaN; };
  for (auto& f : rep.firings) {
    f.lead_oom_s = lead(rep.first("out_of_memory", f.scope), f.fire_s);
    f.lead_rejection_wave_s = lead(rep.first("rejection_wave", "fleet"), f.fire_s);
    f.lead_slo_breach_s = lead(rep.first("slo_breach", "fleet"), f.fire_s);
  }
  return rep;
}

}  // namespace kvfleet::sim
