// `kvfleet replay` on benchmark clients' results, as a user runs it: an inference-perf result
// folder and `vllm bench serve` result JSONs (the made-up examples under tests/data/bench, marked
// synthetic) and a GuideLLM report (tests/data/conformance), each replayed with one command and
// compared per group; damaged or foreign files
// refused with exit status 2, naming the file and the field, and nothing written.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/cli.h"

namespace kvfleet {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::kvfleet;
using ::testing::Not;
using Cli = testing::CliTest;

const std::string kData = std::string(KVFLEET_SOURCE_DIR) + "/tests/data/bench";

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Copies a fixture folder into the test's folder, so that a test can damage its copy.
std::string copy_folder(const fs::path& from, const fs::path& to) {
  fs::create_directories(to);
  for (const auto& e : fs::directory_iterator(from))
    fs::copy_file(e.path(), to / e.path().filename());
  return to.string();
}

void replace_in(const fs::path& p, const std::string& from, const std::string& to) {
  std::string s = slurp(p);
  const auto at = s.find(from);
  ASSERT_NE(at, std::string::npos) << from << " not in " << p;
  s.replace(at, from.size(), to);
  std::ofstream(p) << s;
}

TEST_F(Cli, InferencePerfFolderReplaysEachStageAndTheWholeRun) {
  const auto o = kvfleet("replay " + kData + "/inference-perf-shared-prefix --gpu H100-SXM -q");
  ASSERT_EQ(o.status, 0) << o.text;
  for (const char* s :
       {"Replay of the inference-perf result", "workload: shared_prefix, 4 groups × 8 prompts",
        "load: 2 constant stages, each drained before the next",
        "the preset matching the result's model meta-llama/Llama-3.1-8B-Instruct",
        "stage 0 (2 requests/s): 40 requests measured, 40 simulated",
        "stage 1 (8 requests/s): 80 requests measured, 80 simulated",
        "all requests: 120 requests measured, 120 simulated",
        "latencies as inference-perf measures them",
        "Mean absolute error over the statistics measured"})
    EXPECT_THAT(o.text, HasSubstr(s));
  // The measured values are the stage files' (seconds; TPOT shown in ms).
  EXPECT_THAT(o.text, HasSubstr("| TTFT (s) | p90 | 0.0742 |"));
  EXPECT_THAT(o.text, HasSubstr("| TPOT (ms) | p99 | 7.52 |"));
  EXPECT_THAT(o.text, HasSubstr("| E2E (s) | mean | 0.808 |"));
}

TEST_F(Cli, AResultPathWithANewlineWritesOneCommentLine) {
  // A file name is text, not YAML: --write-scenario's header says it on one line.
  const fs::path dir = path("evil\nclient: {timeout_s: 0.001}\n#");
  fs::create_directories(dir);
  fs::copy_file(kData + "/vllm-bench/detailed.json", dir / "detailed.json");
  const auto o = kvfleet("replay '" + (dir / "detailed.json").string() +
                         "' --gpu H100-SXM -q --write-scenario " + path("w.yaml"));
  ASSERT_EQ(o.status, 0) << o.text;
  const std::string w = slurp(path("w.yaml"));
  EXPECT_THAT(w, HasSubstr("evil\\x0aclient"));
  std::istringstream lines(w);
  for (std::string line; std::getline(lines, line);)
    if (line.find("timeout_s: 0.001") != std::string::npos)
      EXPECT_EQ(line.rfind("# ", 0), 0u) << "the name became YAML: " << line;
}

TEST_F(Cli, AnInferencePerfConcurrentLoadReplaysEachStagesConcurrency) {
  // load.type concurrent: each stage's num_requests at most concurrency_level in flight.
  const auto run = copy_folder(kData + "/inference-perf-shared-prefix", path("ip"));
  replace_in(fs::path(run) / "config.yaml", "type: constant", "type: concurrent");
  replace_in(fs::path(run) / "config.yaml",
             "  - rate: 2.0\n    duration: 20\n    num_requests: null\n    concurrency_level: null",
             "  - num_requests: 40\n    concurrency_level: 2");
  replace_in(fs::path(run) / "config.yaml",
             "  - rate: 8.0\n    duration: 10\n    num_requests: null\n    concurrency_level: null",
             "  - num_requests: 80\n    concurrency_level: 4");
  const auto o = kvfleet("replay " + run + " --gpu H100-SXM -q --write-scenario " + path("s.yaml"));
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_THAT(o.text, HasSubstr("stage 0 (concurrency 2): 40 requests measured, 40 simulated"));
  EXPECT_THAT(o.text, HasSubstr("stage 1 (concurrency 4): 80 requests measured, 80 simulated"));
  const std::string s = slurp(path("s.yaml"));
  EXPECT_THAT(s, HasSubstr("max_concurrency: 2"));
  EXPECT_THAT(s, HasSubstr("max_concurrency: 4"));
  // A concurrent stage without its count is named.
  replace_in(fs::path(run) / "config.yaml", "  - num_requests: 40\n", "  - ");
  const auto bad = kvfleet("replay " + run + " --gpu H100-SXM -q");
  EXPECT_EQ(bad.status, 2) << bad.text;
  EXPECT_THAT(bad.text, HasSubstr("load.stages[0]"));
}

TEST_F(Cli, VllmBenchResultsReplayWithTheirEngineArguments) {
  const auto plain = kvfleet("replay " + kData + "/vllm-bench/plain.json --gpu H100-SXM -q");
  ASSERT_EQ(plain.status, 0) << plain.text;
  for (const char* s :
       {"Replay of the vllm bench serve result", "serve_args.txt (found with the result)",
        "pools[0].engine.max_num_seqs = 128", "serve_args.txt:2 (--max-num-seqs 128)",
        "vLLM 0.34.0's default",
        "no per-request data (--save-detailed): 200 requests of the mean lengths "
        "1024 in, 128 out",
        "all requests: 200 requests measured, 200 simulated", "| TTFT (s) | p99 | 0.1186 |",
        "| E2E (s) | p50 | 0.9962 |"})
    EXPECT_THAT(plain.text, HasSubstr(s));

  const auto scen = path("replay.yaml");
  const auto det = kvfleet("replay " + kData + "/vllm-bench/detailed.json --gpu H100-SXM -q " +
                           "--write-scenario " + scen + " --out " + path("r.h5"));
  ASSERT_EQ(det.status, 0) << det.text;
  for (const char* s : {"1 failed request(s) (errors) neither replayed nor compared",
                        "sent when they were (start_times − queue_times)",
                        "all requests: 23 requests measured, 23 simulated"})
    EXPECT_THAT(det.text, HasSubstr(s));
  // The scenario and the trace it reads are written together, and run again as they are.
  ASSERT_TRUE(fs::exists(path("replay.trace.csv")));
  EXPECT_THAT(slurp(scen), HasSubstr("path: replay.trace.csv"));
  EXPECT_THAT(slurp(scen), HasSubstr("max_num_seqs: 128"));
  const auto rerun = kvfleet("run " + scen);
  ASSERT_EQ(rerun.status, 0) << rerun.text;
  EXPECT_THAT(rerun.text, HasSubstr("Requests: 23 arrived, 23 completed"));
}

TEST_F(Cli, EngineArgumentsOnTheCommandLineWinAndAreCheckedByName) {
  const auto json = write("args.json", R"({"engine_kwargs": {"max_num_seqs": 8,
      "tensor_parallel_size": 2, "kv_cache_dtype": "fp8", "enable_prefix_caching": false}})");
  const auto o = kvfleet("replay " + kData + "/vllm-bench/plain.json --gpu H100-SXM -q " +
                         "--engine-args " + json + " --write-scenario " + path("s.yaml"));
  ASSERT_EQ(o.status, 0) << o.text;
  const std::string s = slurp(path("s.yaml"));
  for (const char* k : {"tensor_parallel: 2", "max_num_seqs: 8", "kv_cache_dtype: fp8",
                        "enable_prefix_caching: false"})
    EXPECT_THAT(s, HasSubstr(k));

  const auto bad = write("bad.txt", "vllm serve x --max-num-seqs lots --enforce-eager\n");
  const auto b = kvfleet("replay " + kData + "/vllm-bench/plain.json --gpu H100-SXM -q " +
                         "--engine-args " + bad + " --out " + path("r.h5"));
  EXPECT_EQ(b.status, 2) << b.text;
  EXPECT_THAT(b.text, HasSubstr("bad.txt"));
  EXPECT_THAT(b.text, HasSubstr("--max-num-seqs"));
  EXPECT_THAT(b.text, HasSubstr("'lots'"));
  EXPECT_FALSE(fs::exists(path("r.h5")));
}

