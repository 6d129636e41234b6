// kvfleet-calibrate fit as a user runs it: a fit lowers the error of the runs it saw, the file it
// writes makes `kvfleet replay --calibration` print exactly the error the fit reported, the
// leave-one-run-out table is filled, what no run exercises is named, and bad input is refused
// before anything is written.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>

#include "support/cli.h"

namespace kvfleet {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using Cli = testing::CliTest;

std::string reference_file(const std::string& rel) {
  const fs::path p = fs::path(KVFLEET_REFERENCE_DIR) / rel;
  return fs::exists(p) ? p.string() : std::string();
}

const std::string kBench = std::string(KVFLEET_SOURCE_DIR) + "/tests/data/bench";

testing::Output calibrate(const std::string& args) {
  return testing::run_tool("kvfleet-calibrate", args);
}

// "| RUN | format | TP | before | after | left out |": the numbers (percent; NaN for "-").
std::vector<double> row_of(const std::string& text, const std::string& run) {
  const auto at = text.find("| " + run + " |");
  if (at == std::string::npos) return {};
  const std::string line = text.substr(at, text.find('\n', at) - at);
  std::vector<double> v;
  std::smatch m;
  std::string rest = line;
  static const std::regex cell(R"(\| (-|[0-9.]+%) )");
  while (std::regex_search(rest, m, cell)) {
    v.push_back(m[1] == "-" ? NAN : std::stod(m[1]));
    rest = m.suffix();
  }
  return v;
}

TEST_F(Cli, FitLowersTheErrorAndReplayWithTheFileAgrees) {
  const std::string run = reference_file("validation/vllm-0.19-rtx4090-llama-3.1-8b");
  if (run.empty()) GTEST_SKIP() << "../shared/reference is absent: no measured run to fit";
  const auto fit =
      calibrate("fit " + run + " --max-evals 60 --no-leave-one-out --out " + path("cal.yaml"));
  ASSERT_EQ(fit.status, 0) << fit.text;
  const std::vector<double> r = row_of(fit.text, run);
  ASSERT_EQ(r.size(), 3u) << fit.text;  // before, after, left out
  EXPECT_LE(r[1], r[0]) << fit.text;
  EXPECT_TRUE(std::isnan(r[2]));
  // One TP-1 run exercises no link: said so, and the file leaves it out.
  EXPECT_THAT(fit.text, HasSubstr("Not fitted: no run's error moves with them"));
  EXPECT_THAT(fit.text, HasSubstr("  link_Bps\n"));
  const auto replay = testing::kvfleet("replay " + run + " -q --calibration " + path("cal.yaml"));
  ASSERT_EQ(replay.status, 0) << replay.text;
  char want[80];
  std::snprintf(want, sizeof want, "Mean absolute error over the twelve: %.1f%%", r[1]);
  EXPECT_THAT(replay.text, HasSubstr(want));
  // A scenario's pool takes the file too.
  const auto sc = write("s.yaml",
                        "workload: {impl: synthetic, num_requests: 20, arrival: {impl: poisson, "
                        "rate_per_s: 2}, input_tokens: {impl: fixed, value: 500}, output_tokens: "
                        "{impl: fixed, value: 50}}\npools:\n  - model: Llama-3.1-8B\n"
                        "    calibration: cal.yaml\n");
  const auto ran = testing::kvfleet("run " + sc + " -q");
  EXPECT_EQ(ran.status, 0) << ran.text;
}

TEST_F(Cli, OneRunSplitByLoadFitsOnOnePartAndScoresTheOther) {
  // --score-requests: the whole run replayed, one part scored (the other is its warm-up).
  const std::string run = reference_file("validation/vllm-0.19-rtx4090-llama-3.1-8b");
  if (run.empty()) GTEST_SKIP() << "../shared/reference is absent: no measured run to split";
  const auto fit = calibrate("fit " + run + " --score-requests 0:150 --max-evals 60 --out " +
                             path("first.yaml"));
  ASSERT_EQ(fit.status, 0) << fit.text;
  const auto part = testing::kvfleet("replay " + run + " -q --calibration " + path("first.yaml") +
                                     " --score-requests 150:");
  ASSERT_EQ(part.status, 0) << part.text;
  EXPECT_THAT(part.text, HasSubstr("scored: requests 150 to the end in arrival order"));
  const auto whole = testing::kvfleet("replay " + run + " -q --calibration " + path("first.yaml"));
  // Another part, another number; the whole run's as before without the option.
  const auto last = [](const std::string& t) { return t.substr(t.rfind("Mean absolute")); };
  EXPECT_NE(last(part.text), last(whole.text));
  const auto none = testing::kvfleet("replay " + run + " -q --score-requests 300:");
  EXPECT_EQ(none.status, 2) << none.text;
  EXPECT_THAT(none.text, HasSubstr("holds no measured request in requests 300 to the end"));
}

TEST_F(Cli, ScoreWindowsAreCheckedBeforeAnyWork) {
  const auto bench = testing::kvfleet("replay " + kBench +
                                      "/vllm-bench/detailed.json --gpu H100-SXM -q "
                                      "--score-requests 0:10 --out " +
                                      path("r.h5"));
  EXPECT_EQ(bench.status, 2) << bench.text;
  EXPECT_THAT(bench.text, HasSubstr("applies to run folders"));
  for (const char* bad : {"10", "5:5", "a:3", "-1:"}) {
    const auto o = calibrate("fit " + kBench +
                             "/vllm-bench/detailed.json --gpu H100-SXM "
                             "--score-requests " +
                             std::string(bad) + " --out " + path("cal.yaml"));
    EXPECT_EQ(o.status, 2) << bad << ": " << o.text;
    EXPECT_THAT(o.text, HasSubstr("--score-requests")) << bad;
  }
  EXPECT_FALSE(fs::exists(path("r.h5")));
  EXPECT_FALSE(fs::exists(path("cal.yaml")));
}

TEST_F(Cli, FitOfTwoRunsScoresEachWithTheOthersFit) {
  const auto fit = calibrate("fit " + kBench + "/inference-perf-shared-prefix " + kBench +
                             "/vllm-bench/detailed.json --gpu H100-SXM --max-evals 40 --out " +
                             path("cal.yaml"));
  ASSERT_EQ(fit.status, 0) << fit.text;
  for (const std::string run :
       {kBench + "/inference-perf-shared-prefix", kBench + "/vllm-bench/detailed.json"}) {
    const std::vector<double> r = row_of(fit.text, run);
    ASSERT_EQ(r.size(), 3u) << run << "\n" << fit.text;
    EXPECT_TRUE(std::isfinite(r[2])) << run;
  }
  EXPECT_THAT(fit.text, HasSubstr("leave-one-out: fitting without"));
  EXPECT_TRUE(fs::exists(path("cal.yaml")));
}

TEST_F(Cli, TracesLeftByAKilledReplayOrFitGoWithTheNextOne) {
  // A replay's and a fit's traces live in TMPDIR/kvfleet-{replay,fit}.tmp-PID; a process killed
  // outright leaves its folder, which the next one removes; a finished one leaves nothing.
  const fs::path tmp = path("tmp");
  fs::create_directories(tmp / "kvfleet-replay.tmp-999999");
  fs::create_directories(tmp / "kvfleet-fit.tmp-999998");
  std::ofstream(tmp / "kvfleet-replay.tmp-999999" / "trace.csv") << "left by kill -9\n";
  const std::string env = "TMPDIR=" + tmp.string() + " ";
  const std::string bench = kBench + "/vllm-bench/detailed.json --gpu H100-SXM";
  const auto replay = testing::run_tool("kvfleet", "replay " + bench + " -q", env);
  ASSERT_EQ(replay.status, 0) << replay.text;
  EXPECT_FALSE(fs::exists(tmp / "kvfleet-replay.tmp-999999"));
  const auto fit = testing::run_tool(
      "kvfleet-calibrate", "fit " + bench + " --max-evals 20 --out " + path("cal.yaml"), env);
  ASSERT_EQ(fit.status, 0) << fit.text;
  EXPECT_TRUE(fs::is_empty(tmp)) << "left in TMPDIR: " << fs::directory_iterator(tmp)->path();
}

TEST_F(Cli, ARunOnAGpuWithoutAPresetFitsTheDatasheetItIsGiven) {
  // A run folder whose GPU matches no preset replays on the datasheet --gpu names (with the
  // run's memory); the fit is of that preset, and the file applies to the replay and to a pool.
  const std::string run = reference_file("validation/vllm-0.19-rtx4090-llama-3.1-8b");
  if (run.empty()) GTEST_SKIP() << "../shared/reference is absent: no measured run to fit";
  const fs::path dir = path("acme");
  fs::create_directories(dir);
  for (const char* f : {"requests.jsonl", "config.json"}) fs::copy_file(fs::path(run) / f, dir / f);
  std::ifstream in(fs::path(run) / "meta.json");
  std::string meta((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  meta.replace(meta.find("NVIDIA GeForce RTX 4090"), 23, "Acme Accelerator X1");
  std::ofstream(dir / "meta.json") << meta;
  std::ifstream cin(fs::path(run) / "config.json");
  std::string cfg((std::istreambuf_iterator<char>(cin)), std::istreambuf_iterator<char>());
  cfg.replace(cfg.find("\"RTX4090\""), 9, "\"AcmeX1\"");
  std::ofstream(dir / "config.json") << cfg;
  const auto bare = calibrate("fit " + dir.string() + " --out " + path("cal.yaml"));
  EXPECT_EQ(bare.status, 2) << bare.text;
  EXPECT_THAT(bare.text, HasSubstr("matches no GPU preset"));
  const auto fit =
      calibrate("fit " + dir.string() + " --gpu RTX-4090 --max-evals 20 --no-leave-one-out --out " +
                path("cal.yaml"));
  ASSERT_EQ(fit.status, 0) << fit.text;
  std::ifstream cal(path("cal.yaml"));
  const std::string text((std::istreambuf_iterator<char>(cal)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("gpu: RTX-4090"));
  const auto replay = testing::run_tool(
      "kvfleet", "replay " + dir.string() + " --gpu RTX-4090 -q --calibration " + path("cal.yaml"));
  EXPECT_EQ(replay.status, 0) << replay.text;
}

TEST_F(Cli, FitRefusesRunsOfTwoGpusAndWritesNothing) {
  const std::string run = reference_file("validation/vllm-0.19-rtx4090-llama-3.1-8b");
  const std::string other = kBench + "/vllm-bench/detailed.json --gpu H100-SXM";
  if (!run.empty()) {
    // --gpu applies to benchmark results; the run folder records its RTX 4090.
    const auto two = calibrate("fit " + kBench + "/vllm-bench/detailed.json " + run +
                               " --gpu H100-SXM --out " + path("cal.yaml"));
    EXPECT_EQ(two.status, 2) << two.text;
    EXPECT_THAT(two.text, HasSubstr("a fit is of one GPU"));
  }
  const auto missing =
      calibrate("fit " + path("nowhere") + " --gpu H100-SXM --out " + path("cal.yaml"));
  EXPECT_EQ(missing.status, 2) << missing.text;
  EXPECT_THAT(missing.text, HasSubstr("nowhere"));
  const auto onto = calibrate("fit " + other + " --out " + kBench + "/vllm-bench/detailed.json");
  EXPECT_EQ(onto.status, 2) << onto.text;
  EXPECT_THAT(onto.text, HasSubstr("is an input"));
  EXPECT_FALSE(fs::exists(path("cal.yaml")));
}

}  // namespace
}  // namespace kvfleet
