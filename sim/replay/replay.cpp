#include "sim/replay/replay.h"

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <sstream>

#include "sim/config/params.h"
#include "sim/core/error.h"
#include "sim/io/input_file.h"
#include "sim/io/json.h"
#include "sim/model/presets.h"

namespace kvfleet::sim {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

json read_json(const fs::path& p) {
  // Strict: nesting depth limited while parsing, duplicate keys refused (sim/io/json.h).
  return parse_json(read_input_file(p.string(), "JSON", kMaxYamlFileBytes), p.string());
}

// Lower-case letters and digits only: "Qwen/Qwen3-30B-A3B-Instruct-2507" → "qwenqwen330ba3b...".
std::string squash(const std::string& s) {
  std::string o;
  for (unsigned char c : s)
    if (std::isalnum(c)) o += static_cast<char>(std::tolower(c));
  return o;
}

// The names a preset is known by: its name, and for a GPU named FAMILY-VARIANT (H100-SXM,
// A100-80GB) its family when that holds a digit, as drivers name the device ("NVIDIA H100 80GB
// HBM3", "NVIDIA A100-SXM4-80GB").
template <class T>
std::vector<std::string> keys_of(const T& p, bool family) {
  std::vector<std::string> k{squash(p.name)};
  const auto dash = p.name.rfind('-');
  if (family && dash != std::string::npos) {
    const std::string f = squash(p.name.substr(0, dash));
    if (f.find_first_of("0123456789") != std::string::npos) k.push_back(f);
  }
  return k;
}

// The preset one of whose names the squashed text contains, the longest such name winning.
template <class T>
const T* match(const std::vector<T>& presets, const std::string& text, bool family = false) {
  const std::string t = squash(text);
  const T* best = nullptr;
  std::size_t best_len = 0;
  for (const auto& p : presets) {
    for (const std::string& n : keys_of(p, family)) {
      if (!n.empty() && t.find(n) != std::string::npos && n.size() > best_len) {
        best = &p;
        best_len = n.size();
      }
    }
  }
  return best;
}

template <class T>
const T* named(const std::vector<T>& presets, const std::string& name) {
  for (const auto& p : presets)
    if (p.name == name) return &p;
  return nullptr;
}

template <class T>
std::string names(const std::vector<T>& presets) {
  std::string s;
  for (const auto& p : presets) s += (s.empty() ? "" : ", ") + p.name;
  return s;
}

// meta[a][b]... or a null json when a key is absent.
const json& at(const json& j, std::initializer_list<const char*> path) {
  static const json null;
  const json* cur = &j;
  for (const char* k : path) {
    if (!cur->is_object() || !cur->contains(k)) return null;
    cur = &(*cur)[k];
  }
  return *cur;
}

// A dotted key path for messages: {"kv_cache", "block_size"} -> "kv_cache.block_size".
std::string dotted(std::initializer_list<const char*> path) {
  std::string k;
  for (const char* p : path) k += (k.empty() ? "" : ".") + std::string(p);
  return k;
}

// Typed members of a run's file: absent or null -> nullopt; present with another JSON type or out
// of range -> InputError naming the file and the key (a boolean written "no" or 1, a count written
// as a string, are refused, never read as a default).
struct RunFile {
  std::string file;
  std::optional<bool> boolean(const json& root, std::initializer_list<const char*> path) const {
    const json& j = at(root, path);
    if (j.is_null()) return std::nullopt;
    if (!j.is_boolean())
      throw InputError(file, dotted(path), "must be true or false, not " + j.dump());
    return j.get<bool>();
  }
  std::optional<long long> integer(const json& root, std::initializer_list<const char*> path,
                                   long long lo, long long hi) const {
    const json& j = at(root, path);
    if (j.is_null()) return std::nullopt;
    if (!j.is_number_integer() || j.get<long long>() < lo || j.get<long long>() > hi)
      throw InputError(file, dotted(path),
                       "must be a whole number from " + std::to_string(lo) + " to " +
                           std::to_string(hi) + ", not " + j.dump());
    return j.get<long long>();
  }
  std::optional<double> number(const json& root, std::initializer_list<const char*> path, double lo,
                               double hi) const {
    const json& j = at(root, path);
    if (j.is_null()) return std::nullopt;
    if (!j.is_number() || !(j.get<double>() >= lo && j.get<double>() <= hi))
      throw InputError(file, dotted(path),
                       "must be a number from " + config::format_double(lo) + " to " +
                           config::format_double(hi) + ", not " + j.dump());
    return j.get<double>();
  }
  std::optional<std::string> string(const json& root,
                                    std::initializer_list<const char*> path) const {
    const json& j = at(root, path);
    if (j.is_null()) return std::nullopt;
    if (!j.is_string()) throw InputError(file, dotted(path), "must be text, not " + j.dump());
    return j.get<std::string>();
  }
};

}  // namespace

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

