#pragma once
// What the benchmark-result replays share (bench_common.cpp; inference_perf.cpp and
// vllm_bench.cpp plan each format's replay, bench_results.cpp detects the format and compares):
// not part of the replay's interface.
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "sim/replay/bench_results.h"

namespace kvfleet::sim::bench_detail {

namespace fs = std::filesystem;

// printf-style formatting of one number.
std::string fmt(const char* f, double v);

// vLLM engine arguments as kvfleet pool settings, from a JSON or YAML mapping (meta.json's
// engine_kwargs style) or a `vllm serve MODEL --flag value ...` command line.
struct EngineArgs {
  std::map<std::string, std::string> values;  // normalised key (underscores) -> text
  std::string model;
  std::string where;
};
EngineArgs read_engine_args(const std::string& path);
// The server's engine arguments kept in `dir` beside the result, or "" when none are.
std::string engine_args_beside(const fs::path& dir);
// Sets the pool's engine and parallelism from engine arguments, strictly typed.
void apply_engine_args(const EngineArgs& a, YAML::Node pool, std::vector<std::string>& notes);
// Applies the engine arguments of `file` (none: a note that kvfleet's defaults apply, `beside`
// saying where they were looked for); `model` takes theirs if it is empty.
// What the arguments say of the weights' precision (vLLM's quantization and dtype), for set_model.
struct WeightArgs {
  std::string quantization, dtype, where;
};
void apply_engine_args_file(const std::string& file, YAML::Node pool, std::string& model,
                            const char* beside, std::vector<std::string>& notes,
                            WeightArgs& weights);
// The pool's model: --model-config, --model, else the preset the result's model name matches.
// Its weight precision: --weight-dtype, else the config.json's (--model-config), else `weights`.
void set_model(const BenchOptions& o, const std::string& name_from_run, const std::string& where,
               YAML::Node sc, YAML::Node pool, std::vector<std::string>& notes,
               const WeightArgs& weights);
// The scenario a replay starts from: the GPU given, one pool, the replay's simulation settings.
YAML::Node base_scenario(const BenchOptions& o, const std::string& name,
                         std::vector<std::string>& notes);

// An inference-perf result folder's files: per stage, the summary, per-request and config.
struct IpFiles {
  fs::path dir;
  std::map<int, fs::path> stages;
  fs::path summary, per_request, config;
};
IpFiles ip_files(const fs::path& dir);

BenchReplay plan_inference_perf(const BenchOptions& o);
BenchReplay plan_vllm_bench(const BenchOptions& o);

}  // namespace kvfleet::sim::bench_detail
