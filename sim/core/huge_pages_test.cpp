#include "sim/core/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace kvfleet::sim {
namespace {

struct Record {
  std::uint64_t a = 7;
  std::uint32_t b = UINT32_MAX;
  std::uint32_t c = 0;
};

// Arrays on either side of the threshold hold what they are given, through growth (which moves
// them between ordinary and pooled memory), copies and shrinking.
TEST(HugePageAllocator, VectorsAcrossTheThreshold) {
  using A = HugePageAllocator<Record>;
  const std::size_t big = huge_pages::kMinBytes / sizeof(Record) + 1000;
  EXPECT_FALSE(A::pooled(10));
  EXPECT_EQ(A::pooled(big), huge_pages::available());
  std::vector<Record, A> v(10);
  for (std::size_t i = 0; i < v.size(); ++i) v[i].c = static_cast<std::uint32_t>(i);
  v.resize(big);
  for (std::size_t i = 0; i < big; ++i) {
    ASSERT_EQ(v[i].a, 7u);
    ASSERT_EQ(v[i].b, UINT32_MAX);
    ASSERT_EQ(v[i].c, i < 10 ? i : 0u);
    v[i].c = static_cast<std::uint32_t>(3 * i);
  }
  std::vector<Record, A> w = v;
  w.resize(5);
  w.shrink_to_fit();
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(w[i].c, 3 * i);
  EXPECT_EQ(v[big - 1].c, 3 * (big - 1));
}

// Slices are aligned, do not overlap, keep their contents while others come and go, and a chunk
// whose slices are all back is reused or unmapped: the pool does not grow with churn.
TEST(HugePagePool, SlicesAndChunks) {
  if (!huge_pages::available()) GTEST_SKIP() << "no huge-page pool on this build";
  const std::size_t before = huge_pages::chunks();
  std::vector<std::pair<unsigned char*, std::size_t>> live;
  for (int round = 0; round < 6; ++round) {
    for (int k = 0; k < 40; ++k) {
      const std::size_t bytes = huge_pages::kMinBytes + static_cast<std::size_t>(k) * 12345;
      auto* p = static_cast<unsigned char*>(huge_pages::allocate(bytes));
      ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p) % huge_pages::kAlign, 0u);
      std::memset(p, k + round, bytes);
      live.emplace_back(p, bytes);
    }
    // One slice larger than a chunk.
    const std::size_t huge = huge_pages::kChunk + 3 * huge_pages::kPage + 17;
    auto* q = static_cast<unsigned char*>(huge_pages::allocate(huge));
    q[0] = q[huge - 1] = 0xAB;
    for (const auto& [p, bytes] : live) ASSERT_TRUE(q + huge <= p || p + bytes <= q);
    huge_pages::deallocate(q, huge);
    for (std::size_t i = 0; i < live.size(); ++i) {
      const auto [p, bytes] = live[i];
      const unsigned char want = static_cast<unsigned char>(i % 40 + round);
      ASSERT_EQ(p[0], want);
      ASSERT_EQ(p[bytes - 1], want);
    }
    if (round == 3) huge_pages::promote();  // moves live slices; contents stay
    for (std::size_t i = 0; i < live.size(); ++i)
      ASSERT_EQ(live[i].first[live[i].second / 2], static_cast<unsigned char>(i % 40 + round));
    for (const auto& [p, bytes] : live) huge_pages::deallocate(p, bytes);
    live.clear();
    EXPECT_LE(huge_pages::chunks(), before + 1) << "round " << round;
  }
  EXPECT_TRUE(huge_pages::promoted());
}

// Replicas that restart give their array back after taking a new one of the same size: the
// slices given back are reused, so the pool does not grow with restarts. (This test and the one
// above promote the process's pool, for the rest of this test binary.)
TEST(HugePagePool, RestartsReuseWhatWasGivenBack) {
  if (!huge_pages::available()) GTEST_SKIP() << "no huge-page pool on this build";
  const std::size_t bytes = huge_pages::kMinBytes * 5 + 4096 + 64;  // 1.3 MB, as a replica's
  std::vector<unsigned char*> live;
  for (int k = 0; k < 100; ++k)
    live.push_back(static_cast<unsigned char*>(huge_pages::allocate(bytes)));
  const std::size_t chunks = huge_pages::chunks();
  const std::size_t in_use = huge_pages::bytes_in_use();
  std::uint64_t x = 1;
  for (int restart = 0; restart < 2000; ++restart) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const std::size_t k = (x >> 33) % live.size();
    auto* fresh = static_cast<unsigned char*>(huge_pages::allocate(bytes));
    fresh[0] = fresh[bytes - 1] = static_cast<unsigned char>(restart);
    huge_pages::deallocate(live[k], bytes);
    live[k] = fresh;
  }
  EXPECT_LE(huge_pages::chunks(), chunks + 1);
  EXPECT_EQ(huge_pages::bytes_in_use(), in_use);
  for (auto* p : live) huge_pages::deallocate(p, bytes);
}

}  // namespace
}  // namespace kvfleet::sim