// The run's GPU: --gpu, else the preset its hardware names (with its memory), else, with a
// profile, a GPU entry with the run's memory (`custom`).
const GpuSpec* choose_gpu(const ReplayOptions& o, const json& meta, const json& cluster,
                          YAML::Node& custom_gpu, const std::function<void(std::string)>& note) {
  std::string hardware;
  if (const json& h = at(cluster, {"nodes"}); h.is_array() && !h.empty()) {
    const json& inst = at(h[0], {"instances"});
    if (inst.is_array() && !inst.empty() && inst[0].contains("hardware") &&
        inst[0]["hardware"].is_string())
      hardware = inst[0]["hardware"].get<std::string>();
  }
  const json& dev = at(meta, {"hardware", "device_name"});
  const GpuSpec* gpu = nullptr;
  if (!o.gpu.empty()) {
    gpu = named(gpu_presets(), o.gpu);
    if (gpu == nullptr)
      throw InputError("--gpu", "",
                       "'" + o.gpu + "' is not a preset (" + names(gpu_presets()) + ")");
    note("gpu " + gpu->name + " (--gpu)");
  } else {
    if (!hardware.empty()) gpu = match(gpu_presets(), hardware, true);
    if (gpu == nullptr && dev.is_string()) gpu = match(gpu_presets(), dev.get<std::string>(), true);
    // A variant of the family with other memory (A100 40GB for the A100-80GB preset) is not it.
    if (const json& j = at(meta, {"hardware", "device_total_memory_bytes"});
        gpu != nullptr && j.is_number() && j.get<double>() > 0 &&
        std::fabs(gpu->memory_bytes / j.get<double>() - 1) > 0.1)
      gpu = nullptr;
    if (gpu == nullptr) {
      // No preset: with a profile (which prices the steps) the GPU's memory from the run's files
      // is enough, for the KV budget; without one the roofline needs a datasheet.
      const std::string what = dev.is_string() ? dev.get<std::string>() : hardware;
      double mem = 0, bw = 0;
      if (const json& j = at(meta, {"hardware", "device_total_memory_bytes"}); j.is_number())
        mem = j.get<double>();
      if (const json& n = at(cluster, {"nodes"}); n.is_array() && !n.empty()) {
        const json& inst = at(n[0], {"instances"});
        if (inst.is_array() && !inst.empty()) {
          const json& sz = at(inst[0], {"npu_mem", "mem_size"});
          const json& b = at(inst[0], {"npu_mem", "mem_bw"});
          if (mem <= 0 && sz.is_number()) mem = sz.get<double>() * 1024.0 * 1024 * 1024;  // GiB
          if (b.is_number()) bw = b.get<double>() * 1e9;                                  // GB/s
        }
      }
      if (o.profile.empty() || !(mem >= 1024.0 * 1024 * 1024)) {
        throw InputError(o.run_dir, "hardware",
                         "the run's GPU ('" + what + "') matches no GPU preset (" +
                             names(gpu_presets()) + "); name one with --gpu" +
                             (o.profile.empty() ? " (or give a --profile of it)" : ""));
      }
      custom_gpu["name"] = "replay-gpu";
      custom_gpu["memory_bytes"] = mem;
      custom_gpu["memory_bandwidth_Bps"] = bw > 1e9 ? bw : 1e12;
      custom_gpu["bf16_flops"] = 1e14;
      custom_gpu["source"] = "the run's " + what +
                             ": memory from its files; compute and bandwidth unknown (the "
                             "profile prices the steps)";
      note("gpu '" + what + "' is no preset: its memory (" + config::format_double(mem / 1e9) +
           " GB) from the run's files; the profile prices the steps, so utilisation figures of "
           "this replay are not meaningful");
    } else {
      note("gpu " + gpu->name + " (matches the run's hardware " +
           (!hardware.empty() ? hardware : dev.get<std::string>()) + ")");
    }
  }
  return gpu;
}

