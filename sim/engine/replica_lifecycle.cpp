// Replica: requests finished, cancelled or abandoned, the replica stopped (failure, drain) and its
// memory emptied, and the self-check of its bookkeeping (verify).
#include "sim/engine/replica.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace kvfleet::sim {

// A request leaves the engine: its record gets its outcome, times and counts, its KV is freed
// (or kept for the decode replica of a hand-over) and the observer is told.
void Replica::finish(SlotId slot, SimTime now, Outcome o) {
  if (policy_->stateful()) policy_->on_finish(view(slot, now));
  Seq& q = seq(slot);
  RequestRecord& r = log_[q.request];
  // A reply the client no longer waits for is wasted work, not a completion.
  const Content& c = content(slot);
  if (o != Outcome::kPending) {  // kPending: handed over to a decode replica, not over
    r.outcome = o == Outcome::kOk && r.client_gone ? r.gone_as : o;
    r.finish = now;
    if (r.outcome == Outcome::kOk) {
      // A completed reply ends for its client when the frontend has streamed its last token
      // and closed the stream (finish_step set seen_ for this step).
      r.finish = seen_ + finish_delay_;
      r.frontend_s += static_cast<float>(to_seconds(r.finish - now));
    }
  }
  r.gpu_s += q.gpu_s;
  r.generated_tokens = q.num_output + c.output_offset;
  // Positions the engine computed here: prefill, every decode step, and recomputation; not
  // those served from the prefix cache or a tier, nor KV that arrived with the request.
  const std::int64_t got =
      static_cast<std::int64_t>(r.cached_tokens) + r.loaded_tokens - c.free_base + c.preloaded;
  r.work_tokens += (q.max_computed - got) + (r.recomputed_tokens - c.recomputed_base);
  held_tokens_ -= q.num_computed;
  const std::uint32_t request = q.request;
  q.request = UINT32_MAX;  // marks the slot dead until running_ is compacted
  if (o == Outcome::kPending) {
    // Handed over: its KV stays here until the decode side has it (release_handoff).
    handed_.emplace(request, slot);
  } else {
    release_slot(slot, now);
  }
  if (observer_ && o == Outcome::kPending)
    observer_->on_handoff(RequestId{request}, now);
  else if (observer_ && o != Outcome::kUnfinished)
    observer_->on_request_end(RequestId{request}, now);
}

void Replica::release_slot(SlotId slot, SimTime now) {
  layout_->release(slot, content(slot).session);
  if (by_session_) session_end(content(slot).session, now);
  (in_end_step_ ? retired_slots_ : free_slots_).push_back(slot);
}

void Replica::release_handoff(RequestId request, SimTime now) {
  const auto it = handed_.find(request.value());
  if (it == handed_.end()) return;  // the replica stopped since: its KV is gone already
  const SlotId slot = it->second;
  handed_.erase(it);
  release_slot(slot, now);
}

void Replica::cancel(RequestId request, SimTime now) {
  pending_cancels_.push_back(request.value());
  if (!stepping_) apply_cancels(now);
}

