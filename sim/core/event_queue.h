#pragma once
// One event queue for the whole simulation, ordered by (time, sequence number) so that events at
// equal times run in the order they were scheduled: ties break deterministically.
#include <algorithm>
#include <cassert>
#include <cstdint>
#include <optional>
#include <vector>

#include "sim/core/time.h"

namespace kvfleet::sim {

// A component that receives events. `kind` and `arg` are the component's own: the queue does not
// interpret them. One virtual call per event; components schedule one event per engine step, never
// one per token.
class EventHandler {
 public:
  virtual ~EventHandler() = default;
  virtual void on_event(std::uint32_t kind, std::uint64_t arg, SimTime now) = 0;
};

class EventQueue {
 public:
  struct Event {
    SimTime time;
    std::uint64_t seq;
    EventHandler* target;
    std::uint32_t kind;
    std::uint64_t arg;
  };

  // Schedules an event; `time` must not lie before the current time.
  void push(SimTime time, EventHandler* target, std::uint32_t kind, std::uint64_t arg = 0) {
    assert(time >= now_);
    if (time > kMaxSimTime) [[unlikely]]
      clock_range_error(to_seconds(time));
    heap_.push_back(Event{time, next_seq_++, target, kind, arg});
    sift_up(heap_.size() - 1);
  }

  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  SimTime now() const { return now_; }
  SimTime next_time() const { return heap_.empty() ? kTimeNever : heap_.front().time; }

  // Pops the earliest event, advances the clock to it and delivers it. Returns false when empty.
  bool step() {
    if (heap_.empty()) return false;
    Event e = heap_.front();
    heap_.front() = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) sift_down(0);
    now_ = e.time;
    ++processed_;
    if (wake_) [[unlikely]] {
      EventHandler* w = wake_;
      wake_ = nullptr;
      w->on_event(wake_kind_, 0, now_);
    }
    e.target->on_event(e.kind, e.arg, now_);
    return true;
  }

  // Removes the pending event of `target` and `kind` (the first found) and returns it, or nothing.
  // Linear in the queue's size: for rare use (pausing a periodic event while nothing happens).
  std::optional<Event> cancel(EventHandler* target, std::uint32_t kind) {
    for (std::size_t i = 0; i < heap_.size(); ++i) {
      if (heap_[i].target != target || heap_[i].kind != kind) continue;
      const Event e = heap_[i];
      heap_[i] = heap_.back();
      heap_.pop_back();
      if (i < heap_.size()) {
        sift_up(i);
        sift_down(i);
      }
      return e;
    }
    return std::nullopt;
  }
  // Puts a cancelled event back with its place among events of equal time (its sequence number).
  void reinsert(const Event& e) {
    assert(e.time >= now_ && e.seq < next_seq_);
    heap_.push_back(e);
    sift_up(heap_.size() - 1);
  }

  // Before the next event is delivered (after the clock has moved to it), `target` receives
  // `kind` once. A component that stopped its periodic events while nothing happened uses this
  // to take them up again before anything can happen (Simulation's idle fast-forward).
  void wake_before_next(EventHandler* target, std::uint32_t kind) {
    wake_ = target;
    wake_kind_ = kind;
  }

  // Runs events until the queue is empty, the next event lies after `until`, or stop() was
  // called (from an event).
  void run(SimTime until = kTimeNever) {
    while (!heap_.empty() && heap_.front().time <= until && !stopped_) step();
  }
  void stop() { stopped_ = true; }
  bool stopped() const { return stopped_; }

  std::uint64_t events_processed() const { return processed_; }

 private:
  // (time, sequence number) as one unsigned 128-bit key (the time's sign bit flipped, so that
  // unsigned order is signed order): one comparison, which selects without a branch.
  __extension__ typedef unsigned __int128 Key;
  static Key key(const Event& e) {
    return (static_cast<Key>(static_cast<std::uint64_t>(e.time) ^ (std::uint64_t{1} << 63)) << 64) |
           e.seq;
  }
  static bool before(const Event& a, const Event& b) { return key(a) < key(b); }
  // A 4-ary heap (half the levels of a binary one, each level's children in one or two cache
  // lines); an element moves by filling a hole, not by swaps. The order (time, then sequence
  // number) is total, so the delivery order is the same as any other heap's.
  static constexpr std::size_t kArity = 4;
  void sift_up(std::size_t i) {
    if (i == 0) return;
    const Event x = heap_[i];
    while (i > 0) {
      const std::size_t p = (i - 1) / kArity;
      if (!before(x, heap_[p])) break;
      heap_[i] = heap_[p];
      i = p;
    }
    heap_[i] = x;
  }
  void sift_down(std::size_t i) {
    const std::size_t n = heap_.size();
    const Event x = heap_[i];
    const Key kx = key(x);
    for (;;) {
      const std::size_t first = kArity * i + 1;
      if (first >= n) break;
      const std::size_t last = std::min(first + kArity, n);
      // The earliest child, chosen by conditional moves: which child wins is a coin toss that a
      // branch would mispredict half the time.
      std::size_t m = first;
      Key km = key(heap_[first]);
      for (std::size_t c = first + 1; c < last; ++c) {
        const Key kc = key(heap_[c]);
        const bool earlier = kc < km;
        m = earlier ? c : m;
        km = earlier ? kc : km;
      }
      if (!(km < kx)) break;
      heap_[i] = heap_[m];
      i = m;
    }
    heap_[i] = x;
  }

  std::vector<Event> heap_;
  EventHandler* wake_ = nullptr;
  bool stopped_ = false;
  std::uint32_t wake_kind_ = 0;
  std::uint64_t next_seq_ = 0;
  std::uint64_t processed_ = 0;
  SimTime now_ = 0;
};

}  // namespace kvfleet::sim
