// Hostile input against the exit-code contract (docs/scenarios.md, "Errors and exit codes"): each
// case is an input a user can type or a file they can hand in that once crashed kvfleet, exited 1
// with a C++ exception text, or was accepted with wrong numbers. Each must exit 2 with one message
// naming where and what, and leave nothing new on disk.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <hdf5.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "sim/io/h5.h"
#include "support/cli.h"

namespace kvfleet {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::kvfleet;

// A small valid scenario; cases append to it or replace it.
const std::string kScenario = R"(name: small
workload:
  impl: synthetic
  num_requests: 50
  arrival: {impl: poisson, rate_per_s: 10}
  input_tokens: {impl: fixed, value: 100}
  output_tokens: {impl: fixed, value: 20}
pools:
  - name: p
    model: Llama-3-8B
    gpu: H100-SXM
)";

std::string trace_scenario(const std::string& format, const std::string& file) {
  std::string y = kScenario;
  const auto w = y.find("workload:"), p = y.find("pools:");
  return y.replace(w, p - w,
                   "workload: {impl: trace, format: " + format + ", path: " + file + "}\n");
}

struct Case {
  const char* name;
  std::map<std::string, std::string> files;  // written into the test's folder
  std::string args;                          // after `kvfleet`; {dir} is the folder
  std::vector<std::string> must_say;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class Hostile : public testing::CliTest, public ::testing::WithParamInterface<Case> {};

TEST_P(Hostile, ExitsTwoNamingTheProblemAndLeavesNothing) {
  const Case& c = GetParam();
  std::vector<std::string> inputs;
  for (const auto& [name, text] : c.files) {
    write(name, text);
    inputs.push_back(name);
  }
  std::string args = c.args;
  for (std::size_t at; (at = args.find("{dir}")) != std::string::npos;)
    args.replace(at, 5, dir_.string());
  const auto o = kvfleet(args);
  EXPECT_EQ(o.status, 2) << o.text;
  for (const auto& s : c.must_say) EXPECT_THAT(o.text, HasSubstr(s));
  EXPECT_THAT(o.text, ::testing::Not(HasSubstr("internal error")));
  EXPECT_EQ(std::count(o.text.begin(), o.text.end(), '\n'), 1) << "one message: " << o.text;
  EXPECT_THAT(outputs(inputs), ::testing::IsEmpty());
}

const std::string kRun = "run {dir}/s.yaml -q --out {dir}/r.h5 ";
const std::string kSet = "run -q --set workload.num_requests=50 --out {dir}/r.h5 ";

INSTANTIATE_TEST_SUITE_P(
    Yaml, Hostile,
    ::testing::Values(
        Case{"DuplicateKey",
             {{"s.yaml", "name: a\n" + kScenario}},
             kRun,
             {"s.yaml:2", "name", "duplicate key (first given at line 1"}},
        Case{"DuplicateNestedKey",
             {{"s.yaml", kScenario + "    replicas: 1\n    replicas: 2\n"}},
             kRun,
             {"s.yaml:13", "pools[0].replicas", "duplicate key (first given at line 12"}},
        Case{"ComplexKey",
             {{"s.yaml", "? [1, 2]\n: 3\n" + kScenario}},
             kRun,
             {"s.yaml:1", "a key must be a plain name"}},
        Case{"KeyWithoutValue",
             {{"s.yaml", kScenario + "    replicas:\n"}},
             kRun,
             {"s.yaml:12", "pools[0].replicas", "has no value"}},
        Case{"NestedTooDeep",
             {{"s.yaml", "x: " + std::string(3000, '[') + std::string(3000, ']') + "\n"}},
             kRun,
             {"s.yaml:1", "nested deeper than 64 levels"}},
        Case{"NestedDeeperThanTheLimit",
             {{"s.yaml", "x: " + std::string(100, '[') + std::string(100, ']') + "\n"}},
             kRun,
             {"s.yaml:1", "nested deeper than 64 levels"}},
        Case{"TooLarge",
             {{"s.yaml", kScenario + "description: \"" + std::string(17 << 20, 'x') + "\"\n"}},
             kRun,
             {"s.yaml", "larger than the limit of 16 MiB"}},
        Case{"ScenarioIsADirectory", {}, "run {dir} -q", {"is a directory, not a scenario file"}},
        Case{"EmptySetValue", {}, kSet + "--set workload.num_requests=", {"no value after '='"}},
        Case{"HugeListIndex",
             {},
             kSet + "--set pools[99999999999999999999].replicas=2",
             {"pools[99999999999999999999]", "list index", "out of range"}},
        Case{"EmptyOut", {}, "run -q --set workload.num_requests=5 --out ''", {"--out"}}),
    [](const auto& i) { return std::string(i.param.name); });

INSTANTIATE_TEST_SUITE_P(
    Ranges, Hostile,
    ::testing::Values(
        Case{"RateTooLow",
             {},
             kSet + "--set workload.arrival.rate_per_s=1e-12",
             {"workload.arrival.rate_per_s", "must be >= 1e-06", "clock"}},
        Case{"RateTooHigh",
             {},
             kSet + "--set workload.arrival.rate_per_s=1e300",
             {"workload.arrival.rate_per_s", "must be <= 1e+07"}},
        Case{"SampleIntervalTiny",
             {},
             kSet + "--set simulation.timeseries_interval_s=1e-9",
             {"simulation.timeseries_interval_s", "must be >= 0.001"}},
        Case{"SampleIntervalHuge",
             {},
             kSet + "--set simulation.timeseries_interval_s=1e300",
             {"simulation.timeseries_interval_s", "must be <= 1e+09", "clock"}},
        Case{"BlocksOverride2To31",
             {},
             kSet + "--set pools[0].engine.num_gpu_blocks_override=2147483648",
             {"num_gpu_blocks_override", "must be <= 16777216"}},
        Case{"BlocksOverride1e12",
             {},
             kSet + "--set pools[0].engine.num_gpu_blocks_override=1e12",
             {"num_gpu_blocks_override", "must be <= 16777216"}},
        Case{"GpuMemory1e300",
             {},
             kSet + "--set pools[0].gpu=G --set 'gpus=[{name: G, memory_bytes: 1e300, "
                    "memory_bandwidth_Bps: 3e12, bf16_flops: 1e15}]'",
             {"gpus[0].memory_bytes", "must be <= 1e+13"}},
        Case{"GpuSlowerThanAnyGpu",
             {},
             kSet + "--set pools[0].gpu=G --set 'gpus=[{name: G, memory_bytes: 8e10, "
                    "memory_bandwidth_Bps: 3e12, bf16_flops: 1e-300}]'",
             {"gpus[0].bf16_flops", "must be >= 1e+11"}},
        Case{"ModelOfOnes",
             {},
             kSet +
                 "--set pools[0].model=M --set 'models=[{name: M, num_layers: 1, hidden_size: 1, "
                 "num_attention_heads: 1, num_kv_heads: 1, head_dim: 1, intermediate_size: 1, "
                 "vocab_size: 1, num_params: 1, max_position_embeddings: 1}]'",
             {"pools[0]", "KV pool would hold", "above the limit of 16777216"}},
        Case{"TooManyReplicas",
             {},
             kSet + "--set pools[0].replicas=61017",
             {"pools[0].replicas", "must be <= 10000"}},
        Case{"FleetTooLarge",
             {},
             kSet + "--set pools[0].replicas=9000",
             {"pools[0].replicas", "KV blocks together", "above the limit of 67108864"}},
        Case{"RunOutOfClock",
             {},
             "run -q --out {dir}/r.h5 --set workload.num_requests=20000 "
             "--set workload.arrival.rate_per_s=1e-6",
             {"simulated time", "outside the clock's range"}}),
    [](const auto& i) { return std::string(i.param.name); });

// Shared experts are priced inside num_params: a count that cannot fit in it is refused (it once
// changed no output at all).
INSTANTIATE_TEST_SUITE_P(
    Models, Hostile,
    ::testing::Values(Case{
        "SharedExpertsBeyondTheParameters",
        {{"s.yaml",
          "models:\n  - {name: m, num_layers: 4, hidden_size: 1024, num_attention_heads: 8, "
          "num_kv_heads: 8, head_dim: 128, intermediate_size: 2048, vocab_size: 32000, "
          "max_position_embeddings: 4096, num_params: 5.0e8, num_experts: 8, "
          "experts_per_token: 2, moe_intermediate_size: 512, num_shared_experts: 100}\n" +
              std::string(kScenario).replace(std::string(kScenario).find("Llama-3-8B"), 10, "m")}},
        kRun,
        {"s.yaml:2", "models[0].num_shared_experts", "exceed num_params"}}));

// A line longer than 16 MiB (a file without line breaks) is refused before more of it is held.
INSTANTIATE_TEST_SUITE_P(
    Lines, Hostile,
    ::testing::Values(Case{"TraceCsvLineTooLong",
                           {{"s.yaml", trace_scenario("vidur", "t.csv")},
                            {"t.csv", "arrived_at,num_prefill_tokens,num_decode_tokens\n1,2," +
                                          std::string(17u << 20, '3') + "\n"}},
                           kRun,
                           {"t.csv: line 2", "longer than 16 MiB"}},
                      Case{"TraceJsonlLineTooLong",
                           {{"s.yaml", trace_scenario("mooncake", "t.jsonl")},
                            {"t.jsonl", "{\"hash_ids\": [" + std::string(17u << 20, '1') + "]}\n"}},
                           kRun,
                           {"t.jsonl: line 1", "longer than 16 MiB"}}));

INSTANTIATE_TEST_SUITE_P(
    Options, Hostile,
    ::testing::Values(
        Case{"CapacityToleranceTiny",
             {},
             "capacity --slo ttft_p99=2s --tolerance 1e-300",
             {"--tolerance", "between 1e-6 and 1"}},
        Case{"SizeTargetNegative",
             {},
             "size --slo ttft_p99=2s --target -5",
             {"--target", "a load above 0"}},
        Case{"SizeUnknownPool",
             {},
             "size --slo ttft_p99=2s --target 10 --pool nope",
             {"--pool", "nope", "h100"}},
        Case{"SizeEmptyPool",
             {},
             "size --slo ttft_p99=2s --target 10 --pool \"\"",
             {"--pool", "empty: name a pool"}},
        Case{"SizePriceNegative",
             {},
             "size --slo ttft_p99=2s --target 10 --price-per-hour -1",
             {"--price-per-hour", "from 0 to 1e6"}},
        Case{"SizeMaxReplicasZero",
             {},
             "size --slo ttft_p99=2s --target 10 --max-replicas 0",
             {"--max-replicas", "between 1 and 100000"}},
        Case{"SizeTargetOutOfTheKeysRange",
             {},
             "size --slo ttft_p99=2s --target 1e308 --set workload.num_requests=200",
             {"workload.arrival.rate_per_s", "must be <= 1e+07"}},
        Case{"SizeKeyIsTheReplicasSearched",
             {},
             "size --slo ttft_p99=2s --target 5 --key pools[0].replicas",
             {"--key", "pools[0].replicas", "what the search itself sets"}},
        Case{"ReplayOutputIsItsOwnInput",
             {{"r.json", "{}"}},
             "replay {dir}/r.json --gpu H100-SXM -q --out {dir}/r.json",
             {"--out", "also an input of this replay"}},
        Case{"TraceAndOutTheSameFileSpelledTwoWays",
             {},
             "run -q --set workload.num_requests=30 --out {dir}/z.h5 --trace {dir}/./z.h5",
             {"--trace", "also the path of --out"}},
        Case{"CsvOntoAFile",
             {{"f.txt", "x"}},
             "run -q --set workload.num_requests=30 --csv {dir}/f.txt",
             {"--csv", "is a file, not a folder"}},
        Case{"SweepValueGivenTwice",
             {{"s.yaml", "base: " + std::string(KVFLEET_SOURCE_DIR) +
                             "/scenarios/default.yaml\naxes:\n  - key: "
                             "workload.arrival.rate_per_s\n    values: [10, 1e1, 20]\n"}},
             "sweep {dir}/s.yaml --out {dir}/r.h5",
             {"s.yaml:4", "axes[0].values[1]", "'1e1' is the value of values[0] again"}},
        Case{"CapacityReplicatesHuge",
             {},
             "capacity --slo ttft_p99=2s --replicates 100000000",
             {"--replicates", "between 1 and 1000"}},
        Case{"SweepThreadsNegative",
             {},
             "sweep " + std::string(KVFLEET_SOURCE_DIR) +
                 "/scenarios/sweeps/load-vs-max-seqs.yaml --out {dir}/r.h5 --threads -5",
             {"--threads", "must be >= 0"}},
        Case{"PrometheusEpochNan",
             {},
             kSet + "--prometheus {dir}/p --prometheus-epoch nan",
             {"--prometheus-epoch"}},
        Case{"TraceRequestsNegative",
             {},
             kSet + "--trace {dir}/t.json --trace-requests -1",
             {"--trace-requests"}}),
    [](const auto& i) { return std::string(i.param.name); });

// A capacity search whose SLO holds at every load the key allows stops at the key's limit (it once
// aborted: the out-of-range load threw inside a worker thread).
TEST(HostileCapacity, AnSloThatAlwaysHoldsStopsAtTheLoadLimit) {
  const auto o = kvfleet(
      "capacity --slo ttft_p99=1e300s --replicates 2 --set workload.num_requests=50 2>/dev/null");
  EXPECT_EQ(o.status, 0) << o.text;
  EXPECT_THAT(o.text, HasSubstr("workload.arrival.rate_per_s = "));
}

INSTANTIATE_TEST_SUITE_P(
    Traces, Hostile,
    ::testing::Values(
        Case{"TraceIsADirectory",
             {{"s.yaml", trace_scenario("vidur", ".")}},
             kRun,
             {"is a directory, not a trace file"}},
        Case{"JsonNumberOverflow",
             {{"s.yaml", trace_scenario("vllm_jsonl", "t.jsonl")},
              {"t.jsonl", "{\"arrival_time\": 1e999, \"input_toks\": 5, \"output_toks\": 5}\n"}},
             kRun,
             {"t.jsonl: row 1", "not valid JSON", "1e999"}},
        Case{"TimestampOf1e308",
             {{"s.yaml", trace_scenario("vidur", "t.csv")},
              {"t.csv",
               "arrived_at,num_prefill_tokens,num_decode_tokens\n1e308,10,5\n1.0000001e308,10,"
               "5\n"}},
             kRun,
             {"t.csv: row 2", "arrived_at", "outside +-1e10 s"}},
        Case{"TimestampInTheYear9999",
             {{"s.yaml", trace_scenario("azure", "t.csv")},
              {"t.csv",
               "TIMESTAMP,ContextTokens,GeneratedTokens\n9999-12-31 23:00:00.0,10,5\n"
               "9999-12-31 23:59:00.0,10,5\n"}},
             kRun,
             {"t.csv: row 2", "TIMESTAMP", "outside +-1e10 s"}},
        Case{"MooncakeMillisecondsInTheYear9999",
             {{"s.yaml", trace_scenario("mooncake", "t.jsonl")},
              {"t.jsonl",
               "{\"timestamp\": 253402300799000, \"input_length\": 5, \"output_length\": 5}\n"}},
             kRun,
             {"t.jsonl: row 1", "timestamp", "outside +-1e10 s"}},
        Case{"ZeroPromptTokens",
             {{"s.yaml", trace_scenario("vidur", "t.csv")},
              {"t.csv", "arrived_at,num_prefill_tokens,num_decode_tokens\n0,10,5\n1,0,5\n"}},
             kRun,
             {"t.csv: row 3", "num_prefill_tokens", "a prompt of 0 tokens"}}),
    [](const auto& i) { return std::string(i.param.name); });

// The second campaign (an independent hostile tester with about 6,000 cases against the same
// contract): each input below once crashed, hung, exited 1, printed library text or several
// lines, or was accepted when it must be refused.
const std::string kConversations = R"(name: conv
workload:
  impl: conversations
  num_sessions: 5
  turns: {impl: fixed, value: 2}
  user_tokens: {impl: fixed, value: 50}
  reply_tokens: {impl: fixed, value: 20}
  think_time_s: 1
pools:
  - name: p
    model: Llama-3-8B
    gpu: H100-SXM
)";

