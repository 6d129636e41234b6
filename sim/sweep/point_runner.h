#pragma once
// One runner for independent simulation runs on all cores (a sweep's points, a capacity search's
// seeds, the GUI's load sweep): a pool of threads takes jobs in index order, the calling thread
// reports progress and writes checkpoints, and a cancel token stops it between events of the
// runs in flight (Simulation::set_cancel) rather than by an exception thrown from a callback.
#include <cstddef>
#include <functional>

#include "sim/core/cancel.h"

namespace kvfleet::sim {

struct PointRunnerOptions {
  int threads = 0;  // 0: usable_cores() (never more threads than jobs)
  // On the calling thread, about every `report_every_s`, and once at the end.
  std::function<void(std::size_t done, std::size_t total)> on_progress;
  double report_every_s = 0.5;
  // On the calling thread every `checkpoint_every_s` (write what is done).
  std::function<void()> on_checkpoint;
  double checkpoint_every_s = 10;
  CancelToken* cancel = nullptr;  // when set: jobs not started are skipped once it is cancelled
};

// The cores this process may use: SLURM_CPUS_PER_TASK when Slurm sets it (a job step's share),
// else the CPUs of this process's affinity mask (taskset, cgroups cpusets), else the hardware's.
// At least 1. What `threads = 0` means.
int usable_cores();

// Runs work(i) for every job i in [0, n) on a pool of threads and returns when all have ended
// (or, after a cancel, when the jobs in flight have). Without on_progress and on_checkpoint the
// calling thread is one of the pool; where no thread can be started it does every job itself.
// `work` handles its own job's errors; an exception that escapes it, on_progress or on_checkpoint
// cancels the run (the token when given) and the first is rethrown here once the threads have
// stopped.
void run_points(std::size_t n, const std::function<void(std::size_t)>& work,
                const PointRunnerOptions& opt);

// The options of a search over seeds (capacity, sizing): `threads`, the search's cancel token,
// and `poll` (when set) called about every 0.1 s on the calling thread.
inline PointRunnerOptions searching_options(int threads, CancelToken* cancel,
                                            const std::function<void()>& poll) {
  PointRunnerOptions ro;
  ro.threads = threads;
  ro.cancel = cancel;
  if (poll) {
    ro.report_every_s = 0.1;
    ro.on_progress = [poll](std::size_t, std::size_t) { poll(); };
  }
  return ro;
}

}  // namespace kvfleet::sim
