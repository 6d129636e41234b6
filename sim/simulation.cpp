#include "sim/simulation.h"

#include <algorithm>
#include <cstdint>

namespace kvfleet::sim {

Simulation::Simulation(const Scenario& sc)
    : scenario_(sc),
      sample_interval_(
          std::max<SimTime>(1, from_seconds(sc.config.simulation.timeseries_interval_s))) {
  const auto seed = static_cast<std::uint64_t>(sc.config.seed);
  scrape_interval_ = from_seconds(sc.config.simulation.scrape_interval_s);
  std::vector<std::string> pool_names;
  for (const auto& p : sc.config.pools) pool_names.push_back(p.name);
  workload_ = workload_registry().make(sc.config.workload, seed, pool_names);
  int index = 0;
  for (std::size_t p = 0; p < sc.config.pools.size(); ++p) {
    const PoolConfig& pc = sc.config.pools[p];
    routers_.push_back(router_registry().make(sc.config.router, seed + p));
    pool_replicas_.emplace_back();
    const Scenario::PoolInfo& info = sc.pools[p];
    const CostContext ctx{info.model, info.gpu, pc.tensor_parallel, dtype_bytes(info.weight_dtype),
                          dtype_bytes(info.memory.kv_dtype)};
    for (int r = 0; r < pc.replicas; ++r) {
      ReplicaSetup setup;
      setup.name = pc.replicas == 1 ? pc.name : pc.name + "/" + std::to_string(r);
      setup.engine = pc.engine;
      setup.memory = info.memory;
      setup.max_model_len = info.max_model_len;
      setup.host_link_Bps = info.gpu.host_link_Bps;
      setup.check_invariants = sc.config.simulation.check_invariants;
      replicas_.push_back(std::make_unique<Replica>(std::move(setup),
                                                    cost_model_registry().make(pc.cost_model, ctx),
                                                    log_, queue_, index++, this));
      replica_ptrs_.push_back(replicas_.back().get());
      pool_replicas_.back().push_back(replicas_.back().get());
      replica_pool_.push_back(pc.name);
      TimeSeries ts;
      ts.replica = replicas_.back()->name();
      series_.push_back(std::move(ts));
    }
  }
}

Simulation::~Simulation() = default;

bool Simulation::active() const {
  if (!workload_->finished()) return true;
  for (const auto* r : replica_ptrs_)
    if (!r->idle()) return true;
  return false;
}

void Simulation::deliver(RequestSpec& spec, SimTime now) {
  if (spec.purpose == kPurposeRelease) {
    for (auto* r : replica_ptrs_) released_blocks_ += r->release_session(spec.session);
    return;
  }
  RequestRecord rec;
  rec.id = log_.size();
  rec.arrival = now;
  rec.input_tokens = spec.input_tokens;
  rec.output_tokens = spec.output_tokens;
  rec.tenant = spec.tenant;
  rec.session = spec.session;
  rec.priority = spec.priority;
  rec.purpose = spec.purpose;
  rec.turn = spec.turn;
  rec.truncated_tokens = spec.truncated_tokens;
  rec.stable_tokens = spec.stable_tokens;
  log_.push_back(rec);
  if (spec.context_overflow) {
    // Refused by the application before reaching the fleet: counted, never silent.
    RequestRecord& r = log_.back();
    r.outcome = Outcome::kRejected;
    r.reject_reason = RejectReason::kContextOverflow;
    r.finish = now;
    on_request_end(static_cast<std::uint32_t>(rec.id), now);
    return;
  }
  if (spec.cancel_at != kTimeNever) {
    log_.back().cancel_propagates = spec.cancel_propagates;
    queue_.push(std::max(spec.cancel_at, now), this, kCancel, rec.id);
  }
  const std::size_t pool = spec.pool >= 0 ? static_cast<std::size_t>(spec.pool) : 0;
  if (scrape_interval_ == 0) scrape(pool);  // signals always current
  const std::size_t r = routers_[pool]->pick(spec, signals_[pool]);
  pool_replicas_[pool][r]->submit(static_cast<std::uint32_t>(rec.id), std::move(spec), now);
}

void Simulation::scrape(std::size_t pool) {
  auto& sig = signals_[pool];
  sig.resize(pool_replicas_[pool].size());
  for (std::size_t i = 0; i < sig.size(); ++i) {
    const Replica& r = *pool_replicas_[pool][i];
    sig[i] = {r.num_requests_running(), r.num_requests_waiting(), r.kv_cache_usage()};
  }
}

void Simulation::sample(SimTime now) {
  for (std::size_t i = 0; i < replica_ptrs_.size(); ++i) {
    const Replica& r = *replica_ptrs_[i];
    TimeSeries& ts = series_[i];
    ts.t_s.push_back(to_seconds(now));
    ts.num_requests_running.push_back(r.num_requests_running());
    ts.num_requests_waiting.push_back(r.num_requests_waiting());
    ts.kv_cache_usage.push_back(r.kv_cache_usage());
    ts.kv_tokens_held.push_back(r.kv_tokens_held());
    ts.kv_tokens_allocated.push_back(r.kv_tokens_allocated());
    ts.num_preemptions.push_back(r.stats().num_preemptions);
    ts.prompt_tokens.push_back(r.stats().prompt_tokens);
    ts.generation_tokens.push_back(r.stats().generation_tokens);
  }
}

void Simulation::on_event(std::uint32_t kind, std::uint64_t arg, SimTime now) {
  if (kind == kCancel) {
    RequestRecord& r = log_[arg];
    if (r.outcome != Outcome::kPending || r.replica < 0) return;  // already over
    r.client_gone = true;
    if (r.cancel_propagates) {
      replica_ptrs_[r.replica]->cancel(static_cast<std::uint32_t>(arg), now);
    } else {
      // The client leaves; the engine goes on and the work is wasted when it ends.
      RequestRecord seen = r;
      seen.outcome = Outcome::kCancelled;
      workload_->on_request_end(seen, now);
      arm_arrival();
    }
    return;
  }
  if (kind == kScrape) {
    for (std::size_t p = 0; p < signals_.size(); ++p) scrape(p);
    if (active()) queue_.push(now + scrape_interval_, this, kScrape);
    return;
  }
  if (kind == kSample) {
    sample(now);
    if (active()) queue_.push(now + sample_interval_, this, kSample);
    return;
  }
  if (arg != arrival_generation_) return;  // superseded by an earlier arrival
  armed_at_ = kTimeNever;
  // Deliver every arrival at this instant before any replica starts a step for it.
  SimTime t;
  while (workload_->peek(t) && t <= now) {
    RequestSpec spec = workload_->pop();
    deliver(spec, now);
  }
  arm_arrival();
}

void Simulation::arm_arrival() {
  SimTime t;
  if (!workload_->peek(t) || t >= armed_at_) return;
  armed_at_ = t;
  queue_.push(std::max(t, queue_.now()), this, kArrival, ++arrival_generation_);
}

void Simulation::on_request_end(std::uint32_t request, SimTime now) {
  workload_->on_request_end(log_[request], now);
  arm_arrival();
}

RunResult Simulation::run() {
  signals_.resize(pool_replicas_.size());
  for (std::size_t p = 0; p < signals_.size(); ++p) scrape(p);
  if (scrape_interval_ > 0) queue_.push(0, this, kScrape);
  arm_arrival();
  queue_.push(0, this, kSample);
  const double max_s = scenario_.config.simulation.max_time_s;
  RunResult res;
  if (max_s > 0) {
    const SimTime stop = from_seconds(max_s);
    queue_.run(stop);
    if (!queue_.empty()) {
      res.stopped_early = true;
      for (auto* r : replica_ptrs_) r->abandon(stop);
    }
    res.end_time = stop;
  } else {
    queue_.run();
    res.end_time = queue_.now();
  }
  res.events = queue_.events_processed();
  res.workload_stats = workload_->stats();
  res.workload_stats.emplace_back("released_blocks", static_cast<double>(released_blocks_));
  res.requests = std::move(log_);
  res.timeseries = std::move(series_);
  for (std::size_t i = 0; i < replica_ptrs_.size(); ++i) {
    const Replica& rep = *replica_ptrs_[i];
    ReplicaResult rr{rep.name(), replica_pool_[i], rep.stats(), rep.memory(), {}, {}};
    for (const auto& t : rep.tiers())
      rr.tiers.push_back({t.name(), t.size(), t.bytes_written(), t.bytes_read(), t.evictions()});
    for (const auto& [tenant, qh] : rep.tenant_prefix_stats())
      rr.tenant_prefix.emplace_back(tenant, qh.first, qh.second);
    std::sort(rr.tenant_prefix.begin(), rr.tenant_prefix.end());
    res.replicas.push_back(std::move(rr));
  }
  return res;
}

}  // namespace kvfleet::sim