std::string alias_bomb() {
  std::ostringstream y;
  y << "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i) {
    y << "a" << i << ": &a" << i << " [";
    for (int k = 0; k < 10; ++k) y << (k ? ", " : "") << "*a" << i - 1;
    y << "]\n";
  }
  return y.str();
}

std::string sweep_over(const std::string& axes) {
  return "base: " + std::string(KVFLEET_SOURCE_DIR) +
         "/scenarios/default.yaml\nset: [workload.num_requests=10]\n" + axes;
}

INSTANTIATE_TEST_SUITE_P(
    Campaign2, Hostile,
    ::testing::Values(
        Case{"ReportContextBelowOneToken",
             {},
             kSet + "--set 'simulation.report_context_tokens=[0.5]'",
             {"simulation.report_context_tokens[0]", "must be >= 1"}},
        Case{"HugePriority",
             {{"s.yaml", kConversations}},
             kRun + "--set workload.document_probability=0.5 --set workload.document_tokens=100 "
                    "--set workload.document_priority=2147483647",
             {"workload.document_priority", "must be <= 1000"}},
        Case{"NumSessionsHuge",
             {{"s.yaml", kConversations}},
             kRun + "--set workload.num_sessions=2147483647",
             {"workload.num_sessions", "must be <= 1e+07"}},
        Case{"DiurnalDenormalPeriod",
             {},
             kSet + "--set 'workload.arrival={impl: diurnal, rate_per_s: 10, period_s: 1e-310}'",
             {"workload.arrival.period_s", "must be >= 1"}},
        Case{"GammaCvHuge",
             {},
             kSet + "--set 'workload.arrival={impl: gamma, rate_per_s: 10, cv: 1e200}'",
             {"workload.arrival.cv", "must be <= 1000"}},
        Case{"AliasBomb", {{"s.yaml", alias_bomb()}}, kRun, {"expands to more than 1000000"}},
        Case{"ScrapeEveryNanosecond",
             {},
             kSet + "--set simulation.scrape_interval_s=1e-9",
             {"simulation.scrape_interval_s", "at least 0.001"}},
        Case{"AutoscaleEveryNanosecond",
             {},
             kSet + "--set 'pools[0].autoscale={enabled: true, interval_s: 1e-9}'",
             {"pools[0].autoscale.interval_s", "must be >= 0.1"}},
        Case{"FailuresEveryMicrosecond",
             {},
             kSet + "--set 'pools[0].failures={mtbf_s: 1e-6, repair_s: 0}'",
             {"pools[0].failures.mtbf_s", "at least 1 s"}},
        Case{"VirtualNodesHuge",
             {},
             kSet + "--set 'router={impl: consistent_hash, virtual_nodes: 100000000}'",
             {"router.virtual_nodes", "must be <= 10000"}},
        Case{"RetriesBeyondAHundred",
             {},
             kSet + "--set client.max_attempts=2000 --set client.backoff_initial_s=0",
             {"client.max_attempts", "must be <= 100"}},
        Case{
            "PoolNameEmpty", {}, kSet + "--set \"pools[0].name=''\"", {"pools[0].name", "1 to 64"}},
        Case{"PoolNameWithSlash", {}, kSet + "--set pools[0].name=a/b", {"pools[0].name"}},
        Case{"PoolNamesShareFiles",
             {},
             kSet + "--set 'pools=[{name: a, replicas: 2}, {name: a_1}]'",
             {"pools[1].name", "would share result files"}},
        Case{
            "NewlineInASetValue", {}, "run -q --set 'workload.name=a\nb'", {"workload.name=a\\nb"}},
        Case{"QuotedTrailingText",
             {},
             kSet + "--set 'workload.num_requests=\"5\"0'",
             {"a quoted value must end with its quote"}},
        Case{"DuplicateModelNames",
             {},
             kSet + "--set 'models=[{name: M, num_layers: 4, hidden_size: 512, "
                    "num_attention_heads: 8, num_kv_heads: 2, head_dim: 64, intermediate_size: "
                    "1024, vocab_size: 32000, num_params: 1e8, max_position_embeddings: 4096}, "
                    "{name: M, num_layers: 8, hidden_size: 512, num_attention_heads: 8, "
                    "num_kv_heads: 2, head_dim: 64, intermediate_size: 1024, vocab_size: 32000, "
                    "num_params: 1e8, max_position_embeddings: 4096}]'",
             {"models[1].name", "declared twice"}},
        Case{"ModelNamedAfterAPreset",
             {},
             kSet + "--set 'models=[{name: Llama-3-8B, num_layers: 4, hidden_size: 512, "
                    "num_attention_heads: 8, num_kv_heads: 2, head_dim: 64, intermediate_size: "
                    "1024, vocab_size: 32000, num_params: 1e8, max_position_embeddings: 4096}]'",
             {"models[0].name", "a preset's name"}},
        Case{"TwoYamlDocuments",
             {{"s.yaml", kScenario + "---\nname: other\n"}},
             kRun,
             {"more than one YAML document"}},
        Case{"OutIsTheScenario",
             {{"s.yaml", kScenario}},
             "run {dir}/s.yaml -q --out {dir}/s.yaml",
             {"--out", "is the scenario file itself"}},
        // Nor may an output replace a file the scenario reads (its trace).
        Case{"OutIsTheScenariosTrace",
             {{"t.csv", "arrived_at,num_prefill_tokens,num_decode_tokens\n0.5,100,20\n"},
              {"s.yaml",
               "workload: {impl: trace, format: vidur, path: t.csv}\npools: [{name: p}]\n"}},
             "run {dir}/s.yaml -q --out {dir}/t.csv",
             {"--out", "t.csv is an input of the scenario (workload.path)"}},
        Case{"TraceIsTheScenariosTrace",
             {{"t.csv", "arrived_at,num_prefill_tokens,num_decode_tokens\n0.5,100,20\n"},
              {"s.yaml",
               "workload: {impl: trace, format: vidur, path: t.csv}\npools: [{name: p}]\n"}},
             "run {dir}/s.yaml -q --trace {dir}/t.csv",
             {"--trace", "is an input of the scenario"}},
        Case{"CapacityKeyNotANumber",
             {},
             "capacity --slo ttft_p99=2s --key name",
             {"--key", "not a number"}},
        Case{"CapacityKeyThatLowersTheLoad",
             {},
             "capacity --slo ttft_p99=2s --key workload.time_scale",
             {"--key", "raising it lowers the load"}},
        Case{"CapacitySloOnThroughput",
             {},
             "capacity --slo requests_per_s=2s",
             {"--slo", "unknown latency"}},
        Case{"CapacitySloInfinite",
             {},
             "capacity --slo ttft_p99=infs",
             {"--slo", "positive number"}},
        Case{"CapacitySloHex", {}, "capacity --slo ttft_p99=0x2s", {"--slo", "positive number"}},
        Case{"MergeOptionLike", {}, "merge --out {dir}/m.h5 {dir}/x.h5", {"unknown option"}},
        Case{"NoCommand", {}, "", {"no command given"}},
        Case{"ShardWithTrailingText",
             {},
             "sweep " + std::string(KVFLEET_SOURCE_DIR) +
                 "/scenarios/sweeps/load-vs-max-seqs.yaml --out {dir}/r.h5 --shard 1/2x",
             {"--shard", "not k/N"}}),
    [](const auto& i) { return std::string(i.param.name); });

