#pragma once
// Shortest prompt first: waiting requests in the order of the tokens they still have to compute
// (a new request: its prompt), shortest first, ties by arrival. Short prompts no longer queue
// behind long ones (head-of-line blocking), which lowers TTFT at the price of the longest
// prompts' waits; under KV pressure the newest running request is preempted, as under FCFS.
// (Registered in scheduler.cpp; an example of adding a policy: this file and one line.)
#include "sim/engine/scheduler.h"

namespace kvfleet::sim {

class ShortestPromptFirst final : public SchedulingPolicy {
 public:
  struct Config {
    template <class V>
    void visit(V&) {}
  };
  explicit ShortestPromptFirst(const Config&) {}
  Order order() const override { return Order::kKeyed; }
  std::int64_t key(const SchedView& r) override { return r.tokens_to_compute(); }
  std::size_t victim(std::span<const SchedView> running) override { return running.size() - 1; }
};

}  // namespace kvfleet::sim
