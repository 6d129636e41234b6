#pragma once
// Scheduling policies: the order of the waiting queue and the running request preempted when KV
// runs out, chosen by name (engine.scheduling_policy) from a registry, as routers are. The step
// itself (running first, then waiting while the token budget, max_num_seqs and KV allow; vLLM v1's
// Scheduler.schedule) is the replica's; a policy decides only what comes first and who yields.
//
// Adding a policy: a class with a `Config` (its parameters, possibly none) deriving from
// SchedulingPolicy, in a file of its own, and one line in scheduling_registry() (scheduler.cpp).
// A policy may keep state across requests through the lifecycle hooks below (fair_share.h).
#include <cstdint>
#include <memory>
#include <span>
#include <utility>

#include "sim/config/params.h"
#include "sim/core/time.h"

namespace kvfleet::sim {

// What a policy sees of one request, filled field by field by name (Replica::view).
struct SchedView {
  std::int32_t priority = 0;  // lower is more urgent (vLLM)
  SimTime arrival = 0;
  std::uint64_t id = 0;  // the request's id: the last tie-break
  std::int32_t prompt_tokens = 0;
  std::int32_t num_output = 0;    // tokens emitted so far
  std::int32_t num_computed = 0;  // tokens whose KV is computed
  std::uint32_t tenant = 0;       // the request's tenant (0: public traffic)
  SimTime now = 0;                // when the engine asks
  std::int32_t tokens_to_compute() const { return prompt_tokens + num_output - num_computed; }
};

class SchedulingPolicy {
 public:
  virtual ~SchedulingPolicy() = default;

  // FIFO: new requests wait at the back and preempted ones at the front (vLLM's FCFS queue).
  // Keyed: every waiting request is ordered by key(), lowest first, ties by arrival then id.
  enum class Order { kFifo, kKeyed };
  virtual Order order() const = 0;
  // The sort key of a waiting request (Keyed only): taken when it starts to wait, and again
  // before every step for a policy whose keys follow its state (rekeys()).
  virtual std::int64_t key(const SchedView& r) { return 0; }
  // Which of the running requests (in admission order, never empty) is preempted when a running
  // request needs KV blocks and none are free: its index.
  virtual std::size_t victim(std::span<const SchedView> running) = 0;

  // A policy with state (stateful() true) is told what happens to requests. The engine calls:
  // on_arrive when a new request starts to wait (not a preempted one going back); on_scheduled
  // for each request of a step's final batch with the tokens computed for it (a prefill chunk or
  // one decode token); on_finish when a request leaves the engine (finished, cancelled, failed,
  // handed to a decode replica); reset when the engine stops (a failure, a drain, scale-in), every
  // request gone. Defaults: nothing.
  virtual bool stateful() const { return false; }
  virtual void on_arrive(const SchedView&) {}
  virtual void on_scheduled(const SchedView&, std::int64_t /*tokens*/) {}
  virtual void on_finish(const SchedView&) {}
  virtual void reset() {}
  // Whether keys change with the policy's state: then every waiting request's key is taken again
  // before each step.
  virtual bool rekeys() const { return false; }
};

using SchedulingRegistry = config::Registry<SchedulingPolicy>;
const SchedulingRegistry& scheduling_registry();
// Builds the policy named `name` (a scheduling_registry() name; it takes no parameters).
std::unique_ptr<SchedulingPolicy> make_scheduling_policy(const std::string& name);

}  // namespace kvfleet::sim
