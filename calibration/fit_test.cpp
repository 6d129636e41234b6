// FitRun, the fit's view of one measured run: its error under a calibration, and how many of the
// measured requests the simulation lost (timed out, failed) or gained.
#include "calibration/fit.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <string>

namespace kvfleet::calibration {
namespace {

const std::string kBench = std::string(KVFLEET_SOURCE_DIR) + "/tests/data/bench";

YAML::Node step_overhead(double s) {
  YAML::Node c;
  c["kvfleet_calibration"] = 1;
  c["gpu"] = "H100-SXM";
  c["pool"]["cost_model"]["impl"] = "fitted";
  c["pool"]["cost_model"]["step_overhead_s"] = s;
  return c;
}

TEST(FitRun, CountsTheRequestsACalibrationLosesToTheClientsTimeout) {
  // inference-perf's request_timeout null is aiohttp's 300 s: steps of 3 s each time every
  // request out, which the latency error alone (over the survivors: none) cannot see.
  sim::BenchOptions o;
  o.path = kBench + "/inference-perf-shared-prefix";
  o.gpu = "H100-SXM";
  const FitRun run(o);
  double lost = -1;
  EXPECT_TRUE(std::isfinite(run.error(YAML::Node(), &lost)));
  EXPECT_EQ(lost, 0);
  EXPECT_TRUE(std::isfinite(run.error(step_overhead(0.01), &lost)));
  EXPECT_EQ(lost, 0);
  run.error(step_overhead(3), &lost);
  EXPECT_EQ(lost, 1);  // all 120 measured requests, none simulated
}

}  // namespace
}  // namespace kvfleet::calibration
