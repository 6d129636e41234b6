// A measured vLLM run's folder as a scenario: the engine's settings from meta.json (as
// resolved where recorded), the GPU and weights (run_gpu.cpp), the arrivals from requests.jsonl.
#include "sim/replay/replay.h"
#include "sim/io/text_file.h"
#include "sim/model/presets.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>

#include "sim/replay/run_detail.h"

namespace kvfleet::sim {

using namespace run_detail;

namespace {
ReplayPlan build_plan(const ReplayOptions& o);
}  // namespace

std::string replay_cost_model_yaml(const std::string& impl,
                                   const std::vector<std::string>& leave_out) {
  if (!impl.empty() && impl != "roofline" && impl != "fitted")
    throw InputError("--cost-model", "",
                     "'" + impl + "' is not roofline or fitted (a measured profile: --profile)");
  if (!leave_out.empty() && impl != "fitted")
    throw InputError("--leave-out", "", "applies to --cost-model fitted");
  YAML::Node n;
  n["impl"] = impl.empty() ? "roofline" : impl;
  for (const auto& g : leave_out) n["leave_out"].push_back(g);
  YAML::Emitter em;
  em << YAML::Flow << n;
  return em.c_str();
}

const ModelSpec* match_model_preset(const std::string& text) {
  return match(model_presets(), text);
}

ReplayPlan plan_replay(const ReplayOptions& o) {
  try {
    return build_plan(o);
  } catch (const fs::filesystem_error& e) {
    throw InputError(o.run_dir, "", std::string("cannot be read: ") + e.what());
  } catch (const json::exception& e) {
    // A value of the wrong JSON type somewhere in the run's files.
    throw InputError((fs::path(o.run_dir) / "meta.json").string(), "",
                     std::string("a value has an unexpected type: ") + e.what());
  }
}

namespace {

// What the run's files say of its engine, with vLLM 0.19's defaults where the run left them
// unset. Every value is read with its JSON type checked: a wrong type is an error naming
// meta.json and the key.
struct RunEngine {
  long long tp = 1, pp = 1, dp = 1, seqs = 256, batched = 2048, max_len = 0, block = 16,
            gpu_blocks = 0;
  std::string block_from = "vLLM's default", blocks_from;
  bool ep = false, prefix = true, chunked = true, async = true, eager = false;
  double util = 0.9;
  std::string kv_dtype = "auto", async_from = "vLLM's default";
  std::vector<long long> capture;  // CUDA graph capture sizes, as resolved
  double link_Bps = 0, link_lat = 0;
};

// The KV cache as the run recorded it: its kv_cache section, else the resolved cache_config,
// else the engine's arguments.
void read_kv_cache(const RunFile& mf, const json& meta, RunEngine& e) {
  if (const auto v = mf.integer(meta, {"engine_kwargs", "block_size"}, 1, 1024))
    e.block = *v, e.block_from = "engine_kwargs.block_size";
  if (const auto v = mf.integer(meta, {"resolved_config", "cache_config", "block_size"}, 1, 1024))
    e.block = *v, e.block_from = "resolved cache_config.block_size";
  if (const auto v = mf.integer(meta, {"kv_cache", "block_size"}, 1, 1024))
    e.block = *v, e.block_from = "kv_cache.block_size";
  const auto blocks = [&](std::initializer_list<const char*> path, const char* from) {
    if (const auto v = mf.integer(meta, path, 0, 16777216); v && *v > 0)
      e.gpu_blocks = *v, e.blocks_from = from;
  };
  blocks({"engine_kwargs", "num_gpu_blocks_override"}, "engine_kwargs.num_gpu_blocks_override");
  blocks({"resolved_config", "cache_config", "num_gpu_blocks"},
         "resolved cache_config.num_gpu_blocks");
  blocks({"kv_cache", "num_gpu_blocks"}, "kv_cache.num_gpu_blocks");
}

RunEngine read_engine(const RunFile& mf, const json& meta, const RunFile& cf, const json& cluster,
                      const fs::path& meta_path) {
  RunEngine e;
  e.tp = mf.integer(meta, {"engine_kwargs", "tensor_parallel_size"}, 1, 64).value_or(1);
  e.pp = mf.integer(meta, {"engine_kwargs", "pipeline_parallel_size"}, 1, 64).value_or(1);
  e.dp = mf.integer(meta, {"engine_kwargs", "data_parallel_size"}, 1, 64).value_or(1);
  // As resolved, where the run recorded vLLM's resolved configuration.
  if (const auto v =
          mf.integer(meta, {"resolved_config", "parallel_config", "tensor_parallel_size"}, 1, 64))
    e.tp = *v;
  if (const auto v =
          mf.integer(meta, {"resolved_config", "parallel_config", "pipeline_parallel_size"}, 1, 64))
    e.pp = *v;
  if (const auto v =
          mf.integer(meta, {"resolved_config", "parallel_config", "data_parallel_size"}, 1, 64))
    e.dp = *v;
  e.ep = mf.boolean(meta, {"engine_kwargs", "enable_expert_parallel"}).value_or(false);
  e.seqs = mf.integer(meta, {"engine_kwargs", "max_num_seqs"}, 1, 1 << 20).value_or(256);
  e.batched =
      mf.integer(meta, {"engine_kwargs", "max_num_batched_tokens"}, 1, 100'000'000).value_or(2048);
  e.max_len = mf.integer(meta, {"engine_kwargs", "max_model_len"}, 0, 100'000'000).value_or(0);
  read_kv_cache(mf, meta, e);
  for (const auto& v : {mf.number(meta, {"kv_cache", "gpu_memory_utilization"}, 0.01, 1),
                        mf.number(meta, {"engine_kwargs", "gpu_memory_utilization"}, 0.01, 1)})
    if (v) e.util = *v;
  for (const auto& v :
       {mf.boolean(meta, {"resolved_config", "cache_config", "enable_prefix_caching"}),
        mf.boolean(meta, {"kv_cache", "enable_prefix_caching"}),
        mf.boolean(meta, {"engine_kwargs", "enable_prefix_caching"})})
    if (v) e.prefix = *v;
  for (const auto& v :
       {mf.boolean(meta, {"resolved_config", "scheduler_config", "enable_chunked_prefill"}),
        mf.boolean(meta, {"engine_kwargs", "enable_chunked_prefill"})})
    if (v) e.chunked = *v;
  e.kv_dtype = mf.string(meta, {"engine_kwargs", "kv_cache_dtype"}).value_or("auto");
  {
    static const std::vector<std::string_view> ok = with_auto(kKvDtypes);
    if (std::find(ok.begin(), ok.end(), e.kv_dtype) == ok.end())
      throw InputError(meta_path.string(), "engine_kwargs.kv_cache_dtype",
                       "'" + e.kv_dtype + "' is not a KV cache precision kvfleet models");
  }
  // Async scheduling: as resolved, else as given, else vLLM's default (on from 0.11).
  if (const auto v = mf.boolean(meta, {"engine_kwargs", "async_scheduling"}))
    e.async = *v, e.async_from = "engine_kwargs";
  if (const auto v = mf.boolean(meta, {"resolved_config", "scheduler_config", "async_scheduling"}))
    e.async = *v, e.async_from = "resolved scheduler_config";
  for (const auto& v : {mf.boolean(meta, {"resolved_config", "model_config", "enforce_eager"}),
                        mf.boolean(meta, {"engine_kwargs", "enforce_eager"})})
    if (v) e.eager = *v;
  if (const json& j =
          at(meta, {"resolved_config", "compilation_config", "cudagraph_capture_sizes"});
      !j.is_null()) {
    if (!j.is_array())
      throw InputError(meta_path.string(),
                       "resolved_config.compilation_config.cudagraph_capture_sizes",
                       "must be a list of token counts");
    for (const auto& x : j) {
      if (!x.is_number_integer() || x.get<long long>() < 1 || x.get<long long>() > 1 << 20)
        throw InputError(meta_path.string(),
                         "resolved_config.compilation_config.cudagraph_capture_sizes",
                         "must hold whole numbers from 1 to 1048576, not " + x.dump());
      e.capture.push_back(x.get<long long>());
    }
  }
  e.link_Bps = cf.number(cluster, {"link_bw"}, 0, 1e6).value_or(0) * 1e9;        // GB/s
  e.link_lat = cf.number(cluster, {"link_latency"}, 0, 1e9).value_or(0) * 1e-9;  // ns
  return e;
}

// The scenario, built as data and emitted: nothing from the run's files is pasted as YAML.
std::string replay_yaml(const ReplayOptions& o, const fs::path& dir, const fs::path& req,
                        const std::string& model, const std::string& weight_dtype,
                        const GpuSpec* gpu, const YAML::Node& custom_gpu, const RunEngine& e) {
  YAML::Node sc;
  sc["name"] = "replay-" + fs::absolute(dir).lexically_normal().filename().string();
  sc["seed"] = 1;
  sc["workload"]["impl"] = "trace";
  sc["workload"]["format"] = "vllm_jsonl";
  sc["workload"]["path"] = fs::absolute(req).lexically_normal().string();
  YAML::Node pool;
  pool["name"] = "replay";
  pool["model"] = model;
  if (weight_dtype != "auto") pool["weight_dtype"] = weight_dtype;
  pool["gpu"] = gpu != nullptr ? gpu->name : std::string("replay-gpu");
  pool["tensor_parallel"] = e.tp;
  if (e.pp > 1) pool["pipeline_parallel"] = e.pp;
  pool["data_parallel"] = e.dp;
  pool["expert_parallel"] = e.ep;
  if (e.link_Bps > 0) pool["link_Bps"] = e.link_Bps;
  if (e.link_lat > 0) pool["link_latency_s"] = e.link_lat;
  // requests.jsonl's timestamps are the engine's own (queued, first token, last token): the API
  // server's time is outside them, so the replay measures as the engine does.
  pool["frontend"]["enabled"] = false;
  YAML::Node eng;
  eng["max_num_seqs"] = e.seqs;
  eng["max_num_batched_tokens"] = e.batched;
  eng["enable_chunked_prefill"] = e.chunked;
  eng["enable_prefix_caching"] = e.prefix;
  eng["async_scheduling"] = e.async;
  eng["block_size"] = e.block;
  eng["gpu_memory_utilization"] = e.util;
  if (e.max_len > 0) eng["max_model_len"] = e.max_len;
  if (e.gpu_blocks > 0) eng["num_gpu_blocks_override"] = e.gpu_blocks;
  if (e.kv_dtype != "auto") eng["kv_cache_dtype"] = e.kv_dtype;
  pool["engine"] = eng;
  if (o.profile.empty())
    pool["cost_model"] = YAML::Load(replay_cost_model_yaml(o.cost_model, o.leave_out));
  if (!o.profile.empty() || o.cost_model == "fitted") {
    if (!o.profile.empty()) {
      pool["cost_model"]["impl"] = "profile";
      pool["cost_model"]["path"] = fs::absolute(o.profile).lexically_normal().string();
    }
    if (!e.eager) {
      if (!e.capture.empty()) {
        YAML::Node sizes(YAML::NodeType::Sequence);
        for (long long c : e.capture) sizes.push_back(c);
        pool["cost_model"]["cuda_graph_sizes"] = sizes;
      } else {
        pool["cost_model"]["pad_to_cuda_graph_sizes"] = true;
      }
    }
  }
  sc["pools"].push_back(pool);
  sc["simulation"]["timeseries_interval_s"] = 1.0;
  if (custom_gpu.IsDefined() && custom_gpu.IsMap()) sc["gpus"].push_back(custom_gpu);
  if (!o.model_config.empty()) {
    YAML::Node entry;
    entry["name"] = model;
    entry["hf_config"] = fs::absolute(o.model_config).lexically_normal().string();
    sc["models"].push_back(entry);
  }
  YAML::Emitter em;
  em.SetDoublePrecision(17);
  em << sc;
  return "# Replay of " + comment_line(fs::absolute(dir).lexically_normal().string()) +
         " (kvfleet replay): every setting from the run's own files.\n" + em.c_str() + "\n";
}

// What the replay took from the run's files, in words.
void note_engine(const ReplayOptions& o, const RunEngine& e,
                 const std::function<void(std::string)>& note) {
  note("parallelism: tensor " + std::to_string(e.tp) +
       (e.pp > 1 ? ", pipeline " + std::to_string(e.pp) : std::string()) + ", data " +
       std::to_string(e.dp) + (e.ep ? ", experts whole per GPU (enable_expert_parallel)" : "") +
       " (meta.json engine_kwargs)");
  note("engine: max_num_seqs " + std::to_string(e.seqs) + ", max_num_batched_tokens " +
       std::to_string(e.batched) +
       (e.max_len > 0 ? ", max_model_len " + std::to_string(e.max_len)
                      : ", max_model_len the model's") +
       ", block_size " + std::to_string(e.block) + " (" + e.block_from + ")" +
       (e.gpu_blocks > 0
            ? ", " + std::to_string(e.gpu_blocks) + " GPU blocks (" + e.blocks_from + ")"
            : ", GPU blocks from the memory budget (the run did not record them)"));
  note(std::string("async scheduling ") + (e.async ? "on" : "off") + " (" + e.async_from + ")");
  note(
      "latencies as the engine measures them (requests.jsonl's queued and token timestamps are "
      "the engine's): API server time off");
  if (e.link_Bps > 0 || e.link_lat > 0) {
    char buf[120];
    std::snprintf(buf, sizeof buf, "GPU-to-GPU link %.4g GB/s, %.4g us", e.link_Bps / 1e9,
                  e.link_lat * 1e6);
    note(std::string(buf) + " (config.json link_bw, link_latency)");
  }
  if (!o.profile.empty() || o.cost_model == "fitted")
    note(std::string("CUDA graphs: ") +
         (e.eager ? "off (enforce_eager)"
          : !e.capture.empty()
              ? std::to_string(e.capture.size()) + " capture sizes (resolved compilation_config)"
              : "on, vLLM's default capture sizes"));
}

ReplayPlan build_plan(const ReplayOptions& o) {
  const fs::path dir(o.run_dir);
  const fs::path meta_path = dir / "meta.json", req = dir / "requests.jsonl";
  if (!fs::exists(meta_path))
    throw InputError(o.run_dir, "meta.json",
                     "not found: a measured run's folder holds meta.json "
                     "and requests.jsonl");
  if (!fs::exists(req)) throw InputError(o.run_dir, "requests.jsonl", "not found");
  const json meta = read_json(meta_path);
  const json& kw = at(meta, {"engine_kwargs"});
  if (!kw.is_object())
    throw InputError(meta_path.string(), "engine_kwargs", "missing: the engine's arguments");
  ReplayPlan plan;
  auto note = [&](const std::string& s) { plan.notes.push_back(s); };
  const RunFile mf{meta_path.string()};

  // Model and GPU.
  const std::string hf =
      mf.string(meta, {"engine_kwargs", "model"}).value_or(mf.string(meta, {"model"}).value_or(""));
  std::string model_name;
  if (!o.model_config.empty()) {
    if (!o.model.empty())
      throw InputError("--model-config", "", "names the model, as --model does: give one of them");
    const ModelSpec m = read_hf_config(o.model_config, "replay-model");
    model_name = m.name;
    note("model from " + o.model_config + " (" + m.source + ")");
  } else {
    const ModelSpec* model =
        o.model.empty() ? match(model_presets(), hf) : named(model_presets(), o.model);
    if (model == nullptr) {
      throw InputError(
          meta_path.string(), "engine_kwargs.model",
          o.model.empty()
              ? "'" + hf + "' matches no model preset (" + names(model_presets()) +
                    "); name one with --model, or give the model's Hugging Face "
                    "config.json with --model-config"
              : "--model '" + o.model + "' is not a preset (" + names(model_presets()) + ")");
    }
    model_name = model->name;
    note("model " + model->name +
         (o.model.empty() ? " (matches meta.json model " + hf + ")" : " (--model)"));
  }
  // Weight precision: --weight-dtype, else a config.json's own (--model-config), else the run's
  // quantization and dtype.
  std::string weight_dtype = "auto";
  if (!o.weight_dtype.empty()) {
    weight_dtype = o.weight_dtype;
    note("weights " + weight_dtype + " (--weight-dtype)");
  } else if (o.model_config.empty()) {
    std::string key = "engine_kwargs.quantization";
    std::string quant = mf.string(meta, {"engine_kwargs", "quantization"}).value_or("");
    if (quant.empty()) {
      quant = mf.string(meta, {"resolved_config", "model_config", "quantization"}).value_or("");
      key = "resolved_config.model_config.quantization";
    }
    std::string dtype = mf.string(meta, {"engine_kwargs", "dtype"}).value_or("");
    if (dtype.empty() || dtype == "auto")
      dtype = mf.string(meta, {"resolved_config", "model_config", "dtype"}).value_or(dtype);
    std::string how;
    weight_dtype = vllm_weight_dtype(quant, dtype, hf, meta_path.string(), key, how);
    if (weight_dtype != "auto" || !how.empty())
      note("weights " + (weight_dtype == "auto" ? "the model's own precision" : weight_dtype) +
           (how.empty() ? "" : " (" + how + ")"));
  }
  json cluster;
  if (fs::exists(dir / "config.json")) cluster = read_json(dir / "config.json");
  const RunFile cf{(dir / "config.json").string()};
  YAML::Node custom_gpu;  // a gpus: entry when no preset matches
  std::string run_gpu;
  const GpuSpec* gpu = choose_gpu(o, meta, cluster, custom_gpu, run_gpu, note);
  if (!o.profile.empty()) check_profile_gpu(o.profile, run_gpu, note);
  // Without a preset, the datasheet --gpu named (choose_gpu refused any other), if any.
  plan.gpu_datasheet = gpu ? gpu->name : o.gpu.empty() ? "" : named(gpu_presets(), o.gpu)->name;

  const RunEngine e = read_engine(mf, meta, cf, cluster, meta_path);
  plan.yaml = replay_yaml(o, dir, req, model_name, weight_dtype, gpu, custom_gpu, e);
  note_engine(o, e, note);
  return plan;
}

}  // namespace

}  // namespace kvfleet::sim
