#include "sim/workload/workload.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "sim/simulation/scenario.h"

namespace kvfleet::sim {
namespace {

// Builds the workload of a scenario whose `workload:` block is `w`.
std::unique_ptr<Workload> make(const std::string& w, std::uint64_t seed = 5) {
  static std::vector<Scenario> keep;  // ImplSpec params live in the scenario
  keep.push_back(load_scenario_text("workload: " + w + "\npools: [{}]\n", "<t>", ".", {}));
  static const std::vector<std::string> pools = {"pool0"};
  return workload_registry().make(keep.back().config.workload, seed, pools);
}

std::vector<RequestSpec> drain(Workload& w) {
  std::vector<RequestSpec> v;
  SimTime t;
  while (w.peek(t)) v.push_back(w.pop());
  EXPECT_TRUE(w.finished());
  return v;
}

double mean_gap(const std::vector<RequestSpec>& v) {
  return to_seconds(v.back().arrival - v.front().arrival) / static_cast<double>(v.size() - 1);
}

double cv_gaps(const std::vector<RequestSpec>& v) {
  double s = 0, s2 = 0;
  for (std::size_t i = 1; i < v.size(); ++i) {
    const double g = to_seconds(v[i].arrival - v[i - 1].arrival);
    s += g, s2 += g * g;
  }
  const double n = static_cast<double>(v.size() - 1), m = s / n;
  return std::sqrt(s2 / n - m * m) / m;
}

TEST(Workload, PoissonRateAndLognormalMeans) {
  auto w = make(
      "{impl: synthetic, num_requests: 200000, arrival: {impl: poisson, rate_per_s: 50},"
      " input_tokens: {impl: lognormal, mean: 161, sigma: 1.0, max: 100000},"
      " output_tokens: {impl: exponential, mean: 300}}");
  const auto v = drain(*w);
  ASSERT_EQ(v.size(), 200000u);
  EXPECT_NEAR(mean_gap(v), 1.0 / 50, 0.0002);
  EXPECT_NEAR(cv_gaps(v), 1.0, 0.01);
  double in = 0, out = 0;
  for (const auto& r : v) in += r.input_tokens, out += r.output_tokens;
  EXPECT_NEAR(in / v.size(), 161, 161 * 0.015);  // rounding adds ~0.5 token
  EXPECT_NEAR(out / v.size(), 1 / (1 - std::exp(-1.0 / 300)), 3);
  for (std::size_t i = 1; i < v.size(); ++i) ASSERT_GE(v[i].arrival, v[i - 1].arrival);
}

TEST(Workload, GammaArrivalsAreBursty) {
  auto w = make(
      "{impl: synthetic, num_requests: 200000, arrival: {impl: gamma, rate_per_s: 20, cv: 3},"
      " input_tokens: {impl: fixed, value: 10}, output_tokens: {impl: fixed, value: 10}}");
  const auto v = drain(*w);
  EXPECT_NEAR(mean_gap(v), 0.05, 0.0015);
  EXPECT_NEAR(cv_gaps(v), 3.0, 0.1);
}

TEST(Workload, DurationEndsArrivals) {
  auto w = make(
      "{impl: synthetic, num_requests: 0, duration_s: 100, arrival: {impl: constant, rate_per_s: "
      "4},"
      " input_tokens: {impl: uniform, min: 5, max: 9}, output_tokens: {impl: fixed, value: 1}}");
  const auto v = drain(*w);
  EXPECT_EQ(v.size(), 400u);
  for (const auto& r : v) {
    EXPECT_GE(r.input_tokens, 5);
    EXPECT_LE(r.input_tokens, 9);
  }
}

TEST(Workload, EmpiricalDrawsOnlyTraceValues) {
  const auto p = std::filesystem::temp_directory_path() / "kvfleet_empirical.csv";
  std::ofstream(p) << "num_prefill_tokens,num_decode_tokens\n11,3\n22,4\n33,5\n";
  auto w = make(
      "{impl: synthetic, num_requests: 3000, arrival: {impl: poisson, rate_per_s: 1},"
      " input_tokens: {impl: empirical, path: " +
      p.string() + ", format: vidur, field: input}, output_tokens: {impl: empirical, path: " +
      p.string() + ", format: vidur, field: output}}");
  std::multiset<int> ins;
  for (const auto& r : drain(*w)) {
    ins.insert(r.input_tokens);
    EXPECT_TRUE(r.output_tokens >= 3 && r.output_tokens <= 5);
  }
  for (int x : {11, 22, 33}) EXPECT_NEAR(static_cast<double>(ins.count(x)), 1000, 100);
  EXPECT_EQ(ins.size(), 3000u);
}

TEST(Workload, TraceOptions) {
  const auto p = std::filesystem::temp_directory_path() / "kvfleet_trace_opts.csv";
  std::ofstream(p) << "arrived_at,num_prefill_tokens,num_decode_tokens\n"
                      "10,1,1\n11,2,0\n13,3,3\n17,4,4\n";
  auto w = make("{impl: trace, format: vidur, path: " + p.string() +
                ", start_row: 1, max_requests: 2, time_scale: 0.5}");
  const auto v = drain(*w);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].arrival, 0);
  EXPECT_EQ(v[1].arrival, from_seconds(1.0));  // (13 - 11) × 0.5
  EXPECT_EQ(v[0].input_tokens, 2);
  EXPECT_EQ(v[0].output_tokens, 1);  // a recorded 0 still emits one token
}

TEST(Workload, SameSeedSameRequests) {
  const std::string y =
      "{impl: synthetic, num_requests: 1000, arrival: {impl: poisson, rate_per_s: 9},"
      " input_tokens: {impl: lognormal, mean: 100, sigma: 1}, output_tokens: {impl: fixed, value: "
      "5}}";
  const auto a = drain(*make(y, 1)), b = drain(*make(y, 1)), c = drain(*make(y, 2));
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].arrival, b[i].arrival);
    ASSERT_EQ(a[i].input_tokens, b[i].input_tokens);
  }
  EXPECT_NE(a[0].arrival, c[0].arrival);
}

}  // namespace
}  // namespace kvfleet::sim
