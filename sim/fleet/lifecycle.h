#pragma once
// Replicas come and go: failures (at given times or at random), rolling deploys with or without
// draining, and an autoscaler. A replica that starts (new, replaced or repaired) pays a
// provisioning delay plus the time to load its weights, and comes up with an empty cache.
#include <cmath>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "sim/config/params.h"
#include "sim/core/event_queue.h"
#include "sim/core/ids.h"
#include "sim/core/rng.h"
#include "sim/fleet/router.h"

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

// A replica's state in the fleet. Only an up replica takes new requests; a draining one finishes
// those it has; starting, down and off ones hold none.
enum class Life : std::uint8_t { kOff, kStarting, kUp, kDraining, kDown };

// One replica's place in the fleet and its history.
struct FleetNode {
  std::size_t pool = 0, local = 0;
  Life life = Life::kUp;
  std::vector<EventId> due;  // its state changes pending, cancelled at every state change
  SimTime since = 0;         // paid time accounted up to here
  double paid_s = 0;
  bool restart_after_drain = false;  // deploy: restart; scale-in: switch off
  bool deploying = false;
  std::int64_t failures = 0, restarts = 0;
};

// What the lifecycle asks of the rest of the fleet (Simulation wires it to the engines and the
// gateways).
class LifecycleHost {
 public:
  virtual ~LifecycleHost() = default;
  // The engine of `node` stops: every request still there fails, its KV is gone.
  virtual void stop_replica(NodeId node, SimTime now) = 0;
  virtual bool replica_idle(NodeId node) const = 0;
  // A replica of `pool` changed state: the gateway and routers see it at once.
  virtual void membership_changed(PoolId pool) = 0;
  // A replica of `pool` came up: requests queued at its gateway may go.
  virtual void replica_came_up(PoolId pool, SimTime now) = 0;
  // Anything left to do (arrivals, requests in flight): no failures and no autoscaler after.
  virtual bool active() const = 0;
  virtual std::span<const ReplicaLoad> signals(PoolId pool) = 0;
  virtual double gateway_queued(PoolId pool) const = 0;
};

// One pool as the lifecycle sees it.
struct LifecyclePool {
  FailureConfig failures;
  DeployConfig deploy;
  AutoscaleConfig autoscale;
  double start_delay_s = 0;  // provisioning + weight load
  int replicas = 1;          // up at the start
  int max_replicas = 1;      // replicas that exist (the others start off)
};

// Counters of one pool's lifecycle, for its results.
struct LifecycleCounts {
  std::int64_t scale_ups = 0, scale_downs = 0;
  int peak_replicas = 0;  // most replicas up or starting at once
};

// Failures, rolling deploys and the autoscaler: the component that owns every replica's state
// (FleetNode) and the events that change it.
// A replica's state change is due (arg: Lifecycle::LifeEvent); a pool's next deploy step; a
// pool's autoscaler decision (arg: the pool).
enum class LifecycleEvent : std::uint32_t { kLife, kDeploy, kAutoscale, kCount };

class Lifecycle final : public EventHandlerOf<LifecycleEvent> {
 public:
  Lifecycle(EventQueue& queue, LifecycleHost& host, std::uint64_t seed);
  // Adds a pool and its replicas (numbered on from those of earlier pools).
  void add_pool(const LifecyclePool& pool);
  // Schedules the failures, deploys and autoscaler decisions of every pool.
  void start();
  // A request left `node` (ended or handed over): a draining replica may be done.
  void on_request_left(NodeId node, SimTime now) {
    if (nodes_[node.value()].life == Life::kDraining) push(node.value(), kDrainCheck, now);
  }
  bool up(NodeId node) const { return nodes_[node.value()].life == Life::kUp; }
  const FleetNode& node(NodeId n) const { return nodes_[n.value()]; }
  std::size_t size() const { return nodes_.size(); }
  const LifecycleCounts& counts(PoolId pool) const { return pools_[pool.value()].counts; }
  // Accounts paid time up to `end` (the end of the run).
  void finish(SimTime end);
  // When a random failure found the run over (nothing left to serve, nothing changing since):
  // the time of the event before it, where the run ends; kTimeNever otherwise.
  SimTime quiet_at() const { return quiet_at_; }

 private:
  using enum LifecycleEvent;
  void handle(LifecycleEvent kind, std::uint64_t arg, SimTime now) override;
  const char* handler_name() const override { return "Lifecycle"; }
  enum Action : std::uint8_t {
    kReady = 0,
    kRestart,
    kFailNow,
    kRandomFail,
    kDrainCheck,
    kDrainDeadline
  };
  // A replica's state change due (cancelled when the replica changes state before it).
  struct LifeEvent {
    std::size_t node;
    Action action;
    std::uint64_t encode() const { return action | (static_cast<std::uint64_t>(node) << 4); }
    static LifeEvent decode(std::uint64_t a) {
      return {static_cast<std::size_t>(a >> 4), static_cast<Action>(a & 0xF)};
    }
  };
  struct Pool {
    LifecyclePool config;
    std::vector<std::size_t> nodes;  // global replica indices
    RngStream failure_rng;
    std::size_t deploy_next = 0;
    SimTime last_scale_up = -1;
    std::deque<std::pair<SimTime, int>> recommendations;  // autoscaler: (time, desired)
    LifecycleCounts counts;
  };
  void lifecycle(std::size_t node, Action a, SimTime now);
  void set_life(std::size_t node, Life l, SimTime now);
  void push(std::size_t node, Action a, SimTime at);
  void start_node(std::size_t node, SimTime now);  // starting -> up after startup + weights
  void fail(std::size_t node, SimTime now);
  void begin_drain(std::size_t node, SimTime now, bool restart);
  void end_drain(std::size_t node, SimTime now);
  void deploy_next(std::size_t pool, SimTime now);
  void autoscale(std::size_t pool, SimTime now);
  // The autoscaler's decision, stabilised: desired replicas of `pool` given what it sees.
  int stabilised_desired(Pool& p, int raw, int current, SimTime now);
  void scale_up(Pool& p, int current, int desired, SimTime now);
  void scale_down(Pool& p, std::span<const ReplicaLoad> sig, int current, int desired, SimTime now);

  EventQueue& queue_;
  LifecycleHost& host_;
  std::uint64_t seed_;
  SimTime quiet_at_ = kTimeNever;
  std::vector<Pool> pools_;
  std::vector<FleetNode> nodes_;
};

}  // namespace kvfleet::sim
