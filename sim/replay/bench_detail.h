#pragma once
// What the benchmark-result replays share (bench_common.cpp; inference_perf.cpp, vllm_bench.cpp
// and guidellm.cpp plan each format's replay, bench_results.cpp detects the format and compares):
// not part of the replay's interface.
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "sim/replay/bench_results.h"
#include "sim/replay/locate.h"

namespace kvfleet::sim::bench_detail {

namespace fs = std::filesystem;

// printf-style formatting of one number.
std::string fmt(const char* f, double v);

// What the arguments say of the weights' precision (vLLM's quantization and dtype), for set_model.
struct WeightArgs {
  std::string quantization, dtype, where;
};
// The pool's model: --model-config, --model, else the preset the result's model name matches.
// Its weight precision: --weight-dtype, else the config.json's (--model-config), else `weights`.
void set_model(const BenchOptions& o, const std::string& name_from_run, const std::string& where,
               YAML::Node sc, YAML::Node pool, BenchReplay& plan, const WeightArgs& weights);
// The scenario a replay starts from: the GPU given, one pool, the replay's simulation settings.
YAML::Node base_scenario(const BenchOptions& o, const std::string& name, BenchReplay& plan);

// The server: its engine arguments (--engine-args, else the file kept with the result), the vLLM
// release whose defaults fill the rest (--vllm-version, else what the arguments or the result
// record: `recorded_version` from `recorded_where`), the model (`model_name` from the result, else
// the arguments') and its weights. Every setting goes to plan.settings with its source.
void server_settings(const BenchOptions& o, const LocatedResult& where, std::string model_name,
                     const std::string& recorded_version, const std::string& recorded_where,
                     YAML::Node sc, BenchReplay& plan);

BenchReplay plan_inference_perf(const BenchOptions& o, const LocatedResult& where);
BenchReplay plan_vllm_bench(const BenchOptions& o, const LocatedResult& where);
BenchReplay plan_guidellm(const BenchOptions& o, const LocatedResult& where);

}  // namespace kvfleet::sim::bench_detail
