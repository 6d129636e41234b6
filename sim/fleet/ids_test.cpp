#include "sim/core/ids.h"

#include <gtest/gtest.h>

#include <type_traits>
#include <unordered_set>

#include "sim/engine/contiguous_kv.h"
#include "sim/engine/kv_cache.h"
#include "sim/engine/kv_layout.h"
#include "sim/fleet/client.h"
#include "sim/fleet/disaggregation.h"
#include "sim/fleet/lifecycle.h"

namespace kvfleet::sim {
namespace {

// An id is its integer and no other: no conversion from a raw integer or from another kind of id.
static_assert(!std::is_convertible_v<std::size_t, PoolId>);
static_assert(!std::is_convertible_v<PoolId, std::size_t>);
static_assert(!std::is_convertible_v<PoolId, NodeId>);
static_assert(!std::is_convertible_v<NodeId, LocalId>);
static_assert(!std::is_convertible_v<std::uint32_t, RequestId>);
static_assert(!std::is_convertible_v<std::uint32_t, SlotId>);
static_assert(!std::is_convertible_v<SlotId, RequestId>);
static_assert(sizeof(NodeId) == sizeof(std::size_t) && sizeof(RequestId) == sizeof(std::uint32_t));
static_assert(sizeof(SlotId) == sizeof(std::uint32_t));

// A replica's KV memory is addressed by slot: a request id, a block count or a raw integer where
// the slot goes does not compile (KvCacheManager's allocate(slot, tokens) took two integers).
static_assert(std::is_invocable_v<decltype(&KvCacheManager::allocate), KvCacheManager*, SlotId,
                                  std::int64_t>);
static_assert(!std::is_invocable_v<decltype(&KvCacheManager::allocate), KvCacheManager*,
                                   std::int64_t, std::int64_t>);
static_assert(!std::is_invocable_v<decltype(&KvCacheManager::free), KvCacheManager*, RequestId,
                                   std::uint64_t>);
static_assert(!std::is_invocable_v<decltype(&ContiguousKv::reserve), ContiguousKv*, std::uint32_t,
                                   std::int64_t>);
static_assert(
    !std::is_invocable_v<decltype(&KvLayout::release), KvLayout*, std::uint32_t, std::uint64_t>);

// The fleet's host interfaces cannot be called with a pool, a node, a replica's place in its pool
// and a request mixed up.
static_assert(std::is_invocable_v<decltype(&DisaggregationHost::node_of), DisaggregationHost*,
                                  PoolId, LocalId>);
static_assert(!std::is_invocable_v<decltype(&DisaggregationHost::node_of), DisaggregationHost*,
                                   LocalId, PoolId>);
static_assert(!std::is_invocable_v<decltype(&DisaggregationHost::node_of), DisaggregationHost*,
                                   std::size_t, std::size_t>);
static_assert(
    !std::is_invocable_v<decltype(&DisaggregationHost::submit_decode), DisaggregationHost*, NodeId,
                         PoolId, RequestId, RequestSpec&&, SimTime>);
static_assert(!std::is_invocable_v<decltype(&ClientHost::cancel_at_replica), ClientHost*, RequestId,
                                   NodeId, SimTime>);
static_assert(
    !std::is_invocable_v<decltype(&LifecycleHost::stop_replica), LifecycleHost*, PoolId, SimTime>);

TEST(StrongId, ComparesHashesAndPrintsAsItsInteger) {
  EXPECT_EQ(PoolId{3}, PoolId{3});
  EXPECT_LT(NodeId{2}, NodeId{5});
  EXPECT_EQ(NodeId{7}.value(), 7u);
  EXPECT_EQ(to_string(RequestId{42}), "42");
  EXPECT_EQ(PoolId{}.value(), 0u);
  std::unordered_set<NodeId> seen = {NodeId{1}, NodeId{2}, NodeId{1}};
  EXPECT_EQ(seen.size(), 2u);
}

}  // namespace
}  // namespace kvfleet::sim
