#include "sim/engine/block_hash.h"

#include <gtest/gtest.h>

#include <random>

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

// The engine continues from the router's hashes of a prompt (skip) instead of hashing it again:
// on random prompts (segments of all lengths, empty ones, unique content, prompts that end inside
// a block) the continued chain equals the one hashed in one go, output blocks included, and
// dies where that one dies.
TEST(BlockHash, ContinuingFromTheRoutersHashesEqualsHashingEverything) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 3000; ++trial) {
    const int bs = 1 << std::uniform_int_distribution<int>(0, 5)(rng);
    std::vector<Segment> segs;
    const int n = std::uniform_int_distribution<int>(1, 6)(rng);
    std::int32_t input = 0;
    for (int i = 0; i < n; ++i) {
      const std::int32_t t = std::uniform_int_distribution<std::int32_t>(0, 90)(rng);
      const std::uint64_t content = (i > 0 && rng() % 8 == 0) ? 0 : 1 + rng() % 5;
      segs.push_back({content, t, static_cast<std::uint32_t>(rng() % 3)});
      input += t;
    }
    if (segs.front().content == 0) segs.front().content = 9;
    RequestSpec req;
    req.segments = segs;
    req.input_tokens = input;
    req.tenant = 1;
    const std::uint64_t out_content = rng() % 4;
    const std::int64_t total = input + std::uniform_int_distribution<std::int64_t>(0, 100)(rng);
    std::vector<std::uint64_t> whole, routed;
    BlockHasher a;
    a.reset(segs, out_content, req.tenant, bs);
    const bool a_alive = a.extend(whole, total / bs, total);
    prompt_block_hashes(req, bs, routed);
    BlockHasher b;
    b.reset(segs, out_content, req.tenant, bs);
    b.skip(routed);
    const bool b_alive = b.extend(routed, total / bs, total);
    ASSERT_EQ(routed, whole) << "trial " << trial;
    ASSERT_EQ(b_alive, a_alive) << "trial " << trial;
    // From any point of the chain, output blocks included.
    const std::size_t k = whole.empty() ? 0 : rng() % (whole.size() + 1);
    std::vector<std::uint64_t> part(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(k));
    BlockHasher c;
    c.reset(segs, out_content, req.tenant, bs);
    c.skip(part);
    ASSERT_EQ(c.extend(part, total / bs, total), a_alive) << "trial " << trial;
    ASSERT_EQ(part, whole) << "trial " << trial << ", continued after " << k;
  }
}

}  // namespace
}  // namespace kvfleet::sim
