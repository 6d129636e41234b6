#include "sim/engine/kv_cache.h"

#include <gtest/gtest.h>

#include <vector>

namespace kvfleet::sim {
namespace {

TEST(KvCache, AllocatesWholeBlocksAsTokensGrow) {
  KvCacheManager kv(10, 16, true);
  EXPECT_TRUE(kv.allocate(SlotId(0), 1));
  EXPECT_EQ(kv.blocks_held(SlotId(0)), 1);
  EXPECT_TRUE(kv.allocate(SlotId(0), 16));
  EXPECT_EQ(kv.blocks_held(SlotId(0)), 1);
  EXPECT_TRUE(kv.allocate(SlotId(0), 17));
  EXPECT_EQ(kv.blocks_held(SlotId(0)), 2);
  EXPECT_EQ(kv.num_free_blocks(), 8);
  EXPECT_DOUBLE_EQ(kv.usage(), 0.2);
  EXPECT_TRUE(kv.check_consistency());
}

TEST(KvCache, RefusesWithoutChangingAnything) {
  KvCacheManager kv(4, 16, true);
  ASSERT_TRUE(kv.allocate(SlotId(0), 48));
  EXPECT_FALSE(kv.allocate(SlotId(1), 32));  // needs 2, 1 free
  EXPECT_EQ(kv.blocks_held(SlotId(1)), 0);
  EXPECT_EQ(kv.num_free_blocks(), 1);
  EXPECT_TRUE(kv.allocate(SlotId(1), 16));
  EXPECT_EQ(kv.num_free_blocks(), 0);
  EXPECT_TRUE(kv.check_consistency());
}

TEST(KvCache, FreedCachedBlocksAreHitAndShared) {
  KvCacheManager kv(8, 4, true);
  const std::vector<std::uint64_t> h = {11, 22, 33};
  ASSERT_TRUE(kv.allocate(SlotId(0), 13));  // 4 blocks, 3 full
  kv.cache_blocks(SlotId(0), h, 3);
  EXPECT_EQ(kv.num_cached_blocks(), 3);
  EXPECT_EQ(kv.match_prefix(h), 3);
  // A second sequence shares the first two blocks while the first still runs.
  ASSERT_TRUE(kv.allocate_with_prefix(SlotId(1), h, 2, 10));
  EXPECT_EQ(kv.blocks_held(SlotId(1)), 3);
  EXPECT_EQ(kv.block_table(SlotId(1))[0], kv.block_table(SlotId(0))[0]);
  EXPECT_EQ(kv.num_used_blocks(), 5);  // 4 + 1 new; shared blocks count once
  kv.free(SlotId(0));
  kv.free(SlotId(1));
  EXPECT_EQ(kv.num_free_blocks(), 8);
  EXPECT_EQ(kv.match_prefix(h), 3);  // freed but still cached
  EXPECT_TRUE(kv.check_consistency());
}

TEST(KvCache, MatchStopsAtTheFirstMiss) {
  KvCacheManager kv(8, 4, true);
  ASSERT_TRUE(kv.allocate(SlotId(0), 8));
  const std::vector<std::uint64_t> h = {5, 6};
  kv.cache_blocks(SlotId(0), h, 2);
  EXPECT_EQ(kv.match_prefix(std::vector<std::uint64_t>{5, 7, 6}), 1);
  EXPECT_EQ(kv.match_prefix(std::vector<std::uint64_t>{7, 5}), 0);
}

// vLLM frees a request's blocks in reverse order to the free queue's tail and allocates from its
// head: the last block of the least recently freed request is evicted first.
TEST(KvCache, EvictionFollowsTheFreeQueue) {
  KvCacheManager kv(4, 4, true);
  const std::vector<std::uint64_t> a = {1, 2}, b = {3, 4};
  ASSERT_TRUE(kv.allocate(SlotId(0), 8));
  kv.cache_blocks(SlotId(0), a, 2);
  ASSERT_TRUE(kv.allocate(SlotId(1), 8));
  kv.cache_blocks(SlotId(1), b, 2);
  kv.free(SlotId(0));                      // queue: a2 a1
  kv.free(SlotId(1));                      // queue: a2 a1 b2 b1
  ASSERT_TRUE(kv.allocate(SlotId(2), 4));  // evicts a2
  EXPECT_EQ(kv.match_prefix(a), 1);
  EXPECT_EQ(kv.match_prefix(b), 2);
  ASSERT_TRUE(kv.allocate(SlotId(3), 4));  // evicts a1
  EXPECT_EQ(kv.match_prefix(a), 0);
  EXPECT_EQ(kv.match_prefix(b), 2);
  EXPECT_EQ(kv.evictions(), 2);
  EXPECT_TRUE(kv.check_consistency());
}

TEST(KvCache, TouchedHitsCountAgainstTheFreePool) {
  KvCacheManager kv(3, 4, true);
  const std::vector<std::uint64_t> h = {9, 8};
  ASSERT_TRUE(kv.allocate(SlotId(0), 8));
  kv.cache_blocks(SlotId(0), h, 2);
  kv.free(SlotId(0));  // 3 free, 2 of them cached
  // Hitting both cached blocks leaves one free block: room for 1 more block, not 2.
  EXPECT_FALSE(kv.allocate_with_prefix(SlotId(1), h, 2, 16));
  EXPECT_EQ(kv.blocks_held(SlotId(1)), 0);
  EXPECT_TRUE(kv.allocate_with_prefix(SlotId(1), h, 2, 12));
  EXPECT_EQ(kv.num_free_blocks(), 0);
  EXPECT_TRUE(kv.check_consistency());
}

TEST(KvCache, CachingOffMatchesNothing) {
  KvCacheManager kv(4, 4, false);
  ASSERT_TRUE(kv.allocate(SlotId(0), 8));
  kv.cache_blocks(SlotId(0), std::vector<std::uint64_t>{1, 2}, 2);
  EXPECT_EQ(kv.match_prefix(std::vector<std::uint64_t>{1, 2}), 0);
}

}  // namespace
}  // namespace kvfleet::sim
