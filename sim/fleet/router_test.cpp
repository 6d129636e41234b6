#include "sim/fleet/router.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

namespace kvfleet::sim {
namespace {

std::unique_ptr<Router> make(const std::string& yaml, std::uint64_t seed = 1) {
  const YAML::Node n = YAML::Load(yaml);
  config::ImplSpec s;
  s.impl = n["impl"].as<std::string>();
  s.params = router_registry().find(s.impl)->resolve(n, "router", config::Source{});
  return router_registry().make(s, seed);
}

std::vector<ReplicaLoad> loads(std::vector<int> outstanding, std::vector<double> kv = {}) {
  std::vector<ReplicaLoad> v;
  for (std::size_t i = 0; i < outstanding.size(); ++i)
    v.push_back({outstanding[i], 0, kv.empty() ? 0.0 : kv[i]});
  return v;
}

RequestSpec session(std::uint64_t s) {
  RequestSpec r;
  r.session = s;
  return r;
}

TEST(Router, RoundRobinCycles) {
  auto r = make("{impl: round_robin}");
  const auto l = loads({9, 0, 5});
  std::vector<std::size_t> got;
  for (int i = 0; i < 6; ++i) got.push_back(r->pick({}, l));
  EXPECT_EQ(got, (std::vector<std::size_t>{0, 1, 2, 0, 1, 2}));
}

TEST(Router, LeastOutstandingAndLeastKv) {
  EXPECT_EQ(make("{impl: least_outstanding}")->pick({}, loads({3, 1, 1, 4})), 1u);
  EXPECT_EQ(make("{impl: least_kv_usage}")->pick({}, loads({0, 0, 0}, {0.5, 0.9, 0.2})), 2u);
}

TEST(Router, PowerOfTwoNeverPicksTheUniqueMostLoaded) {
  auto r = make("{impl: power_of_two}");
  const auto l = loads({5, 5, 5, 9});
  int zero = 0;
  for (int i = 0; i < 4000; ++i) {
    const auto k = r->pick({}, l);
    ASSERT_NE(k, 3u);
    zero += k == 0;
  }
  // Replica 0 wins whenever it is drawn first among equals: about 1/3 of picks.
  EXPECT_NEAR(zero / 4000.0, 1.0 / 3, 0.03);
  const auto skew = loads({0, 10, 10, 10});
  int best = 0;
  for (int i = 0; i < 4000; ++i) best += r->pick({}, skew) == 0;
  EXPECT_NEAR(best / 4000.0, 0.5, 0.03);  // chosen whenever it is one of the two drawn
}

TEST(Router, SessionAffinityIsSticky) {
  auto r = make("{impl: session_affinity}");
  EXPECT_EQ(r->pick(session(7), loads({2, 0, 1})), 1u);  // first request: least loaded
  EXPECT_EQ(r->pick(session(7), loads({0, 9, 0})), 1u);  // later: stays, however loaded
  EXPECT_EQ(r->pick(session(8), loads({0, 9, 0})), 0u);
}

// With c = 1.25, placing requests one by one never puts a replica above ceil(c × the mean load)
// while others have room, and with equal loads a session always maps to the same replica.
TEST(Router, ConsistentHashRespectsTheLoadBound) {
  auto r = make("{impl: consistent_hash, load_factor: 1.25}");
  std::vector<ReplicaLoad> l = loads({0, 0, 0, 0, 0, 0, 0, 0});
  int total = 0;
  for (int i = 0; i < 5000; ++i) {
    const auto k = r->pick(session(1 + i % 37), l);  // few hot sessions: hashing alone would skew
    ++l[k].running;
    ++total;
    const double bound = std::ceil(1.25 * total / 8.0);  // capacity ceil(c × mean)
    ASSERT_LE(l[k].outstanding(), bound + 1e-9) << "placement " << i;
  }
  auto s = make("{impl: consistent_hash}");
  const auto even = loads({3, 3, 3, 3});
  const auto home = s->pick(session(42), even);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(s->pick(session(42), even), home);
}

RequestSpec prompt(std::uint64_t content, std::int32_t tokens) {
  RequestSpec r;
  r.tenant = 1;
  r.input_tokens = tokens;
  r.segments = {{content, tokens, 1}};
  return r;
}

TEST(Router, PrefixAwareFollowsThePrefixUnlessTheReplicaIsBusy) {
  auto r = make("{impl: prefix_aware}");
  const auto even = loads({2, 2, 2, 2}, {0.3, 0.3, 0.3, 0.3});
  const auto first = r->pick(prompt(77, 320), even);
  // The same document again: the prefix score (3 × 1) decides among equal loads.
  for (int i = 0; i < 5; ++i) EXPECT_EQ(r->pick(prompt(77, 320), even), first);
  // Now that replica is the busiest and fullest: queue 0 and KV 0.05 lose to 2 + 2 × 0.7 = 3.4.
  std::vector<ReplicaLoad> busy = even;
  busy[first] = {10, 0, 0.95};
  const double with_prefix = 0 + 2 * 0.05 + 3 * 1.0;  // 3.1
  const double elsewhere = 2 * 1.0 + 2 * 0.7;         // 3.4
  ASSERT_LT(with_prefix, elsewhere);
  EXPECT_NE(r->pick(prompt(77, 320), busy), first);
  // A prompt nobody has seen spreads by load alone.
  EXPECT_EQ(r->pick(prompt(99, 320), loads({5, 1, 5, 5}, {0.3, 0.3, 0.3, 0.3})), 1u);
}

// Every policy skips replicas that take no requests (starting, draining, failed, scaled in).
TEST(Router, EveryPolicySkipsUnavailableReplicas) {
  for (const std::string& impl : router_registry().names()) {
    auto r = make("{impl: " + impl + "}");
    auto l = loads({0, 0, 0, 0}, {0, 0, 0, 0});
    l[0].available = l[2].available = false;
    for (int i = 0; i < 200; ++i) {
      const auto k = r->pick(i % 2 ? session(1 + i % 5) : prompt(5, 64), l);
      ASSERT_TRUE(k == 1 || k == 3) << impl << " picked " << k;
    }
    // A session's home goes away: it moves.
    auto home = r->pick(session(99), l);
    l[home].available = false;
    l[home == 1 ? 3 : 1].available = true;
    EXPECT_EQ(r->pick(session(99), l), home == 1 ? 3u : 1u) << impl;
  }
}

// A probe that says replica 2 holds the first 10 blocks of every prompt.
struct FakeProbe final : CacheProbe {
  int block_size() const override { return 16; }
  std::int64_t cached_blocks(std::size_t i, std::span<const std::uint64_t> h) const override {
    return i == 2 ? std::min<std::int64_t>(10, static_cast<std::int64_t>(h.size())) : 0;
  }
};

TEST(Router, ExactIndexFollowsTheReplicasTrueCaches) {
  FakeProbe probe;
  auto exact = make("{impl: prefix_aware, index: exact}");
  exact->attach(&probe);
  const auto even = loads({2, 2, 2, 2}, {0.3, 0.3, 0.3, 0.3});
  // Never sent anywhere before, yet replica 2 holds it: 3 × 10/20 beats equal loads.
  for (int i = 0; i < 5; ++i) EXPECT_EQ(exact->pick(prompt(5, 320), even), 2u);
  // The approximate index knows nothing of it: first pick is a tie among all four.
  auto approx = make("{impl: prefix_aware}");
  approx->attach(&probe);
  std::set<std::size_t> seen;
  for (int k = 0; k < 40; ++k) seen.insert(approx->pick(prompt(1000 + k, 320), even));
  EXPECT_GT(seen.size(), 1u);
}

TEST(Router, CacheAwareBalancesOnlyWhenImbalancedByBothThresholds) {
  auto r = make("{impl: cache_aware, balance_abs_threshold: 4, balance_rel_threshold: 1.5}");
  const auto even = loads({3, 3, 3, 3});
  const auto home = r->pick(prompt(7, 320), even);
  // Balanced: the same prompt follows its match (> 50% of the prompt).
  EXPECT_EQ(r->pick(prompt(7, 320), even), home);
  std::vector<ReplicaLoad> skew = even;
  skew[home].running = 6;  // max − min = 3 <= 4: still balanced
  EXPECT_EQ(r->pick(prompt(7, 320), skew), home);
  skew[home].running = 10;  // max − min = 7 > 4 and 10 > 1.5 × 3: least loaded instead
  EXPECT_NE(r->pick(prompt(7, 320), skew), home);
  // A new prompt goes to the replica whose index holds least: not `home`, whose index is full.
  auto fresh = make("{impl: cache_aware}");
  const auto a = fresh->pick(prompt(1, 320), even);
  const auto b = fresh->pick(prompt(2, 320), even);
  EXPECT_NE(a, b);
}
// The approximate index forgets suffixes before prefixes: a 20-block prompt recorded in a
// 10-block index keeps its first 10 blocks, so a prompt sharing them still matches.
TEST(Router, ApproximateIndexKeepsPrefixesWhenFull) {
  const auto even = loads({2, 2, 2, 2}, {0.3, 0.3, 0.3, 0.3});
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {  // a miss would tie four ways at random
    auto r = make("{impl: prefix_aware, index_blocks: 10}", seed);
    const auto home = r->pick(prompt(77, 320), even);
    EXPECT_EQ(r->pick(prompt(77, 160), even), home) << "seed " << seed;
  }
}
TEST(Router, BadLoadFactorIsRejected) {
  const YAML::Node n = YAML::Load("{impl: consistent_hash, load_factor: 0.5}");
  EXPECT_THROW(router_registry().find("consistent_hash")->resolve(n, "router", config::Source{}),
               InputError);
}

}  // namespace
}  // namespace kvfleet::sim