INSTANTIATE_TEST_SUITE_P(
    Campaign2Files, Hostile,
    ::testing::Values(
        // yaml-cpp 0.7's LoadAll loops forever, allocating, on these (found by the fuzzers).
        Case{"DocumentStartingWithAComma",
             {{"s.yaml", ", max: 256, log: true"}},
             kRun,
             {"s.yaml:1", "unexpected text at column 1"}},
        Case{"ACommaAfterAnEmptyValue",
             {{"s.yaml", "# pools\n-\n,\n"}},
             kRun,
             {"s.yaml:3", "unexpected text at column 1"}},
        Case{"ACommaInASecondDocument",
             {{"s.yaml", "pools: []\n---\n&x , b\n"}},
             kRun,
             {"s.yaml", "more than one YAML document"}},
        Case{"JsonErrorWithoutLibraryTag",
             {{"s.yaml", trace_scenario("vllm_jsonl", "t.jsonl")}, {"t.jsonl", "{oops\n"}},
             kRun,
             {"t.jsonl: row 1", "not valid JSON: parse error"}},
        Case{"QuotedCsvFieldWithAComma",
             {{"s.yaml", trace_scenario("vidur", "t.csv")},
              {"t.csv", "arrived_at,num_prefill_tokens,num_decode_tokens\n\"0,5\",10,5\n"}},
             kRun,
             {"t.csv: row 2", "arrived_at", "'0,5'"}},
        Case{"AzureFebruary30",
             {{"s.yaml", trace_scenario("azure", "t.csv")},
              {"t.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-02-30 10:00:00.0,10,5\n"}},
             kRun,
             {"t.csv: row 2", "no such day"}},
        Case{"SweepKeyTwiceSpelledApart",
             {{"w.yaml", sweep_over("axes:\n  - {key: \"pools[0].replicas\", values: [1]}\n"
                                    "  - {key: pools.0.replicas, values: [2]}\n")}},
             "sweep {dir}/w.yaml --out {dir}/r.h5",
             {"w.yaml:5", "varied twice"}},
        Case{"SweepAxisNamedSeed",
             {{"w.yaml", sweep_over("axes:\n  - {key: seed, values: [1, 2]}\n")}},
             "sweep {dir}/w.yaml --out {dir}/r.h5",
             {"w.yaml:4", "replicates"}},
        Case{"SweepMetricTwice",
             {{"w.yaml", sweep_over("axes:\n  - {key: workload.arrival.rate_per_s, values: [5]}\n"
                                    "metrics: [requests_per_s, requests_per_s]\n")}},
             "sweep {dir}/w.yaml --out {dir}/r.h5",
             {"listed twice"}},
        Case{"SweepRangeBelowPrecision",
             {{"w.yaml",
               sweep_over("axes:\n  - {key: workload.arrival.rate_per_s, range: {start: 1e17, "
                          "stop: 2e17, step: 1}}\n")}},
             "sweep {dir}/w.yaml --out {dir}/r.h5",
             {"axes[0].range"}}),
    [](const auto& i) { return std::string(i.param.name); });

