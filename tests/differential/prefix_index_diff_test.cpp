// The pool-wide router index against the per-replica LRU sets it replaced (issue 19): on random
// request streams with shared prefixes, tenants, small capacities (evictions all the time) and
// pools of 1 to 150 replicas (holder sets wider than one word, growing while in use), every
// replica's match and size must be exactly the reference's after every request.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "sim/engine/block_hash.h"
#include "sim/fleet/prefix_index.h"
#include "tests/reference/lru_prefix_index.h"

namespace kvfleet::sim {
namespace {

// A prompt: a shared prefix of one of `families` (its first `shared` blocks) then blocks of its
// own, chained as block hashes are.
std::vector<std::uint64_t> prompt(std::mt19937_64& rng, int families, int max_blocks) {
  std::uniform_int_distribution<int> fam(0, families - 1), len(0, max_blocks);
  const int f = fam(rng);
  const int shared = len(rng), own = len(rng) / 2;
  std::vector<std::uint64_t> h;
  std::uint64_t parent = 0x1234;
  for (int i = 0; i < shared; ++i) h.push_back(parent = mix64(parent, 1000 + f));
  const std::uint64_t unique = rng();
  for (int i = 0; i < own; ++i) h.push_back(parent = mix64(parent, unique));
  return h;
}

// Conversations: a session's next prompt is its previous one plus a reply and a message (deeper
// and deeper paths), sometimes with its oldest turns dropped (a new path from the system prompt).
struct Conversations {
  struct Session {
    int family = 0;
    std::vector<std::uint64_t> content;  // block contents after the system prompt
  };
  std::vector<Session> sessions;
  std::vector<std::uint64_t> next(std::mt19937_64& rng, int families) {
    if (sessions.empty() || rng() % 8 == 0)
      sessions.push_back({static_cast<int>(rng() % families), {}});
    Session& s = sessions[rng() % sessions.size()];
    const int what = static_cast<int>(rng() % 10);
    if (what == 0 && s.content.size() > 4) {
      s.content.erase(
          s.content.begin(),
          s.content.begin() + static_cast<std::ptrdiff_t>(1 + rng() % (s.content.size() / 2)));
    } else if (what == 1 && !s.content.empty()) {
      s.content.resize(rng() % s.content.size());  // a shorter prompt on the same path
    } else {
      for (int i = 0, n = static_cast<int>(1 + rng() % 12); i < n; ++i) s.content.push_back(rng());
    }
    std::vector<std::uint64_t> h;
    std::uint64_t parent = 0x1234;
    for (int i = 0; i < 6; ++i) h.push_back(parent = mix64(parent, 1000 + s.family));
    for (const std::uint64_t c : s.content) h.push_back(parent = mix64(parent, c));
    return h;
  }
};

void run_case(std::uint64_t seed, std::size_t max_replicas, std::int64_t capacity, int families,
              int requests, bool conversations = false) {
  SCOPED_TRACE(::testing::Message() << "seed " << seed << ", up to " << max_replicas
                                    << " replicas, capacity " << capacity);
  std::mt19937_64 rng(seed);
  PoolPrefixIndex pool(capacity);
  std::vector<reference::LruIndex> ref;
  std::size_t replicas = std::max<std::size_t>(1, max_replicas / 2);
  std::vector<std::size_t> matched;
  Conversations chats;
  for (int r = 0; r < requests; ++r) {
    if (r % 97 == 0 && replicas < max_replicas) ++replicas;  // the pool grows (autoscaling)
    const auto h = conversations ? chats.next(rng, families) : prompt(rng, families, 40);
    pool.match(h, replicas, matched);
    ASSERT_EQ(matched.size(), replicas);
    for (std::size_t i = 0; i < replicas; ++i) {
      const std::size_t want = i < ref.size() ? ref[i].match(h) : 0;
      ASSERT_EQ(matched[i], want) << "request " << r << ", replica " << i;
    }
    // Most requests go where their prefix is (as the router sends them), some anywhere.
    std::size_t pick = std::uniform_int_distribution<std::size_t>(0, replicas - 1)(rng);
    if (rng() % 3 != 0)
      for (std::size_t i = 0; i < replicas; ++i)
        if (matched[i] > matched[pick]) pick = i;
    // record() reuses match()'s walk of the same hashes while the tree is unchanged: now and then
    // record a prompt that was not the one matched last (a shorter one, or another one).
    std::vector<std::uint64_t> sent = h;
    const int variant = static_cast<int>(rng() % 16);
    if (variant == 0 && sent.size() > 1) sent.resize(sent.size() - 1 - rng() % (sent.size() - 1));
    if (variant == 1) sent = conversations ? chats.next(rng, families) : prompt(rng, families, 40);
    pool.record(pick, sent);
    if (ref.size() <= pick) ref.resize(pick + 1);
    ref[pick].record(sent, capacity);
    if (variant == 2) {  // the same prompt sent to a second replica, with no match() between
      const std::size_t other = (pick + 1) % replicas;
      pool.record(other, sent);
      if (ref.size() <= other) ref.resize(other + 1);
      ref[other].record(sent, capacity);
    }
    for (std::size_t i = 0; i < replicas; ++i)
      ASSERT_EQ(pool.size(i), i < ref.size() ? ref[i].size() : 0) << "request " << r;
    if (r % 25 == 0) {
      ASSERT_TRUE(pool.check_consistency()) << "request " << r;
    }
  }
}

TEST(PrefixIndexDifferential, OneReplica) { run_case(1, 1, 50, 3, 3000); }

TEST(PrefixIndexDifferential, SmallCapacityManyEvictions) {
  for (std::uint64_t seed = 10; seed < 16; ++seed) run_case(seed, 8, 30 + seed * 7, 4, 3000);
}

TEST(PrefixIndexDifferential, SixtyFourReplicasOneWord) { run_case(21, 64, 200, 6, 4000); }

// Capacities below a prompt's length: a record evicts its own hashes (deepest first) and the
// prompt's held prefix, which is then inserted again.
TEST(PrefixIndexDifferential, CapacityBelowPromptLength) {
  for (std::uint64_t seed = 40; seed < 46; ++seed) run_case(seed, 4, 3 + seed % 5 * 6, 3, 3000);
}

// Multi-turn conversations: deep paths that grow a few blocks per turn, truncated histories,
// shorter prompts on a held path, under steady eviction.
TEST(PrefixIndexDifferential, Conversations) {
  for (std::uint64_t seed = 50; seed < 56; ++seed)
    run_case(seed, 1 + seed % 3 * 5, 40 + static_cast<std::int64_t>(seed % 4) * 60, 3, 4000, true);
  run_case(57, 64, 300, 4, 8000, true);
}

TEST(PrefixIndexDifferential, WideAndGrowingPools) {
  run_case(31, 70, 120, 5, 4000);    // crosses 64 while running
  run_case(32, 150, 80, 8, 5000);    // three words
  run_case(33, 130, 5000, 2, 3000);  // no evictions: everything shared
}

}  // namespace
}  // namespace kvfleet::sim
