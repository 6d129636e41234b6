// The kvfleet command line as a user meets it: help, a good run with its files, and bad input
// (exit status 2, one message naming file, line or row and key, no output file left behind).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <thread>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "support/cli.h"

namespace kvfleet {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

using testing::kvfleet;
using Cli = testing::CliTest;

const char* kGood = R"(name: small
workload:
  impl: synthetic
  num_requests: 200
  arrival: {impl: poisson, rate_per_s: 10}
  input_tokens: {impl: lognormal, mean: 161, sigma: 1.0, max: 2048}
  output_tokens: {impl: lognormal, mean: 338, sigma: 0.8, max: 2048}
pools:
  - name: p
    model: Llama-3-8B
    gpu: H100-SXM
)";

TEST_F(Cli, HelpOnEveryCommand) {
  for (const char* c : {"--help", "run --help", "schema --help", "presets --help"}) {
    const auto o = kvfleet(c);
    EXPECT_EQ(o.status, 0) << c;
    EXPECT_THAT(o.text, HasSubstr("Usage: kvfleet")) << c;
  }
  EXPECT_EQ(kvfleet("frobnicate").status, 2);
  EXPECT_EQ(kvfleet("run --no-such-option").status, 2);
}

// The same sweep command gives the same bytes (the thread count does not change the numbers:
// Sweep.ResultsDoNotDependOnTheThreadCount); --timing adds the wall times.
TEST_F(Cli, ASweepFileIsByteIdenticalRunToRun) {
  const std::string sweep = write("s.yaml", "base: " + std::string(KVFLEET_SOURCE_DIR) +
                                                "/scenarios/default.yaml\n"
                                                "set: [workload.num_requests=100]\n"
                                                "axes: [{key: workload.arrival.rate_per_s, "
                                                "values: [5, 10, 20]}]\nreplicates: 2\n");
  const std::string cmd = "sweep " + sweep + " -q -j 3 --out " + path("a.h5");
  ASSERT_EQ(kvfleet(cmd).status, 0);
  fs::rename(path("a.h5"), path("first.h5"));
  ASSERT_EQ(kvfleet(cmd).status, 0);
  auto bytes = [](const std::string& f) {
    std::ifstream in(f, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_TRUE(bytes(path("first.h5")) == bytes(path("a.h5"))) << "files differ";
  EXPECT_EQ(bytes(path("a.h5")).find("wall_s"), std::string::npos);
  ASSERT_EQ(kvfleet("sweep " + sweep + " -q --timing --out " + path("t.h5")).status, 0);
  EXPECT_NE(bytes(path("t.h5")).find("wall_s"), std::string::npos);
  // A file with wall times resumes like one without.
  const auto resumed = kvfleet("sweep " + sweep + " -q --resume --out " + path("t.h5"));
  EXPECT_EQ(resumed.status, 0) << resumed.text;
}

// A sweep file given to run, and a scenario given to sweep, are named for what they are.
TEST_F(Cli, ASweepFileAndAScenarioAreToldApart) {
  const std::string src = KVFLEET_SOURCE_DIR;
  const auto run = kvfleet("run " + src + "/scenarios/sweeps/load-vs-max-seqs.yaml");
  EXPECT_EQ(run.status, 2);
  EXPECT_THAT(run.text, HasSubstr("this is a sweep file"));
  EXPECT_THAT(run.text, HasSubstr("kvfleet sweep"));
  const auto sweep = kvfleet("sweep " + src + "/scenarios/default.yaml --out " + path("x.h5"));
  EXPECT_EQ(sweep.status, 2);
  EXPECT_THAT(sweep.text, HasSubstr("this is a scenario"));
  EXPECT_FALSE(fs::exists(path("x.h5")));
}

TEST_F(Cli, RunWritesReportHdf5AndCsv) {
  const auto sc = write("s.yaml", kGood);
  const auto out = (dir_ / "r.h5").string();
  const auto csv = (dir_ / "csv").string();
  const auto o = kvfleet("run " + sc + " --out " + out + " --csv " + csv + " --set seed=5");
  ASSERT_EQ(o.status, 0) << o.text;
  for (const char* s : {"Requests: 200 arrived, 200 completed", "TTFT", "TPOT", "E2E", "p99",
                        "KV cache usage", "memory budget", "weights", "KV pool"})
    EXPECT_THAT(o.text, HasSubstr(s));
  EXPECT_TRUE(fs::exists(out));
  for (const char* f :
       {"requests.csv", "summary.csv", "replicas.csv", "tenants.csv", "timeseries_p.csv"})
    EXPECT_TRUE(fs::exists(fs::path(csv) / f)) << f;
  std::ifstream req(fs::path(csv) / "requests.csv");
  std::string header;
  std::getline(req, header);
  EXPECT_THAT(header, HasSubstr("ttft_s"));
  EXPECT_EQ(outputs({"s.yaml"}).size(), 2u);  // r.h5 and csv/, no temporaries
}

// A fleet scenario from the catalogue: the report ends with the fleet's cost, waste and hotspot
// line and the client's view of retries.
TEST_F(Cli, FleetScenarioReportsCostWasteAndRetries) {
  const auto o = kvfleet("run " + std::string(KVFLEET_SOURCE_DIR) +
                         "/scenarios/fleet/deploy-no-drain.yaml --set workload.num_requests=3000");
  ASSERT_EQ(o.status, 0) << o.text;
  for (const char* s :
       {"Fleet: ", "GPU-hours", "per million output tokens", "GPU-s wasted",
        "hotspot (max/mean load)", "4 starts", "Clients: ", "retries", "E2E seen by clients"})
    EXPECT_THAT(o.text, HasSubstr(s));
}
TEST_F(Cli, BuiltInDefaultRunsWithoutAFile) {
  const auto o = kvfleet("run --quiet --set workload.num_requests=50");
  EXPECT_EQ(o.status, 0) << o.text;
}

struct Bad {
  const char* name;
  std::string yaml_tail;  // appended to kGood (or a whole file when it starts with '!')
  std::vector<std::string> must_say;
};

class CliBadInput : public Cli, public ::testing::WithParamInterface<Bad> {};

TEST_P(CliBadInput, ExitsTwoWithOneMessageAndNoFile) {
  const Bad& b = GetParam();
  std::string yaml = kGood;
  std::string trace_csv;
  if (b.yaml_tail.rfind("TRACE:", 0) == 0) {
    trace_csv = write("t.csv", b.yaml_tail.substr(6));
    yaml = std::string(kGood).replace(
        std::string(kGood).find("workload:"),
        std::string(kGood).find("pools:") - std::string(kGood).find("workload:"),
        "workload: {impl: trace, format: vidur, path: t.csv}\n");
  } else {
    yaml += b.yaml_tail;
  }
  const auto sc = write("s.yaml", yaml);
  const auto out = (dir_ / "r.h5").string();
  const auto o = kvfleet("run " + sc + " --out " + out);
  EXPECT_EQ(o.status, 2) << o.text;
  for (const auto& s : b.must_say) EXPECT_THAT(o.text, HasSubstr(s)) << o.text;
  EXPECT_EQ(std::count(o.text.begin(), o.text.end(), '\n'), 1) << "one message: " << o.text;
  EXPECT_FALSE(fs::exists(out));
  std::vector<std::string> inputs = {"s.yaml"};
  if (!trace_csv.empty()) inputs.push_back("t.csv");
  EXPECT_TRUE(outputs(inputs).empty());
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CliBadInput,
    ::testing::Values(
        Bad{"UnknownKey",
            "    engine: {max_num_seqz: 8}\n",
            {"s.yaml:12", "pools[0].engine.max_num_seqz", "unknown key", "max_num_seqs"}},
        Bad{"WrongType",
            "    replicas: two\n",
            {"s.yaml:12", "pools[0].replicas", "expected an integer"}},
        Bad{"EmptyTrace", "TRACE:", {"t.csv", "empty trace file"}},
        Bad{"UnknownModel", "    engine: {}\n  - name: q\n    model: GPT-9\n", {"pools"}},
        Bad{"BadTraceRow",
            "TRACE:arrived_at,num_prefill_tokens,num_decode_tokens\n0,10,5\n0.5,12,x\n",
            {"t.csv: row 3", "num_decode_tokens", "'x'"}},
        Bad{"YamlSyntax", "  - [unclosed\n", {"s.yaml:", "YAML syntax"}}),
    [](const auto& i) { return std::string(i.param.name); });

TEST_F(Cli, NegativeAndZeroRateViaFileAndSet) {
  std::string y = kGood;
  y.replace(y.find("rate_per_s: 10"), 14, "rate_per_s: -2");
  const auto sc = write("s.yaml", y);
  auto o = kvfleet("run " + sc + " --out " + (dir_ / "r.h5").string());
  EXPECT_EQ(o.status, 2);
  EXPECT_THAT(o.text, HasSubstr("s.yaml:5: workload.arrival.rate_per_s: must be > 0 (got -2)"));
  o = kvfleet("run " + sc + " --set workload.arrival.rate_per_s=0");
  EXPECT_EQ(o.status, 2);
  EXPECT_THAT(
      o.text,
      HasSubstr("--set workload.arrival.rate_per_s=0: workload.arrival.rate_per_s: must be > 0"));
  EXPECT_FALSE(fs::exists(dir_ / "r.h5"));
}

TEST_F(Cli, MissingTraceFileIsNamed) {
  std::string y = kGood;
  const auto w = y.find("workload:"), p = y.find("pools:");
  y.replace(w, p - w, "workload: {impl: trace, format: azure, path: nowhere.csv}\n");
  const auto sc = write("s.yaml", y);
  const auto o = kvfleet("run " + sc + " --out " + (dir_ / "r.h5").string());
  EXPECT_EQ(o.status, 2);
  EXPECT_THAT(o.text, HasSubstr("nowhere.csv"));
  EXPECT_THAT(o.text, HasSubstr("trace file not found"));
  EXPECT_FALSE(fs::exists(dir_ / "r.h5"));
}

TEST_F(Cli, MissingScenarioFile) {
  const auto o = kvfleet("run " + (dir_ / "absent.yaml").string());
  EXPECT_EQ(o.status, 2);
  EXPECT_THAT(o.text, HasSubstr("scenario file not found"));
}

}  // namespace
}  // namespace kvfleet

