#pragma once
// kvfleet-calibrate's measuring pipeline: the model's operations on a backend, over grids that
// are refined where the time curve bends, fitted, and written as a profile.
#include <functional>
#include <string>

#include "calibration/backend.h"
#include "sim/cost/profile_data.h"
#include "sim/model/presets.h"

namespace kvfleet::calibration {

struct RunOptions {
  int tensor_parallel = 1;
  kernels::KvDtype kv_dtype = kernels::KvDtype::kBF16;
  bool quick = false;
  int block_size = 16;
  double refine_tolerance = 0.03;  // refine an interval when linear interpolation misses by more
  int holdout_every = 4;           // every k-th point is held out of the fit
};

// Called after each measurement: done so far, an upper bound of the total, what was measured.
using Progress = std::function<void(int done, int total, const std::string& what)>;

// Measures `model` at the options' tensor parallelism on `backend` and returns the profile:
// curves for the linear layers (QKV, O, gate+up, down per layer; lm_head per sampled sequence)
// and the KV write; decode and prefill attention points per layer; a fit per operation with its
// held-out error; metadata about the device, grid, versions and date.
sim::Profile calibrate(const sim::ModelSpec& model, const RunOptions& opt, Backend& backend,
                       const Progress& progress = {});

// Held-out error of a piecewise-linear curve: every k-th interior point is predicted from the
// others. Returns absolute percentage errors (fractions).
std::vector<double> curve_holdout_errors(const std::vector<double>& x, const std::vector<double>& t,
                                         int every);

}  // namespace kvfleet::calibration
