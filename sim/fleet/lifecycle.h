#pragma once
// Replicas come and go: failures (at given times or at random), rolling deploys with or without
// draining, and an autoscaler. A replica that starts (new, replaced or repaired) pays a
// provisioning delay plus the time to load its weights, and comes up with an empty cache.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/config/params.h"

namespace kvfleet::sim {

struct FailureAt {
  double time_s = 0;
  int replica = 0;
  template <class V>
  void visit(V& v) {
    v.param("time_s", time_s, {.unit = "s", .desc = "when it fails", .min = 0});
    v.param("replica", replica, {.desc = "which replica of the pool (0-based)", .min = 0});
  }
};

struct FailureConfig {
  double mtbf_s = 0;
  double repair_s = 60;
  std::vector<FailureAt> at;
  template <class V>
  void visit(V& v) {
    v.param("mtbf_s", mtbf_s,
            {.unit = "s",
             .desc = "mean time between failures of each replica (exponential); 0 = none "
                     "at random",
             .min = 0});
    v.param("repair_s", repair_s,
            {.unit = "s",
             .desc = "a failed replica is replaced after this (then starts: startup_s + weight "
                     "load)",
             .min = 0});
    v.param("at", at, {.desc = "failures at given times"});
  }
  void check(config::Reader& r) const {
    if (mtbf_s > 0 && mtbf_s < 1)
      r.fail_key("mtbf_s",
                 "must be 0 (no random failures) or at least 1 s: a replica failing more than "
                 "once a second never serves");
  }
};

struct DeployConfig {
  bool enabled = false;
  double start_s = 0;
  bool drain = true;
  double drain_timeout_s = 60;
  template <class V>
  void visit(V& v) {
    v.param("enabled", enabled,
            {.desc = "a rolling deploy: replicas replaced one at a time, each after the "
                     "previous one is back up"});
    v.param("start_s", start_s, {.unit = "s", .desc = "when the deploy starts", .min = 0});
    v.param("drain", drain,
            {.desc = "a replica takes no new requests and finishes those in flight (up to "
                     "drain_timeout_s) before it stops; else it stops at once and its requests "
                     "fail"});
    v.param("drain_timeout_s", drain_timeout_s,
            {.unit = "s", .desc = "requests still running after this fail", .min = 0});
  }
};

struct AutoscaleConfig {
  bool enabled = false;
  int min_replicas = 1;
  int max_replicas = 0;
  std::string metric = "queue";
  double target = 4;
  double tolerance = 0.1;
  double interval_s = 15;
  double scale_up_cooldown_s = 0;
  double scale_down_cooldown_s = 300;
  template <class V>
  void visit(V& v) {
    v.param("enabled", enabled,
            {.desc = "scale the pool between min_replicas and max_replicas (the pool starts with "
                     "`replicas`)"});
    v.param("min_replicas", min_replicas, {.unit = "replicas", .desc = "lower bound", .min = 0});
    v.param("max_replicas", max_replicas,
            {.unit = "replicas", .desc = "upper bound; 0 = replicas", .min = 0});
    v.param("metric", metric,
            {.desc = "queue = waiting requests per ready replica (engines' and the gateway's); "
                     "outstanding = running + waiting per ready replica (concurrency); kv = mean "
                     "KV usage of ready replicas",
             .choices = {"queue", "outstanding", "kv"}});
    v.param("target", target,
            {.desc = "desired replicas = ceil(ready × metric / target), as Kubernetes' "
                     "horizontal pod autoscaler",
             .positive = true});
    v.param("tolerance", tolerance,
            {.unit = "fraction",
             .desc = "no change while metric / target is within 1 ± this",
             .min = 0});
    v.param("interval_s", interval_s,
            {.unit = "s",
             .desc = "how often the autoscaler decides",
             .min = 0.1,
             .why = "Kubernetes' HPA decides every 15 s; faster than 0.1 s is not a control loop"});
    v.param("scale_up_cooldown_s", scale_up_cooldown_s,
            {.unit = "s", .desc = "no scale-up sooner than this after the last one", .min = 0});
    v.param("scale_down_cooldown_s", scale_down_cooldown_s,
            {.unit = "s",
             .desc = "scale-down stabilisation window: shrink only to the highest "
                     "recommendation of this window (HPA's stabilizationWindowSeconds)",
             .min = 0});
  }
};

// Kubernetes HPA's rule: ceil(ready × metric / target), unchanged within the tolerance, clamped.
inline int autoscale_desired(const AutoscaleConfig& c, int ready, int current, double metric,
                             int max_replicas) {
  const double ratio = metric / c.target;
  int desired = current;
  if (std::abs(ratio - 1.0) > c.tolerance)
    desired = static_cast<int>(std::ceil(std::max(ready, 1) * ratio - 1e-9));
  if (ready == 0 && metric > 0 && desired < 1) desired = 1;  // demand and nobody to serve it
  return std::min(max_replicas, std::max(c.min_replicas, desired));
}

}  // namespace kvfleet::sim
