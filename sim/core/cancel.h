#pragma once
// A cancel token, shared by whoever may cancel work (a GUI button, a failed checkpoint) and the
// work itself (a run checks it between events and stops: Simulation::set_cancel).
#include <atomic>

namespace kvfleet::sim {

class CancelToken {
 public:
  void cancel() { flag_.store(true, std::memory_order_relaxed); }
  bool cancelled() const { return flag_.load(std::memory_order_relaxed); }

 private:
  std::atomic<bool> flag_{false};
};

}  // namespace kvfleet::sim
