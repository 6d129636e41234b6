#include "sim/core/event_queue.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

namespace kvfleet::sim {
namespace {

struct Recorder : EventHandler {
  std::vector<std::pair<SimTime, std::uint64_t>> seen;
  void on_event(std::uint32_t, std::uint64_t arg, SimTime now) override {
    seen.emplace_back(now, arg);
  }
};

TEST(EventQueue, OrdersByTimeThenSchedulingOrder) {
  EventQueue q;
  Recorder r;
  q.push(30, &r, 0, 1);
  q.push(10, &r, 0, 2);
  q.push(30, &r, 0, 3);
  q.push(10, &r, 0, 4);
  q.push(20, &r, 0, 5);
  q.run();
  const std::vector<std::pair<SimTime, std::uint64_t>> want = {
      {10, 2}, {10, 4}, {20, 5}, {30, 1}, {30, 3}};
  EXPECT_EQ(r.seen, want);
  EXPECT_EQ(q.now(), 30);
  EXPECT_EQ(q.events_processed(), 5u);
}

TEST(EventQueue, RunUntilStopsBeforeLaterEvents) {
  EventQueue q;
  Recorder r;
  for (SimTime t = 0; t < 100; t += 10) q.push(t, &r, 0, static_cast<std::uint64_t>(t));
  q.run(45);
  EXPECT_EQ(r.seen.size(), 5u);
  EXPECT_EQ(q.next_time(), 50);
}

TEST(EventQueue, ManyRandomEventsComeOutSorted) {
  EventQueue q;
  Recorder r;
  std::uint64_t x = 12345;
  for (int i = 0; i < 10000; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    q.push(static_cast<SimTime>(x >> 50), &r, 0, static_cast<std::uint64_t>(i));
  }
  q.run();
  ASSERT_EQ(r.seen.size(), 10000u);
  for (std::size_t i = 1; i < r.seen.size(); ++i) {
    ASSERT_LE(r.seen[i - 1].first, r.seen[i].first);
    if (r.seen[i - 1].first == r.seen[i].first) {
      ASSERT_LT(r.seen[i - 1].second, r.seen[i].second);
    }
  }
}

// Pushes, deliveries, cancels and reinsertions interleaved at random (many equal times) against
// a sorted set of (time, sequence number): every event comes out in that order.
TEST(EventQueue, InterleavedPushPopCancelMatchesASortedSet) {
  struct Expect : EventHandler {
    std::set<std::pair<SimTime, std::uint64_t>>* pending = nullptr;
    std::uint64_t bad = 0;
    void on_event(std::uint32_t, std::uint64_t arg, SimTime now) override {
      // The earliest pending (time, push number) must be this one.
      const auto first = *pending->begin();
      if (first.first != now || first.second != arg) ++bad;
      pending->erase(pending->begin());
    }
  };
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 20; ++trial) {
    EventQueue q;
    std::set<std::pair<SimTime, std::uint64_t>> pending;
    Expect e;
    e.pending = &pending;
    Recorder other;  // cancels look for this target's events of kind 7
    std::uint64_t pushes = 0;
    for (int op = 0; op < 20000; ++op) {
      const auto r = rng() % 10;
      if (r < 5) {
        const SimTime t = q.now() + static_cast<SimTime>(rng() % (trial % 2 ? 4 : 1000));
        q.push(t, &e, 0, pushes);
        pending.emplace(t, pushes);
        ++pushes;
      } else if (r < 9) {
        q.step();
      } else {
        // Cancel an event of another target and put it back: its place is unchanged.
        q.push(q.now() + static_cast<SimTime>(rng() % 50), &other, 7, 0);
        ++pushes;
        const auto ev = q.cancel(&other, 7);
        ASSERT_TRUE(ev.has_value());
        if (rng() % 2) q.reinsert(*ev);
      }
    }
    while (q.step()) {
    }
    EXPECT_EQ(e.bad, 0u) << "trial " << trial;
    EXPECT_TRUE(pending.empty()) << "trial " << trial;
  }
}

TEST(SimTime, SecondsRoundTrip) {
  EXPECT_EQ(from_seconds(1.5), 1'500'000'000);
  EXPECT_EQ(from_seconds(1e-9), 1);
  EXPECT_DOUBLE_EQ(to_seconds(2'500'000'000), 2.5);
}

}  // namespace
}  // namespace kvfleet::sim
