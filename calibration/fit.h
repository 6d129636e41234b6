#pragma once
// `kvfleet-calibrate fit RUN...`: the cost model of one GPU learned from a team's own measured
// runs. Each run is replayed as `kvfleet replay` replays it (its own files, the fitted cost model)
// and the factors on the GPU's public fits (cost_model.adjust), the step overhead, the frontend's
// times and the GPU-to-GPU link are searched for the least mean error over the runs, regularised
// toward the public fits (by default a factor e costs 3 points of error). A parameter that moves no
// run's error is not fitted, and said so. The result is a calibration file
// (sim/cost/calibration_file.h) that scenarios (pools[].calibration) and `kvfleet replay
// --calibration` take. docs/calibration.md, "Fit the cost model to your runs".
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "sim/replay/bench_results.h"
#include "sim/replay/replay.h"

namespace kvfleet::calibration {

// One measured run, ready to be replayed with one calibration after another.
class FitRun {
 public:
  // `o.path`: anything `kvfleet replay` takes (a run folder, a benchmark result, any level of
  // its folder); the other options as replay's. Throws InputError as replay does.
  // `window`: which of a run folder's requests are scored (sim/replay/replay.h).
  explicit FitRun(sim::BenchOptions o, sim::ScoreWindow window = {});
  ~FitRun();
  FitRun(const FitRun&) = delete;
  FitRun& operator=(const FitRun&) = delete;

  const std::string& path() const { return path_; }
  const std::string& format() const { return format_; }
  const std::string& gpu() const { return gpu_; }
  int tensor_parallel() const { return tp_; }
  // The replay's mean absolute error over the statistics compared (a fraction), with the
  // calibration file's settings (a null node: none) under the run's own; +inf where the
  // calibration makes the scenario invalid.
  // `lost` (when given) receives how far the simulation's count of requests that ended well
  // is from the measured count, a fraction of the measured: what the error leaves out when a
  // calibration makes requests time out or fail that the run served (or the reverse).
  double error(const YAML::Node& calibration, double* lost = nullptr) const;

 private:
  std::string path_, format_, gpu_, trace_, scenario_text_;
  std::string datasheet_;  // the preset a run folder's replay-gpu is made of (ReplayPlan)
  int tp_ = 1;
  YAML::Node scenario_;
  std::unique_ptr<sim::BenchReplay> bench_;  // null for a run folder
  sim::MeasuredLatencies measured_;          // a run folder's requests.jsonl, in the window
  sim::ScoreWindow window_;
};

struct FitOptions {
  int max_evaluations = 400;  // replays of all runs, per fit
  bool leave_one_out = true;  // also fit on all but each run and score that run
  double regularisation = 0.03;
};

struct FitResult {
  std::string gpu;
  YAML::Node calibration;                          // the file's content
  std::vector<double> before, after, left_out;     // per run (left_out NaN where not run)
  std::vector<std::string> fitted, not_exercised;  // parameters by name
  std::vector<std::string> values;                 // "name = value" of the fitted ones
  int evaluations = 0;
};

// Fits the runs (all on one GPU: InputError naming the run that is not). `log` receives progress.
FitResult fit_runs(const std::vector<std::unique_ptr<FitRun>>& runs, const FitOptions& o,
                   std::ostream& log);

// The result as the calibration file's text, its header comments saying what it was fitted to.
std::string calibration_text(const FitResult& r, const std::vector<std::unique_ptr<FitRun>>& runs,
                             const std::string& command);

}  // namespace kvfleet::calibration