// What the run's files say of its engine, with vLLM 0.19's defaults where the run left them
// unset. Every value is read with its JSON type checked: a wrong type is an error naming
// meta.json and the key.
struct RunEngine {
  long long tp = 1, dp = 1, seqs = 256, batched = 2048, max_len = 0, block = 16, gpu_blocks = 0;
  bool ep = false, prefix = true, chunked = true, async = true, eager = false;
  double util = 0.9;
  std::string kv_dtype = "auto", async_from = "vLLM's default";
  std::vector<long long> capture;  // CUDA graph capture sizes, as resolved
  double link_Bps = 0, link_lat = 0;
};

RunEngine read_engine(const RunFile& mf, const json& meta, const RunFile& cf, const json& cluster,
                      const fs::path& meta_path) {
  RunEngine e;
  e.tp = mf.integer(meta, {"engine_kwargs", "tensor_parallel_size"}, 1, 64).value_or(1);
  e.dp = mf.integer(meta, {"engine_kwargs", "data_parallel_size"}, 1, 64).value_or(1);
  e.ep = mf.boolean(meta, {"engine_kwargs", "enable_expert_parallel"}).value_or(false);
  e.seqs = mf.integer(meta, {"engine_kwargs", "max_num_seqs"}, 1, 1 << 20).value_or(256);
  e.batched =
      mf.integer(meta, {"engine_kwargs", "max_num_batched_tokens"}, 1, 100'000'000).value_or(2048);
  e.max_len = mf.integer(meta, {"engine_kwargs", "max_model_len"}, 0, 100'000'000).value_or(0);
  e.block = mf.integer(meta, {"kv_cache", "block_size"}, 1, 1024).value_or(16);
  e.gpu_blocks = mf.integer(meta, {"kv_cache", "num_gpu_blocks"}, 0, 16777216).value_or(0);
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
    static const std::vector<std::string> ok = {"auto",     "bf16",     "fp16", "fp8",
                                                "fp8_e4m3", "fp8_e5m2", "int8", "int4"};
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
                        const ModelSpec& model, const GpuSpec* gpu, const YAML::Node& custom_gpu,
                        const RunEngine& e) {
  YAML::Node sc;
  sc["name"] = "replay-" + fs::absolute(dir).lexically_normal().filename().string();
  sc["seed"] = 1;
  sc["workload"]["impl"] = "trace";
  sc["workload"]["format"] = "vllm_jsonl";
  sc["workload"]["path"] = fs::absolute(req).lexically_normal().string();
  YAML::Node pool;
  pool["name"] = "replay";
  pool["model"] = model.name;
  pool["gpu"] = gpu != nullptr ? gpu->name : std::string("replay-gpu");
  pool["tensor_parallel"] = e.tp;
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
  YAML::Emitter em;
  em.SetDoublePrecision(17);
  em << sc;
  return "# Replay of " + fs::absolute(dir).lexically_normal().string() +
         " (kvfleet replay): every setting from the run's own files.\n" + em.c_str() + "\n";
}

// What the replay took from the run's files, in words.
void note_engine(const ReplayOptions& o, const RunEngine& e,
                 const std::function<void(std::string)>& note) {
  note("parallelism: tensor " + std::to_string(e.tp) + ", data " + std::to_string(e.dp) +
       (e.ep ? ", experts whole per GPU (enable_expert_parallel)" : "") +
       " (meta.json engine_kwargs)");
  note("engine: max_num_seqs " + std::to_string(e.seqs) + ", max_num_batched_tokens " +
       std::to_string(e.batched) +
       (e.max_len > 0 ? ", max_model_len " + std::to_string(e.max_len)
                      : ", max_model_len the model's") +
       (e.gpu_blocks > 0 ? ", " + std::to_string(e.gpu_blocks) + " GPU blocks (kv_cache)" : ""));
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
  const ModelSpec* model =
      o.model.empty() ? match(model_presets(), hf) : named(model_presets(), o.model);
  if (model == nullptr) {
    throw InputError(meta_path.string(), "engine_kwargs.model",
                     o.model.empty() ? "'" + hf + "' matches no model preset (" +
                                           names(model_presets()) + "); name one with --model"
                                     : "--model '" + o.model + "' is not a preset (" +
                                           names(model_presets()) + ")");
  }
  note("model " + model->name +
       (o.model.empty() ? " (matches meta.json model " + hf + ")" : " (--model)"));
  json cluster;
  if (fs::exists(dir / "config.json")) cluster = read_json(dir / "config.json");
  const RunFile cf{(dir / "config.json").string()};
  YAML::Node custom_gpu;  // a gpus: entry when no preset matches
  const GpuSpec* gpu = choose_gpu(o, meta, cluster, custom_gpu, note);

  const RunEngine e = read_engine(mf, meta, cf, cluster, meta_path);
  plan.yaml = replay_yaml(o, dir, req, *model, gpu, custom_gpu, e);
  note_engine(o, e, note);
  return plan;
}

}  // namespace