void Replica::apply_cancels(SimTime now) {
  sync_all();  // a cancelled request's counts are read; active_ follows running_ below
  for (const std::uint32_t request : pending_cancels_) {
    constexpr SlotId kNone{UINT32_MAX};
    SlotId slot = kNone;
    for (std::size_t i = 0; i < running_.size(); ++i)
      if (seq(running_[i]).request == request) {
        slot = running_[i];
        running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
    if (slot == kNone) {
      waiting_.for_each([&](SlotId s) {
        if (seq(s).request == request) slot = s;
      });
      if (slot == kNone) continue;  // already finished
      waiting_.erase(slot);
      std::int32_t& swapped = content(slot).swapped_tokens;
      if (swapped > 0) {
        preemption_->release(static_cast<double>(swapped) * setup_.memory.kv_bytes_per_token);
        swapped = 0;
      }
    }
    ++stats_.cancelled;
    finish(slot, now, log_[request].gone_as);
  }
  pending_cancels_.clear();
  activate_all();
}

void Replica::abandon(SimTime now) {
  auto drop = [&](SlotId s) {
    if (seq(s).request != UINT32_MAX) finish(s, now, Outcome::kUnfinished);
  };
  sync_all();
  for (auto s : running_) drop(s);
  waiting_.for_each(drop);
  running_.clear();
  active_.clear();
  waiting_.clear();
}

void Replica::stop(SimTime now, Outcome outcome) {
  // A lockstep group's step events are the group's: its ranks never stop alone (failures,
  // deploys and autoscaling are refused for data-parallel pools).
  if (group_ != nullptr)
    throw std::logic_error("replica " + setup_.name + ": a lockstep rank cannot stop alone");
  queue_.cancel(step_event_);  // the step in flight (or due) never ends
  step_event_ = EventId();
  stepping_ = false;
  in_flight_ = false;
  pending_cancels_.clear();
  sync_all();
  std::vector<SlotId> slots(running_.begin(), running_.end());
  waiting_.for_each([&](SlotId s) { slots.push_back(s); });
  running_.clear();
  active_.clear();
  waiting_.clear();
  for (auto s : slots)
    if (seq(s).request != UINT32_MAX) finish(s, now, outcome);
  policy_->reset();  // every request is gone
  for (const auto& [request, slot] : handed_) free_slots_.push_back(slot);
  handed_.clear();
  // A new process: empty GPU cache, host swap and tiers, no session state.
  kv_ = KvCacheManager(setup_.memory.num_blocks, setup_.engine.block_size,
                       setup_.engine.enable_prefix_caching);
  empty_memory();
  sessions_.clear();
  preemption_->clear();
  held_tokens_ = 0;
  output_.reset();  // the API server restarts with the engine
}

void Replica::empty_memory() {
  if (layout_) layout_->clear();
  tiers_.clear();
  for (const auto& t : setup_.engine.kv_tiers) tiers_.emplace_back(t, setup_.memory.block_bytes);
  kv_.record_evictions(!tiers_.empty());
  if (by_session_) kv_.set_session_mode(this);
}

void Replica::verify() {
  verify_coasting();
  if (reserves_) {
    layout_->verify(running_, setup_.name);
    std::int64_t held = 0;
    for (auto s : running_) held += computed_now(seq(s));
    if (held != held_tokens_)
      throw std::logic_error("replica " + setup_.name + ": held tokens drifted");
    return;
  }
  if (!kv_.check_consistency())
    throw std::logic_error("replica " + setup_.name +
                           ": KV blocks inconsistent (reference counts, free queue or index)");
  // Every block is free or held; shared (prefix-cached) blocks count once.
  verify_marks_.assign(static_cast<std::size_t>(kv_.num_blocks()), 0);
  std::int64_t held = 0;
  for (auto s : running_)
    for (auto b : kv_.block_table(s)) held += verify_marks_[b] == 0, verify_marks_[b] = 1;
  for (const auto& [request, s] : handed_)  // handed over, KV still on its way out
    for (auto b : kv_.block_table(s)) held += verify_marks_[b] == 0, verify_marks_[b] = 1;
  waiting_.for_each([&](SlotId s) {
    if (kv_.blocks_held(s) != 0)
      throw std::logic_error("replica " + setup_.name + ": a waiting request holds blocks");
  });
  double swapped = 0;
  waiting_.for_each([&](SlotId s) {
    swapped += static_cast<double>(content(s).swapped_tokens) * setup_.memory.kv_bytes_per_token;
  });
  const double host = preemption_->host_bytes();
  if (std::abs(swapped - host) > 1e-6 * (1 + swapped) ||
      host > preemption_->host_capacity_bytes() + 1e-6)
    throw std::logic_error("replica " + setup_.name + ": swap space accounting drifted");
  std::int64_t computed = 0;
  for (auto s : running_) computed += computed_now(seq(s));
  for (auto s : running_)
    if (seq(s).kv_room != kv_.blocks_held(s) * kv_.block_size())
      throw std::logic_error("replica " + setup_.name + ": cached KV room drifted");
  if (computed != held_tokens_)
    throw std::logic_error("replica " + setup_.name + ": held tokens drifted");
  if (held + kv_.num_free_blocks() != kv_.num_blocks())
    throw std::logic_error("replica " + setup_.name + ": allocated + free != total blocks");
  if (static_cast<int>(running_.size()) > setup_.engine.max_num_seqs)
    throw std::logic_error("replica " + setup_.name + ": more running than max_num_seqs");
}

// Fast decode's bookkeeping: the coasting sums, active_ (the running sequences that do not
// coast, in order) and a due entry for every coasting sequence, not yet due.
void Replica::verify_coasting() {
  std::int64_t count = 0, ctx = 0;
  std::size_t a = 0;
  for (const SlotId s : running_) {
    const Seq& q = seq(s);
    if (q.coasting) {
      ++count;
      ctx += computed_now(q);
      if (q.coast_due < tick_)
        throw std::logic_error("replica " + setup_.name + ": a sequence coasts past its due step");
    } else if (a >= active_.size() || active_[a++].slot != s) {
      throw std::logic_error("replica " + setup_.name + ": active sequences out of step");
    }
  }
  if (a != active_.size() || count != coast_count_ || ctx != coast_ctx_ || due_count_ != count)
    throw std::logic_error("replica " + setup_.name + ": coasting sums drifted");
}

}  // namespace kvfleet::sim