// What must load: a CSV trace that starts with a UTF-8 byte-order mark (spreadsheets write one),
// and a recorded output of 0 tokens (replayed as one, as vLLM emits at least one token).
using HostileOk = testing::CliTest;

TEST_F(HostileOk, TraceWithByteOrderMarkAndZeroOutputLoads) {
  write("s.yaml", trace_scenario("vidur", "t.csv"));
  write("t.csv",
        "\xEF\xBB\xBF"
        "arrived_at,num_prefill_tokens,num_decode_tokens\n0,10,5\n1,12,0\n");
  const auto o = kvfleet("run " + path("s.yaml") + " -q --out " + path("r.h5"));
  EXPECT_EQ(o.status, 0) << o.text;
  EXPECT_TRUE(fs::exists(dir_ / "r.h5"));
}

}  // namespace
}  // namespace kvfleet

namespace kvfleet {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::kvfleet;

using Outputs = testing::CliTest;

const std::string kSmallRun = "run -q --set workload.num_requests=50 ";

// --out naming something that is not a regular file is refused, and left as it was.
TEST_F(Outputs, NeverReplacesWhatIsNotARegularFile) {
  ASSERT_EQ(::mkfifo(path("fifo.h5").c_str(), 0644), 0);
  fs::create_symlink(path("elsewhere.h5"), path("link.h5"));
  fs::create_directory(path("dir.h5"));
  for (const char* name : {"fifo.h5", "link.h5", "dir.h5"}) {
    const auto o = kvfleet(kSmallRun + "--out " + path(name));
    EXPECT_EQ(o.status, 2) << o.text;
    EXPECT_THAT(o.text, HasSubstr("--out"));
    EXPECT_THAT(o.text, HasSubstr("replaces only regular files"));
  }
  EXPECT_TRUE(fs::is_fifo(fs::symlink_status(path("fifo.h5"))));
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(path("link.h5"))));
  EXPECT_FALSE(fs::exists(path("elsewhere.h5")));
  EXPECT_TRUE(fs::is_directory(path("dir.h5")));
  EXPECT_THAT(outputs({"fifo.h5", "link.h5", "dir.h5"}), ::testing::IsEmpty());
}

