#include "sim/fleet/lifecycle.h"

#include <algorithm>

namespace kvfleet::sim {

Lifecycle::Lifecycle(EventQueue& queue, LifecycleHost& host, std::uint64_t seed)
    : queue_(queue), host_(host), seed_(seed) {}

void Lifecycle::add_pool(const LifecyclePool& config) {
  const std::size_t p = pools_.size();
  pools_.push_back(Pool{config, {}, RngStream(seed_ + p, "fleet.failures")});
  Pool& pool = pools_.back();
  for (int r = 0; r < config.max_replicas; ++r) {
    FleetNode node;
    node.pool = p;
    node.local = static_cast<std::size_t>(r);
    node.life = r < config.replicas ? Life::kUp : Life::kOff;
    pool.nodes.push_back(nodes_.size());
    nodes_.push_back(node);
  }
}

void Lifecycle::start() {
  for (std::size_t p = 0; p < pools_.size(); ++p) {
    Pool& pool = pools_[p];
    const LifecyclePool& c = pool.config;
    for (const auto& f : c.failures.at)
      push(pool.nodes[static_cast<std::size_t>(f.replica)], kFailNow, from_seconds(f.time_s));
    if (c.failures.mtbf_s > 0)
      for (auto n : pool.nodes)
        if (nodes_[n].life == Life::kUp)
          push(n, kRandomFail, from_seconds(pool.failure_rng.exponential(c.failures.mtbf_s)));
    if (c.deploy.enabled) queue_.push(from_seconds(c.deploy.start_s), this, kDeploy, p);
    if (c.autoscale.enabled) queue_.push(from_seconds(c.autoscale.interval_s), this, kAutoscale, p);
    int up = 0;
    for (auto n : pool.nodes) up += nodes_[n].life == Life::kUp;
    pool.counts.peak_replicas = up;
  }
}

void Lifecycle::finish(SimTime end) {
  for (auto& node : nodes_) {
    if (node.life != Life::kOff) node.paid_s += to_seconds(end - node.since);
    node.since = end;
  }
}

void Lifecycle::handle(LifecycleEvent kind, std::uint64_t arg, SimTime now) {
  switch (kind) {
    case kLife: {
      const LifeEvent e = LifeEvent::decode(arg);
      if (e.action != kRandomFail) quiet_at_ = kTimeNever;  // something still happens
      std::vector<EventId>& due = nodes_[e.node].due;
      if (const auto it = std::find(due.begin(), due.end(), queue_.current()); it != due.end())
        due.erase(it);  // delivered: no longer due
      lifecycle(e.node, e.action, now);
      return;
    }
    case kDeploy:
      quiet_at_ = kTimeNever;
      deploy_next(arg, now);
      return;
    case kAutoscale: {
      quiet_at_ = kTimeNever;
      autoscale(arg, now);
      const double dt = pools_[arg].config.autoscale.interval_s;
      if (host_.active()) queue_.push(now + from_seconds(dt), this, kAutoscale, arg);
      return;
    }
    case kCount:
      return;
  }
}

void Lifecycle::set_life(std::size_t n, Life l, SimTime now) {
  FleetNode& node = nodes_[n];
  if (node.life != Life::kOff) node.paid_s += to_seconds(now - node.since);
  node.since = now;
  node.life = l;
  for (EventId e : node.due) queue_.cancel(e);  // changes due in the old state are void
  node.due.clear();
  Pool& p = pools_[node.pool];
  int active = 0;
  for (auto k : p.nodes) active += nodes_[k].life == Life::kUp || nodes_[k].life == Life::kStarting;
  p.counts.peak_replicas = std::max(p.counts.peak_replicas, active);
  host_.membership_changed(PoolId{node.pool});  // the gateway learns of membership changes at once
}

void Lifecycle::push(std::size_t n, Action a, SimTime at) {
  nodes_[n].due.push_back(queue_.push(at, this, kLife, LifeEvent{n, a}.encode()));
}

void Lifecycle::start_node(std::size_t n, SimTime now) {
  set_life(n, Life::kStarting, now);
  ++nodes_[n].restarts;
  push(n, kReady, now + from_seconds(pools_[nodes_[n].pool].config.start_delay_s));
}

void Lifecycle::fail(std::size_t n, SimTime now) {
  FleetNode& node = nodes_[n];
  if (node.life != Life::kUp && node.life != Life::kDraining) return;
  ++node.failures;
  set_life(n, Life::kDown, now);
  host_.stop_replica(NodeId{n}, now);  // its requests fail; clients may retry them elsewhere
  push(n, kRestart, now + from_seconds(pools_[node.pool].config.failures.repair_s));
}

void Lifecycle::begin_drain(std::size_t n, SimTime now, bool restart) {
  set_life(n, Life::kDraining, now);
  nodes_[n].restart_after_drain = restart;
  const double timeout = pools_[nodes_[n].pool].config.deploy.drain_timeout_s;
  if (restart) push(n, kDrainDeadline, now + from_seconds(timeout));
  push(n, kDrainCheck, now);
}

void Lifecycle::end_drain(std::size_t n, SimTime now) {
  if (nodes_[n].restart_after_drain) {
    start_node(n, now);
  } else {
    set_life(n, Life::kOff, now);
  }
  host_.stop_replica(NodeId{n}, now);  // requests still there (deadline) fail
}

void Lifecycle::lifecycle(std::size_t n, Action a, SimTime now) {
  FleetNode& node = nodes_[n];
  const std::size_t pool = node.pool;
  switch (a) {
    case kReady: {
      if (node.life != Life::kStarting) return;
      set_life(n, Life::kUp, now);
      const double mtbf = pools_[pool].config.failures.mtbf_s;
      if (mtbf > 0)
        push(n, kRandomFail, now + from_seconds(pools_[pool].failure_rng.exponential(mtbf)));
      if (node.deploying) {
        node.deploying = false;
        queue_.push(now, this, kDeploy, pool);
      }
      host_.replica_came_up(PoolId{pool}, now);
      return;
    }
    case kRandomFail:
      if (host_.active()) {
        fail(n, now);
      } else if (quiet_at_ == kTimeNever) {
        // The run is over: no more failures, and a failure drawn for after its last event does
        // not lengthen it (nor the GPU time it bills).
        quiet_at_ = queue_.previous_time();
      }
      return;
    case kFailNow:
      fail(n, now);
      return;
    case kRestart:
      if (node.life == Life::kDown) start_node(n, now);
      return;
    case kDrainCheck:
      if (node.life == Life::kDraining && host_.replica_idle(NodeId{n})) end_drain(n, now);
      return;
    case kDrainDeadline:
      if (node.life == Life::kDraining) end_drain(n, now);
      return;
  }
}

void Lifecycle::deploy_next(std::size_t pool, SimTime now) {
  Pool& p = pools_[pool];
  while (p.deploy_next < p.nodes.size()) {
    const std::size_t n = p.nodes[p.deploy_next++];
    if (nodes_[n].life != Life::kUp) continue;  // off, failed or starting: gets the new version
    nodes_[n].deploying = true;
    if (p.config.deploy.drain) {
      begin_drain(n, now, true);
    } else {
      start_node(n, now);                  // takes no more requests ...
      host_.stop_replica(NodeId{n}, now);  // ... and those in flight fail at once
    }
    return;
  }
}

void Lifecycle::autoscale(std::size_t pool, SimTime now) {
  Pool& p = pools_[pool];
  const AutoscaleConfig& a = p.config.autoscale;
  const auto sig = host_.signals(PoolId{pool});
  int ready = 0, starting = 0;
  double waiting = host_.gateway_queued(PoolId{pool}), running = 0, kv = 0;
  for (std::size_t i = 0; i < p.nodes.size(); ++i) {
    const Life l = nodes_[p.nodes[i]].life;
    if (l == Life::kStarting) ++starting;
    if (l != Life::kUp) continue;
    ++ready;
    waiting += sig[i].waiting;
    running += sig[i].running;
    kv += sig[i].kv_usage;
  }
  const double metric = a.metric == "kv"            ? (ready ? kv / ready : 0)
                        : a.metric == "outstanding" ? (running + waiting) / std::max(ready, 1)
                                                    : waiting / std::max(ready, 1);
  const int current = ready + starting;
  const int raw = autoscale_desired(a, ready, current, metric, p.config.max_replicas);
  const int desired = stabilised_desired(p, raw, current, now);
  if (desired > current &&
      (p.last_scale_up < 0 || to_seconds(now - p.last_scale_up) >= a.scale_up_cooldown_s)) {
    scale_up(p, current, desired, now);
  } else if (desired < current && starting == 0) {
    scale_down(p, sig, current, desired, now);
  }
}

int Lifecycle::stabilised_desired(Pool& p, int raw, int current, SimTime now) {
  // Scale-down stabilisation (HPA's stabilizationWindowSeconds): shrink only to the highest
  // recommendation of the window, so that a queue that empties for a moment does not flap.
  p.recommendations.emplace_back(now, raw);
  const SimTime window = from_seconds(p.config.autoscale.scale_down_cooldown_s);
  while (!p.recommendations.empty() && p.recommendations.front().first < now - window)
    p.recommendations.pop_front();
  int desired = raw;
  if (raw < current)
    for (const auto& [t, d] : p.recommendations) desired = std::max(desired, d);
  return std::min(desired, std::max(current, raw));
}

void Lifecycle::scale_up(Pool& p, int current, int desired, SimTime now) {
  for (std::size_t k = 0, added = 0;
       k < p.nodes.size() && current + static_cast<int>(added) < desired; ++k) {
    const std::size_t n = p.nodes[k];
    if (nodes_[n].life != Life::kOff) continue;
    start_node(n, now);
    ++added;
    ++p.counts.scale_ups;
  }
  p.last_scale_up = now;
}

void Lifecycle::scale_down(Pool& p, std::span<const ReplicaLoad> sig, int current, int desired,
                           SimTime now) {
  for (int k = current - desired; k > 0; --k) {
    // The up replica with the least outstanding work, newest first among equals.
    std::size_t best = p.nodes.size();
    for (std::size_t i = p.nodes.size(); i-- > 0;) {
      if (nodes_[p.nodes[i]].life != Life::kUp) continue;
      if (best == p.nodes.size() || sig[i].outstanding() < sig[best].outstanding()) best = i;
    }
    if (best == p.nodes.size()) break;
    begin_drain(p.nodes[best], now, false);
    ++p.counts.scale_downs;
  }
}

}  // namespace kvfleet::sim
