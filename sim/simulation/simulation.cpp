#include "sim/simulation/simulation.h"

#include <algorithm>
#include <cstdint>

#include "sim/core/huge_pages.h"
#include "sim/engine/block_hash.h"
#include "sim/engine/lockstep.h"
#include "sim/fleet/lifecycle.h"

namespace kvfleet::sim {

// The replicas' true prefix caches, for routers with an exact index.
class Simulation::Probe final : public CacheProbe {
 public:
  Probe(const Simulation& sim, std::size_t pool, int block_size)
      : sim_(sim), pool_(pool), block_size_(block_size) {}
  int block_size() const override { return block_size_; }
  std::int64_t cached_blocks(std::size_t i, std::span<const std::uint64_t> hashes) const override {
    return sim_.replicas_[sim_.pools_[pool_].nodes[i]]->kv().match_prefix(hashes);
  }

 private:
  const Simulation& sim_;
  std::size_t pool_;
  int block_size_;
};

Simulation::Simulation(const Scenario& sc)
    : scenario_(sc),
      sample_interval_(
          std::max<SimTime>(1, from_seconds(sc.config.simulation.timeseries_interval_s))) {
  const auto seed = static_cast<std::uint64_t>(sc.config.seed);
  scrape_interval_ = from_seconds(sc.config.simulation.scrape_interval_s);
  client_ = std::make_unique<Client>(sc.config.client, seed, queue_, log_,
                                     static_cast<ClientHost&>(*this));
  std::vector<std::string> pool_names;
  for (const auto& p : sc.config.pools) pool_names.push_back(p.name);
  workload_ = workload_registry().make(sc.config.workload, seed, pool_names);
  capped_ = sc.config.client.max_concurrency > 0 || workload_->caps_concurrency();
  lifecycle_ = std::make_unique<Lifecycle>(queue_, static_cast<LifecycleHost&>(*this), seed);
  for (std::size_t p = 0; p < sc.config.pools.size(); ++p) build_pool(p, seed);
  last_sample_.resize(replicas_.size());
  frontend_count_.assign(replicas_.size(), 0);
  if (sc.config.disaggregation.enabled) build_disaggregation();
}

void Simulation::build_pool(std::size_t p, std::uint64_t seed) {
  const Scenario& sc = scenario_;
  const PoolConfig& pc = sc.config.pools[p];
  if (pc.name == sc.config.gateway.long_prompt_pool && sc.config.gateway.long_prompt_tokens > 0)
    long_pool_ = static_cast<std::int32_t>(p);
  pools_.emplace_back();
  Pool& pool = pools_.back();
  const int dp = pc.data_parallel;
  lifecycle_->add_pool(
      {pc.failures, pc.deploy, pc.autoscale, start_delay_s(p), pc.replicas * dp, pc.max_engines()});
  pool.router = router_registry().make(sc.config.router, seed + p);
  const Scenario::PoolInfo& info = sc.pools[p];
  pool.gateway = std::make_unique<PoolGateway>(
      pc.admission, static_cast<double>(info.memory.num_blocks) * pc.engine.block_size);
  pool.result.name = pc.name;
  pool.result.price_per_hour = pc.price_per_hour;
  const CostContext ctx{info.model,
                        info.gpu,
                        pc.tensor_parallel,
                        weight_dtype_bytes(info.weight_dtype),
                        dtype_bytes(info.memory.kv_dtype),
                        gemm_peak_flops(info.gpu, info.weight_dtype),
                        pc.pipeline_parallel,
                        dp,
                        pc.expert_parallel};
  pool.data_parallel = dp;
  const int n = pc.max_engines();
  for (int r = 0; r < n; ++r) {
    ReplicaSetup setup = replica_setup(sc, p, r, ctx);
    const int index = static_cast<int>(replicas_.size());
    replicas_.push_back(std::make_unique<Replica>(std::move(setup),
                                                  cost_model_registry().make(pc.cost_model, ctx),
                                                  log_, queue_, index, this));
    pool.nodes.push_back(replicas_.size() - 1);
    TimeSeries ts;
    ts.replica = replicas_.back()->name();
    series_.push_back(std::move(ts));
  }
  if (dp > 1 && info.model.moe()) {
    // A MoE model's ranks step in lockstep through the MoE layers that span them.
    for (int r = 0; r < n; r += dp) {
      std::vector<Replica*> ranks;
      for (int d = 0; d < dp; ++d) ranks.push_back(replicas_[pool.nodes[r + d]].get());
      groups_.push_back(std::make_unique<LockstepGroup>(queue_, ranks));
      for (Replica* rank : ranks) rank->join(groups_.back().get());
    }
  }
  probes_.push_back(std::make_unique<Probe>(*this, p, pc.engine.block_size));
  pool.router->attach(probes_.back().get());
}

void Simulation::build_disaggregation() {
  const Scenario& sc = scenario_;
  const DisaggregationConfig& d = sc.config.disaggregation;
  std::size_t prefill = 0, decode = 0;
  for (std::size_t p = 0; p < sc.config.pools.size(); ++p) {
    if (sc.config.pools[p].name == d.prefill_pool) prefill = p;
    if (sc.config.pools[p].name == d.decode_pool) decode = p;
  }
  const Scenario::PoolInfo& info = sc.pools[decode];
  disaggregation_ = std::make_unique<Disaggregation>(
      d, PoolId{prefill}, PoolId{decode}, sc.config.pools[decode].engine.block_size,
      info.model.kv_bytes_per_token(dtype_bytes(info.memory.kv_dtype)), replicas_.size(), queue_,
      log_, static_cast<DisaggregationHost&>(*this));
}

Simulation::~Simulation() = default;

bool Simulation::active() const {
  if (!workload_->finished() || client_->pending() ||
      (disaggregation_ && disaggregation_->pending()) || !in_frontend_.empty())
    return true;
  for (const auto& r : replicas_)
    if (!r->idle()) return true;
  for (const auto& p : pools_)
    if (!p.gateway->empty()) return true;
  return false;
}

double Simulation::start_delay_s(std::size_t pool) const {
  const PoolConfig& pc = scenario_.config.pools[pool];
  double s = pc.startup_s;
  if (pc.weight_load_GBps > 0)
    s += scenario_.pools[pool].memory.weights_bytes / (pc.weight_load_GBps * 1e9);
  return s;
}

std::span<const ReplicaLoad> Simulation::signals(PoolId id) {
  const std::size_t pool = id.value();
  if (scrape_interval_ == 0 || pools_[pool].signals.empty()) scrape(pool);
  return pools_[pool].signals;
}

void Simulation::scrape(std::size_t pool) {
  Pool& p = pools_[pool];
  p.signals.resize(p.nodes.size());
  for (std::size_t i = 0; i < p.nodes.size(); ++i) {
    const Replica& r = *replicas_[p.nodes[i]];
    p.signals[i] = {r.num_requests_running(), r.num_requests_waiting(), r.kv_cache_usage(),
                    lifecycle_->up(NodeId{p.nodes[i]})};
  }
}

void Simulation::deliver(RequestSpec& spec, SimTime now, std::uint64_t origin,
                         std::int16_t attempt) {
  if (spec.purpose == kPurposeRelease) {
    for (auto& r : replicas_) released_blocks_ += r->release_session(spec.session);
    return;
  }
  RequestRecord rec;
  rec.id = log_.size();
  rec.origin = attempt == 0 ? rec.id : origin;
  rec.attempt = attempt;
  rec.arrival = now;
  rec.input_tokens = spec.input_tokens;
  rec.output_tokens = spec.output_tokens;
  rec.tenant = spec.tenant;
  rec.session = spec.session;
  rec.priority = spec.priority;
  rec.purpose = spec.purpose;
  rec.turn = spec.turn;
  rec.stage = spec.stage;
  rec.truncated_tokens = spec.truncated_tokens;
  rec.stable_tokens = spec.stable_tokens;
  const auto id = static_cast<std::uint32_t>(rec.id);
  if (spec.pool < 0 && long_pool_ >= 0 &&
      spec.input_tokens >= scenario_.config.gateway.long_prompt_tokens)
    spec.pool = long_pool_;
  std::size_t pool = spec.pool >= 0 ? static_cast<std::size_t>(spec.pool) : 0;
  bool handoff = false;
  if (disaggregation_ && PoolId{pool} == disaggregation_->prefill_pool() &&
      spec.output_tokens > 1 && !spec.context_overflow) {
    handoff = disaggregation_->prefill_remotely(spec);
    if (!handoff) pool = disaggregation_->decode_pool().value();
  }
  rec.pool = static_cast<std::int16_t>(pool);
  log_.push_back(rec);
  client_->sent(id);
  if (spec.context_overflow) {
    // Refused by the application before reaching the fleet: counted, never silent.
    RequestRecord& r = log_.back();
    r.outcome = Outcome::kRejected;
    r.reject_reason = RejectReason::kContextOverflow;
    r.finish = now;
    client_->end(id, now);
    return;
  }
  client_->watch(id, spec, now);
  if (handoff) {
    disaggregation_->hold(id, spec);
    spec.handoff = true;  // the prefill replica stops after the first token
    spec.output_tokens = 1;
  }
  Pool& p = pools_[pool];
  RejectReason why = RejectReason::kNone;
  const std::int64_t total = static_cast<std::int64_t>(rec.input_tokens) + rec.output_tokens;
  switch (p.gateway->arrive(id, spec, rec.input_tokens, total, signals(PoolId{pool}), why)) {
    case PoolGateway::Verdict::kDispatch:
      dispatch(id, std::move(spec), pool, now);
      break;
    case PoolGateway::Verdict::kQueue:
      break;
    case PoolGateway::Verdict::kReject: {
      RequestRecord& r = log_.back();
      r.outcome = Outcome::kRejected;
      r.reject_reason = why;
      r.finish = now;
      client_->end(id, now);
      break;
    }
  }
}

std::size_t Simulation::pick_rank(std::size_t pool, std::size_t r) const {
  const Pool& p = pools_[pool];
  if (p.data_parallel == 1) return r;
  // Within the chosen replica, vLLM's DP load balancer (in the API server, after tokenisation):
  // the rank with the lowest 4 × waiting + running (current counts; the front end counts its own
  // sends between the engines' reports), the first on a tie.
  const std::size_t first = r - r % static_cast<std::size_t>(p.data_parallel);
  std::int64_t best = INT64_MAX;
  for (std::size_t k = first; k < first + static_cast<std::size_t>(p.data_parallel); ++k) {
    const Replica& e = *replicas_[p.nodes[k]];
    const std::int64_t score =
        4 * static_cast<std::int64_t>(e.num_requests_waiting()) + e.num_requests_running();
    if (score < best) {
      best = score;
      r = k;
    }
  }
  return r;
}

void Simulation::dispatch(std::uint32_t id, RequestSpec&& spec, std::size_t pool, SimTime now) {
  Pool& p = pools_[pool];
  const std::size_t r = p.router->pick(spec, signals(PoolId{pool}));
  // The router's hashes of the prompt go with it, so that the engine need not hash it again.
  int hash_block = 0;
  const auto hashes = p.router->prompt_hashes(hash_block);
  const RequestRecord& rec = log_[id];
  if (!hashes.empty()) {
    // Room for the engine's hashes of the output blocks too (it appends them here), within
    // reason: a reply of a million tokens grows the array as it goes.
    const std::int64_t blocks =
        (static_cast<std::int64_t>(rec.input_tokens) + rec.output_tokens) / hash_block + 1;
    spec.block_hashes.reserve(static_cast<std::size_t>(
        std::min<std::int64_t>(blocks, static_cast<std::int64_t>(hashes.size()) + 1024)));
    spec.block_hashes.assign(hashes.begin(), hashes.end());
    spec.block_hashes_size = hash_block;
  }
  p.gateway->on_dispatch(rec.input_tokens,
                         static_cast<std::int64_t>(rec.input_tokens) + rec.output_tokens);
  const SimTime delay = scenario_.config.pools[pool].frontend.input_delay(rec.input_tokens);
  if (delay == 0) {
    replicas_[p.nodes[pick_rank(pool, r)]]->submit(RequestId{id}, std::move(spec), now);
    return;
  }
  // HTTP, validation and tokenisation in the replica's API server before its engine sees it
  // (a data-parallel replica's rank is chosen after: leave_frontend).
  const std::size_t local = r - r % static_cast<std::size_t>(p.data_parallel);
  const std::size_t node = p.nodes[local];
  RequestRecord& r0 = log_[id];
  r0.replica = static_cast<std::int32_t>(node);  // a client that leaves now cancels it there
  r0.frontend_s = static_cast<float>(to_seconds(delay));
  ++frontend_count_[node];
  in_frontend_.emplace(id, InFrontend{node, local, std::move(spec)});
  queue_.push(now + delay, this, kFrontend, id);
}

void Simulation::leave_frontend(std::uint32_t id, SimTime now) {
  auto it = in_frontend_.find(id);
  InFrontend f = std::move(it->second);
  in_frontend_.erase(it);
  --frontend_count_[f.node];
  RequestRecord& r = log_[id];
  if (r.outcome != Outcome::kPending) return;  // ended meanwhile (the run stopped)
  const auto pool = static_cast<std::size_t>(r.pool);
  const Life life = lifecycle_->node(NodeId{f.node}).life;
  if (!f.cancelled && (life == Life::kUp || life == Life::kDraining)) {
    // (A client that left without its cancellation reaching the server leaves work that is
    // wasted when it ends, as in the engine.)
    replicas_[pools_[pool].nodes[pick_rank(pool, f.local)]]->submit(RequestId{id},
                                                                    std::move(f.spec), now);
    return;
  }
  // The client's cancellation reached the API server (the client was told when it left), or the
  // replica went down: the request ends here, having reached no engine.
  r.outcome = r.client_gone ? r.gone_as : Outcome::kFailed;
  r.finish = now;
  pools_[pool].gateway->on_end(r.input_tokens,
                               static_cast<std::int64_t>(r.input_tokens) + r.output_tokens, false);
  lifecycle_->on_request_left(NodeId{f.node}, now);
  if (!r.client_gone) client_->end(id, now);
  drain_gateway(pool, now);
}

void Simulation::drain_gateway(std::size_t pool, SimTime now) {
  Pool& p = pools_[pool];
  const double max_wait = p.gateway->config().max_queue_wait_s;
  std::uint32_t id;
  while (p.gateway->front(id)) {
    RequestRecord& r = log_[id];
    if (r.outcome != Outcome::kPending) {  // left while queued (forgotten then)
      p.gateway->drop_front();
      continue;
    }
    if (max_wait > 0 && to_seconds(now - r.arrival) > max_wait) {
      p.gateway->reject_front();
      r.outcome = Outcome::kRejected;
      r.reject_reason = RejectReason::kQueueTimeout;
      r.finish = now;
      client_->end(id, now);
      continue;
    }
    const std::int64_t total = static_cast<std::int64_t>(r.input_tokens) + r.output_tokens;
    if (!p.gateway->admits(r.input_tokens, total, signals(PoolId{pool}))) break;
    dispatch(id, p.gateway->dispatch_front(), pool, now);
  }
}

// ---- the client's view of the fleet -----------------------------------------------------------

void Simulation::request_done(const RequestRecord& seen, SimTime now) {
  workload_->on_request_end(seen, now);
  // A capped slot frees when the reply reaches the client (the frontend's delivery, after the
  // engine's end).
  if (capped_ && seen.purpose != kPurposeRelease && seen.finish > now)
    return static_cast<void>(queue_.push(seen.finish, this, kSlotFree));
  if (capped_ && seen.purpose != kPurposeRelease && sending_ > 0) --sending_;
  arm_arrival();
}

void Simulation::cancel_at_replica(NodeId replica, RequestId id, SimTime now) {
  if (auto it = in_frontend_.find(id.value()); it != in_frontend_.end()) {
    it->second.cancelled = true;  // still in the API server: it ends when it leaves it
    return;
  }
  replicas_[replica.value()]->cancel(id, now);
}

void Simulation::forget_at_gateway(PoolId pool) { pools_[pool.value()].gateway->forget(); }

double Simulation::retry_after_s(PoolId pool) const {
  return pools_[pool.value()].gateway->config().retry_after_s;
}

// ---- disaggregation's view of the fleet -------------------------------------------------------

LocalId Simulation::pick(PoolId pool, const RequestSpec& spec, std::span<const ReplicaLoad> loads) {
  return LocalId{pools_[pool.value()].router->pick(spec, loads)};
}

std::int64_t Simulation::cached_blocks_if_up(PoolId pool, LocalId local,
                                             std::span<const std::uint64_t> hashes) const {
  const std::size_t p = pool.value(), i = local.value();
  return lifecycle_->up(NodeId{pools_[p].nodes[i]}) ? probes_[p]->cached_blocks(i, hashes) : 0;
}

std::size_t Simulation::pool_size(PoolId pool) const { return pools_[pool.value()].nodes.size(); }

NodeId Simulation::node_of(PoolId pool, LocalId local) const {
  return NodeId{pools_[pool.value()].nodes[local.value()]};
}

bool Simulation::replica_up(NodeId node) const { return lifecycle_->up(node); }

void Simulation::release_handoff(NodeId node, RequestId request, SimTime now) {
  replicas_[node.value()]->release_handoff(request, now);
}

void Simulation::submit_decode(PoolId pool, NodeId node, RequestId request, RequestSpec&& spec,
                               SimTime now) {
  const RequestRecord& r = log_[request.value()];
  pools_[pool.value()].gateway->on_dispatch(
      0, static_cast<std::int64_t>(r.input_tokens) + r.output_tokens);
  replicas_[node.value()]->submit(request, std::move(spec), now);
}

void Simulation::client_end(RequestId request, SimTime now) { client_->end(request.value(), now); }

// ---- the lifecycle's view of the fleet ---------------------------------------------------------

void Simulation::stop_replica(NodeId node, SimTime now) { replicas_[node.value()]->stop(now); }
bool Simulation::replica_idle(NodeId node) const {
  return replicas_[node.value()]->idle() && frontend_count_[node.value()] == 0;
}
void Simulation::membership_changed(PoolId pool) { scrape(pool.value()); }
void Simulation::replica_came_up(PoolId pool, SimTime now) { drain_gateway(pool.value(), now); }
double Simulation::gateway_queued(PoolId pool) const {
  return pools_[pool.value()].gateway->queued();
}

// ---- events ----------------------------------------------------------------------------------

void Simulation::handle(SimulationEvent kind, std::uint64_t arg, SimTime now) {
  switch (kind) {
    case kScrape:
      scrape_event_ = EventId();
      for (std::size_t p = 0; p < pools_.size(); ++p) {
        scrape(p);
        drain_gateway(p, now);
      }
      if (active()) schedule_periodic(kScrape, now + scrape_interval_);
      return;
    case kSample:
      sample_event_ = EventId();
      sample(now);
      if (progress_) progress_(now, log_.size());
      if (!huge_pages::promoted()) promote_when_paid();
      if (cancel_ && cancel_->cancelled()) {
        queue_.stop();
        return;
      }
      if (active()) schedule_periodic(kSample, now + sample_interval_);
      return;
    case kWake:
      resume_periodic(now);
      return;
    case kFrontend:
      leave_frontend(static_cast<std::uint32_t>(arg), now);
      return;
    case kSlotFree:
      if (sending_ > 0) --sending_;
      arm_arrival();
      return;
    case kArrival:
      break;
    case kCount:
      return;
  }
  arrival_event_ = EventId();
  armed_at_ = kTimeNever;
  // Deliver every arrival at this instant before any replica starts a step for it.
  SimTime t;
  while (workload_->peek(t) && t <= now && slot_free()) {
    RequestSpec spec = workload_->pop();
    if (spec.purpose != kPurposeRelease) ++sending_;
    deliver(spec, now, 0, 0);
  }
  arm_arrival();
}

bool Simulation::slot_free() const {
  // The client's cap and the next arrival's load stage's, the smaller where both are set.
  int cap = scenario_.config.client.max_concurrency;
  const int stage_cap = workload_->concurrency_cap();
  if (stage_cap > 0 && (cap <= 0 || stage_cap < cap)) cap = stage_cap;
  return cap <= 0 || sending_ < cap;
}

void Simulation::arm_arrival() {
  SimTime t;
  // At the cap, the request due waits for one to end (request_done arms it again).
  if (!workload_->peek(t) || !slot_free()) return;
  t = std::max(t, queue_.now());
  if (t >= armed_at_) return;
  armed_at_ = t;
  queue_.cancel(arrival_event_);  // superseded by this earlier one
  arrival_event_ = queue_.push(t, this, kArrival);
}

void Simulation::on_first_token(RequestId request, SimTime) {
  const RequestRecord& r = log_[request.value()];
  pools_[static_cast<std::size_t>(r.pool)].gateway->on_first_token(r.input_tokens);
}

void Simulation::on_handoff(RequestId id, SimTime now) {
  const std::uint32_t request = id.value();
  RequestRecord& r = log_[request];
  const auto pp = static_cast<std::size_t>(r.pool);
  pools_[pp].gateway->on_end(r.input_tokens,
                             static_cast<std::int64_t>(r.input_tokens) + r.output_tokens, true);
  lifecycle_->on_request_left(NodeId{static_cast<std::size_t>(r.replica)}, now);
  disaggregation_->on_prefilled(request, now);
  drain_gateway(pp, now);
}

void Simulation::on_request_end(RequestId id, SimTime now) {
  const std::uint32_t request = id.value();
  const RequestRecord& r = log_[request];
  if (disaggregation_) disaggregation_->forget(request);  // ended before its decode stage
  const auto pool = static_cast<std::size_t>(r.pool);
  pools_[pool].gateway->on_end(r.input_tokens,
                               static_cast<std::int64_t>(r.input_tokens) + r.output_tokens,
                               r.first_token >= 0);
  if (r.replica >= 0) lifecycle_->on_request_left(NodeId{static_cast<std::size_t>(r.replica)}, now);
  // (A client whose timeout falls before the frontend delivers the result learns of it then.)
  if (!r.client_gone && !client_->times_out_before_delivery(r)) client_->end(request, now);
  drain_gateway(pool, now);
}

void Simulation::record_batches(std::size_t max_steps) {
  batches_.assign(replicas_.size(), {});
  for (std::size_t i = 0; i < replicas_.size(); ++i)
    replicas_[i]->trace_batches(&batches_[i], max_steps);
}

void Simulation::record_steps(std::size_t max_steps) {
  steps_.assign(replicas_.size(), {});
  for (std::size_t i = 0; i < replicas_.size(); ++i)
    replicas_[i]->trace_steps(&steps_[i], max_steps);
}

// A run that lasts moves the replicas' block records onto huge pages; a short one would spend
// more on faulting them in than it saves. Faulting in a fresh virtual machine's huge pages took
// up to 12 ms per MiB here, and they take about 15% off the time that follows: so it is done once
// the run has lasted as long as that would take to pay back (80 ms per MiB, at least 2 s), which
// costs at most about twice the best choice made knowing the run's length. Wall time decides;
// results cannot differ.
void Simulation::promote_when_paid() {
  const double mib = static_cast<double>(huge_pages::bytes_in_use()) / (1 << 20);
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  if (waited >= std::max(2.0, 0.08 * mib)) huge_pages::promote();
}

RunResult Simulation::run() {
  started_ = std::chrono::steady_clock::now();
  for (std::size_t p = 0; p < pools_.size(); ++p) scrape(p);
  lifecycle_->start();
  if (scrape_interval_ > 0) scrape_event_ = queue_.push(0, this, kScrape);
  arm_arrival();
  sample_event_ = queue_.push(0, this, kSample);
  const double max_s = scenario_.config.simulation.max_time_s;
  RunResult res;
  if (cancel_ && cancel_->cancelled()) queue_.stop();
  if (max_s > 0) {
    const SimTime stop = from_seconds(max_s);
    queue_.run(stop);
    const bool paused = paused_scrape_.due != kTimeNever || paused_sample_.due != kTimeNever;
    if (paused_sample_.due != kTimeNever) catch_up_samples(paused_sample_, stop + 1);
    if (!queue_.empty() || paused) {
      res.stopped_early = true;
      for (auto& r : replicas_) r->abandon(stop);
      for (auto& rec : log_)  // waiting at the gateway
        if (rec.outcome == Outcome::kPending) rec.outcome = Outcome::kUnfinished, rec.finish = stop;
      client_->abandon();
    }
    res.end_time = stop;
  } else {
    queue_.run();
    // Random failures drawn for after the last request (the lifecycle ignores them) do not
    // lengthen the run.
    res.end_time = std::min(queue_.now(), lifecycle_->quiet_at());
  }
  collect(res);
  return res;
}

void Simulation::collect(RunResult& res) {
  res.cancelled = queue_.stopped();
  res.events = queue_.events_processed();
  res.workload_stats = workload_->stats();
  res.workload_stats.emplace_back("released_blocks", static_cast<double>(released_blocks_));
  res.requests = std::move(log_);
  res.timeseries = std::move(series_);
  lifecycle_->finish(res.end_time);
  for (std::size_t i = 0; i < replicas_.size(); ++i) {
    const Replica& rep = *replicas_[i];
    const FleetNode& node = lifecycle_->node(NodeId{i});
    ReplicaResult rr{
        rep.name(), scenario_.config.pools[node.pool].name, rep.stats(), rep.memory(), {}, {}};
    rr.gpus = scenario_.config.pools[node.pool].gpus_per_replica();
    rr.paid_s = node.paid_s;
    rr.failures = node.failures;
    rr.restarts = node.restarts;
    for (const auto& t : rep.tiers())
      rr.tiers.push_back({t.name(), t.size(), t.bytes_written(), t.bytes_read(), t.evictions()});
    for (const auto& [tenant, qh] : rep.tenant_prefix_stats())
      rr.tenant_prefix.emplace_back(tenant, qh.first, qh.second);
    std::sort(rr.tenant_prefix.begin(), rr.tenant_prefix.end());
    res.replicas.push_back(std::move(rr));
  }
  for (std::size_t p = 0; p < pools_.size(); ++p) {
    PoolResult pr = pools_[p].result;
    pr.gateway_queued = pools_[p].gateway->queued_total();
    pr.gateway_rejected = pools_[p].gateway->rejected_total();
    const LifecycleCounts& c = lifecycle_->counts(PoolId{p});
    pr.scale_ups = c.scale_ups;
    pr.scale_downs = c.scale_downs;
    pr.peak_replicas = c.peak_replicas;
    res.pools.push_back(std::move(pr));
  }
  for (auto& r : replicas_) r->trace_steps(nullptr, 0);
  res.steps = std::move(steps_);
  for (auto& r : replicas_) r->trace_batches(nullptr, 0);
  res.batches = std::move(batches_);
  res.alerts = evaluate_alerts(scenario_.config.alerts, res);
}

}  // namespace kvfleet::sim
