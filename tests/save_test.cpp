// Saving a scenario with changed fields keeps the file's comments (sim::scenario_text_with_sets,
// what the GUI's Save writes): on every shipped scenario, a set of typical edits saved and loaded
// again gives exactly the scenario the edits give as --set, and every comment line of the file is
// still there.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/config/yaml_edit.h"
#include "sim/simulation/scenario.h"

namespace kvfleet::sim {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::stringstream s;
  s << std::ifstream(p).rdbuf();
  return s.str();
}

TEST(Save, EditsKeepEveryCommentOfEveryShippedScenario) {
  const fs::path dir = fs::path(KVFLEET_SOURCE_DIR) / "scenarios";
  const std::vector<std::vector<std::string>> edits = {
      {"pools[0].engine.max_num_seqs=48"},
      {"seed=7", "pools[0].replicas=3"},
      {"pools[0].engine.enable_prefix_caching=false", "simulation.max_time_s=50"},
      {"name=renamed", "pools[0].engine.max_num_batched_tokens=1024"}};
  int files = 0, kept = 0, total = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().extension() != ".yaml" || e.path().string().find("/sweeps/") != std::string::npos)
      continue;
    const std::string text = read(e.path());
    const std::string base = e.path().parent_path().string();
    try {
      load_scenario_text(text, e.path().string(), base, {});
    } catch (const InputError&) {
      continue;  // needs ../shared/reference or a built profile
    }
    ++files;
    for (const auto& sets : edits) {
      try {
        load_scenario_text(text, e.path().string(), base, sets);
      } catch (const InputError&) {
        continue;  // an edit this scenario refuses (prefix caching its KV tiers need)
      }
      ++total;
      bool k = false;
      const std::string saved = scenario_text_with_sets(text, e.path().string(), base, sets, &k);
      EXPECT_EQ(load_scenario_text(saved, "saved", base, {}).resolved_yaml,
                load_scenario_text(text, "original", base, sets).resolved_yaml)
          << e.path();
      if (!k) {
        if (std::getenv("KVFLEET_SAVE_DEBUG"))
          std::printf("not kept: %s %s (%s)\n", e.path().c_str(), sets[0].c_str(),
                      config::edit_yaml_text(text, sets) ? "loads differently" : "no edit");
        continue;
      }
      ++kept;
      std::istringstream lines(text);
      for (std::string line; std::getline(lines, line);) {
        const auto hash = line.find_first_not_of(" \t");
        if (hash != std::string::npos && line[hash] == '#') {
          EXPECT_NE(saved.find(line), std::string::npos) << e.path() << ": lost " << line;
        }
      }
    }
  }
  EXPECT_GE(files, 20);
  // Most saves keep the text; the others (a flow mapping on the path) write the resolved scenario.
  EXPECT_GE(kept * 10, total * 8) << kept << " of " << total;
  std::printf("save: %d files, %d of %d edits saved in place\n", files, kept, total);
}

}  // namespace
}  // namespace kvfleet::sim
