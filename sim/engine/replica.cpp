#include "sim/engine/replica.h"

#include "sim/engine/lockstep.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace kvfleet::sim {

Replica::Replica(ReplicaSetup setup, std::unique_ptr<CostModel> cost, RequestLog& log,
                 EventQueue& q, int index, RequestObserver* observer)
    : setup_(std::move(setup)),
      cost_(std::move(cost)),
      log_(log),
      queue_(q),
      observer_(observer),
      index_(index),
      kv_(setup_.memory.num_blocks, setup_.engine.block_size, setup_.engine.enable_prefix_caching),
      max_model_len_(setup_.max_model_len),
      policy_(make_scheduling_policy(setup_.engine.scheduling_policy)),
      waiting_(policy_->order() == SchedulingPolicy::Order::kKeyed) {
  output_ = OutputProcessor(setup_.frontend);
  finish_delay_ = setup_.frontend.finish_delay();
  // Policies chosen by name are decided here, once, not on the hot path.
  wants_contexts_ = cost_->wants_decode_contexts();
  // Fast decode sums the coasting sequences into the batch: not for a cost model that reads each
  // decode's context, a pipeline (micro-batches split the sequences) or a policy told of every
  // sequence's tokens each step.
  fast_decode_ =
      setup_.fast_decode && !wants_contexts_ && setup_.pipeline_stages == 1 && !policy_->stateful();
  preemption_ = make_preemption_policy(
      setup_.engine.preemption_mode,
      {setup_.engine.swap_space_gib * 1024.0 * 1024.0 * 1024.0, setup_.host_link_Bps});
  layout_ = make_kv_layout(setup_.engine.kv_layout,
                           {&kv_, max_model_len_, setup_.engine.contiguous_reservation,
                            setup_.engine.contiguous_allocator});
  config::ImplSpec rs = setup_.engine.retention;
  if (rs.impl.empty()) {  // a setup built in code, not from a scenario: vLLM's default
    rs.impl = "lru";
    rs.params["impl"] = "lru";
  }
  retention_ = retention_registry().make(rs);
  reserves_ = layout_->reserves_at_admission();
  by_session_ = retention_->by_session() && kv_.caching() && !reserves_;
  empty_memory();
  host_link_Bps_ = setup_.host_link_Bps;
  // Room for a full batch up front, up to a size that any batch fitting in memory stays under
  // (max_num_seqs may be far larger than KV memory lets run at once).
  const auto batch = static_cast<std::size_t>(std::min(setup_.engine.max_num_seqs, 1 << 16));
  scheduled_.reserve(batch);
  chunks_.reserve(batch);
  running_.reserve(batch);
}

SlotId Replica::new_slot() {
  if (!free_slots_.empty()) {
    const SlotId s = free_slots_.back();
    free_slots_.pop_back();
    return s;
  }
  seqs_.emplace_back();
  content_.emplace_back();
  return SlotId(static_cast<std::uint32_t>(seqs_.size() - 1));
}