// An output set is all or nothing: a bad --csv, --trace or --prometheus path leaves no .h5.
TEST_F(Outputs, OneBadPathPublishesNothing) {
  write("file", "x");
  const std::string out = "--out " + path("r.h5") + " ";
  for (const std::string& bad : std::vector<std::string>{
           "--csv " + path("file"), "--prometheus " + path("file"), "--trace " + path("r.h5"),
           "--trace " + path("no/such/t.json"), "--csv " + path("no/such/c")}) {
    const auto o = kvfleet(kSmallRun + out + bad);
    EXPECT_EQ(o.status, 2) << bad << ": " << o.text;
    EXPECT_THAT(outputs({"file"}), ::testing::IsEmpty()) << bad;
  }
  const auto o = kvfleet(kSmallRun + out + "--csv " + path("c") + " --trace " + path("t.json") +
                         " --prometheus " + path("p"));
  EXPECT_EQ(o.status, 0) << o.text;
  auto made = outputs({"file"});
  std::sort(made.begin(), made.end());
  EXPECT_EQ(made, (std::vector<std::string>{"c", "p", "r.h5", "t.json"}));
}

// SIGTERM and SIGINT remove the temporaries and exit 143 and 130. The signal is sent once the
// CSV folder's temporary exists (made before the run starts): no timing assumption.
TEST_F(Outputs, SigtermAndSigintRemoveTemporaries) {
  for (const int sig : {SIGTERM, SIGINT}) {
    const std::string bin = std::string(KVFLEET_BINARY_DIR) + "/bin/kvfleet";
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      const std::string out = path("r.h5"), csv = path("c");
      execl(bin.c_str(), bin.c_str(), "run", "-q", "--set", "workload.num_requests=5000000",
            "--out", out.c_str(), "--csv", csv.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    const std::string temp = path("c") + ".tmp-" + std::to_string(pid);
    for (int i = 0; i < 6000 && !fs::exists(temp); ++i) ::usleep(10000);
    ASSERT_TRUE(fs::exists(temp));
    ASSERT_EQ(::kill(pid, sig), 0);
    int st = 0;
    ASSERT_EQ(::waitpid(pid, &st, 0), pid);
    ASSERT_TRUE(WIFEXITED(st));
    EXPECT_EQ(WEXITSTATUS(st), 128 + sig);
    EXPECT_THAT(outputs({}), ::testing::IsEmpty()) << "signal " << sig;
  }
}

// A temporary left by a process killed outright is removed by the next run on the same path.
TEST_F(Outputs, StaleTemporariesOfDeadProcessesAreRemoved) {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  ASSERT_EQ(::waitpid(pid, nullptr, 0), pid);  // now a dead process's id
  write("r.h5.tmp-" + std::to_string(pid), "half a file");
  fs::create_directory(path("c.tmp-" + std::to_string(pid)));
  write("c.tmp-" + std::to_string(pid) + "/requests.csv", "half");
  const auto o = kvfleet(kSmallRun + "--out " + path("r.h5") + " --csv " + path("c"));
  EXPECT_EQ(o.status, 0) << o.text;
  auto left = outputs({});
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"c", "r.h5"}));
}

