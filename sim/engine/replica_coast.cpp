// Replica: fast decode. Between the steps where something happens to it, a decoding sequence
// only computes and emits one token per step; those steps add it to the batch as part of a sum
// (coast_count_, coast_ctx_) instead of visiting it, and it is brought up to date (sync) when
// it is next visited. The steps, their batches, times and every count are those of visiting
// each sequence every step (tests/differential/fast_decode_diff_test.cpp); only a sequence's
// GPU-seconds are summed in another order (a difference of running sums, within 1e-9).
#include "sim/engine/replica.h"

#include <algorithm>
#include <iterator>
#include <stdexcept>

namespace kvfleet::sim {

std::int64_t Replica::step_need(const Seq& q) const {
  const EngineConfig& e = setup_.engine;
  std::int64_t n = q.num_tokens() - q.num_computed;
  if (e.long_prefill_token_threshold > 0 && n > e.long_prefill_token_threshold)
    n = e.long_prefill_token_threshold;
  return std::min<std::int64_t>(n, max_model_len_ - 1 - q.num_computed);
}

// schedule_running visits running_ in order, each sequence taking its need while the budget
// lasts and growing its KV (preempting while blocks lack). When the needs of every running
// sequence (the coasting ones take one token each) fit the budget and the blocks the active
// ones need are free, no sequence is cut short and nothing is preempted: visiting active_ alone,
// in the same order, allocates the same blocks and enters the same hashes in the same order.
bool Replica::schedule_active(std::int64_t& budget) {
  std::int64_t demand = coast_count_, blocks = 0;
  for (const Active a : active_) {
    const SlotId s = a.slot;
    const Seq& q = seq(s);
    const std::int64_t n = step_need(q);
    if (n <= 0) continue;
    demand += n;
    if (!reserves_ && q.num_computed + n > q.kv_room)
      blocks += kv_.blocks_for(q.num_computed + n) - kv_.blocks_held(s);
  }
  if (demand > budget || blocks > kv_.num_free_blocks()) return false;
  for (const Active a : active_) {
    const SlotId s = a.slot;
    Seq& q = seq(s);
    const std::int64_t n = step_need(q);
    if (n <= 0) continue;
    if (!reserves_ && q.num_computed + n > q.kv_room) {
      if (!kv_.allocate(s, q.num_computed + n))
        throw std::logic_error("replica " + setup_.name + ": fast decode ran out of KV blocks");
      q.kv_room = static_cast<std::int32_t>(kv_.blocks_held(s) * kv_.block_size());
    }
    if (wants_caching(q) && q.num_computed + n >= q.cache_at)
      cache_new_blocks(s, q, q.num_computed + n);
    schedule_tokens(s, q, n);
  }
  budget -= demand;
  return true;
}

// A pure decode (its last token emitted, nothing to recompute) passes step j (j = 0, 1, ...)
// with num_computed + j computed; schedule_running would give it one token and do nothing else
// while that step neither finishes it (its output would reach max_output), nor needs a block
// (num_computed + j + 1 > kv_room), nor fills a block the index should get (reaches cache_at),
// nor hits max_model_len (it gets no token at num_computed + j + 1 = max_model_len).
std::int64_t Replica::coast_steps(const Seq& q) const {
  if (q.num_output == 0 || q.num_computed + 1 != q.num_tokens() || q.num_computed < q.max_computed)
    return 0;
  std::int64_t k = static_cast<std::int64_t>(q.max_output) - q.num_output - 1;
  k = std::min<std::int64_t>(k, max_model_len_ - 1 - q.num_computed);
  if (!reserves_) k = std::min<std::int64_t>(k, q.kv_room - q.num_computed);
  if (wants_caching(q)) k = std::min<std::int64_t>(k, q.cache_at - q.num_computed - 1);
  return k;
}

void Replica::start_coasting() {
  const bool coast = coasting_allowed();
  std::size_t j = 0;
  for (const Active a : active_) {
    Seq& q = seq(a.slot);
    if (q.request == UINT32_MAX) continue;  // finished in this step
    const std::int64_t k = coast ? coast_steps(q) : 0;
    if (k >= 1) {
      q.coasting = true;
      q.coast_tick = tick_;
      q.coast_due = tick_ + static_cast<std::uint64_t>(k);
      q.coast_g = coast_gpu_s_;
      ++coast_count_;
      coast_ctx_ += q.num_computed;
      const Due d{q.coast_due, q.ord, a.slot};
      if (q.coast_due - tick_ < kRing) {
        ring_[q.coast_due % kRing].push_back(d);
      } else {
        far_.push_back(d);
        far_min_ = std::min(far_min_, q.coast_due);
      }
      ++due_count_;
      continue;
    }
    active_[j++] = a;
  }
  active_.resize(j);
}

void Replica::sync(SlotId s) {
  Seq& q = seq(s);
  const auto k = static_cast<std::int32_t>(tick_ - q.coast_tick);
  q.num_computed += k;
  q.num_output += k;
  q.max_computed = q.num_computed;
  q.gpu_s += coast_gpu_s_ - q.coast_g;
  q.coasting = false;
  --coast_count_;
  coast_ctx_ -= q.num_computed;
}

void Replica::activate_all() {
  active_.clear();
  for (const SlotId s : running_) active_.push_back({seq(s).ord, s});
}

void Replica::sync_all() {
  if (coast_count_ > 0)
    for (const SlotId s : running_)
      if (seq(s).coasting) sync(s);
  if (due_count_ > 0) {
    for (auto& bucket : ring_) bucket.clear();
    far_.clear();
    far_min_ = UINT64_MAX;
    due_count_ = 0;
  }
  activate_all();
}

void Replica::wake_due() {
  if (due_count_ == 0) return;
  woken_.clear();
  auto& bucket = ring_[tick_ % kRing];  // entered less than kRing ticks ago: all due now
  for (const Due& d : bucket) woken_.push_back({d.ord, d.slot});
  bucket.clear();
  if (far_min_ <= tick_) {
    far_min_ = UINT64_MAX;
    for (std::size_t i = 0; i < far_.size();) {
      if (far_[i].due > tick_) {
        far_min_ = std::min(far_min_, far_[i].due);
        ++i;
        continue;
      }
      woken_.push_back({far_[i].ord, far_[i].slot});
      far_[i] = far_.back();
      far_.pop_back();
    }
  }
  if (woken_.empty()) return;
  due_count_ -= static_cast<std::int64_t>(woken_.size());
  for (const Active& w : woken_) sync(w.slot);
  const auto by_ord = [](const Active& a, const Active& b) { return a.ord < b.ord; };
  std::sort(woken_.begin(), woken_.end(), by_ord);
  merged_.clear();
  std::merge(active_.begin(), active_.end(), woken_.begin(), woken_.end(),
             std::back_inserter(merged_), by_ord);
  active_.swap(merged_);
}

}  // namespace kvfleet::sim
