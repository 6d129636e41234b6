#pragma once
// Runs one scenario at 8 loads on background threads for the GUI: results arrive one point at a
// time (signals, queued to the GUI thread), a run can be cancelled mid-point (a cancel token the
// runs check between events), and the numbers are those `kvfleet run` prints for the same
// scenario and load. The pool is sim::run_points, as for sweeps and capacity searches.
#include <QtCore/QObject>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sim/core/cancel.h"
#include "sim/metrics/summary.h"
#include "sim/simulation/simulation.h"

namespace kvfleet::gui {

struct LoadPoint {
  double load = 0;
  bool done = false;
  // While it runs: the simulated time it has reached and the requests sent so far (updated at
  // every time-series sample), and the requests its workload will send (0: not known ahead, as
  // for closed-loop conversations).
  bool started = false;
  double simulated_s = 0;
  std::size_t requests_so_far = 0, requests_total = 0;
  bool ok = false;
  std::string error;
  sim::Summary summary;
  std::vector<sim::TimeSeries> timeseries;  // per replica
  std::vector<sim::ReplicaResult> replicas;
};

class LoadSweep : public QObject {
  Q_OBJECT
 public:
  explicit LoadSweep(QObject* parent = nullptr);
  ~LoadSweep() override;

  // Scales `key` of the scenario (YAML text, relative paths from base_dir) by each factor.
  // Returns false (and does nothing) while a sweep runs.
  bool start(const std::string& yaml, const std::string& base_dir,
             const std::vector<std::string>& overrides, const std::string& key, double base_load,
             const std::vector<double>& factors, int threads = 0);
  void cancel();
  // Cancels a run in progress, waits for it, and forgets every point (a new scenario).
  void reset();
  bool running() const { return running_.load(); }
  // A copy, safe from any thread; in the order of the factors given to start() (ascending
  // loads for the window's sweeps).
  std::vector<LoadPoint> points() const;
  const std::string& key() const { return key_; }
  // The points done, plus each running point's share done (its requests sent over its
  // workload's total when that is known, else 0): a progress that moves within a point.
  double doneFraction() const;
  // "2 of 8 loads done; running: 150 users at 412 s simulated (3,100 requests), ..."
  QString describeProgress() const;

 Q_SIGNALS:
  void pointDone(int index);
  void progress(int done, int total);
  void finished(bool cancelled);

 private:
  void join();
  // One point's run on the worker thread (its progress and result into points_); false when it
  // was cancelled (nothing recorded).
  bool runPoint(std::size_t i, const std::string& yaml, const std::string& base_dir,
                const std::vector<std::string>& overrides, sim::CancelToken* cancel);
  std::thread worker_;  // runs sim::run_points (a pool of its own)
  mutable std::mutex mu_;
  std::vector<LoadPoint> points_;
  std::shared_ptr<sim::CancelToken> cancel_;
  std::atomic<bool> running_{false};
  std::string key_;
};

}  // namespace kvfleet::gui