TEST_F(Cli, BenchmarkResultsNeedTheGpuAndTheRunFolderOptionsStayApart) {
  const auto o = kvfleet("replay " + kData + "/vllm-bench/plain.json");
  EXPECT_EQ(o.status, 2);
  EXPECT_THAT(o.text, HasSubstr("--gpu"));
  const auto run = copy_folder(kData + "/inference-perf-shared-prefix", path("ip"));
  fs::remove(fs::path(run) / "stage_0_lifecycle_metrics.json");
  fs::remove(fs::path(run) / "stage_1_lifecycle_metrics.json");
  fs::remove(fs::path(run) / "summary_lifecycle_metrics.json");
  // A folder with neither layout's files is named as such, with what was looked for.
  const auto none = kvfleet("replay " + run + " --gpu H100-SXM --tp 2");
  EXPECT_EQ(none.status, 2);
  EXPECT_THAT(none.text, HasSubstr("holds no result kvfleet replays"));
  EXPECT_THAT(none.text, HasSubstr("inference-perf config.yaml with its lifecycle metrics"));
}

TEST_F(Cli, TheFittedCostModelReplaysWithOrWithoutTheGpusOwnFit) {
  const std::string run = "replay " + kData + "/inference-perf-shared-prefix --gpu H100-SXM -q";
  const auto roofline = kvfleet(run);
  const auto fitted = kvfleet(run + " --cost-model fitted");
  const auto left = kvfleet(run + " --cost-model fitted --leave-out H100-SXM");
  ASSERT_EQ(fitted.status, 0) << fitted.text;
  ASSERT_EQ(left.status, 0) << left.text;
  EXPECT_THAT(fitted.text, HasSubstr("Mean absolute error"));
  // Three cost models, three answers (the H100's own linear-layer fit, the others' median).
  EXPECT_NE(roofline.text, fitted.text);
  EXPECT_NE(fitted.text, left.text);
  // Refused by name, before any work: another cost model, a fit that does not exist, a fit left
  // out of the roofline, a profile and a cost model together.
  for (const auto& [args, words] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {" --cost-model linear", {"--cost-model", "linear"}},
           {" --cost-model ''", {"--cost-model", "is empty"}},
           {" --cost-model fitted --leave-out H200", {"leave_out", "H200", "A100-80GB"}},
           {" --leave-out H100-SXM", {"--leave-out", "--cost-model fitted"}},
           {" --cost-model fitted --profile x.h5", {"--cost-model", "not both"}}}) {
    const auto o = kvfleet(run + args);
    EXPECT_EQ(o.status, 2) << args << "\n" << o.text;
    for (const auto& w : words) EXPECT_THAT(o.text, HasSubstr(w)) << args;
  }
}

