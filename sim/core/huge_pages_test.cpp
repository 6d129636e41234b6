#include "sim/core/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace kvfleet::sim {
namespace {

struct Record {
  std::uint64_t a = 7;
  std::uint32_t b = UINT32_MAX;
  std::uint32_t c = 0;
};

// Arrays on either side of the threshold hold what they are given, through growth (which moves
// them between ordinary and huge-page memory), copies and shrinking.
TEST(HugePageAllocator, VectorsAcrossTheThreshold) {
  using A = HugePageAllocator<Record>;
  const std::size_t big = A::kMinBytes / sizeof(Record) + 1000;
  EXPECT_FALSE(A::huge(10));
  std::vector<Record, A> v(10);
  for (std::size_t i = 0; i < v.size(); ++i) v[i].c = static_cast<std::uint32_t>(i);
  v.resize(big);  // moves into huge-page memory (on Linux)
  for (std::size_t i = 0; i < big; ++i) {
    ASSERT_EQ(v[i].a, 7u);
    ASSERT_EQ(v[i].b, UINT32_MAX);
    ASSERT_EQ(v[i].c, i < 10 ? i : 0u);
    v[i].c = static_cast<std::uint32_t>(3 * i);
  }
  std::vector<Record, A> w = v;
  w.resize(5);
  w.shrink_to_fit();  // back into ordinary memory
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(w[i].c, 3 * i);
  EXPECT_EQ(v[big - 1].c, 3 * (big - 1));
  EXPECT_EQ(A::rounded(1) % A::kHugePage, 0u);
  EXPECT_EQ(A::rounded(big),
            (big * sizeof(Record) + A::kHugePage - 1) / A::kHugePage * A::kHugePage);
}

}  // namespace
}  // namespace kvfleet::sim
