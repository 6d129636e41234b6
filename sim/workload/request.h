#pragma once
#include <cstdint>

#include "sim/core/time.h"

namespace kvfleet::sim {

// One request as the workload produces it. Later stages add routing and outcome.
struct RequestSpec {
  SimTime arrival = 0;
  std::int32_t input_tokens = 0;
  std::int32_t output_tokens = 0;  // tokens to generate (max_tokens, honoured exactly)
};

}  // namespace kvfleet::sim
