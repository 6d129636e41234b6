#pragma once
// Preemption modes: what becomes of a preempted request's computed KV, chosen by name
// (engine.preemption_mode) from a registry. Which request is preempted is the scheduling
// policy's choice (scheduler.h); when, the replica's step (KV ran out for a running request).
//
// Adding a mode: a class with a `Config` deriving from PreemptionPolicy, in a file of its own, and
// one line in preemption_registry() (preemption.cpp).
#include <memory>
#include <string>

#include "sim/config/params.h"

namespace kvfleet::sim {

// The host memory a mode may keep KV in, per GPU, and the link to it.
struct HostSwapSpace {
  double capacity_bytes = 0;
  double link_Bps = 0;
};

class PreemptionPolicy {
 public:
  virtual ~PreemptionPolicy() = default;
  // A running request with `bytes` of computed KV (per GPU; 0 when it has none) is preempted:
  // true when its KV is kept in host memory (copied there over the host link), false when it is
  // dropped, to be recomputed when the request runs again.
  virtual bool keep(double bytes) = 0;
  // Kept KV of `bytes` leaves host memory (copied back when its request resumes, or dropped when
  // it ends).
  virtual void release(double bytes) {}
  // Host memory in use and available, bytes per GPU.
  virtual double host_bytes() const { return 0; }
  virtual double host_capacity_bytes() const { return 0; }
  // The engine restarted: host memory is empty.
  virtual void clear() {}
};

using PreemptionRegistry = config::Registry<PreemptionPolicy, const HostSwapSpace&>;
const PreemptionRegistry& preemption_registry();
// Builds the mode named `name` (a preemption_registry() name; it takes no parameters).
std::unique_ptr<PreemptionPolicy> make_preemption_policy(const std::string& name,
                                                         const HostSwapSpace& host);

}  // namespace kvfleet::sim
