// The Chrome/Perfetto trace: every engine step of every replica, one after another on its track,
// and three spans per traced request in order (queued, prefill, decode).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>

#include "sim/output/chrome_trace.h"
#include "sim/simulation/scenario.h"
#include "sim/simulation/simulation.h"

namespace kvfleet {
namespace {

TEST(ChromeTrace, StepsTileEachReplicaAndRequestsHaveThreeSpans) {
  const auto sc = sim::load_scenario_text(sim::builtin_default_scenario(), "default", ".",
                                          {"workload.num_requests=400", "pools[0].replicas=2"});
  sim::Simulation s(sc);
  s.record_steps(1'000'000);
  const sim::RunResult r = s.run();
  const std::string path = ::testing::TempDir() + "/trace.json";
  sim::write_chrome_trace(path, r, 50);
  std::ifstream in(path);
  const auto j = nlohmann::json::parse(in);
  std::map<int, std::vector<std::pair<double, double>>> steps;
  std::map<std::string, std::vector<std::string>> spans;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X") steps[e["tid"].get<int>()].push_back({e["ts"], e["dur"]});
    if (e["ph"] == "b") spans[e["id"].get<std::string>()].push_back(e["name"]);
  }
  ASSERT_EQ(steps.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& v = steps[static_cast<int>(i)];
    EXPECT_EQ(static_cast<std::int64_t>(v.size()), r.replicas[i].stats.steps) << i;
    for (std::size_t k = 0; k < v.size(); ++k) {
      EXPECT_GT(v[k].second, 0);
      if (k > 0) {
        EXPECT_LE(v[k - 1].first + v[k - 1].second, v[k].first + 1e-3) << "overlap";
      }
    }
  }
  EXPECT_EQ(spans.size(), 50u);
  for (const auto& [id, names] : spans) {
    EXPECT_EQ(names, (std::vector<std::string>{"queued", "prefill", "decode"})) << id;
  }
}

}  // namespace
}  // namespace kvfleet
