// Replica: requests cancelled or abandoned, the replica stopped (failure, drain) and its
// memory emptied, and the self-check of its bookkeeping (verify).
#include "sim/engine/replica.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace kvfleet::sim {

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
}

void Replica::abandon(SimTime now) {
  auto drop = [&](SlotId s) {
    if (seq(s).request != UINT32_MAX) finish(s, now, Outcome::kUnfinished);
  };
  for (auto s : running_) drop(s);
  waiting_.for_each(drop);
  running_.clear();
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
  std::vector<SlotId> slots(running_.begin(), running_.end());
  waiting_.for_each([&](SlotId s) { slots.push_back(s); });
  running_.clear();
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
  if (reserves_) {
    layout_->verify(running_, setup_.name);
    std::int64_t held = 0;
    for (auto s : running_) held += seq(s).num_computed;
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
  for (auto s : running_) computed += seq(s).num_computed;
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

}  // namespace kvfleet::sim
