#pragma once
// Helpers shared by tests: run a scenario given as YAML text.
#include <filesystem>
#include <string>
#include <vector>

#include "sim/metrics/summary.h"
#include "sim/simulation/scenario.h"
#include "sim/simulation/simulation.h"

namespace kvfleet::testing {

inline sim::Scenario scenario_from(const std::string& yaml,
                                   const std::vector<std::string>& sets = {}) {
  return sim::load_scenario_text(yaml, "<test>", ".", sets);
}

struct Run {
  sim::Scenario scenario;
  sim::RunResult result;
  sim::Summary summary;
};

inline Run run_yaml(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  Run r{scenario_from(yaml, sets), {}, {}};
  sim::Simulation s(r.scenario);
  r.result = s.run();
  r.summary = sim::summarize(r.result);
  return r;
}

// Path to a file under ../shared/reference, or "" when the reference data is absent.
inline std::string reference_file(const std::string& rel) {
  const std::filesystem::path p = std::filesystem::path(KVFLEET_REFERENCE_DIR) / rel;
  return std::filesystem::exists(p) ? p.string() : std::string();
}

}  // namespace kvfleet::testing
