#pragma once
// How far kvfleet's latencies were from measured vLLM runs (docs/validation.md), so that every
// answer can carry the expected error of the cost model that produced it: "TTFT ±8% (roofline,
// dense, 3 validated runs)". The table is the validation report's; a test recomputes the entries
// of the runs under ../shared/reference from their replays so that it cannot drift.
#include <span>
#include <string>

namespace kvfleet::sim {

// One replayed run on one cost model: the mean absolute relative error of the mean, p50, p90
// and p99 of each latency against the measurement (fractions).
struct ValidatedRun {
  const char* run;         // where it comes from (docs/validation.md names the upstream)
  const char* cost_model;  // profile | roofline
  bool moe;
  bool shared;  // under ../shared/reference (recomputed by tests/validation/fidelity_test.cpp)
  double ttft, tpot, e2e;
};
std::span<const ValidatedRun> validated_runs();

// The expected error of one cost model on one kind of model: the mean of the validated runs'
// errors, per latency. runs = 0 where no run validates it (then the errors are NaN).
struct ExpectedError {
  std::string cost_model;
  bool moe = false;
  int runs = 0;
  double ttft = 0, tpot = 0, e2e = 0;
  // "TTFT ±8.4%, TPOT ±6.0%, E2E ±7.4% (roofline, dense models; 3 validated vLLM runs)", or
  // "no validated runs for the linear cost model".
  std::string describe() const;
};
ExpectedError expected_error(const std::string& cost_model, bool moe);

}  // namespace kvfleet::sim