void Replica::submit(RequestId id, RequestSpec&& spec, SimTime now) {
  const std::uint32_t request = id.value();
  RequestRecord& r = log_[request];
  r.replica = index_;
  RejectReason why = RejectReason::kNone;
  // Lengths of the work here (a disaggregated request's stage), not of the whole request.
  const std::int32_t prompt = spec.input_tokens, output = spec.output_tokens;
  const std::int64_t total = static_cast<std::int64_t>(prompt) + output;
  // vLLM refuses prompts whose prompt + max_tokens exceed max_model_len (input processor).
  if (total > max_model_len_) {
    why = RejectReason::kExceedsMaxModelLen;
  } else if (!layout_->fits(prompt, output)) {
    why = RejectReason::kExceedsKvCapacity;
  } else if (!setup_.engine.enable_chunked_prefill &&
             prompt - spec.preloaded_tokens > setup_.engine.max_num_batched_tokens) {
    why = RejectReason::kExceedsBatchedTokens;
  }
  if (why != RejectReason::kNone) {
    r.outcome = Outcome::kRejected;
    r.reject_reason = why;
    r.finish = now;
    ++stats_.rejected;
    if (observer_) observer_->on_request_end(id, now);
    return;
  }
  const SlotId s = new_slot();
  Seq& q = seq(s);
  q.request = request;
  q.prompt_tokens = prompt;
  q.max_output = output;
  content(s).handoff = spec.handoff;
  content(s).preload_pending = spec.preloaded_tokens > 0;
  // Async scheduling: the step after the one in flight is already scheduled without it.
  content(s).eligible_step = setup_.engine.async_scheduling && in_flight_ ? launched_ + 2 : 0;
  q.num_output = q.num_computed = q.max_computed = q.kv_room = q.cache_at = 0;
  q.gpu_s = 0;
  q.coasting = false;
  q.hashed = false;
  q.all_cached = false;
  Content& c = content(s);
  c.swapped_tokens = 0;
  c.preloaded = spec.preloaded_tokens;
  c.output_offset = spec.output_offset;
  c.free_base = static_cast<std::int64_t>(r.cached_tokens) + r.loaded_tokens;
  c.recomputed_base = r.recomputed_tokens;
  c.session = spec.session != 0 ? spec.session : (1ull << 63) | request;
  if (by_session_) session_start(c.session, spec.priority, now);
  c.tenant = spec.tenant;
  c.segments.swap(spec.segments);
  c.output_content = spec.output_content;
  c.hashes.clear();
  // Content that starts unique can never match nor be matched: skip hashing altogether.
  q.hashable = kv_.caching() && !c.segments.empty() && c.segments.front().content != 0;
  if (q.hashable) {
    c.hasher.reset(c.segments, c.output_content, c.tenant, kv_.block_size());
    if (spec.block_hashes_size == kv_.block_size() && !spec.block_hashes.empty()) {
      c.hashes.swap(spec.block_hashes);  // the router's, of the same content
      c.hasher.skip(c.hashes);
    }
  }
  sched_now_ = std::max(sched_now_, now);
  if (policy_->stateful()) policy_->on_arrive(view(s, now));
  wait(s, false);
  if (group_ != nullptr) {
    group_->wake(now);
  } else if (!stepping_) {
    // Start a step at `now`, after any other arrival at the same instant has been delivered.
    stepping_ = true;
    step_event_ = queue_.push(now, this, ReplicaEvent::kStepStart);
  }
}

bool Replica::idle() const { return group_ != nullptr ? !group_->active() : !stepping_; }

void Replica::handle(ReplicaEvent kind, std::uint64_t, SimTime now) {
  step_event_ = EventId();
  if (kind == ReplicaEvent::kStepStart)
    start_step(now);
  else
    end_step(now);
}

SchedView Replica::view(SlotId slot, SimTime now) const {
  const Seq& q = seq(slot);
  const RequestRecord& r = log_[q.request];
  SchedView v;
  v.priority = r.priority;
  v.arrival = r.arrival;
  v.id = r.id;
  v.prompt_tokens = q.prompt_tokens;
  v.num_output = q.num_output;
  v.num_computed = q.num_computed;
  v.tenant = content(slot).tenant;
  v.now = now;
  return v;
}

void Replica::wait(SlotId slot, bool preempted) {
  const SchedView v = view(slot, sched_now_);
  const std::int64_t key = waiting_.keyed() ? policy_->key(v) : 0;
  if (preempted)
    waiting_.push_preempted(slot, key, v.arrival, v.id);
  else
    waiting_.push_new(slot, key, v.arrival, v.id);
}

std::pair<SlotId, std::size_t> Replica::pop_victim() {
  victims_.clear();
  for (const SlotId s : running_) victims_.push_back(view(s, sched_now_));
  const std::size_t idx = policy_->victim(victims_);
  const SlotId slot = running_[idx];
  running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(idx));
  return {slot, idx};
}

void Replica::preempt(SlotId slot) {
  Seq& q = seq(slot);
  RequestRecord& r = log_[q.request];
  held_tokens_ -= q.num_computed;
  // The preemption mode keeps the computed KV in host memory (copied there now) or drops it.
  const double bytes = static_cast<double>(q.num_computed) * setup_.memory.kv_bytes_per_token;
  if (preemption_->keep(bytes)) {
    transfer_s_ += bytes / host_link_Bps_;
    stats_.swap_out_bytes += bytes;
    ++stats_.num_swaps;
    content(slot).swapped_tokens = q.num_computed;
  }
  keep_own_blocks(slot, q);
  kv_.free(slot, content(slot).session);
  q.kv_room = q.cache_at = 0;
  q.num_computed = 0;
  q.all_cached = false;  // its blocks are gone: re-enter hashes when it runs again
  ++r.num_preemptions;
  ++stats_.num_preemptions;
  if (stats_.first_preemption_s < 0) stats_.first_preemption_s = to_seconds(queue_.now());
  wait(slot, true);
  preempted_this_step_ = true;
}

