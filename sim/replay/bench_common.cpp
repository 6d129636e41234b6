// What the benchmark-result replays share: the server's engine arguments, the model, the base
// scenario, an inference-perf folder's files.
#include "sim/replay/bench_detail.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>

#include "sim/config/params.h"
#include "sim/core/error.h"
#include "sim/core/rng.h"
#include "sim/io/input_file.h"
#include "sim/io/json.h"
#include "sim/model/presets.h"
#include "sim/replay/replay.h"
#include "sim/simulation/scenario.h"

namespace kvfleet::sim::bench_detail {

using json = nlohmann::json;

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// ---- the model ---------------------------------------------------------------------------------

namespace {
void set_weight_dtype(const BenchOptions& o, const std::string& model_name, YAML::Node pool,
                      BenchReplay& plan, const WeightArgs& w) {
  if (!o.weight_dtype.empty()) {
    pool["weight_dtype"] = o.weight_dtype;
    plan.settings.push_back({"pools[0].weight_dtype", o.weight_dtype, "--weight-dtype"});
    return;
  }
  if (!o.model_config.empty()) {
    plan.settings.push_back({"pools[0].weight_dtype", "the config.json's",
                             "--model-config (its quantization_config, else its torch_dtype)"});
    return;
  }
  std::string how;
  const std::string d = vllm_weight_dtype(w.quantization, w.dtype, model_name,
                                          w.where.empty() ? o.path : w.where, "quantization", how);
  if (d != "auto") pool["weight_dtype"] = d;
  plan.settings.push_back({"pools[0].weight_dtype",
                           d == "auto" ? std::string("auto (the model's own precision)") : d,
                           how.empty() ? "no quantization or dtype argument, nor a quantized "
                                         "checkpoint's name"
                                       : how});
}
}  // namespace

void set_model(const BenchOptions& o, const std::string& name_from_run, const std::string& where,
               YAML::Node sc, YAML::Node pool, BenchReplay& plan, const WeightArgs& weights) {
  set_weight_dtype(o, name_from_run, pool, plan, weights);
  if (!o.model_config.empty()) {
    const ModelSpec m = read_hf_config(o.model_config, "replay-model");
    YAML::Node entry;
    entry["name"] = "replay-model";
    entry["hf_config"] = fs::absolute(o.model_config).lexically_normal().string();
    sc["models"].push_back(entry);
    pool["model"] = "replay-model";
    plan.settings.push_back(
        {"pools[0].model", "from " + o.model_config, "--model-config (" + m.source + ")"});
    return;
  }
  if (!o.model.empty()) {
    pool["model"] = o.model;
    plan.settings.push_back({"pools[0].model", o.model, "--model"});
    return;
  }
  const ModelSpec* m = name_from_run.empty() ? nullptr : match_model_preset(name_from_run);
  if (m == nullptr)
    throw InputError(where, "model",
                     name_from_run.empty()
                         ? "the result does not name its model: give --model PRESET or "
                           "--model-config config.json"
                         : "'" + name_from_run +
                               "' matches no model preset: give --model PRESET or "
                               "--model-config its config.json");
  pool["model"] = m->name;
  plan.settings.push_back(
      {"pools[0].model", m->name, "the preset matching the result's model " + name_from_run});
}

YAML::Node base_scenario(const BenchOptions& o, const std::string& name, BenchReplay& plan) {
  if (o.gpu.empty())
    throw InputError(o.path, "",
                     "benchmark results do not record the GPU: give --gpu NAME (kvfleet presets "
                     "lists them)");
  YAML::Node sc;
  sc["name"] = name;
  sc["seed"] = 1;
  YAML::Node pool;
  pool["name"] = "replay";
  pool["gpu"] = o.gpu;
  pool["engine"] = YAML::Node(YAML::NodeType::Map);
  if (!o.profile.empty()) {
    pool["cost_model"]["impl"] = "profile";
    pool["cost_model"]["path"] = fs::absolute(o.profile).lexically_normal().string();
  } else {
    pool["cost_model"] = YAML::Load(replay_cost_model_yaml(o.cost_model, o.leave_out));
  }
  sc["pools"].push_back(pool);
  sc["simulation"]["timeseries_interval_s"] = 1.0;
  plan.settings.push_back({"pools[0].gpu", o.gpu, "--gpu"});
  plan.settings.push_back({"pools[0].cost_model",
                           !o.profile.empty()     ? "profile " + o.profile
                           : o.cost_model.empty() ? std::string("roofline")
                                                  : o.cost_model,
                           !o.profile.empty()     ? "--profile"
                           : o.cost_model.empty() ? "kvfleet's default"
                                                  : "--cost-model"});
  plan.settings.push_back({"pools[0].frontend", "enabled, kvfleet's default times",
                           "latencies as a benchmark client measures them include the API "
                           "server's time (kvfleet's defaults; docs/engine.md)"});
  return sc;
}

// ---- the server ------------------------------------------------------------------------------

namespace {
double preset_memory_gib(const std::string& gpu) {
  for (const GpuSpec& g : gpu_presets())
    if (g.name == gpu) return g.memory_bytes / (1024.0 * 1024.0 * 1024.0);
  return 0;
}

void add_settings(BenchReplay& plan, const EngineSettingsOut& s) {
  for (const auto& x : s.settings) plan.settings.push_back(x);
  for (const auto& w : s.warnings) plan.notes.push_back(w);
}
}  // namespace

void server_settings(const BenchOptions& o, const LocatedResult& where, std::string model_name,
                     const std::string& recorded_version, const std::string& recorded_where,
                     YAML::Node sc, BenchReplay& plan) {
  YAML::Node pool = sc["pools"][0];
  std::string file = o.engine_args;
  std::string found_note;
  if (file.empty()) {
    file = find_engine_args(where);
    if (!file.empty()) found_note = " (found with the result)";
  }
  std::optional<EngineArgs> args;
  if (!file.empty()) {
    args = read_engine_args(file);
    plan.notes.push_back("engine arguments: " + file + found_note + ", read as " + args->form);
  } else {
    plan.notes.push_back(
        "engine arguments: none given (--engine-args FILE) nor found with the result (a file "
        "named like engine_args.yaml, serve_args.txt or vllm_serve.sh in its folder or above): "
        "every engine setting is the vLLM release's default");
  }
  plan.release = choose_vllm_release(o.vllm_version, args ? &*args : nullptr, recorded_version,
                                     recorded_where);
  plan.notes.push_back("vLLM release " + plan.release.version.text + " (" + plan.release.from +
                       ")");
  const bool graphs = !o.profile.empty() || o.cost_model == "fitted";
  VllmServerContext ctx;
  ctx.device_gib = preset_memory_gib(o.gpu);
  ctx.gpu_name = o.gpu;
  const EngineSettingsOut s = apply_engine_settings(args ? &*args : nullptr, plan.release, ctx,
                                                    o.tensor_parallel, graphs, pool);
  add_settings(plan, s);
  WeightArgs weights{s.quantization, s.dtype, s.quant_where};
  if (model_name.empty()) model_name = s.model;
  set_model(o, model_name, where.path, sc, pool, plan, weights);
}

}  // namespace kvfleet::sim::bench_detail
