// Every result file says what made it (/provenance): kvfleet's version and commit, the command
// line, each pool's model and GPU as numbers, and every input file's SHA-256 and size; a sweep's
// file its version, commit, command and the sweep file's hash.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "sim/core/build_info.h"
#include "sim/io/file_hash.h"
#include "sim/io/h5.h"
#include "sim/metrics/summary.h"
#include "sim/output/results.h"
#include "sim/simulation/scenario.h"
#include "sim/simulation/simulation.h"

namespace kvfleet::sim {
namespace {

std::map<std::string, std::string> provenance_of(const std::string& path) {
  const h5::H5 f = h5::open_for_reading(path, "results");
  const Table t = h5::read_table(f.id, "provenance");
  const auto& k = std::get<std::vector<std::string>>(t.find("key")->data);
  const auto& v = std::get<std::vector<std::string>>(t.find("value")->data);
  std::map<std::string, std::string> m;
  for (std::size_t i = 0; i < k.size(); ++i) m[k[i]] = v[i];
  return m;
}

TEST(Provenance, ARunsFileNamesItsBuildCommandModelGpuAndInputs) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "provenance_test";
  fs::create_directories(dir);
  const fs::path trace = dir / "trace.csv";
  std::ofstream(trace) << "arrived_at,num_prefill_tokens,num_decode_tokens\n0,100,10\n0.5,200,20\n";
  const std::string yaml = "workload: {impl: trace, format: vidur, path: " + trace.string() +
                           "}\npools: [{model: Llama-3.1-8B, gpu: H100-SXM}]\n";
  const Scenario sc = load_scenario_text(yaml, "<t>", ".", {});
  Simulation sim(sc);
  const RunResult r = sim.run();
  set_command_line("kvfleet run provenance-test.yaml");
  const std::string out = (dir / "r.h5").string();
  write_results_h5(out, sc, r, summarize(r), "report");
  const auto p = provenance_of(out);
  EXPECT_EQ(p.at("kvfleet.version"), kvfleet_version());
  EXPECT_EQ(p.at("kvfleet.commit"), kvfleet_commit());
  EXPECT_FALSE(p.at("kvfleet.commit").empty());
  EXPECT_EQ(p.at("command_line"), "kvfleet run provenance-test.yaml");
  // The model and GPU as numbers, not only their names.
  EXPECT_EQ(p.at("pools[0].model.name"), "Llama-3.1-8B");
  EXPECT_EQ(p.at("pools[0].model.num_layers"), "32");
  EXPECT_EQ(p.at("pools[0].model.num_kv_heads"), "8");
  EXPECT_EQ(p.at("pools[0].gpu.name"), "H100-SXM");
  EXPECT_EQ(std::stod(p.at("pools[0].gpu.memory_bandwidth_Bps")), 3.35e12);
  EXPECT_EQ(p.at("pools[0].weight_dtype"), "bf16");
  // The trace it read, by content.
  EXPECT_EQ(p.at("input.workload.path.sha256"), sha256_file(trace.string()).sha256);
  EXPECT_EQ(p.at("input.workload.path.bytes"), std::to_string(fs::file_size(trace)));
  fs::remove_all(dir);
}

TEST(BuildInfo, TheCommandLineIsRecordedAsAShellWouldRunItAgain) {
  const char* argv[] = {"kvfleet", "run", "my scenario.yaml", "--set", "name=it's"};
  set_command_line(5, argv);
  EXPECT_EQ(command_line(), "kvfleet run 'my scenario.yaml' --set 'name=it'\\''s'");
}

}  // namespace
}  // namespace kvfleet::sim