struct Damage {
  const char* name;
  const char* file;  // in the copied inference-perf folder, or "detailed.json", "guidellm.json"
  const char* from;
  const char* to;
  std::vector<const char*> message;  // substrings the error must hold
};

class Damaged : public testing::CliTest, public ::testing::WithParamInterface<Damage> {};

TEST_P(Damaged, IsRefusedNamingTheFileAndTheFieldAndNothingIsWritten) {
  const Damage& d = GetParam();
  std::string target;
  if (std::string(d.file) == "guidellm.json") {
    fs::create_directories(path("gl"));
    fs::copy_file(std::string(KVFLEET_SOURCE_DIR) +
                      "/tests/data/conformance/guidellm-0.8.1-constant/benchmarks.json",
                  path("gl/benchmarks.json"));
    replace_in(path("gl/benchmarks.json"), d.from, d.to);
    target = path("gl/benchmarks.json");
  } else if (std::string(d.file) == "detailed.json") {
    fs::create_directories(path("vb"));
    fs::copy_file(kData + "/vllm-bench/detailed.json", path("vb/detailed.json"));
    if (*d.from) replace_in(path("vb/detailed.json"), d.from, d.to);
    target = path("vb/detailed.json");
  } else {
    target = copy_folder(kData + "/inference-perf-shared-prefix", path("ip"));
    if (*d.from == 0)
      fs::remove(fs::path(target) / d.file);
    else
      replace_in(fs::path(target) / d.file, d.from, d.to);
  }
  const auto o = kvfleet("replay " + target + " --gpu H100-SXM -q --out " + path("r.h5") +
                         " --write-scenario " + path("s.yaml"));
  EXPECT_EQ(o.status, 2) << o.text;
  for (const char* m : d.message) EXPECT_THAT(o.text, HasSubstr(m)) << d.name;
  EXPECT_THAT(o.text, Not(HasSubstr("terminate")));
  EXPECT_FALSE(fs::exists(path("r.h5")));
  EXPECT_FALSE(fs::exists(path("s.yaml")));
  EXPECT_FALSE(fs::exists(path("s.trace.csv")));
}

