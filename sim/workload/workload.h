#pragma once
// The source of requests (DESIGN.md: Workload -> Client -> ...). Chosen by `workload.impl`.
#include <cstdint>
#include <memory>

#include "sim/config/params.h"
#include "sim/workload/request.h"

namespace kvfleet::sim {

class Workload {
 public:
  virtual ~Workload() = default;
  // The next request, in non-decreasing arrival order. False when the workload is exhausted.
  virtual bool next(RequestSpec& out) = 0;
  // Mean arrival rate where the workload has one (for reports), else 0.
  virtual double nominal_rate_per_s() const = 0;
};

// Constructed with the scenario seed; each workload derives its own named streams from it.
using WorkloadRegistry = config::Registry<Workload, std::uint64_t>;
const WorkloadRegistry& workload_registry();

}  // namespace kvfleet::sim