// vLLM caches every full block it computes, unique content included; only the request that
// computed unique blocks can ever match them, which it does when it runs again after a
// preemption if they have not been evicted meanwhile. The engine skips hashing unique content
// while nothing can match it, so at a preemption it gives the victim's computed blocks hashes
// salted with its request id (shared-prefix hashes are unchanged) and enters them in the index
// before freeing them: the same hits and evictions as vLLM, at no cost for requests never
// preempted.
void Replica::keep_own_blocks(SlotId slot, Seq& q) {
  if (!kv_.caching() || q.hashable || q.num_computed < kv_.block_size()) return;
  Content& c = content(slot);
  if (c.segments.empty()) c.segments.push_back({0, q.prompt_tokens, c.tenant});
  const std::uint64_t salt = mix64(0x73656C66ull, log_[q.request].id + 1);
  c.hasher.reset(c.segments, c.output_content, c.tenant, kv_.block_size(), salt);
  c.hashes.clear();
  q.hashable = true;
  cache_new_blocks(slot, q, q.num_computed);
}

std::span<const std::uint64_t> Replica::hashes_upto(SlotId slot, std::int64_t blocks) {
  Seq& q = seq(slot);
  Content& c = content(slot);
  if (q.hashable && static_cast<std::int64_t>(c.hashes.size()) < blocks)
    q.hashable = c.hasher.extend(c.hashes, blocks, q.num_tokens());
  q.hashed = !c.hashes.empty();
  const std::size_t n = static_cast<std::size_t>(std::max<std::int64_t>(0, blocks));
  return std::span<const std::uint64_t>(c.hashes).first(std::min(c.hashes.size(), n));
}

// vLLM enters the blocks a step will fill in the index when it allocates them
// (KVCacheManager.allocate_slots -> cache_blocks), so a request arriving during the step can
// already hit them.
void Replica::cache_new_blocks(SlotId slot, Seq& q, std::int64_t tokens_after_step) {
  const std::int64_t full = tokens_after_step / kv_.block_size();
  kv_.cache_blocks(slot, hashes_upto(slot, full), full);
  const std::int64_t cached = kv_.num_cached_in_table(slot);
  q.all_cached = !q.hashable && cached >= static_cast<std::int64_t>(content(slot).hashes.size());
  q.cache_at = static_cast<std::int32_t>((cached + 1) * kv_.block_size());
}

void Replica::schedule() {
  scheduled_.clear();
  chunks_.clear();
  decode_contexts_.clear();
  batch_ = Batch{};
  batch_dirty_ = false;
  preempted_this_step_ = false;
  held_back_ = false;
  std::int64_t budget = setup_.engine.max_num_batched_tokens;
  const bool coast = coasting_allowed();
  if (coast) wake_due();
  const bool visit_all = !coast || !schedule_active(budget);
  if (visit_all) {
    if (coast_count_ > 0) sync_all();
    schedule_running(budget);
  }
  bool prompt_over_budget = false;  // without chunked prefill the next prompt did not fit
  if (!preempted_this_step_) admit_waiting(budget, prompt_over_budget);
  if (visit_all) activate_all();
  note_wait_cause(budget, prompt_over_budget);
  if (batch_dirty_) {  // a victim lost its tokens in this step: describe the batch again
    batch_ = Batch{};
    chunks_.clear();
    decode_contexts_.clear();
    for (auto& sc : scheduled_) add_to_batch(seq(sc.slot), sc);
  }
  batch_.num_seqs = static_cast<std::int32_t>(scheduled_.size() + coast_count_);
  if (coast_count_ > 0) {  // each coasting sequence decodes one token
    batch_.num_decode_seqs += static_cast<std::int32_t>(coast_count_);
    batch_.decode_context_tokens += coast_ctx_ + coast_count_;
    batch_.num_sampled += static_cast<std::int32_t>(coast_count_);
  }
  batch_.prefill = chunks_;
  batch_.decode_contexts = decode_contexts_;
}

