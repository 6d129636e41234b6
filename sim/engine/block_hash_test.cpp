#include "sim/engine/block_hash.h"

#include <gtest/gtest.h>

namespace kvfleet::sim {
namespace {

std::vector<std::uint64_t> hashes(const std::vector<Segment>& s, std::int64_t blocks,
                                  std::int64_t tokens, std::uint64_t out = 0, std::uint32_t t = 1) {
  BlockHasher h;
  h.reset(s, out, t, 16);
  std::vector<std::uint64_t> v;
  h.extend(v, blocks, tokens);
  return v;
}

TEST(BlockHash, EqualContentEqualHashesAcrossSegmentation) {
  // The same 64 tokens of content 7, written as one segment or as two, hash the same only if the
  // pieces are the same: offsets are part of the hash, so the split does not matter.
  const auto a = hashes({{7, 64, 1}}, 4, 64);
  const auto b = hashes({{7, 64, 1}, {9, 10, 1}}, 4, 74);
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a, b);
}

TEST(BlockHash, ChainedSoThatADifferentPrefixChangesEverythingAfter) {
  const auto a = hashes({{1, 16, 1}, {2, 32, 1}}, 3, 48);
  const auto b = hashes({{3, 16, 1}, {2, 32, 1}}, 3, 48);
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(b.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_NE(a[i], b[i]);
}

TEST(BlockHash, OwnerIsPartOfTheHash) {
  EXPECT_NE(hashes({{5, 32, 1}}, 2, 32), hashes({{5, 32, 2}}, 2, 32));
  EXPECT_EQ(hashes({{5, 32, 0}}, 2, 32, 0, 1), hashes({{5, 32, 0}}, 2, 32, 0, 2));
}

TEST(BlockHash, UniqueContentStopsHashing) {
  // 20 shared tokens then unique ones: only the first full block (16 shared tokens) hashes.
  EXPECT_EQ(hashes({{5, 20, 1}, {0, 100, 1}}, 7, 120).size(), 1u);
  EXPECT_TRUE(hashes({{0, 100, 1}}, 6, 100).empty());
}

TEST(BlockHash, OutputTokensHashWithTheirContentId) {
  // 16 prompt tokens + 16 output tokens of content 42: two blocks, once the output exists.
  EXPECT_EQ(hashes({{5, 16, 1}}, 2, 32, 42).size(), 2u);
  EXPECT_EQ(hashes({{5, 16, 1}}, 2, 31, 42).size(), 1u);  // second block not yet full
  EXPECT_EQ(hashes({{5, 16, 1}}, 2, 32, 0).size(), 1u);   // unique output
}

}  // namespace
}  // namespace kvfleet::sim
