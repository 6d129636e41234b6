// The MoE routing formulas (cost/moe.h) against a brute-force simulation of top-k routing.
#include "sim/cost/moe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

namespace kvfleet::sim {
namespace {

struct Simulated {
  double distinct_per_gpu = 0, busiest_pairs = 0;
};

// Routes `tokens` tokens, each to k distinct experts of E chosen uniformly, experts split over
// `gpus` GPUs in contiguous blocks (vLLM's linear placement); averages over `trials`.
Simulated brute_force(int tokens, int E, int k, int gpus, int trials, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int> experts(E);
  Simulated s;
  const int local = E / gpus;
  for (int t = 0; t < trials; ++t) {
    std::vector<int> pairs(gpus, 0);
    std::vector<char> used(E, 0);
    for (int i = 0; i < tokens; ++i) {
      std::iota(experts.begin(), experts.end(), 0);
      for (int j = 0; j < k; ++j) {  // partial Fisher-Yates: k distinct experts
        std::uniform_int_distribution<int> d(j, E - 1);
        std::swap(experts[j], experts[d(rng)]);
        ++pairs[experts[j] / local];
        used[experts[j]] = 1;
      }
    }
    s.busiest_pairs += *std::max_element(pairs.begin(), pairs.end());
    s.distinct_per_gpu += std::accumulate(used.begin(), used.begin() + local, 0);
  }
  s.busiest_pairs /= trials;
  s.distinct_per_gpu /= trials;
  return s;
}

TEST(Moe, ExpectedMaxOfNormals) {
  EXPECT_EQ(expected_max_of_normals(1), 0);
  EXPECT_NEAR(expected_max_of_normals(2), 1 / std::sqrt(M_PI), 1e-4);
  EXPECT_NEAR(expected_max_of_normals(4), 1.02938, 1e-4);
  EXPECT_NEAR(expected_max_of_normals(8), 1.42360, 1e-4);
}

TEST(Moe, ActivationCountsAndBusiestGpuMatchBruteForceRouting) {
  struct Case {
    int tokens, E, k, gpus;
  };
  // Qwen3-30B-A3B (128 experts, top-8), Mixtral (8, top-2), DeepSeek-V3 (256, top-8), gpt-oss
  // (128, top-4), from one token to a prefill chunk, on 1 to 16 GPUs.
  for (const Case c :
       {Case{1, 128, 8, 1}, Case{4, 128, 8, 2}, Case{16, 128, 8, 2}, Case{64, 128, 8, 2},
        Case{256, 128, 8, 2}, Case{2048, 128, 8, 2}, Case{32, 8, 2, 2}, Case{3, 8, 2, 4},
        Case{200, 256, 8, 8}, Case{50, 256, 8, 16}, Case{100, 128, 4, 4}}) {
    const Simulated s = brute_force(c.tokens, c.E, c.k, c.gpus, c.tokens > 500 ? 300 : 3000, 7);
    const MoeLoad l = moe_busiest_gpu(c.tokens, c.E, c.k, c.gpus);
    const double local = static_cast<double>(c.E) / c.gpus;
    EXPECT_NEAR(l.experts, s.distinct_per_gpu, std::max(0.1, 0.02 * local))
        << c.tokens << " tokens, " << c.E << " experts, top-" << c.k << ", " << c.gpus << " GPUs";
    // The busiest GPU by a normal approximation: within 3% (or half a pair) of brute force.
    EXPECT_NEAR(l.pairs, s.busiest_pairs, std::max(0.5, 0.03 * s.busiest_pairs))
        << c.tokens << " tokens, " << c.E << " experts, top-" << c.k << ", " << c.gpus << " GPUs";
  }
}

TEST(Moe, OneGpuComputesEveryPair) {
  const MoeLoad l = moe_busiest_gpu(10, 128, 8, 1);
  EXPECT_DOUBLE_EQ(l.pairs, 80);
  EXPECT_NEAR(l.experts, 128 * (1 - std::pow(1 - 8.0 / 128, 10)), 1e-9);
}

}  // namespace
}  // namespace kvfleet::sim