// RUNNING first, in order, each taking the tokens it still needs up to the remaining budget; a
// request that needs KV blocks when none are free preempts the policy's victim, itself included.
void Replica::schedule_running(std::int64_t& budget) {
  for (std::size_t i = 0; i < running_.size() && budget > 0;) {
    const SlotId s = running_[i];
    Seq& q = seq(s);
    const std::int64_t n = std::min(step_need(q), budget);
    if (n <= 0) {
      ++i;
      continue;
    }
    // Room is checked against kv_room first; a reservation at admission covers the whole life.
    const bool grow = !reserves_ && q.num_computed + n > q.kv_room;
    if (grow && !make_room(s, q.num_computed + n, i, budget)) break;
    if (grow) q.kv_room = static_cast<std::int32_t>(kv_.blocks_held(s) * kv_.block_size());
    // Between block boundaries there is nothing to enter (every full block is in already), and
    // the call would only touch the sequence's cold block table and hashes: skip it. (cache_at
    // is exactly where the first block the index lacks fills, or 0 after the table changed:
    // a call it lets through then enters what there is, possibly nothing.)
    if (wants_caching(q) && q.num_computed + n >= q.cache_at)
      cache_new_blocks(s, q, q.num_computed + n);
    schedule_tokens(s, q, n);
    budget -= n;
    ++i;
  }
}

bool Replica::make_room(SlotId s, std::int64_t tokens, std::size_t& i, std::int64_t& budget) {
  while (!kv_.allocate(s, tokens)) {
    const auto [victim, vidx] = pop_victim();
    if (vidx < i) {
      // The victim already got tokens in this step (a policy that preempts an earlier running
      // request, as priority does): give them back.
      for (std::size_t k = 0; k < scheduled_.size(); ++k)
        if (scheduled_[k].slot == victim) {
          budget += scheduled_[k].tokens;
          scheduled_.erase(scheduled_.begin() + static_cast<std::ptrdiff_t>(k));
          batch_dirty_ = true;
          break;
        }
      --i;
    }
    preempt(victim);
    if (victim == s) return false;
  }
  return true;
}

// WAITING next (only in steps that preempted nothing), in the policy's order, while the budget,
// max_num_seqs and KV blocks allow.
void Replica::admit_waiting(std::int64_t& budget, bool& prompt_over_budget) {
  while (!waiting_.empty() && budget > 0 &&
         static_cast<int>(running_.size()) < setup_.engine.max_num_seqs) {
    const SlotId s = waiting_.front();
    // Async scheduling: arrived after this step was planned, unless the step would be empty
    // (the engine then plans again at once).
    if (content(s).eligible_step > launched_ + 1 && (!scheduled_.empty() || coast_count_ > 0)) {
      held_back_ = true;
      break;
    }
    const bool admitted = content(s).swapped_tokens > 0 ? resume_swapped(s, budget)
                                                        : admit(s, budget, prompt_over_budget);
    if (!admitted) break;
    waiting_.pop_front();
    seq(s).ord = next_ord_++;
    running_.push_back(s);
    active_.push_back({seq(s).ord, s});
  }
}

// A swapped request's KV comes back from host memory.
bool Replica::resume_swapped(SlotId s, std::int64_t& budget) {
  Seq& q = seq(s);
  std::int32_t& swapped = content(s).swapped_tokens;
  const std::int64_t n = std::min<std::int64_t>(q.num_tokens() - swapped, budget);
  if (n <= 0 || !kv_.allocate(s, swapped + n)) return false;
  q.kv_room = static_cast<std::int32_t>(kv_.blocks_held(s) * kv_.block_size());
  const double bytes = static_cast<double>(swapped) * setup_.memory.kv_bytes_per_token;
  transfer_s_ += bytes / host_link_Bps_;
  preemption_->release(bytes);
  stats_.swap_in_bytes += bytes;
  held_tokens_ += swapped;
  q.num_computed = swapped;
  swapped = 0;
  cache_full_blocks(s, q, q.num_computed + n);
  schedule_tokens(s, q, n);
  budget -= n;
  return true;
}

