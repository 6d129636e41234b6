#pragma once
// The waiting queue of one replica (vLLM v1: vllm/v1/core/sched/request_queue.py). FCFS keeps
// arrival order and puts preempted requests back at the front; PRIORITY orders by (priority,
// arrival time), lower first, preempted requests included.
#include <cstdint>
#include <deque>
#include <set>
#include <tuple>

#include "sim/core/time.h"

namespace kvfleet::sim {

class WaitQueue {
 public:
  explicit WaitQueue(bool by_priority = false) : by_priority_(by_priority) {}

  bool by_priority() const { return by_priority_; }
  bool empty() const { return by_priority_ ? ordered_.empty() : fifo_.empty(); }
  std::size_t size() const { return by_priority_ ? ordered_.size() : fifo_.size(); }
  std::uint32_t front() const {
    return by_priority_ ? std::get<3>(*ordered_.begin()) : fifo_.front();
  }
  void pop_front() {
    if (by_priority_)
      ordered_.erase(ordered_.begin());
    else
      fifo_.pop_front();
  }
  // A newly arrived request.
  void push_new(std::uint32_t slot, std::int32_t priority, SimTime arrival, std::uint64_t id) {
    if (by_priority_)
      ordered_.insert({priority, arrival, id, slot});
    else
      fifo_.push_back(slot);
  }
  // A preempted request going back to wait.
  void push_preempted(std::uint32_t slot, std::int32_t priority, SimTime arrival,
                      std::uint64_t id) {
    if (by_priority_)
      ordered_.insert({priority, arrival, id, slot});
    else
      fifo_.push_front(slot);
  }
  // Removes `slot` if it waits here. O(size).
  bool erase(std::uint32_t slot) {
    if (by_priority_) {
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
    if (by_priority_)
      for (const auto& k : ordered_) f(std::get<3>(k));
    else
      for (auto s : fifo_) f(s);
  }
  void clear() {
    fifo_.clear();
    ordered_.clear();
  }

 private:
  bool by_priority_;
  std::deque<std::uint32_t> fifo_;
  std::set<std::tuple<std::int32_t, SimTime, std::uint64_t, std::uint32_t>> ordered_;
};

}  // namespace kvfleet::sim