MeasuredLatencies read_measured(const std::string& path) {
  std::ifstream in = open_input_file(path, "requests.jsonl");
  MeasuredLatencies m;
  std::string line;
  long n = 0;
  while (read_line(in, line, path, static_cast<std::size_t>(n) + 1)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ": line " + std::to_string(n);
    const json j = parse_json(line, where);
    const JsonObject row(j, where);
    // Monotonic seconds of the engine's clock: finite, within +-1e10 s, and in order.
    const double q = row.need_number("queued_ts", -1e10, 1e10);
    const double f = row.need_number("first_token_ts", -1e10, 1e10);
    const double l = row.need_number("last_token_ts", -1e10, 1e10);
    const std::int64_t out = row.need_integer("output_toks", 0, 100'000'000);
    if (f < q)
      throw InputError(where, "first_token_ts",
                       "is before queued_ts (" + config::format_double(f) + " < " +
                           config::format_double(q) + "): a first token before its request");
    if (l < f)
      throw InputError(where, "last_token_ts",
                       "is before first_token_ts (" + config::format_double(l) + " < " +
                           config::format_double(f) + ")");
    m.ttft.push_back(f - q);
    m.e2e.push_back(l - q);
    if (out > 1) m.tpot.push_back((l - f) / static_cast<double>(out - 1));
  }
  if (m.ttft.empty()) throw InputError(path, "", "holds no measured request");
  return m;
}

std::string comparison_table(const MeasuredLatencies& m, const Summary& s, double* mae) {
  std::ostringstream o;
  o << "| metric | statistic | measured | simulated | error |\n|---|---|---|---|---|\n";
  double sum = 0;
  int k = 0;
  struct Row {
    const char* name;
    double scale;
    LatencyStats real, sim;
  };
  for (const Row& r : {Row{"TTFT (s)", 1, latency_stats(m.ttft), s.ttft},
                       Row{"TPOT (ms)", 1e3, latency_stats(m.tpot), s.tpot},
                       Row{"E2E (s)", 1, latency_stats(m.e2e), s.e2e}}) {
    const std::pair<const char*, std::pair<double, double>> stats[] = {
        {"mean", {r.real.mean, r.sim.mean}},
        {"p50", {r.real.p50, r.sim.p50}},
        {"p90", {r.real.p90, r.sim.p90}},
        {"p99", {r.real.p99, r.sim.p99}}};
    for (const auto& [name, v] : stats) {
      const double err = (v.second - v.first) / v.first;
      char buf[160];
      if (!std::isfinite(err)) {  // no simulated (or measured) request to compare
        std::snprintf(buf, sizeof buf, "| %s | %s | %.4g | n/a | n/a |\n", r.name, name,
                      v.first * r.scale);
        o << buf;
        sum = std::numeric_limits<double>::quiet_NaN();
        continue;
      }
      std::snprintf(buf, sizeof buf, "| %s | %s | %.4g | %.4g | %+.1f%% |\n", r.name, name,
                    v.first * r.scale, v.second * r.scale, 100 * err);
      o << buf;
      sum += std::fabs(err);
      ++k;
    }
  }
  if (mae) *mae = k > 0 ? sum / k : std::numeric_limits<double>::quiet_NaN();
  if (s.ok == 0) o << "\nNo simulated request completed: see the run's report for why.\n";
  return o.str();
}

}  // namespace kvfleet::sim