namespace kvfleet {
namespace {

TEST_F(Cli, SweepExitStatusSaysWhatHappened) {
  const std::string base = std::string(KVFLEET_SOURCE_DIR) + "/scenarios/default.yaml";
  // Bad input: exit 2 before any point runs, no results file.
  const auto bad =
      write("bad.yaml", "base: " + base + "\naxes: [{key: workload.nope, values: [1]}]\n");
  const auto o1 = kvfleet("sweep " + bad + " --out " + (dir_ / "r.h5").string());
  EXPECT_EQ(o1.status, 2) << o1.text;
  EXPECT_THAT(o1.text, HasSubstr("nope"));
  EXPECT_FALSE(fs::exists(dir_ / "r.h5"));
  // One point of four fails: exit 101, the others are in the file.
  const auto fail = write("fail.yaml", "base: " + base +
                                           "\nset: [workload.num_requests=50, "
                                           "\"pools[0].engine.enable_prefix_caching=false\"]\n"
                                           "axes:\n  - {key: \"pools[0].engine.kv_layout\", "
                                           "values: [paged, contiguous]}\n  - {key: "
                                           "\"pools[0].engine.enable_prefix_caching\", values: "
                                           "[false, true]}\n");
  const auto o2 = kvfleet("sweep " + fail + " --quiet --out " + (dir_ / "f.h5").string());
  EXPECT_EQ(o2.status, 101) << o2.text;
  EXPECT_THAT(o2.text, HasSubstr("1 failed"));
  EXPECT_THAT(o2.text, HasSubstr("point 3 failed"));
  EXPECT_TRUE(fs::exists(dir_ / "f.h5"));
  // A bad SLO: exit 2 naming it.
  const auto o3 = kvfleet("capacity --slo ttft_p99=fast");
  EXPECT_EQ(o3.status, 2) << o3.text;
  EXPECT_THAT(o3.text, HasSubstr("ttft_p99"));
}

TEST_F(Cli, AKilledSweepLeavesAReadableFileAndResumes) {
  const std::string base = std::string(KVFLEET_SOURCE_DIR) + "/scenarios/default.yaml";
  const auto sweep = write("s.yaml", "base: " + base +
                                         "\nset: [workload.num_requests=20000]\naxes:\n  - {key: "
                                         "workload.arrival.rate_per_s, range: {start: 10, stop: "
                                         "69, step: 1}}\nmetrics: [time_to_first_token_p99_s]\n");
  const std::string out = (dir_ / "r.h5").string();
  // Started in the background, checkpointing every 0.2 s, and killed with SIGKILL (no chance to
  // clean up) as soon as a checkpoint holds a point: no timing assumption.
  const std::string bin = std::string(KVFLEET_BINARY_DIR) + "/bin/kvfleet";
  const std::string pidfile = (dir_ / "pid").string();
  const std::string cmd = bin + " sweep " + sweep +
                          " --quiet --threads 1 --checkpoint-s 0.2 --out " + out +
                          " > /dev/null 2>&1 & echo $! > " + pidfile;
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  bool killed = false;
  for (int i = 0; i < 6000 && !killed; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!fs::exists(out)) continue;
    const auto m = kvfleet("merge " + (dir_ / "peek.h5").string() + " " + out);
    if (m.status == 0 && m.text.find("merge: 0 of") == std::string::npos) {
      std::ifstream pf(pidfile);
      long pid = 0;
      pf >> pid;
      ASSERT_GT(pid, 0);
      ASSERT_EQ(::kill(static_cast<pid_t>(pid), SIGKILL), 0);
      killed = true;
    }
  }
  ASSERT_TRUE(killed) << "no checkpoint with a finished point appeared";
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  fs::remove(dir_ / "peek.h5");
  fs::remove(pidfile);
  // A kill leaves at most the results, a temporary and the lock file of the dead process.
  for (const auto& name : outputs({"s.yaml"})) {
    EXPECT_TRUE(name == "r.h5" || name == "r.h5.lock" || name.find(".tmp-") != std::string::npos)
        << name;
  }
  const auto resumed = kvfleet("sweep " + sweep + " --resume --out " + out);
  EXPECT_EQ(resumed.status, 0) << resumed.text;
  // The next run on the path takes the stale lock over and removes the dead one's temporaries.
  EXPECT_EQ(outputs({"s.yaml"}), std::vector<std::string>{"r.h5"});
  // Some points were saved before the kill, and not all of them: the kill was mid-sweep.
  const auto at = resumed.text.find("60 points (");
  ASSERT_NE(at, std::string::npos) << resumed.text;
  const int saved = std::stoi(resumed.text.substr(at + 11));
  EXPECT_GT(saved, 0);
  EXPECT_LT(saved, 60);
  EXPECT_THAT(resumed.text, HasSubstr("60 of 60 points done"));
  // The resumed file is a complete, readable sweep file (merge reads it back).
  EXPECT_EQ(kvfleet("merge " + (dir_ / "m.h5").string() + " " + out).status, 0);
}

}  // namespace
}  // namespace kvfleet
