// Queueing theory: one replica with max_num_seqs = 1 is a single-server FCFS queue. With Poisson
// arrivals the mean wait (arrival to first scheduled) must match Pollaczek-Khinchine:
//   Wq = λ E[S²] / (2 (1 − ρ)),  ρ = λ E[S]
// M/D/1: every request is one step of 1 ms (one prompt token, one output token).
// M/M/1: one step of (prompt tokens × 1 µs) with prompt lengths ceil(Exp(1000)), i.e. geometric:
// E[S] = m, E[S²] = m² (2 − p) with p = 1 − exp(−1/1000); exponential to within 0.05%.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "sim/testing/run.h"

namespace kvfleet {
namespace {

std::string md1(double rate, long n) {
  return "seed: 11\nworkload:\n  impl: synthetic\n  num_requests: " + std::to_string(n) +
         "\n  arrival: {impl: poisson, rate_per_s: " + std::to_string(rate) +
         "}\n  input_tokens: {impl: fixed, value: 1}\n  output_tokens: {impl: fixed, value: 1}\n"
         "pools:\n  - engine: {max_num_seqs: 1}\n    frontend: {enabled: false}\n"
         "    cost_model: {impl: linear, fixed_s: 0.001}\n"
         "simulation: {timeseries_interval_s: 1000}\n";
}

std::string mm1(double rate, long n) {
  return "seed: 12\nworkload:\n  impl: synthetic\n  num_requests: " + std::to_string(n) +
         "\n  arrival: {impl: poisson, rate_per_s: " + std::to_string(rate) +
         "}\n  input_tokens: {impl: exponential, mean: 1000, max: 100000}\n"
         "  output_tokens: {impl: fixed, value: 1}\n"
         "pools:\n  - model: Llama-3.1-8B\n    frontend: {enabled: false}\n"
         "    engine: {max_num_seqs: 1, max_num_batched_tokens: 200000, max_model_len: 131072,\n"
         "             num_gpu_blocks_override: 10000}\n"
         "    cost_model: {impl: linear, per_prefill_token_s: 0.000001}\n"
         "simulation: {timeseries_interval_s: 1000}\n";
}

struct Case {
  const char* name;
  double rho;
  long n;
};

class MD1 : public ::testing::TestWithParam<Case> {};
TEST_P(MD1, MeanWaitMatchesPollaczekKhinchine) {
  const Case c = GetParam();
  const double s = 0.001, rate = c.rho / s;
  const auto r = testing::run_yaml(md1(rate, c.n));
  ASSERT_EQ(r.summary.ok, c.n);
  const double want = c.rho * s / (2 * (1 - c.rho));
  const double got = r.summary.queue.mean;
  std::printf(
      "M/D/1 rho %.1f, %ld requests: Wq simulated %.6f s, Pollaczek-Khinchine %.6f s (%+.2f%%)\n",
      c.rho, c.n, got, want, 100 * (got / want - 1));
  EXPECT_NEAR(got / want, 1.0, 0.03) << "Wq simulated " << got << " s, theory " << want << " s";
  // Every request's service is exactly one 1 ms step.
  EXPECT_NEAR(r.summary.e2e.mean - got, s, 1e-9);
}
INSTANTIATE_TEST_SUITE_P(Utilisation, MD1,
                         ::testing::Values(Case{"rho50", 0.5, 200000}, Case{"rho80", 0.8, 1000000}),
                         [](const auto& i) { return std::string(i.param.name); });

class MM1 : public ::testing::TestWithParam<Case> {};
TEST_P(MM1, MeanWaitMatchesMM1) {
  const Case c = GetParam();
  const double p = 1 - std::exp(-1.0 / 1000);
  const double es = 1e-6 / p;  // mean service, s
  const double rate = c.rho / es;
  const auto r = testing::run_yaml(mm1(rate, c.n));
  ASSERT_EQ(r.summary.ok, c.n);
  const double want_mm1 = c.rho * es / (1 - c.rho);  // M/M/1
  const double want_pk = want_mm1 * (2 - p) / 2;     // exact for geometric service
  const double got = r.summary.queue.mean;
  std::printf("M/M/1 rho %.1f, %ld requests: Wq simulated %.6f s, M/M/1 %.6f s (%+.2f%%)\n", c.rho,
              c.n, got, want_mm1, 100 * (got / want_mm1 - 1));
  EXPECT_NEAR(got / want_mm1, 1.0, 0.03) << "Wq simulated " << got << " s, M/M/1 " << want_mm1;
  EXPECT_NEAR(want_pk / want_mm1, 1.0, 0.001);
}
INSTANTIATE_TEST_SUITE_P(Utilisation, MM1,
                         ::testing::Values(Case{"rho50", 0.5, 400000}, Case{"rho80", 0.8, 2000000}),
                         [](const auto& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace kvfleet
