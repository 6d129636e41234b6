#include "sim/engine/scheduler.h"

#include <tuple>

#include "sim/engine/fair_share.h"
#include "sim/engine/shortest_prompt_first.h"

namespace kvfleet::sim {
namespace {

// vLLM v1 FCFS: arrival order; the newest running request is preempted (self.running.pop()).
class Fcfs final : public SchedulingPolicy {
 public:
  struct Config {
    template <class V>
    void visit(V&) {}
  };
  explicit Fcfs(const Config&) {}
  Order order() const override { return Order::kFifo; }
  std::size_t victim(std::span<const SchedView> running) override { return running.size() - 1; }
};

// vLLM v1 PRIORITY: (priority, arrival) order, lower first; the least urgent, newest running
// request is preempted (max(self.running, key=lambda r: (r.priority, r.arrival_time))).
class Priority final : public SchedulingPolicy {
 public:
  struct Config {
    template <class V>
    void visit(V&) {}
  };
  explicit Priority(const Config&) {}
  Order order() const override { return Order::kKeyed; }
  std::int64_t key(const SchedView& r) override { return r.priority; }
  std::size_t victim(std::span<const SchedView> running) override {
    auto k = [&](std::size_t i) {
      return std::tuple(running[i].priority, running[i].arrival, running[i].id);
    };
    std::size_t v = running.size() - 1;
    for (std::size_t i = 0; i < running.size(); ++i)
      if (k(i) > k(v)) v = i;
    return v;
  }
};

}  // namespace

const SchedulingRegistry& scheduling_registry() {
  static const SchedulingRegistry r = [] {
    SchedulingRegistry reg("scheduling policy", "fcfs");
    reg.add<Fcfs>("fcfs", "Arrival order; the newest running request is preempted (vLLM v1).");
    reg.add<Priority>("priority",
                      "(priority, arrival) order; the least urgent, newest running request is "
                      "preempted (vLLM v1).");
    reg.add<ShortestPromptFirst>("shortest_prompt_first",
                                 "Fewest tokens to compute first, ties by arrival; the newest "
                                 "running request is preempted.");
    reg.add<FairShare>("fair_share",
                       "Per-tenant fair share: the tenant served fewest tokens goes first, an "
                       "idle tenant banks no credit; the most-served tenant's newest running "
                       "request is preempted.");
    return reg;
  }();
  return r;
}

std::unique_ptr<SchedulingPolicy> make_scheduling_policy(const std::string& name) {
  return scheduling_registry().make(name);
}

}  // namespace kvfleet::sim
