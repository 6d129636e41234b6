#include "sim/core/event_queue.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <stdexcept>
#include <vector>

namespace kvfleet::sim {
namespace {

enum class TestEvent : std::uint32_t { kA, kB, kCount };

struct Recorder : EventHandlerOf<TestEvent> {
  std::vector<std::pair<SimTime, std::uint64_t>> seen;
  std::vector<TestEvent> kinds;
  void handle(TestEvent kind, std::uint64_t arg, SimTime now) override {
    seen.emplace_back(now, arg);
    kinds.push_back(kind);
  }
  const char* handler_name() const override { return "Recorder"; }
};
constexpr TestEvent kA = TestEvent::kA;

TEST(EventQueue, OrdersByTimeThenSchedulingOrder) {
  EventQueue q;
  Recorder r;
  q.push(30, &r, kA, 1);
  q.push(10, &r, kA, 2);
  q.push(30, &r, kA, 3);
  q.push(10, &r, kA, 4);
  q.push(20, &r, kA, 5);
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
  for (SimTime t = 0; t < 100; t += 10) q.push(t, &r, kA, static_cast<std::uint64_t>(t));
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
    q.push(static_cast<SimTime>(x >> 50), &r, kA, static_cast<std::uint64_t>(i));
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

// Pushes, deliveries, cancellations, removals and reinsertions interleaved at random (many equal
// times) against a sorted set of (time, sequence number): every event not cancelled comes out in
// that order, and no cancelled one is delivered.
TEST(EventQueue, InterleavedPushPopCancelMatchesASortedSet) {
  struct Expect : EventHandlerOf<TestEvent> {
    std::set<std::pair<SimTime, std::uint64_t>>* pending = nullptr;
    std::uint64_t bad = 0;
    void handle(TestEvent, std::uint64_t arg, SimTime now) override {
      // The earliest pending (time, push number) must be this one.
      const auto first = *pending->begin();
      if (first.first != now || first.second != arg) ++bad;
      pending->erase(pending->begin());
    }
    const char* handler_name() const override { return "Expect"; }
  };
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 20; ++trial) {
    EventQueue q;
    std::set<std::pair<SimTime, std::uint64_t>> pending;
    std::vector<std::pair<EventId, std::pair<SimTime, std::uint64_t>>> ids;  // still pending
    Expect e;
    e.pending = &pending;
    Recorder other;  // removed and put back: never delivered out of place
    std::uint64_t pushes = 0;
    for (int op = 0; op < 20000; ++op) {
      const auto r = rng() % 12;
      if (r < 5) {
        const SimTime t = q.now() + static_cast<SimTime>(rng() % (trial % 2 ? 4 : 1000));
        ids.push_back({q.push(t, &e, kA, pushes), {t, pushes}});
        pending.emplace(t, pushes);
        ++pushes;
      } else if (r < 9) {
        q.step();
      } else if (r < 10) {
        // Cancel a pending event of `e`: it is never delivered.
        std::erase_if(ids, [&](const auto& x) { return !pending.count(x.second); });
        if (ids.empty()) continue;
        const std::size_t k = rng() % ids.size();
        q.cancel(ids[k].first);
        pending.erase(ids[k].second);
        ids.erase(ids.begin() + static_cast<std::ptrdiff_t>(k));
      } else {
        // Remove an event of another target and put it back: its place is unchanged.
        const EventId id = q.push(q.now() + static_cast<SimTime>(rng() % 50), &other, kA, 0);
        ++pushes;
        const auto ev = q.remove(id);
        ASSERT_TRUE(ev.has_value());
        EXPECT_FALSE(q.remove(id).has_value());  // no longer there
        if (rng() % 2) {
          EXPECT_EQ(q.reinsert(*ev), id);
        }
      }
    }
    while (q.step()) {
    }
    EXPECT_EQ(e.bad, 0u) << "trial " << trial;
    EXPECT_TRUE(pending.empty()) << "trial " << trial;
  }
}

TEST(EventQueue, ACancelledEventMovesTheClockButIsNotDelivered) {
  EventQueue q;
  Recorder r;
  q.push(10, &r, kA, 1);
  const EventId b = q.push(20, &r, TestEvent::kB, 2);
  q.push(30, &r, kA, 3);
  EXPECT_TRUE(b.valid());
  EXPECT_EQ(b.time(), 20);
  EXPECT_FALSE(EventId().valid());
  q.cancel(b);
  q.cancel(EventId());  // names no event: nothing happens
  q.run(25);
  EXPECT_EQ(q.now(), 20);  // the cancelled event's time, as an event its handler ignores
  q.run();
  const std::vector<std::pair<SimTime, std::uint64_t>> want = {{10, 1}, {30, 3}};
  EXPECT_EQ(r.seen, want);
  EXPECT_EQ(q.events_processed(), 3u);
  // A cancelled event cannot be removed.
  const EventId c = q.push(40, &r, kA, 4);
  q.cancel(c);
  EXPECT_FALSE(q.remove(c).has_value());
}

TEST(EventQueue, AHandlerKnowsWhichEventItIsDelivering) {
  struct Self : EventHandlerOf<TestEvent> {
    EventQueue* q = nullptr;
    std::vector<EventId> seen;
    void handle(TestEvent, std::uint64_t, SimTime) override { seen.push_back(q->current()); }
    const char* handler_name() const override { return "Self"; }
  } h;
  EventQueue q;
  h.q = &q;
  const EventId a = q.push(5, &h, kA), b = q.push(5, &h, TestEvent::kB);
  q.run();
  EXPECT_EQ(h.seen, (std::vector<EventId>{a, b}));
  EXPECT_FALSE(q.current().valid());
}

TEST(EventQueue, AnUnknownKindIsRefusedNamingItsHandler) {
  Recorder r;
  EventHandler& base = r;
  try {
    base.on_event(static_cast<std::uint32_t>(TestEvent::kCount), 0, 0);
    FAIL() << "an unknown kind was delivered";
  } catch (const std::logic_error& e) {
    EXPECT_STREQ(e.what(), "Recorder: unknown event kind 2");
  }
  EXPECT_TRUE(r.seen.empty());
}

TEST(SimTime, SecondsRoundTrip) {
  EXPECT_EQ(from_seconds(1.5), 1'500'000'000);
  EXPECT_EQ(from_seconds(1e-9), 1);
  EXPECT_DOUBLE_EQ(to_seconds(2'500'000'000), 2.5);
}

}  // namespace
}  // namespace kvfleet::sim
