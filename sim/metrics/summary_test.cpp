#include "sim/metrics/summary.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace kvfleet::sim {
namespace {

// latency_stats sorts with a radix sort; every statistic must be what sorting with std::sort
// gives, to the bit (the mean is summed in sorted order).
LatencyStats with_std_sort(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  LatencyStats s;
  s.count = static_cast<std::int64_t>(v.size());
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  s.p50 = percentile_sorted(v, 50);
  s.p90 = percentile_sorted(v, 90);
  s.p99 = percentile_sorted(v, 99);
  s.max = v.back();
  return s;
}

TEST(LatencyStats, SameAsSortingWithStdSort) {
  std::mt19937_64 rng(7);
  for (std::size_t n : {1, 2, 3, 10, 99, 1000, 100000}) {
    for (int kind = 0; kind < 4; ++kind) {
      std::vector<double> v(n);
      for (double& x : v) {
        switch (kind) {
          case 0:  // latencies spanning decades
            x = std::exp(std::uniform_real_distribution<double>(-12, 6)(rng));
            break;
          case 1:  // many ties, zeros included
            x = static_cast<double>(rng() % 5) * 0.25;
            break;
          case 2:  // negative values too
            x = std::uniform_real_distribution<double>(-3, 3)(rng);
            break;
          default:  // integers of microseconds, as simulated times are
            x = static_cast<double>(rng() % 2000000) * 1e-6;
        }
      }
      const LatencyStats got = latency_stats(v), want = with_std_sort(v);
      SCOPED_TRACE(::testing::Message() << "n " << n << ", kind " << kind);
      EXPECT_EQ(got.count, want.count);
      EXPECT_EQ(got.mean, want.mean);
      EXPECT_EQ(got.p50, want.p50);
      EXPECT_EQ(got.p90, want.p90);
      EXPECT_EQ(got.p99, want.p99);
      EXPECT_EQ(got.max, want.max);
    }
  }
}

TEST(LatencyStats, EmptyIsNaN) {
  const LatencyStats s = latency_stats({});
  EXPECT_EQ(s.count, 0);
  EXPECT_TRUE(std::isnan(s.mean) && std::isnan(s.p50) && std::isnan(s.max));
}

}  // namespace
}  // namespace kvfleet::sim