// The same command gives byte-identical HDF5 files (no object timestamps, no date in
// /provenance, which records the command line itself).
TEST_F(Outputs, SameRunSameBytes) {
  ASSERT_EQ(kvfleet(kSmallRun + "--out " + path("a.h5")).status, 0);
  std::filesystem::rename(path("a.h5"), path("first.h5"));
  ::sleep(1);  // object timestamps have a resolution of one second
  ASSERT_EQ(kvfleet(kSmallRun + "--out " + path("a.h5")).status, 0);
  std::ifstream a(path("first.h5"), std::ios::binary), b(path("a.h5"), std::ios::binary);
  const std::string x((std::istreambuf_iterator<char>(a)), {});
  const std::string y((std::istreambuf_iterator<char>(b)), {});
  ASSERT_GT(x.size(), 1000u);
  EXPECT_TRUE(x == y) << "files differ";
}

// A replay writes the same bytes twice (its scenario once named the process's temporary trace).
TEST_F(Outputs, SameReplaySameBytes) {
  const std::string bench =
      std::string(KVFLEET_SOURCE_DIR) + "/tests/data/bench/vllm-bench/detailed.json";
  const std::string cmd = "replay " + bench + " --gpu H100-SXM -q --out " + path("a.h5");
  ASSERT_EQ(kvfleet(cmd).status, 0);
  std::filesystem::rename(path("a.h5"), path("first.h5"));
  ASSERT_EQ(kvfleet(cmd).status, 0);
  std::ifstream a(path("first.h5"), std::ios::binary), b(path("a.h5"), std::ios::binary);
  const std::string x((std::istreambuf_iterator<char>(a)), {});
  const std::string y((std::istreambuf_iterator<char>(b)), {});
  ASSERT_GT(x.size(), 1000u);
  EXPECT_TRUE(x == y) << "files differ";
}

