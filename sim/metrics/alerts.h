#pragma once
// Alert rules evaluated on a run's simulated signals, scored by how long before trouble they fire
// A rule fires when all its conditions have held for `for_s` (Prometheus' `for:`);
// each firing gets its lead time before the first out-of-memory event (a preemption: KV ran out
// for a running request), the first rejection wave and the first SLO breach, so thresholds can be
// tuned on load tests rather than copied. The firings and events (AlertReport) are part of
// the run's results (results/run_result.h).
//
// Alerts observe and never act, so they are evaluated on the sampled time series after the run:
// the same result as evaluating them online at every sample.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "sim/config/params.h"
#include "sim/results/run_result.h"

namespace kvfleet::sim {

struct AlertCondition {
  std::string signal = "kv_cache_usage";
  std::string op = ">";
  double threshold = 0;
  double window_s = 30;
  template <class V>
  void visit(V& v) {
    v.param("signal", signal,
            {.desc = "kv_cache_usage, num_requests_waiting, num_requests_running, busy_fraction, "
                     "compute_utilization, memory_bandwidth_utilization or preemptions_per_s "
                     "(fleet scope: usage and utilisations averaged over replicas, counts and "
                     "rates summed)",
             .choices = {"kv_cache_usage", "num_requests_waiting", "num_requests_running",
                         "busy_fraction", "compute_utilization", "memory_bandwidth_utilization",
                         "preemptions_per_s"}});
    v.param("op", op,
            {.desc = "compare with threshold (>, >=, <, <=), or rising: the value is higher than "
                     "window_s earlier",
             .choices = {">", ">=", "<", "<=", "rising"}});
    v.param("threshold", threshold, {.desc = "the value compared with (not used by rising)"});
    v.param("window_s", window_s,
            {.unit = "s", .desc = "rising: how far back the value is compared", .positive = true});
  }
};

struct AlertRule {
  std::string name;
  std::string scope = "replica";
  std::vector<AlertCondition> conditions;
  double for_s = 0;
  template <class V>
  void visit(V& v) {
    v.param("name", name, {.desc = "rule name in reports and results", .required = true});
    v.param("scope", scope,
            {.desc = "replica: evaluated on each replica's signals; fleet: on the whole fleet's",
             .choices = {"replica", "fleet"}});
    v.param("conditions", conditions,
            {.desc = "all must hold at a sample for the rule to be active", .required = true});
    v.param("for_s", for_s,
            {.unit = "s", .desc = "the rule fires once it has been active this long", .min = 0});
  }
  void check(config::Reader& r) const;
};

struct AlertsConfig {
  std::vector<AlertRule> rules;
  int rejection_wave_count = 10;
  double rejection_wave_window_s = 10;
  double slo_ttft_p99_s = 0;
  double slo_tpot_p99_s = 0;
  double slo_window_s = 30;
  int slo_min_requests = 20;
  template <class V>
  void visit(V& v) {
    v.param("rules", rules, {.desc = "alert rules; none = no alert evaluation"});
    v.param("rejection_wave_count", rejection_wave_count,
            {.unit = "requests",
             .desc = "a rejection wave: this many requests shed or refused by the gateway (full "
                     "queue, queue timeout, shedding) within rejection_wave_window_s",
             .min = 1});
    v.param("rejection_wave_window_s", rejection_wave_window_s,
            {.unit = "s", .desc = "window of a rejection wave", .positive = true});
    v.param("slo_ttft_p99_s", slo_ttft_p99_s,
            {.unit = "s",
             .desc = "SLO breach: p99 TTFT of the first tokens in the trailing slo_window_s "
                     "above this; 0 = not checked",
             .min = 0});
    v.param("slo_tpot_p99_s", slo_tpot_p99_s,
            {.unit = "s",
             .desc = "SLO breach: p99 TPOT of the requests finished in the trailing window above "
                     "this; 0 = not checked",
             .min = 0});
    v.param("slo_window_s", slo_window_s,
            {.unit = "s", .desc = "trailing window of the SLO percentiles", .positive = true});
    v.param("slo_min_requests", slo_min_requests,
            {.unit = "requests",
             .desc = "fewer requests than this in the window: no SLO verdict there",
             .min = 1});
  }
};

// Evaluates the rules on r.timeseries, r.replicas and r.requests.
AlertReport evaluate_alerts(const AlertsConfig& cfg, const RunResult& r);

}  // namespace kvfleet::sim
