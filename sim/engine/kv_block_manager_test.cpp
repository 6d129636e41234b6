#include "sim/engine/kv_block_manager.h"

#include <gtest/gtest.h>

namespace kvfleet::sim {
namespace {

TEST(KvBlockManager, AllocatesWholeBlocksAsTokensGrow) {
  KvBlockManager kv(10, 16);
  EXPECT_TRUE(kv.allocate(0, 1));
  EXPECT_EQ(kv.blocks_held(0), 1);
  EXPECT_TRUE(kv.allocate(0, 16));
  EXPECT_EQ(kv.blocks_held(0), 1);
  EXPECT_TRUE(kv.allocate(0, 17));
  EXPECT_EQ(kv.blocks_held(0), 2);
  EXPECT_EQ(kv.num_free_blocks(), 8);
  EXPECT_DOUBLE_EQ(kv.usage(), 0.2);
  EXPECT_TRUE(kv.check_conservation());
}

TEST(KvBlockManager, RefusesWithoutChangingAnything) {
  KvBlockManager kv(4, 16);
  ASSERT_TRUE(kv.allocate(0, 48));
  EXPECT_FALSE(kv.allocate(1, 32));  // needs 2, 1 free
  EXPECT_EQ(kv.blocks_held(1), 0);
  EXPECT_EQ(kv.num_free_blocks(), 1);
  EXPECT_TRUE(kv.allocate(1, 16));
  EXPECT_EQ(kv.num_free_blocks(), 0);
  EXPECT_TRUE(kv.check_conservation());
}

TEST(KvBlockManager, FreeReturnsEveryBlock) {
  KvBlockManager kv(8, 4);
  ASSERT_TRUE(kv.allocate(3, 13));
  ASSERT_TRUE(kv.allocate(5, 9));
  EXPECT_EQ(kv.num_used_blocks(), 7);
  kv.free(3);
  EXPECT_EQ(kv.num_used_blocks(), 3);
  kv.free(5);
  EXPECT_EQ(kv.num_free_blocks(), 8);
  EXPECT_TRUE(kv.check_conservation());
  EXPECT_EQ(kv.blocks_for(0), 0);
  EXPECT_EQ(kv.blocks_for(4), 1);
  EXPECT_EQ(kv.blocks_for(5), 2);
}

}  // namespace
}  // namespace kvfleet::sim