// A run's PDF dashboard is the same bytes twice (Qt stamped the time of writing, and its hash
// seed reordered the fonts from one process to the next).
TEST_F(Outputs, SamePdfSameBytes) {
  if (!fs::exists(std::string(KVFLEET_BINARY_DIR) + "/bin/kvfleet-plot"))
    GTEST_SKIP() << "kvfleet-plot not built (KVFLEET_WITH_GUI=OFF)";
  ::unsetenv("SOURCE_DATE_EPOCH");  // its default date is checked below
  ASSERT_EQ(kvfleet(kSmallRun + "--out " + path("r.h5")).status, 0);
  std::string bytes[2];
  for (int i = 0; i < 2; ++i) {
    const std::string pdf = path("d" + std::to_string(i) + ".pdf");
    ASSERT_EQ(kvfleet("plot " + path("r.h5") + " --out " + pdf).status, 0);
    std::ifstream in(pdf, std::ios::binary);
    bytes[i].assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_GT(bytes[0].size(), 1000u);
  EXPECT_TRUE(bytes[0] == bytes[1]) << "the PDFs differ";
  EXPECT_NE(bytes[0].find("/CreationDate (D:20000101000000Z)"), std::string::npos);
}

// AddressSanitizer under clang (gcc defines __SANITIZE_ADDRESS__).
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KVFLEET_HAS_ASAN_FEATURE 1
#endif
#endif
#ifndef KVFLEET_HAS_ASAN_FEATURE
#define KVFLEET_HAS_ASAN_FEATURE 0
#endif

// Memory asked for up front: a fleet whose KV tables would not fit under the process's limit is
// refused before anything is allocated, naming the key and the estimate (it once ended in
// std::bad_alloc, exit 1); a batch limit far above what memory lets run no longer reserves for
// it (max_num_seqs=1e9 once reserved 1e9 slots).
testing::Output kvfleet_under_ulimit(const std::string& kbytes, const std::string& args) {
  return kvfleet(args, "ulimit -v " + kbytes + " && ");
}

TEST_F(Outputs, AFleetThatWouldNotFitInMemoryIsRefusedUpFront) {
#if defined(__SANITIZE_ADDRESS__) || KVFLEET_HAS_ASAN_FEATURE
  GTEST_SKIP() << "an AddressSanitizer build reserves terabytes of shadow address space, which "
                  "no ulimit -v test limit can hold (the release build runs this test)";
#endif
  const auto o =
      kvfleet_under_ulimit("1500000", kSmallRun +
                                          "--set pools[0].engine.num_gpu_blocks_override=16000000 "
                                          "--set pools[0].replicas=4 --out " +
                                          path("o.h5"));
  EXPECT_EQ(o.status, 2) << o.text;
  EXPECT_THAT(o.text, HasSubstr("pools[0].replicas"));
  EXPECT_THAT(o.text, HasSubstr("would need about 2.8 GB"));
  EXPECT_THAT(o.text, HasSubstr("ulimit -v"));
  EXPECT_FALSE(fs::exists(path("o.h5")));
  const auto big_batch =
      kvfleet_under_ulimit("6000000", kSmallRun +
                                          "--set pools[0].engine.max_num_seqs=1000000000 "
                                          "--set pools[0].engine.num_gpu_blocks_override=16000000");
  EXPECT_EQ(big_batch.status, 0) << big_batch.text;
}

// ---- sweep files and results files ---------------------------------------------------------

using Sweeps = testing::CliTest;

const std::string kBase = std::string(KVFLEET_SOURCE_DIR) + "/scenarios/default.yaml";

// A sweep long enough to be seen running: 60 points of 20,000 requests.
std::string long_sweep() {
  return "base: " + kBase +
         "\nset: [workload.num_requests=20000]\naxes:\n  - {key: workload.arrival.rate_per_s, "
         "range: {start: 10, stop: 69, step: 1}}\nmetrics: [time_to_first_token_p99_s]\n";
}

pid_t start(const std::vector<std::string>& args) {
  const std::string bin = std::string(KVFLEET_BINARY_DIR) + "/bin/kvfleet";
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv{const_cast<char*>(bin.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

bool wait_for(const std::string& file) {
  for (int i = 0; i < 6000 && !std::filesystem::exists(file); ++i) ::usleep(10000);
  return std::filesystem::exists(file);
}

int finish(pid_t pid) {
  int st = 0;
  ::waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

TEST_F(Sweeps, AKeyVariedTwiceIsRefusedBeforeAnyPointRuns) {
  write("s.yaml", "base: " + kBase +
                      "\naxes:\n  - {key: workload.num_requests, values: [10, 20]}\n"
                      "  - {key: workload.num_requests, values: [30]}\n");
  const auto o = kvfleet("sweep " + path("s.yaml") + " --out " + path("r.h5"));
  EXPECT_EQ(o.status, 2) << o.text;
  EXPECT_THAT(o.text, HasSubstr("s.yaml:4"));
  EXPECT_THAT(o.text, HasSubstr("axes[1].key"));
  EXPECT_THAT(o.text, HasSubstr("varied twice"));
  EXPECT_THAT(outputs({"s.yaml"}), ::testing::IsEmpty());
}

TEST_F(Sweeps, AHugeGridIsRefusedBeforeAllocating) {
  write("s.yaml", "base: " + kBase +
                      "\naxes:\n  - {key: workload.num_requests, range: {start: 1, stop: 1e12, "
                      "step: 1}}\n");
  const auto o = kvfleet("sweep " + path("s.yaml") + " --out " + path("r.h5"));
  EXPECT_EQ(o.status, 2) << o.text;
  EXPECT_THAT(o.text, HasSubstr("above the limit of 1000000"));
}

TEST_F(Sweeps, OutputPathsAreCheckedBeforeAnyPointRuns) {
  write("s.yaml", long_sweep());
  fs::create_directory(path("dir.h5"));
  for (const std::string& out : {path("dir.h5"), std::string("''"), path("no/such.h5")}) {
    const auto o = kvfleet("sweep " + path("s.yaml") + " --quiet --out " + out);
    EXPECT_EQ(o.status, 2) << out << ": " << o.text;
    EXPECT_THAT(o.text, HasSubstr("--out"));
  }
  EXPECT_THAT(outputs({"s.yaml", "dir.h5"}), ::testing::IsEmpty());
}

// A second sweep on the same --out is refused while the first runs, naming its process.
TEST_F(Sweeps, TwoSweepsOnOneOutputCannotBothRun) {
  write("s.yaml", long_sweep());
  const pid_t first = start({"sweep", path("s.yaml"), "--threads", "1", "--out", path("r.h5")});
  ASSERT_TRUE(wait_for(path("r.h5.lock")));
  const auto o = kvfleet("sweep " + path("s.yaml") + " --threads 1 --out " + path("r.h5"));
  EXPECT_EQ(o.status, 2) << o.text;
  EXPECT_THAT(o.text, HasSubstr("another kvfleet (process " + std::to_string(first)));
  ::kill(first, SIGTERM);
  EXPECT_EQ(finish(first), 143);
  EXPECT_FALSE(fs::exists(path("r.h5.lock")));
}

// Every writer honours a sweep's lock: `run --out`, `merge` and `replay --out` on the file a
// sweep is writing are refused naming its process, and leave the sweep's file alone (they once
// replaced it under the running sweep).
TEST_F(Sweeps, EveryWriterHonoursTheLockOfARunningSweep) {
  write("s.yaml", long_sweep());
  const pid_t first = start({"sweep", path("s.yaml"), "--threads", "1", "--out", path("r.h5")});
  ASSERT_TRUE(wait_for(path("r.h5.lock")));
  const std::string bench =
      std::string(KVFLEET_SOURCE_DIR) + "/tests/data/bench/vllm-bench/detailed.json";
  for (const std::string& cmd :
       {kSmallRun + "--out " + path("r.h5"), "merge " + path("r.h5") + " " + path("s.yaml"),
        "replay " + bench + " --gpu H100-SXM -q --out " + path("r.h5")}) {
    const auto o = kvfleet(cmd);
    EXPECT_EQ(o.status, 2) << cmd << ": " << o.text;
    EXPECT_THAT(o.text, HasSubstr("another kvfleet (process " + std::to_string(first))) << cmd;
  }
  ::kill(first, SIGTERM);
  EXPECT_EQ(finish(first), 143);
  EXPECT_FALSE(fs::exists(path("r.h5.lock")));
}

// A checkpoint that cannot be written (here: the results file became a directory) stops the
// sweep cleanly with exit 2 naming the path, not an abort.
TEST_F(Sweeps, ACheckpointThatCannotBeWrittenStopsTheSweep) {
  write("s.yaml", long_sweep());
  const pid_t pid = start(
      {"sweep", path("s.yaml"), "--threads", "2", "--checkpoint-s", "0.1", "--out", path("r.h5")});
  ASSERT_TRUE(wait_for(path("r.h5")));
  fs::remove(path("r.h5"));
  fs::create_directory(path("r.h5"));
  EXPECT_EQ(finish(pid), 2);
  EXPECT_FALSE(fs::exists(path("r.h5.lock")));
  for (const auto& name : outputs({"s.yaml", "r.h5"})) ADD_FAILURE() << "left behind: " << name;
}

// Results files whose datasets have the wrong type or shape are refused by name (a /sweep
// dataset of integers once crashed merge, --resume and plot).
void write_int_dataset(hid_t loc, const char* name) {
  const hsize_t dims[1] = {3};
  const long long v[3] = {1, 2, 3};
  const hid_t space = H5Screate_simple(1, dims, nullptr);
  const hid_t ds =
      H5Dcreate2(loc, name, H5T_NATIVE_LLONG, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(ds, H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
  H5Dclose(ds);
  H5Sclose(space);
}

TEST_F(Sweeps, ResultsFilesOfTheWrongShapeAreRefused) {
  write("s.yaml", "base: " + kBase +
                      "\nset: [workload.num_requests=50]\naxes:\n  - {key: "
                      "workload.arrival.rate_per_s, values: [10, 20]}\n"
                      "metrics: [time_to_first_token_p99_s, requests_per_s]\n");
  ASSERT_EQ(kvfleet("sweep " + path("s.yaml") + " --quiet --out " + path("good.h5")).status, 0);
  // /sweep of integers.
  {
    const hid_t f = H5Fcreate(path("int.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    write_int_dataset(f, "sweep");
    write_int_dataset(f, "scenario");
    write_int_dataset(f, "points");
    H5Fclose(f);
  }
  // A results file whose /points lacks one metric column (resume must not shift the others).
  {
    const auto good = sim::h5::open_for_reading(path("good.h5"), "sweep results");
    const std::string sweep_text = sim::h5::read_string_dataset(good.id, "sweep");
    const std::string base = sim::h5::read_string_dataset(good.id, "scenario");
    sim::Table points = sim::h5::read_table(good.id, "points");
    const sim::Table curves = sim::h5::read_table(good.id, "curves");
    points.columns.erase(std::find_if(points.columns.begin(), points.columns.end(),
                                      [](const auto& c) { return c.name == "requests_per_s"; }));
    sim::h5::write_file_atomically(path("short.h5"), [&](hid_t f) {
      sim::h5::write_string_dataset(f, "sweep", sweep_text);
      sim::h5::write_string_dataset(f, "scenario", base);
      sim::h5::write_table(f, "points", points);
      sim::h5::write_table(f, "curves", curves);
    });
  }
  const std::vector<std::string> inputs = {"s.yaml", "good.h5", "int.h5", "short.h5"};
  for (const auto& [args, says] : std::vector<std::pair<std::string, std::string>>{
           {"merge " + path("m.h5") + " " + path("int.h5"), "dataset 'sweep' is not a text"},
           {"sweep " + path("s.yaml") + " --resume --out " + path("int.h5"),
            "dataset 'sweep' is not a text"},
           {"sweep " + path("s.yaml") + " --resume --out " + path("short.h5"),
            "missing: requests_per_s"}}) {
    const auto o = kvfleet(args);
    EXPECT_EQ(o.status, 2) << args << ": " << o.text;
    EXPECT_THAT(o.text, HasSubstr(says)) << args;
    EXPECT_THAT(outputs(inputs), ::testing::IsEmpty()) << args;
  }
  if (fs::exists(std::string(KVFLEET_BINARY_DIR) + "/bin/kvfleet-plot")) {
    const auto o =
        kvfleet("plot " + path("int.h5") +
                " --x workload.arrival.rate_per_s --y requests_per_s --out " + path("p.png"));
    EXPECT_EQ(o.status, 2) << o.text;
    EXPECT_THAT(o.text, HasSubstr("sweep"));
    // A file that is no result at all is named as such, before any option is asked for (it
    // once answered "--x is required").
    const auto y = kvfleet("plot " + std::string(KVFLEET_SOURCE_DIR) +
                           "/scenarios/default.yaml --out " + path("p.png"));
    EXPECT_EQ(y.status, 2) << y.text;
    EXPECT_THAT(y.text, HasSubstr("is not a kvfleet result file"));
  }
}

}  // namespace
}  // namespace kvfleet
