// docs/scenarios.md is generated from the parameter declarations; it must be current.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "sim/reference/reference.h"
#include "sim/simulation/scenario.h"
#include "sim/sweep/sweep.h"

namespace kvfleet {
namespace {

TEST(Docs, ScenarioReferenceIsCurrent) {
  std::ifstream in(std::string(KVFLEET_SOURCE_DIR) + "/docs/scenarios.md");
  ASSERT_TRUE(in) << "docs/scenarios.md missing";
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), sim::scenario_reference_markdown())
      << "docs/scenarios.md is out of date: run `build/bin/kvfleet schema > docs/scenarios.md`";
}

TEST(Docs, OutputReferenceIsCurrent) {
  std::ifstream in(std::string(KVFLEET_SOURCE_DIR) + "/docs/outputs.md");
  ASSERT_TRUE(in) << "docs/outputs.md missing";
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), sim::outputs_reference_markdown())
      << "docs/outputs.md is out of date: run `build/bin/kvfleet outputs > docs/outputs.md`";
}

TEST(Docs, BuiltInDefaultIsTheScenarioFile) {
  std::ifstream in(std::string(KVFLEET_SOURCE_DIR) + "/scenarios/default.yaml");
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), sim::builtin_default_scenario()) << "reconfigure the build";
}

// Every scenario in scenarios/ loads (references to ../shared/reference are allowed to be
// absent: such scenarios are skipped with a message).
TEST(Docs, EveryShippedScenarioLoads) {
  namespace fs = std::filesystem;
  int n = 0;
  for (const auto& e :
       fs::recursive_directory_iterator(std::string(KVFLEET_SOURCE_DIR) + "/scenarios")) {
    if (e.path().extension() != ".yaml") continue;
    if (e.path().parent_path().filename() == "sweeps") {  // sweep files, not scenarios
      EXPECT_NO_THROW(sim::validate_sweep(sim::load_sweep_file(e.path().string()))) << e.path();
      continue;
    }
    std::ifstream in(e.path());
    std::stringstream ss;
    ss << in.rdbuf();
    if (ss.str().find("shared/reference") != std::string::npos &&
        !fs::exists(KVFLEET_REFERENCE_DIR)) {
      std::cout << "skipping " << e.path() << ": ../shared/reference is absent\n";
      continue;
    }
    const std::string build_profiles = "build/profiles/";
    if (const auto at = ss.str().find(build_profiles); at != std::string::npos) {
      // A profile the build imports from ../shared/reference (calibration/CMakeLists.txt).
      const std::string rel = ss.str().substr(at, ss.str().find('\n', at) - at);
      if (!fs::exists(std::string(KVFLEET_SOURCE_DIR) + "/" + rel)) {
        std::cout << "skipping " << e.path() << ": " << rel
                  << " is made by the build in build/ from ../shared/reference, absent here\n";
        continue;
      }
    }
    EXPECT_NO_THROW(sim::load_scenario_file(e.path().string(), {})) << e.path();
    ++n;
  }
  EXPECT_GT(n, 0);
}

}  // namespace
}  // namespace kvfleet
