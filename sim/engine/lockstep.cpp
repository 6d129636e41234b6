#include "sim/engine/lockstep.h"

#include <algorithm>

#include "sim/engine/replica.h"

namespace kvfleet::sim {

void LockstepGroup::wake(SimTime now) {
  if (active_) return;
  // After any other arrival at the same instant has been delivered, as a lone engine does.
  active_ = true;
  queue_.push(now, this, LockstepEvent::kStart);
}

void LockstepGroup::handle(LockstepEvent kind, std::uint64_t, SimTime now) {
  if (kind == LockstepEvent::kStart) {
    start(now);
    return;
  }
  for (Replica* rank : ranks_) rank->group_landed();
  for (std::size_t r = 0; r < ranks_.size(); ++r) ranks_[r]->group_end(now, scheduled_[r] != 0);
  start(now);
}

void LockstepGroup::start(SimTime now) {
  scheduled_.assign(ranks_.size(), 0);
  bool any = false;
  std::int64_t padded = 0;
  for (;;) {
    for (std::size_t r = 0; r < ranks_.size(); ++r) {
      if (scheduled_[r]) continue;
      scheduled_[r] = ranks_[r]->group_begin(now) ? 1 : 0;
      if (scheduled_[r]) {
        any = true;
        padded = std::max(padded, ranks_[r]->scheduled_tokens());
      }
    }
    if (any) break;
    // Beginning a rank applies its cancellations, which may release queued requests to a rank
    // already found empty: look again before the group goes idle.
    bool work = false;
    for (const Replica* rank : ranks_) work = work || rank->has_work();
    if (!work) {
      active_ = false;
      return;
    }
  }
  const int n = static_cast<int>(ranks_.size());
  std::vector<StepCost> costs(ranks_.size());
  std::vector<StepWork> work(ranks_.size());
  double slowest = 0;
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    costs[r] = ranks_[r]->group_price(padded, n, scheduled_[r] != 0, work[r]);
    slowest = std::max(slowest, costs[r].total_s());
  }
  const SimTime dur = std::max<SimTime>(1, from_seconds(slowest));
  for (std::size_t r = 0; r < ranks_.size(); ++r)
    ranks_[r]->group_launch(now, costs[r], work[r], dur, scheduled_[r] != 0);
  ++steps_;
  queue_.push(now + dur, this, LockstepEvent::kEnd);
}

}  // namespace kvfleet::sim