INSTANTIATE_TEST_SUITE_P(
    BenchFiles, Damaged,
    ::testing::Values(
        Damage{"NoConfig", "config.yaml", "", "", {"config.yaml", "not found"}},
        Damage{"TruncatedStage",
               "stage_1_lifecycle_metrics.json",
               "\"successes\"",
               "\"successes",
               {"stage_1_lifecycle_metrics.json"}},
        Damage{"ForeignLoadType",
               "config.yaml",
               "type: constant",
               "type: trace_replay",
               {"config.yaml", "load.type", "trace_replay"}},
        Damage{"NegativeRate",
               "config.yaml",
               "rate: 8.0",
               "rate: -8",
               {"config.yaml", "load.stages[1].rate"}},
        Damage{"StageCountAsText",
               "stage_0_lifecycle_metrics.json",
               "\"count\": 40,",
               "\"count\": \"forty\",",
               {"stage_0_lifecycle_metrics.json", "count"}},
        Damage{"ForeignDataType",
               "config.yaml",
               "type: shared_prefix",
               "type: shareGPT",
               {"config.yaml", "data.type", "shareGPT"}},
        Damage{"UnknownModel",
               "config.yaml",
               "model_name: meta-llama/Llama-3.1-8B-Instruct",
               "model_name: acme/mystery-13b",
               {"acme/mystery-13b", "--model-config"}},
        Damage{"ShortOutputLens",
               "detailed.json",
               "\"output_lens\": [64, ",
               "\"output_lens\": [",
               {"detailed.json", "output_lens", "input_lens"}},
        Damage{"TextInTtfts",
               "detailed.json",
               "\"ttfts\": [",
               "\"ttfts\": [\"fast\", ",
               {"detailed.json", "ttfts"}},
        Damage{"NegativeLatency",
               "detailed.json",
               "\"latencies\": [0.",
               "\"latencies\": [-0.",
               {"detailed.json", "latencies"}},
        Damage{"DuplicateKeyInConfig",
               "config.yaml",
               "api:",
               "api: {}\napi:",
               {"config.yaml:2", "api", "duplicate key"}},
        Damage{"CompletedAsText",
               "detailed.json",
               "\"completed\": 23",
               "\"completed\": \"abc\"",
               {"detailed.json", "completed", "must be an integer"}},
        Damage{"FractionalInputLength",
               "detailed.json",
               "\"input_lens\": [1043",
               "\"input_lens\": [10.5",
               {"detailed.json", "input_lens[0]", "whole number"}},
        Damage{"ItlsNestedTooDeep",
               "detailed.json",
               "\"itls\": [[0.007537",
               "\"itls\": [[[0.1], 0.007537",
               {"detailed.json", "itls[0]"}},
        Damage{"NegativeRequestRate",
               "detailed.json",
               "\"request_rate\": 2.0",
               "\"request_rate\": -2",
               {"detailed.json", "request_rate"}},
        Damage{"RequestRateBeyondAnyClock",
               "detailed.json",
               "\"request_rate\": 2.0",
               "\"request_rate\": 1e-300",
               {"detailed.json", "request_rate"}},
        Damage{"NotJson", "detailed.json", "{\"date\"", "{\"ttft_ms\" \"date\"", {"detailed.json"}},
        Damage{"GuideLlmPromptTokensAsText",
               "guidellm.json",
               "\"prompt_tokens\": 55",
               "\"prompt_tokens\": \"55\"",
               {"benchmarks.json", "benchmarks[0].requests.successful[0].prompt_tokens"}},
        Damage{"GuideLlmNegativeRate",
               "guidellm.json",
               "\"max_concurrency\": 10240, \"rate\": 4.0",
               "\"max_concurrency\": 10240, \"rate\": -4.0",
               {"benchmarks.json", "benchmarks[0].config.strategy.rate"}},
        Damage{"GuideLlmUnknownRelease",
               "guidellm.json",
               "\"guidellm_version\": \"0.8.1\"",
               "\"guidellm_version\": \"0.1.0\"",
               {"benchmarks.json", "metadata.guidellm_version", "--tool-version"}},
        Damage{"GuideLlmRequestsNotAList",
               "guidellm.json",
               "\"requests\": {\"successful\": [",
               "\"requests\": {\"successful\": 20, \"x\": [",
               {"benchmarks.json", "benchmarks[0].requests.successful", "array"}}),
    [](const auto& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace kvfleet
