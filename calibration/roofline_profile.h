#pragma once
// Roofline profiles (what the datasheet predicts, labelled as not measured) and the comparison
// of the roofline with measured profiles, operation by operation.
#include <string>
#include <vector>

#include "sim/cost/profile_data.h"
#include "sim/cost/roofline.h"
#include "sim/model/presets.h"

namespace kvfleet::calibration {

// The linear layers of `model` on one GPU at tensor parallelism `tp`: (op, n, k, scope, axis),
// as calibration measures them.
struct LinearShape {
  std::string op;
  int n = 0;
  int k = 0;
  std::string scope;
  std::string axis;
};
std::vector<LinearShape> linear_shapes(const sim::ModelSpec& model, int tp);

// A profile whose every point is the roofline's prediction (RooflineCostModel's rules and
// efficiencies): linear-layer curves over tokens 1 … 16,384, decode attention over batch ×
// context and prefill attention over chunk × prefix, per layer. meta.measured = false.
sim::Profile roofline_profile(const sim::ModelSpec& model, const sim::GpuSpec& gpu, int tp,
                              const sim::RooflineCostModel::Config& cfg = {});

// Roofline against a measured profile for each linear layer the profile holds: signed error
// (roofline − measured) / measured over the profile's token points.
struct OpComparison {
  std::string op;
  int points = 0;
  double median_error = 0;  // signed, fraction
  double median_ape = 0;
  double p95_ape = 0;
  double error_small = 0;  // at the smallest token count (weight-streaming regime)
  double error_large = 0;  // at the largest (compute regime)
};
std::vector<OpComparison> compare_with_roofline(const sim::Profile& measured,
                                                const sim::ModelSpec& model,
                                                const sim::GpuSpec& gpu, int tp,
                                                const sim::RooflineCostModel::Config& cfg = {});

}  // namespace kvfleet::calibration
