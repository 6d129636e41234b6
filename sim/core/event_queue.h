#pragma once
// One event queue for the whole simulation, ordered by (time, sequence number) so that events at
// equal times run in the order they were scheduled: ties break deterministically.
#include <algorithm>
#include <cassert>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "sim/core/time.h"

namespace kvfleet::sim {

// What push() returns: one scheduled event, for cancel() and remove() (as ns-3's EventId). A
// default-constructed id names no event.
class EventId {
 public:
  EventId() = default;
  bool valid() const { return seq_ != kNone; }
  SimTime time() const { return time_; }
  friend bool operator==(const EventId&, const EventId&) = default;

 private:
  friend class EventQueue;
  EventId(std::uint64_t seq, SimTime time) : seq_(seq), time_(time) {}
  static constexpr std::uint64_t kNone = UINT64_MAX;
  std::uint64_t seq_ = kNone;
  SimTime time_ = kTimeNever;
};

// What the queue delivers events to. Components derive from EventHandlerOf<Kind> below, which
// types their events; this base is the queue's view of them.
class EventHandler {
 public:
  virtual ~EventHandler() = default;
  virtual void on_event(std::uint32_t kind, std::uint64_t arg, SimTime now) = 0;

 protected:
  [[noreturn]] static void unknown_event_kind(std::uint32_t kind, const char* who) {
    throw std::logic_error(std::string(who) + ": unknown event kind " + std::to_string(kind));
  }
};

// A component whose events are the enumerators of `Kind`, an enum class whose last enumerator is
// kCount. The queue takes only a component's own kinds for it (push(time, this, Kind::kX, arg)
// does not compile with another component's kind), and a kind outside the enum is refused before
// it reaches handle(). `arg` is the kind's own argument (a request id, a pool index, an encoded
// struct); one virtual call per event, one event per engine step, never one per token.
template <class Kind>
class EventHandlerOf : public EventHandler {
  static_assert(std::is_enum_v<Kind>, "an event kind is an enum class ending in kCount");

 public:
  using EventKind = Kind;
  void on_event(std::uint32_t kind, std::uint64_t arg, SimTime now) final {
    if (kind >= static_cast<std::uint32_t>(Kind::kCount)) [[unlikely]]
      unknown_event_kind(kind, handler_name());
    handle(static_cast<Kind>(kind), arg, now);
  }

 protected:
  virtual void handle(Kind kind, std::uint64_t arg, SimTime now) = 0;
  virtual const char* handler_name() const = 0;
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

  // Schedules an event of `target`'s own kind; `time` must not lie before the current time.
  template <class Kind>
  EventId push(SimTime time, EventHandlerOf<Kind>* target, Kind kind, std::uint64_t arg = 0) {
    return push_raw(time, target, static_cast<std::uint32_t>(kind), arg);
  }

  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  SimTime now() const { return now_; }
  // The time of the event delivered before the current one (0 before the second).
  SimTime previous_time() const { return prev_; }
  SimTime next_time() const { return heap_.empty() ? kTimeNever : heap_.front().time; }
  // The event being delivered (inside a handler), else an invalid id.
  EventId current() const { return current_; }

  // Pops the earliest event, advances the clock to it and delivers it (unless it was cancelled).
  // Returns false when empty.
  bool step() {
    if (heap_.empty()) return false;
    Event e = heap_.front();
    heap_.front() = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) sift_down(0);
    prev_ = now_;
    now_ = e.time;
    ++processed_;
    if (wake_) [[unlikely]] {
      EventHandler* w = wake_;
      wake_ = nullptr;
      w->on_event(wake_kind_, 0, now_);
    }
    if (!cancelled_.empty() && cancelled_.erase(e.seq)) [[unlikely]]
      return true;  // cancelled: the clock moved to it, nothing is delivered
    current_ = EventId(e.seq, e.time);
    e.target->on_event(e.kind, e.arg, now_);
    current_ = EventId();
    return true;
  }

  // Cancels a pending event (ns-3's EventId::Cancel): it keeps its place in the queue and is
  // dropped, not delivered, when its time comes, exactly as an event its handler ignores. O(1).
  // `id` must name an event not yet delivered (a component forgets an id once it is delivered).
  void cancel(EventId id) {
    if (!id.valid()) return;
    assert(id.time_ >= now_ && id.seq_ < next_seq_);
    cancelled_.insert(id.seq_);
  }

  // Takes a pending event out of the queue and returns it, or nothing if it is no longer there
  // (ns-3's Simulator::Remove). Linear in the queue's size: for rare use (pausing a periodic
  // event while nothing happens); reinsert() puts it back in its place.
  std::optional<Event> remove(EventId id) {
    if (!id.valid()) return std::nullopt;
    for (std::size_t i = 0; i < heap_.size(); ++i) {
      if (heap_[i].seq != id.seq_) continue;
      const Event e = heap_[i];
      heap_[i] = heap_.back();
      heap_.pop_back();
      if (i < heap_.size()) {
        sift_up(i);
        sift_down(i);
      }
      if (!cancelled_.empty() && cancelled_.erase(e.seq)) return std::nullopt;
      return e;
    }
    return std::nullopt;
  }
  // Puts a removed event back with its place among events of equal time (its sequence number);
  // returns its id (the one it had).
  EventId reinsert(const Event& e) {
    assert(e.time >= now_ && e.seq < next_seq_);
    heap_.push_back(e);
    sift_up(heap_.size() - 1);
    return EventId(e.seq, e.time);
  }

  // Before the next event is delivered (after the clock has moved to it), `target` receives
  // `kind` once. A component that stopped its periodic events while nothing happened uses this
  // to take them up again before anything can happen (Simulation's idle fast-forward).
  template <class Kind>
  void wake_before_next(EventHandlerOf<Kind>* target, Kind kind) {
    wake_ = target;
    wake_kind_ = static_cast<std::uint32_t>(kind);
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

  EventId push_raw(SimTime time, EventHandler* target, std::uint32_t kind, std::uint64_t arg) {
    assert(time >= now_);
    if (time > kMaxSimTime) [[unlikely]]
      clock_range_error(to_seconds(time));
    heap_.push_back(Event{time, next_seq_, target, kind, arg});
    sift_up(heap_.size() - 1);
    return EventId(next_seq_++, time);
  }

  std::vector<Event> heap_;
  std::unordered_set<std::uint64_t> cancelled_;  // sequence numbers of cancelled pending events
  EventId current_;
  EventHandler* wake_ = nullptr;
  bool stopped_ = false;
  std::uint32_t wake_kind_ = 0;
  std::uint64_t next_seq_ = 0;
  std::uint64_t processed_ = 0;
  SimTime now_ = 0;
  SimTime prev_ = 0;
};

}  // namespace kvfleet::sim
