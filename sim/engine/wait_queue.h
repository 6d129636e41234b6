#pragma once
// The waiting queue of one replica (vLLM v1: vllm/v1/core/sched/request_queue.py). FIFO keeps
// arrival order and puts preempted requests back at the front (FCFS); KEYED orders by a key the
// scheduling policy gives (priority for PRIORITY), then arrival time and id, lower first,
// preempted requests included.
#include <cstdint>
#include <deque>
#include <set>
#include <tuple>

#include "sim/core/ids.h"
#include "sim/core/time.h"

namespace kvfleet::sim {

class WaitQueue {
 public:
  explicit WaitQueue(bool keyed = false) : keyed_(keyed) {}

  bool keyed() const { return keyed_; }
  bool empty() const { return keyed_ ? ordered_.empty() : fifo_.empty(); }
  std::size_t size() const { return keyed_ ? ordered_.size() : fifo_.size(); }
  SlotId front() const { return keyed_ ? std::get<3>(*ordered_.begin()) : fifo_.front(); }
  void pop_front() {
    if (keyed_)
      ordered_.erase(ordered_.begin());
    else
      fifo_.pop_front();
  }
  // A newly arrived request.
  void push_new(SlotId slot, std::int64_t key, SimTime arrival, std::uint64_t id) {
    if (keyed_)
      ordered_.insert({key, arrival, id, slot});
    else
      fifo_.push_back(slot);
  }
  // A preempted request going back to wait.
  void push_preempted(SlotId slot, std::int64_t key, SimTime arrival, std::uint64_t id) {
    if (keyed_)
      ordered_.insert({key, arrival, id, slot});
    else
      fifo_.push_front(slot);
  }
  // Removes `slot` if it waits here. O(size).
  bool erase(SlotId slot) {
    if (keyed_) {
      for (auto it = ordered_.begin(); it != ordered_.end(); ++it)
        if (std::get<3>(*it) == slot) {
          ordered_.erase(it);
          return true;
        }
      return false;
    }
    for (auto it = fifo_.begin(); it != fifo_.end(); ++it)
      if (*it == slot) {
        fifo_.erase(it);
        return true;
      }
    return false;
  }
  template <class F>
  void for_each(F f) const {
    if (keyed_)
      for (const auto& k : ordered_) f(std::get<3>(k));
    else
      for (auto s : fifo_) f(s);
  }
  void clear() {
    fifo_.clear();
    ordered_.clear();
  }
  // Takes every waiting request's key again (keyed only): key_of(slot).
  template <class F>
  void rekey(F key_of) {
    if (!keyed_) return;
    decltype(ordered_) fresh;
    for (const auto& [key, arrival, id, slot] : ordered_)
      fresh.insert({key_of(slot), arrival, id, slot});
    ordered_.swap(fresh);
  }

 private:
  bool keyed_;
  std::deque<SlotId> fifo_;
  std::set<std::tuple<std::int64_t, SimTime, std::uint64_t, SlotId>> ordered_;
};

}  // namespace kvfleet::sim
