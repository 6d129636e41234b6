#include "sim/engine/contiguous_kv.h"

#include <gtest/gtest.h>

namespace kvfleet::sim {
namespace {

TEST(ContiguousKv, FirstFitAndMergingHoles) {
  ContiguousKv kv(100, /*buddy=*/false);
  ASSERT_TRUE(kv.reserve(SlotId(0), 30));   // [0, 30)
  ASSERT_TRUE(kv.reserve(SlotId(1), 30));   // [30, 60)
  ASSERT_TRUE(kv.reserve(SlotId(2), 30));   // [60, 90)
  EXPECT_FALSE(kv.reserve(SlotId(3), 20));  // only 10 left at the end
  kv.release(SlotId(1));                    // hole [30, 60)
  EXPECT_EQ(kv.largest_hole(), 30);
  ASSERT_TRUE(kv.reserve(SlotId(3), 20));  // first fit: [30, 50)
  EXPECT_EQ(kv.largest_hole(), 10);
  // 20 tokens free in total but split 10 + 10: external fragmentation.
  EXPECT_FALSE(kv.reserve(SlotId(4), 15));
  EXPECT_EQ(kv.capacity_tokens() - kv.reserved_tokens(), 20);
  kv.release(SlotId(2));  // [50, 100) merges into one hole
  EXPECT_EQ(kv.largest_hole(), 50);
  kv.release(SlotId(0));
  kv.release(SlotId(3));
  EXPECT_EQ(kv.largest_hole(), 100);
  EXPECT_EQ(kv.reserved_tokens(), 0);
  EXPECT_TRUE(kv.check_consistency());
}

TEST(ContiguousKv, BuddyRoundsUpSplitsAndMerges) {
  ContiguousKv kv(96, /*buddy=*/true);     // roots of 64 and 32 tokens
  ASSERT_TRUE(kv.reserve(SlotId(0), 20));  // 32 from the 64-root, split 64 -> 32 + 32
  EXPECT_EQ(kv.reservation(SlotId(0)), 32);
  ASSERT_TRUE(kv.reserve(SlotId(1), 5));  // 8 from a 32 split 32 -> 16 + 8 + 8
  EXPECT_EQ(kv.reservation(SlotId(1)), 8);
  ASSERT_TRUE(kv.reserve(SlotId(2), 32));  // the other 32
  EXPECT_EQ(kv.reserved_tokens(), 72);
  EXPECT_FALSE(kv.reserve(SlotId(3), 17));  // 24 tokens free, but no free 32-block
  EXPECT_TRUE(kv.check_consistency());
  kv.release(SlotId(1));
  kv.release(SlotId(2));
  kv.release(SlotId(0));  // everything merges back into its roots
  EXPECT_EQ(kv.largest_hole(), 64);
  ASSERT_TRUE(kv.reserve(SlotId(3), 64));
  EXPECT_TRUE(kv.check_consistency());
}

// A region above the buddy allocator's largest root can never be reserved, even with the space
// empty: the engine rejects such a request (it waited forever, and the scheduler reported that
// it made no progress, in a random scenario of the fast-decode differential test).
TEST(ContiguousKv, WhatCanEverBeReserved) {
  const ContiguousKv buddy(1200, /*buddy=*/true);  // roots of 1024, 128, 32 and 16
  EXPECT_EQ(buddy.largest_hole(), 1024);
  EXPECT_TRUE(buddy.can_ever_reserve(1024));
  EXPECT_FALSE(buddy.can_ever_reserve(1025));
  EXPECT_FALSE(buddy.can_ever_reserve(1169));
  const ContiguousKv first_fit(1200, /*buddy=*/false);
  EXPECT_TRUE(first_fit.can_ever_reserve(1200));
  EXPECT_FALSE(first_fit.can_ever_reserve(1201));
}

}  // namespace
}  // namespace kvfleet::sim