// A waiting request is admitted: the longest cached prefix (at most num_tokens - 1 tokens: the
// last is always computed to produce logits; vLLM KVCacheManager.get_computed_blocks), tier
// loads, then KV for its first chunk. False when it does not fit (it keeps waiting).
bool Replica::admit(SlotId s, std::int64_t& budget, bool& prompt_over_budget) {
  const EngineConfig& e = setup_.engine;
  Seq& q = seq(s);
  const bool preload = content(s).preload_pending;
  std::span<const std::uint64_t> hit_hashes;
  std::int64_t hit_blocks = 0;
  if (!preload && kv_.caching() && q.num_computed == 0) {
    hit_hashes = hashes_upto(s, (q.num_tokens() - 1) / kv_.block_size());
    hit_blocks = kv_.match_prefix(hit_hashes);
  }
  const auto [tier_blocks, load_s] =
      !preload && !tiers_.empty() && hit_blocks < static_cast<std::int64_t>(hit_hashes.size())
          ? tier_prefix(hit_hashes, hit_blocks)
          : std::pair<std::int64_t, double>{0, 0.0};
  const std::int64_t computed =
      preload ? content(s).preloaded : (hit_blocks + tier_blocks) * kv_.block_size();
  std::int64_t n = q.num_tokens() - computed;
  if (e.long_prefill_token_threshold > 0 && n > e.long_prefill_token_threshold)
    n = e.long_prefill_token_threshold;
  if (!e.enable_chunked_prefill && n > budget) {
    prompt_over_budget = true;
    return false;
  }
  n = std::min(n, budget);
  if (reserves_) {
    if (!layout_->reserve(s, q.prompt_tokens, q.max_output)) return false;
  } else if (!kv_.allocate_with_prefix(s, hit_hashes, hit_blocks, computed + n)) {
    return false;
  } else {
    q.kv_room = static_cast<std::int32_t>(kv_.blocks_held(s) * kv_.block_size());
  }
  q.cache_at = 0;  // its table was (re)filled with hits: cache_full_blocks below sets it
  RequestRecord& rec = log_[q.request];
  count_prefix_hits(s, q, rec, preload, hit_blocks * kv_.block_size());
  if (tier_blocks > 0)
    load_from_tiers(hit_hashes, hit_blocks, tier_blocks, load_s, rec,
                    q.num_output == 0 && rec.num_preemptions == 0);
  held_tokens_ += computed - q.num_computed;
  q.num_computed = static_cast<std::int32_t>(computed);
  content(s).preload_pending = false;  // after a preemption it recomputes here
  q.max_computed = std::max(q.max_computed, q.num_computed);
  cache_full_blocks(s, q, computed + n);
  schedule_tokens(s, q, n);
  budget -= n;
  if (rec.first_scheduled < 0) rec.first_scheduled = queue_.now();
  return true;
}

// Prefix-cache statistics count first admissions (vLLM PrefixCacheStats).
void Replica::count_prefix_hits(SlotId s, const Seq& q, RequestRecord& rec, bool preload,
                                std::int64_t gpu_hit) {
  if (preload || q.num_output != 0 || rec.num_preemptions != 0) return;
  stats_.prefix_cache_queries += q.num_tokens();
  stats_.prefix_cache_hits += gpu_hit;
  auto& t = tenant_prefix_[content(s).tenant];
  t.first += q.num_tokens();
  t.second += gpu_hit;
  rec.cached_tokens = static_cast<std::int32_t>(gpu_hit);
}

// Why requests still wait after this step's scheduling (EngineStats::wait_*_s).
void Replica::note_wait_cause(std::int64_t budget, bool prompt_over_budget) {
  if (waiting_.empty() || held_back_)  // async scheduling's lag is no resource's limit
    wait_cause_ = WaitCause::kNone;
  else if (preempted_this_step_)
    wait_cause_ = WaitCause::kKv;
  else if (budget <= 0 || prompt_over_budget)
    wait_cause_ = WaitCause::kTokenBudget;
  else if (static_cast<int>(running_.size()) >= setup_.engine.max_num_seqs)
    wait_cause_ = WaitCause::kMaxSeqs;
  else
    wait_cause_ = WaitCause::kKv;  // the next request's KV blocks could not be allocated
}

bool Replica::begin_step(SimTime now) {
  sched_now_ = now;
  if (!pending_cancels_.empty()) apply_cancels(now);
  kv_.begin_step();
  transfer_s_ = 0;
  load_s_ = 0;
  for (;;) {
    if (running_.empty() && waiting_.empty()) {
      stepping_ = false;
      return false;
    }
    // A policy whose keys follow its state orders the waiting queue afresh for each step.
    if (policy_->rekeys())
      waiting_.rekey([&](SlotId slot) { return policy_->key(view(slot, now)); });
    schedule();
    if (!scheduled_.empty() || coast_count_ > 0) break;
    // Nothing could run although work is queued: only possible if every running request was
    // preempted this step; the next schedule() admits from waiting. Guard against a livelock.
    if (!preempted_this_step_)
      throw std::logic_error("replica " + setup_.name + ": scheduler made no progress");
  }
  if (policy_->stateful())  // the batch is final: the tokens each request gets in it
    for (const Scheduled& sc : scheduled_) policy_->on_scheduled(view(sc.slot, now), sc.tokens);
  if (!tiers_.empty()) spill_evicted(now);
  return true;
}

