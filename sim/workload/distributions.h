#pragma once
// Token-length distributions and arrival processes, each chosen by `impl:` in the scenario.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/config/params.h"
#include "sim/core/rng.h"

namespace kvfleet::sim {

// A distribution of token counts (>= 1).
class LengthDist {
 public:
  virtual ~LengthDist() = default;
  virtual std::int32_t sample(RngStream& rng) const = 0;
  // Exact mean of what sample() returns where known in closed form, else an estimate.
  virtual double mean() const = 0;
};
using LengthDistRegistry = config::Registry<LengthDist>;
const LengthDistRegistry& length_dist_registry();

// Index i drawn with probability weights[i] / Σ weights; 0, drawing nothing, when they sum to 0.
std::int32_t draw_weighted(const std::vector<double>& weights, RngStream& rng);
// A tenant id uniform in 1..tenants; 1, drawing nothing, when there is one tenant.
std::uint32_t draw_tenant(int tenants, RngStream& rng);

// A renewal arrival process: the gap to the next arrival.
class ArrivalProcess {
 public:
  virtual ~ArrivalProcess() = default;
  virtual double next_gap_s(RngStream& rng) = 0;
  virtual double rate_per_s() const = 0;
};
using ArrivalRegistry = config::Registry<ArrivalProcess>;
const ArrivalRegistry& arrival_registry();

}  // namespace kvfleet::sim
