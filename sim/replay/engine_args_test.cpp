// Engine arguments in every form and spelling a team keeps them in, vLLM's defaults by release,
// and the benchmark clients' latency definitions by version (issue 50).
#include "sim/replay/engine_args.h"

#include <gtest/gtest.h>

#include <cmath>

#include "sim/core/error.h"
#include "sim/replay/engine_settings.h"
#include "sim/replay/latency_definition.h"
#include "sim/replay/vllm_defaults.h"

namespace kvfleet::sim {
namespace {

std::string value_of(const EngineArgs& a, const std::string& key) {
  const EngineArg* x = a.find(key);
  return x ? x->value : "<absent>";
}

TEST(EngineArgs, AJsonMappingWithALaunchScriptsAliasIsRead) {
  const EngineArgs a = parse_engine_args(
      R"({"model": "codellama/CodeLlama-34b-hf", "tensor_parallelism": 2, "max_num_seqs": 128})",
      "engine_args.json");
  EXPECT_EQ(value_of(a, "tensor_parallel_size"), "2");
  EXPECT_EQ(value_of(a, "max_num_seqs"), "128");
  EXPECT_EQ(value_of(a, "model"), "codellama/CodeLlama-34b-hf");
  ASSERT_NE(a.find("tensor_parallel_size"), nullptr);
  EXPECT_EQ(a.find("tensor_parallel_size")->given, "tensor_parallelism");
}

TEST(EngineArgs, AYamlSectionIsRead) {
  const EngineArgs a = parse_engine_args(
      "experiment: x\nengine_kwargs:\n  tensor-parallel-size: 4\n  enable_prefix_caching: false\n",
      "run.yaml");
  EXPECT_EQ(value_of(a, "tensor_parallel_size"), "4");
  EXPECT_EQ(value_of(a, "enable_prefix_caching"), "false");
}

TEST(EngineArgs, ALaunchScriptIsReadAsAShellReadsIt) {
  const EngineArgs a = parse_engine_args(
      "#!/bin/bash\n"
      "set -e\n"
      "export CUDA_VISIBLE_DEVICES=0,1  # two GPUs\n"
      "vllm serve meta-llama/Llama-3.1-70B-Instruct \\\n"
      "  -tp 2 --max-num-seqs=256 \\\n"
      "  --max-num-batched-tokens 8k --no-enable-prefix-caching \\\n"
      "  --gpu-memory-utilization '0.95' 2>&1 | tee server.log &\n"
      "sleep 60\n",
      "vllm_serve.sh");
  EXPECT_EQ(value_of(a, "tensor_parallel_size"), "2");
  EXPECT_EQ(value_of(a, "max_num_seqs"), "256");
  EXPECT_EQ(value_of(a, "max_num_batched_tokens"), "8k");
  EXPECT_EQ(value_of(a, "enable_prefix_caching"), "false");
  EXPECT_EQ(value_of(a, "gpu_memory_utilization"), "0.95");
  EXPECT_EQ(value_of(a, "model"), "meta-llama/Llama-3.1-70B-Instruct");
  // Where each came from: the line of the flag.
  EXPECT_NE(a.find("max_num_batched_tokens")->where.find(":6"), std::string::npos)
      << a.find("max_num_batched_tokens")->where;
}

TEST(EngineArgs, TheDockerImageTagNamesTheRelease) {
  const EngineArgs a = parse_engine_args(
      "docker run --gpus all -p 8000:8000 vllm/vllm-openai:v0.15.1 --model m "
      "--tensor-parallel-size 8\n",
      "cmd.txt");
  EXPECT_EQ(a.vllm_version, "0.15.1");
  EXPECT_EQ(value_of(a, "tensor_parallel_size"), "8");
}

TEST(EngineArgs, AScriptStartingTwoServersIsRefused) {
  EXPECT_THROW(parse_engine_args("vllm serve a -tp 1 &\nvllm serve b -tp 2 &\n", "two.sh"),
               InputError);
}

TEST(EngineArgs, VllmsNumberSuffixes) {
  EXPECT_EQ(parse_vllm_int("32k"), 32000);
  EXPECT_EQ(parse_vllm_int("32K"), 32768);
  EXPECT_EQ(parse_vllm_int("1M"), 1048576);
  EXPECT_EQ(parse_vllm_int("128"), 128);
  EXPECT_FALSE(parse_vllm_int("12x").has_value());
}

VllmDefaults defaults(const char* version, double gib, const char* gpu, int pp = 1) {
  VllmServerContext c;
  c.device_gib = gib;
  c.gpu_name = gpu;
  c.pipeline_parallel = pp;
  return vllm_defaults(parse_vllm_version(version, "test"), c);
}

std::string dflt(const VllmDefaults& d, const char* key) {
  const VllmDefault* v = d.find(key);
  return v ? v->value : "<absent>";
}

TEST(VllmDefaults, FollowTheRelease) {
  // 0.15.1 on an H100: async scheduling on (since 0.14.0), 1024/8192, 0.9, block 16.
  const VllmDefaults h = defaults("0.15.1", 79.6, "H100-SXM");
  EXPECT_EQ(dflt(h, "engine.async_scheduling"), "true");
  EXPECT_EQ(dflt(h, "engine.max_num_seqs"), "1024");
  EXPECT_EQ(dflt(h, "engine.max_num_batched_tokens"), "8192");
  EXPECT_EQ(dflt(h, "engine.gpu_memory_utilization"), "0.9");
  EXPECT_EQ(dflt(h, "engine.block_size"), "16");
  // 0.13.0: async scheduling still opt-in.
  EXPECT_EQ(dflt(defaults("0.13.0", 79.6, "H100-SXM"), "engine.async_scheduling"), "false");
  // 0.14.x with pipeline parallelism: off.
  EXPECT_EQ(dflt(defaults("0.14.1", 79.6, "H100-SXM", 2), "engine.async_scheduling"), "false");
  // An A100 80GB in 0.9-0.27 gets the small limits.
  EXPECT_EQ(dflt(defaults("0.11.0", 80, "A100-80GB"), "engine.max_num_seqs"), "256");
  // 0.28 on a B200: 16384 tokens.
  EXPECT_EQ(dflt(defaults("0.28.0", 179.1, "B200"), "engine.max_num_batched_tokens"), "16384");
  // A small GPU: 256/2048.
  EXPECT_EQ(dflt(defaults("0.15.1", 23.5, "RTX-4090"), "engine.max_num_batched_tokens"), "2048");
  // 0.20 on: 0.92; 0.34: block 64.
  EXPECT_EQ(dflt(defaults("0.20.0", 79.6, "H100-SXM"), "engine.gpu_memory_utilization"), "0.92");
  EXPECT_EQ(dflt(defaults("0.34.0", 79.6, "H100-SXM"), "engine.block_size"), "64");
  // 0.8.0-0.8.3 match the GPU by name.
  EXPECT_EQ(dflt(defaults("0.8.2", 93.6, "H100-NVL"), "engine.max_num_batched_tokens"), "8192");
  EXPECT_EQ(dflt(defaults("0.8.2", 95.6, "RTX-PRO-6000"), "engine.max_num_batched_tokens"), "2048");
}

TEST(VllmDefaults, CudaGraphSizesFollowTheReleaseAndMaxNumSeqs) {
  const auto old = vllm_cuda_graph_sizes(parse_vllm_version("0.10.2", "t"), 256);
  EXPECT_EQ(old.size(), 3u + 64u);
  EXPECT_EQ(old.back(), 512);
  const auto small = vllm_cuda_graph_sizes(parse_vllm_version("0.15.1", "t"), 64);
  EXPECT_EQ(small.back(), 128);
  const auto big = vllm_cuda_graph_sizes(parse_vllm_version("0.15.1", "t"), 1024);
  EXPECT_EQ(big.back(), 512);
  EXPECT_EQ(big[big.size() - 2], 496);  // steps of 16 above 256
}

// The CUDA-graph sizes a replay prices token-wise operations at, from each way a server is told.
std::string graphs_of(const std::string& text, const std::string& file) {
  const EngineArgs a = parse_engine_args(text, file);
  const VllmRelease r = choose_vllm_release("0.15.1", &a, "", "");
  YAML::Node pool(YAML::NodeType::Map);
  const EngineSettingsOut out =
      apply_engine_settings(&a, r, VllmServerContext{80, "H100-SXM", 1}, 0, true, pool);
  for (const ReplaySetting& st : out.settings)
    if (st.key == "CUDA graphs") return "off";
  std::string sizes;
  for (const auto& x : pool["cost_model"]["cuda_graph_sizes"]) sizes += x.as<std::string>() + " ";
  return sizes;
}

TEST(EngineArgs, CompilationConfigSetsTheGraphsInEveryForm) {
  EXPECT_EQ(
      graphs_of("vllm serve m --compilation-config '{\"cudagraph_capture_sizes\": [1, 2, 4]}'\n",
                "a.sh"),
      "1 2 4 ");
  EXPECT_EQ(graphs_of("compilation_config:\n  cudagraph_capture_sizes: [1, 8]\n", "a.yaml"),
            "1 8 ");
  EXPECT_EQ(graphs_of("vllm serve m --cudagraph-capture-sizes '[2, 4]'\n", "a.sh"), "2 4 ");
  EXPECT_EQ(
      graphs_of("vllm serve m --compilation-config '{\"cudagraph_mode\": \"NONE\"}'\n", "a.sh"),
      "off");
  EXPECT_EQ(graphs_of("vllm serve m --enforce-eager\n", "a.sh"), "off");
  EXPECT_EQ(graphs_of("vllm serve m -O.cudagraph_mode=none\n", "a.sh"), "off");
  EXPECT_EQ(graphs_of("vllm serve m -O.cudagraph_capture_sizes=[1,4] -O.level=3\n", "a.sh"),
            "1 4 ");
  // The sizes given apart, and the mode NONE in the mapping: no graphs.
  EXPECT_EQ(graphs_of("vllm serve m --cudagraph-capture-sizes '[2]' --compilation-config "
                      "'{\"cudagraph_mode\": \"NONE\"}'\n",
                      "a.sh"),
            "off");
  // A level (-O3) leaves the release's default sizes.
  EXPECT_EQ(graphs_of("vllm serve m -O3\n", "a.sh"), graphs_of("vllm serve m\n", "a.sh"));
  EXPECT_THROW(graphs_of("vllm serve m --compilation-config '[1'\n", "a.sh"), InputError);
  EXPECT_THROW(graphs_of("compilation_config:\n  cudagraph_capture_sizes: [0]\n", "a.yaml"),
               InputError);
}

TEST(VllmRelease, CommandLineThenArgumentsThenRecordThenNewestSaidSo) {
  EngineArgs a = parse_engine_args("pip install vllm==0.11.0\nvllm serve m\n", "s.sh");
  EXPECT_EQ(choose_vllm_release("0.15.1", &a, "0.9.0", "r").version.text, "0.15.1");
  EXPECT_EQ(choose_vllm_release("", &a, "0.9.0", "r").version.text, "0.11.0");
  EXPECT_EQ(choose_vllm_release("", nullptr, "0.9.0", "r").version.text, "0.9.0");
  const VllmRelease n = choose_vllm_release("", nullptr, "", "");
  EXPECT_TRUE(n.assumed);
  EXPECT_EQ(n.version.text, newest_known_vllm().text);
  EXPECT_THROW(choose_vllm_release("0.6.3", nullptr, "", ""), InputError);
  EXPECT_THROW(choose_vllm_release("latest", nullptr, "", ""), InputError);
}

TEST(LatencyDefinitions, AReleaseOfTheToolNamesItsDefinition) {
  EXPECT_EQ(latency_definition_for("inference-perf", "0.2.0").id, "inference-perf:lines");
  EXPECT_EQ(latency_definition_for("inference-perf", "v0.4.0").id, "inference-perf:events");
  EXPECT_EQ(latency_definition_for("inference-perf", "0.6.1").id, "inference-perf:tokens");
  EXPECT_EQ(latency_definition_for("inference-perf", "inference-perf:events").id,
            "inference-perf:events");
  EXPECT_EQ(latency_definition_for("vllm bench serve", "0.6.3").id, "vllm-bench:0.6");
  EXPECT_EQ(latency_definition_for("vllm bench serve", "0.15.1").id, "vllm-bench");
  EXPECT_THROW(latency_definition_for("inference-perf", "newest"), InputError);
  EXPECT_EQ(latency_definition_for("guidellm", "0.3.1").id, "guidellm:0.3");
  EXPECT_EQ(latency_definition_for("guidellm", "0.2.0").id, "guidellm:0.3");
  EXPECT_EQ(latency_definition_for("guidellm", "0.4.0").id, "guidellm:0.5");
  EXPECT_EQ(latency_definition_for("guidellm", "v0.8.1").id, "guidellm:0.5");
  EXPECT_THROW(latency_definition_for("guidellm", "0.1.0"), InputError);
}

TEST(LatencyDefinitions, GuideLlmDividesTpotByEveryTokenAndFrom04OnStartsItAtTheSend) {
  ClientTimes t;
  t.first_chunk = 0.12, t.last_token = 0.12 + 15 * 0.015, t.end = t.last_token + 0.09;
  t.chunks = t.tokens = 16;
  const LatencyDefinition g3 = latency_definition_id("guidellm:0.3", "t");
  EXPECT_NEAR(client_tpot(g3, t), 15 * 0.015 / 16, 1e-12);
  EXPECT_NEAR(client_e2e(g3, t), t.end, 1e-12);
  const LatencyDefinition g5 = latency_definition_id("guidellm:0.5", "t");
  EXPECT_NEAR(client_tpot(g5, t), (0.12 + 15 * 0.015) / 16, 1e-12);
  EXPECT_NEAR(client_e2e(g5, t), t.end, 1e-12);
  EXPECT_EQ(g5.tpot_words(), "(last token's chunk − sent) / output, statistics weighted by output");
}

TEST(LatencyDefinitions, TheLineErasTpotDividesByAboutTwiceTheTokens) {
  ClientTimes t;
  t.first_chunk = 0.1, t.last_token = 0.1 + 15 * 0.015, t.end = t.last_token + 0.09;
  t.chunks = t.tokens = 16;
  LatencyDefinition lines = latency_definition_id("inference-perf:lines", "t");
  EXPECT_NEAR(client_tpot(lines, t), (15 * 0.015 + 0.09) / 33, 1e-12);
  lines.chat = true;
  EXPECT_NEAR(client_tpot(lines, t), (15 * 0.015 + 0.09) / 34, 1e-12);
  const LatencyDefinition tokens = latency_definition_id("inference-perf:tokens", "t");
  EXPECT_NEAR(client_tpot(tokens, t), 0.015, 1e-12);
  EXPECT_NEAR(client_e2e(tokens, t), t.end, 1e-12);
  const LatencyDefinition vb = latency_definition_id("vllm-bench", "t");
  EXPECT_NEAR(client_e2e(vb, t), t.last_token, 1e-12);
  t.chunks = t.tokens = 1;
  EXPECT_TRUE(std::isnan(client_tpot(tokens, t)));
}

}  // namespace
}  // namespace kvfleet::sim