void Replica::start_step(SimTime now) {
  if (!begin_step(now)) return;
  StepWork w;
  const StepCost c = price_step(w);
  const SimTime dur = std::max<SimTime>(1, from_seconds(c.total_s()));
  launch(now, c, w, dur);
  step_event_ = queue_.push(now + dur, this, ReplicaEvent::kStepEnd);
}

void Replica::launch(SimTime now, const StepCost& c, const StepWork& w, SimTime dur) {
  if (trace_ != nullptr && trace_->size() < trace_limit_) {
    trace_->push_back({now, static_cast<float>(c.total_s()), batch_.num_seqs,
                       static_cast<std::int32_t>(batch_.num_prefill_tokens),
                       batch_.num_decode_seqs});
  }
  if (batch_trace_ != nullptr && batch_trace_->size() < batch_trace_limit_) {
    BatchTrace t{now,
                 c.total_s(),
                 batch_.num_seqs,
                 batch_.num_sampled,
                 batch_.dp_padded_tokens,
                 batch_.dp_ranks,
                 {},
                 {}};
    t.chunks.assign(batch_.prefill.begin(), batch_.prefill.end());
    for (const auto& sc : scheduled_) {
      const Seq& q = seq(sc.slot);
      if (is_decode(q, sc.tokens)) t.decode_contexts.push_back(q.num_computed + 1);
    }
    batch_trace_->push_back(std::move(t));
  }
  count_step(c, w, to_seconds(dur));
  step_start_ = now;
  stepping_ = true;
  in_flight_ = true;
  ++launched_;
  if (setup_.check_invariants) verify();
  gpu_s_per_token_ = to_seconds(dur) * setup_.gpus /
                     std::max<double>(1.0, batch_.num_prefill_tokens + batch_.num_decode_seqs);
  step_emits_ = batch_.num_sampled;
}

void Replica::group_landed() { in_flight_ = false; }

void Replica::end_step(SimTime now) {
  finish_step(now);
  start_step(now);
}

void Replica::finish_step(SimTime now) {
  in_flight_ = false;
  bool any_finished = false;
  // When this step's tokens reach the clients, through the frontend's output processor.
  seen_ = output_.deliver(now, step_emits_);
  in_end_step_ = true;
  for (const auto& sc : scheduled_) {
    Seq& q = seq(sc.slot);
    if (!is_decode(q, sc.tokens)) stats_.prompt_tokens += sc.tokens;
    // Positions below the highest ever computed are recomputation after a preemption.
    if (q.num_computed < q.max_computed) {
      const std::int32_t again =
          std::min(q.num_computed + sc.tokens, q.max_computed) - q.num_computed;
      log_[q.request].recomputed_tokens += again;
      stats_.recomputed_tokens += again;
    }
    q.num_computed += sc.tokens;
    q.gpu_s += gpu_s_per_token_ * static_cast<double>(sc.tokens);
    held_tokens_ += sc.tokens;
    q.max_computed = std::max(q.max_computed, q.num_computed);
    if (q.num_computed == q.num_tokens()) {
      ++q.num_output;
      ++stats_.generation_tokens;
      // A request's record is touched only at its first token and when it ends.
      if (q.num_output == 1 && log_[q.request].first_token < 0) {
        log_[q.request].first_token = seen_;
        if (observer_) observer_->on_first_token(RequestId{q.request}, now);
      }
      if (q.num_output >= q.max_output) {
        finish(sc.slot, now, content(sc.slot).handoff ? Outcome::kPending : Outcome::kOk);
        any_finished = true;
      }
    }
  }
  if (coast_count_ > 0) {  // each coasting sequence computed and emitted one token
    held_tokens_ += coast_count_;
    stats_.generation_tokens += coast_count_;
    coast_ctx_ += coast_count_;
  }
  coast_gpu_s_ += gpu_s_per_token_;
  ++tick_;
  if (any_finished) {
    std::erase_if(running_, [&](SlotId s) { return seq(s).request == UINT32_MAX; });
  }
  start_coasting();
  // Slots freed above become reusable only now that running_ no longer lists them: an observer
  // may have submitted a new request to this replica from inside finish().
  free_slots_.insert(free_slots_.end(), retired_slots_.begin(), retired_slots_.end());
  retired_slots_.clear();
  in_end_step_ = false;
  retain(now);
  stats_.cache_evictions = kv_.evictions();
  if (setup_.check_invariants) verify();
}

}  // namespace kvfleet::sim
