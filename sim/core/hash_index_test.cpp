#include "sim/core/hash_index.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <unordered_map>
#include <vector>

namespace kvfleet::sim {
namespace {

// Random inserts, lookups, reassignments and clears against std::unordered_map, with keys drawn
// from a small range (long probe runs, wrap-around at the table's end) and from the full range,
// through several growths.
void run_against_map(std::uint64_t seed, std::uint64_t key_range, int ops) {
  std::mt19937_64 rng(seed);
  HashIndex index;
  std::unordered_map<std::uint64_t, std::uint32_t> ref;
  auto key = [&] { return key_range ? 1 + rng() % key_range : (rng() | 1); };
  std::vector<std::uint64_t> seen;
  for (int op = 0; op < ops; ++op) {
    const int what = static_cast<int>(rng() % 10);
    std::uint64_t h = (what < 5 || seen.empty()) ? key() : seen[rng() % seen.size()];
    if (what < 5) {
      const auto v = static_cast<std::uint32_t>(rng() % 1000000);
      auto [it, inserted] = ref.try_emplace(h, v);
      ASSERT_EQ(index.insert(h, v), it->second) << "op " << op;
      if (inserted) seen.push_back(h);
    } else if (what < 8) {
      if (rng() % 500 == 0) {  // the bulk rebuild starts from an emptied table of the same size
        index.clear();
        ref.clear();
      }
    } else {
      auto it = ref.find(h);
      ASSERT_EQ(index.find(h), it == ref.end() ? HashIndex::kNone : it->second) << "op " << op;
      if (it != ref.end() && what == 9) {
        it->second = static_cast<std::uint32_t>(op);
        index.assign(h, static_cast<std::uint32_t>(op));
      }
    }
    ASSERT_EQ(index.size(), ref.size());
  }
  // Every key ever used answers as the map does, and iteration visits exactly the map's entries.
  for (const std::uint64_t h : seen) {
    auto it = ref.find(h);
    ASSERT_EQ(index.find(h), it == ref.end() ? HashIndex::kNone : it->second);
  }
  std::size_t visited = 0;
  index.for_each([&](std::uint64_t h, std::uint32_t v) {
    ++visited;
    auto it = ref.find(h);
    ASSERT_NE(it, ref.end());
    EXPECT_EQ(it->second, v);
  });
  EXPECT_EQ(visited, ref.size());
}

TEST(HashIndex, AgreesWithAMapOnDenseKeys) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) run_against_map(seed, 300, 20000);
}

TEST(HashIndex, AgreesWithAMapOnRandomKeysThroughGrowth) {
  for (std::uint64_t seed = 1; seed <= 5; ++seed) run_against_map(seed, 0, 200000);
}

TEST(HashIndex, EmptyAndCleared) {
  HashIndex index;
  EXPECT_EQ(index.find(7), HashIndex::kNone);
  for (std::uint64_t h = 1; h <= 1000; ++h)
    EXPECT_EQ(index.insert(h, static_cast<std::uint32_t>(h)), h);
  EXPECT_EQ(index.size(), 1000u);
  index.clear();
  EXPECT_EQ(index.size(), 0u);
  EXPECT_EQ(index.find(500), HashIndex::kNone);
  EXPECT_EQ(index.insert(500, 3), 3u);
  EXPECT_EQ(index.find(500), 3u);
}

}  // namespace
}  // namespace kvfleet::sim
