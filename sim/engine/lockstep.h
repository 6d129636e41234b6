#pragma once
// Data-parallel ranks of a mixture-of-experts model in lockstep, as vLLM runs them
// (data_parallel_size > 1): every rank has its own scheduler, queue and KV pool, but the MoE
// layers span all ranks (their experts are spread over the ranks' GPUs and tokens are gathered
// from every rank), so the ranks run their forward passes together. While any rank has work,
// every rank steps: one with nothing scheduled runs a dummy batch. Each step is padded to the
// group's largest token count (vLLM pads the ranks' batches to the same size), and the group's
// step lasts as long as its slowest rank's; the faster ranks wait in the collectives.
#include <cstdint>
#include <vector>

#include "sim/core/event_queue.h"

namespace kvfleet::sim {

class Replica;

// A group step starts; a group step ends.
enum class LockstepEvent : std::uint32_t { kStart, kEnd, kCount };

class LockstepGroup final : public EventHandlerOf<LockstepEvent> {
 public:
  LockstepGroup(EventQueue& q, std::vector<Replica*> ranks) : queue_(q), ranks_(std::move(ranks)) {}
  // A rank received work: start a group step at `now` unless one is running or due.
  void wake(SimTime now);
  bool active() const { return active_; }
  std::int64_t steps() const { return steps_; }

 private:
  void handle(LockstepEvent kind, std::uint64_t arg, SimTime now) override;
  const char* handler_name() const override { return "LockstepGroup"; }
  void start(SimTime now);
  EventQueue& queue_;
  std::vector<Replica*> ranks_;
  std::vector<char> scheduled_;  // by rank: ran a real batch in the step in flight
  bool active_ = false;
  std::int64_t steps_ = 0;
};

}  // namespace kvfleet::sim
