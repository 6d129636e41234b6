#include "sim/sweep/point_runner.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace kvfleet::sim {

int usable_cores() {
  if (const char* slurm = std::getenv("SLURM_CPUS_PER_TASK")) {
    char* end = nullptr;
    const long v = std::strtol(slurm, &end, 10);
    if (end != slurm && *end == '\0' && v >= 1 && v <= 1 << 20) return static_cast<int>(v);
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n >= 1) return n;
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

void run_points(std::size_t n, const std::function<void(std::size_t)>& work,
                const PointRunnerOptions& opt) {
  CancelToken own;
  CancelToken& cancel = opt.cancel ? *opt.cancel : own;
  const std::size_t threads = std::max<std::size_t>(
      1, std::min<std::size_t>(std::max<std::size_t>(n, 1),
                               opt.threads > 0 ? static_cast<std::size_t>(opt.threads)
                                               : static_cast<std::size_t>(usable_cores())));
  std::atomic<std::size_t> next{0}, finished{0};
  std::mutex failure_mu;
  std::exception_ptr failure;
  const auto worker = [&] {
    for (std::size_t i = next++; i < n && !cancel.cancelled(); i = next++) {
      try {
        work(i);
      } catch (...) {  // a job's own errors are its business; this is a bug or out of memory
        std::lock_guard lock(failure_mu);
        if (!failure) failure = std::current_exception();
        cancel.cancel();
      }
      ++finished;
    }
  };
  // With nothing to report the calling thread is one of the workers rather than a poller.
  const bool reports = opt.on_progress || opt.on_checkpoint;
  std::vector<std::thread> pool;
  for (std::size_t t = reports ? 0 : 1; t < threads; ++t) {
    try {
      pool.emplace_back(worker);
    } catch (const std::system_error&) {
      break;  // no more threads (a process or memory limit): those started do the jobs
    }
  }
  if (!reports || pool.empty()) worker();
  auto last_report = std::chrono::steady_clock::now();
  auto last_checkpoint = last_report;
  auto seconds = [](auto a, auto b) { return std::chrono::duration<double>(a - b).count(); };
  // Reports while the pool works; a caller that worked itself only waits for the others.
  while (reports && finished.load() < n && !cancel.cancelled()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const auto now = std::chrono::steady_clock::now();
    try {
      if (opt.on_progress && seconds(now, last_report) >= opt.report_every_s) {
        opt.on_progress(finished.load(), n);
        last_report = now;
      }
      if (opt.on_checkpoint && seconds(now, last_checkpoint) >= opt.checkpoint_every_s) {
        opt.on_checkpoint();
        last_checkpoint = now;
      }
    } catch (...) {
      std::lock_guard lock(failure_mu);
      if (!failure) failure = std::current_exception();
      cancel.cancel();
    }
  }
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
  if (opt.on_progress && !cancel.cancelled()) opt.on_progress(std::min(finished.load(), n), n);
}

}  // namespace kvfleet::sim
