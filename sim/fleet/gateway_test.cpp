#include "sim/fleet/gateway.h"

#include <gtest/gtest.h>

#include <vector>

#include "sim/core/rng.h"
#include "sim/fleet/client.h"
#include "sim/fleet/lifecycle.h"

namespace kvfleet::sim {
namespace {

std::vector<ReplicaLoad> loads(std::vector<int> waiting, std::vector<double> kv) {
  std::vector<ReplicaLoad> v;
  for (std::size_t i = 0; i < waiting.size(); ++i) v.push_back({10, waiting[i], kv[i], true});
  return v;
}

AdmissionConfig enabled() {
  AdmissionConfig c;
  c.enabled = true;
  c.queue_threshold = 4;
  c.kv_threshold = 0.8;
  c.max_queue = 2;
  c.shed_priority = 1;
  return c;
}

TEST(Gateway, SaturationIsTheMeanOfEachReplicasWorseRatioCappedAtOne) {
  PoolGateway g(enabled(), 1000);
  // Replica 0: max(2/4, 0.4/0.8) = 0.5; replica 1: max(8/4, 0.2/0.8) = 2, counted as 1: mean
  // 0.75. One replica's long queue does not hold requests back from the other.
  EXPECT_DOUBLE_EQ(g.saturation(loads({2, 8}, {0.4, 0.2})), 0.75);
  EXPECT_FALSE(g.saturated(loads({0, 80}, {0.0, 1.0})));
  EXPECT_TRUE(g.saturated(loads({4, 80}, {0.0, 1.0})));
  auto l = loads({2, 8}, {0.4, 0.2});
  l[1].available = false;  // replicas that take no requests do not count
  EXPECT_DOUBLE_EQ(g.saturation(l), 0.5);
  l[0].available = false;
  EXPECT_FALSE(g.admits(10, 20, l));  // nobody to take it
}

// A request of `priority` whose prompt length is its id (to tell them apart).
RequestSpec spec_of(std::int32_t priority, std::int32_t id) {
  RequestSpec r;
  r.priority = priority;
  r.input_tokens = id;
  return r;
}

TEST(Gateway, ShedsLowPriorityQueuesUrgentRejectsWhenFull) {
  auto spec = [](std::int32_t priority, std::int32_t id) -> RequestSpec& {
    static RequestSpec r;
    r = spec_of(priority, id);
    return r;
  };
  PoolGateway g(enabled(), 1000);
  const auto calm = loads({0, 0}, {0.1, 0.1});
  const auto hot = loads({8, 8}, {0.9, 0.9});
  RejectReason why = RejectReason::kNone;
  EXPECT_EQ(g.arrive(1, spec(1, 1), 100, 200, calm, why), PoolGateway::Verdict::kDispatch);
  EXPECT_EQ(g.arrive(2, spec(1, 2), 100, 200, hot, why), PoolGateway::Verdict::kReject);
  EXPECT_EQ(why, RejectReason::kShed);
  EXPECT_EQ(g.arrive(3, spec(0, 3), 100, 200, hot, why), PoolGateway::Verdict::kQueue);
  EXPECT_EQ(g.arrive(4, spec(0, 4), 100, 200, hot, why), PoolGateway::Verdict::kQueue);
  EXPECT_EQ(g.arrive(5, spec(0, 5), 100, 200, hot, why), PoolGateway::Verdict::kReject);
  EXPECT_EQ(why, RejectReason::kQueueFull);
  // One queued request leaves: room for another.
  g.forget();
  EXPECT_EQ(g.arrive(6, spec(0, 6), 100, 200, hot, why), PoolGateway::Verdict::kQueue);
  // Once calm, nothing jumps the queue of its band or a more urgent one (here: full).
  EXPECT_EQ(g.arrive(7, spec(0, 7), 100, 200, calm, why), PoolGateway::Verdict::kReject);
  EXPECT_EQ(why, RejectReason::kQueueFull);
  EXPECT_EQ(g.dispatch_front().input_tokens, 3);  // the queue keeps each request's content
  EXPECT_EQ(g.arrive(8, spec(0, 8), 100, 200, calm, why), PoolGateway::Verdict::kQueue);
  std::uint32_t front = 0;
  ASSERT_TRUE(g.front(front));
  EXPECT_EQ(front, 4u);              // 3 was popped; FIFO within the band
  EXPECT_EQ(g.queued_total(), 4);    // 3, 4, 6, 8
  EXPECT_EQ(g.rejected_total(), 3);  // 2, 5, 7
  g.reject_front();                  // 4 waited too long
  EXPECT_EQ(g.rejected_total(), 4);
  ASSERT_TRUE(g.front(front));
  EXPECT_EQ(front, 6u);
}

TEST(Gateway, AdmitsOnKvDemandAndPendingPrefillTokens) {
  AdmissionConfig c = enabled();
  c.kv_demand_limit = 0.5;     // of 2 × 1000 tokens: 1000 tokens in flight
  c.max_prefill_tokens = 300;  // per replica: 600 tokens awaiting their first token
  PoolGateway g(c, 1000);
  const auto calm = loads({0, 0}, {0.1, 0.1});
  EXPECT_TRUE(g.admits(500, 900, calm));
  g.on_dispatch(500, 900);
  EXPECT_FALSE(g.admits(50, 150, calm));  // 900 + 150 > 1000
  EXPECT_TRUE(g.admits(50, 100, calm));
  g.on_dispatch(50, 100);
  EXPECT_FALSE(g.admits(60, 60, loads({0, 0}, {0.1, 0.1})));  // kv: 1000 + 60 > 1000
  g.on_end(50, 100, false);
  EXPECT_FALSE(g.admits(200, 50, calm));  // prefill: 500 + 200 > 600
  g.on_first_token(500);
  EXPECT_TRUE(g.admits(200, 50, calm));
  // A limit never blocks the only request: nothing in flight admits anything.
  PoolGateway empty(c, 1000);
  EXPECT_TRUE(empty.admits(5000, 9000, calm));
}

TEST(Client, BackoffGrowsCapsAndHonoursRetryAfter) {
  ClientConfig c;
  c.jitter = "none";
  c.backoff_initial_s = 0.5;
  c.backoff_multiplier = 2;
  c.backoff_max_s = 3;
  RngStream rng(1, "t");
  EXPECT_DOUBLE_EQ(backoff_delay_s(c, 1, 0, rng), 0.5);
  EXPECT_DOUBLE_EQ(backoff_delay_s(c, 2, 0, rng), 1.0);
  EXPECT_DOUBLE_EQ(backoff_delay_s(c, 5, 0, rng), 3.0);    // capped
  EXPECT_DOUBLE_EQ(backoff_delay_s(c, 1, 2.0, rng), 2.0);  // retry-after wins
  c.jitter = "full";
  for (int i = 0; i < 100; ++i) {
    const double d = backoff_delay_s(c, 2, 0, rng);
    EXPECT_GE(d, 0);
    EXPECT_LE(d, 1.0);
  }
}

TEST(Client, RetryBudgetAllowsReservePlusRatioPerRequest) {
  RetryBudget b(0.1, 2);
  int allowed = 0;
  for (int i = 0; i < 100; ++i) {
    b.on_first_attempt();
    for (int k = 0; k < 3; ++k) allowed += b.try_withdraw();
  }
  EXPECT_EQ(allowed, 2 + 10);  // reserve + 0.1 × 100
  RetryBudget none(0, 0);
  EXPECT_TRUE(none.try_withdraw());  // no budget: unlimited
}

TEST(Autoscale, FollowsTheHpaRuleWithinTolerance) {
  AutoscaleConfig a;
  a.target = 4;
  a.min_replicas = 1;
  EXPECT_EQ(autoscale_desired(a, 2, 2, 12, 8), 6);   // ceil(2 × 12 / 4)
  EXPECT_EQ(autoscale_desired(a, 2, 2, 4.2, 8), 2);  // within 10%: unchanged
  EXPECT_EQ(autoscale_desired(a, 2, 2, 100, 8), 8);  // clamped to max
  EXPECT_EQ(autoscale_desired(a, 4, 4, 0, 8), 1);    // idle: down to min
  EXPECT_EQ(autoscale_desired(a, 0, 0, 3, 8), 1);    // demand and nobody up
}

}  // namespace
}  // namespace kvfleet::sim
