#include "sim/replay/replay.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "sim/config/params.h"
#include "sim/core/error.h"
#include "sim/io/input_file.h"
#include "sim/model/presets.h"

namespace kvfleet::sim {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

json read_json(const fs::path& p) {
  const std::string text = read_input_file(p.string(), "JSON", kMaxYamlFileBytes);
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw InputError(p.string(), "", std::string("is not valid JSON: ") + e.what());
  }
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

std::string yaml_quote(const std::string& s) {
  std::string o = "'";
  for (char c : s) o += c == '\'' ? std::string("''") : std::string(1, c);
  return o + "'";
}

}  // namespace

namespace {
ReplayPlan build_plan(const ReplayOptions& o);
}  // namespace

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
  auto integer = [&](const json& j, const std::string& key) -> long long {
    if (!j.is_number_integer() || j.get<long long>() < 0)
      throw InputError(meta_path.string(), key, "expected a whole number, got " + j.dump());
    return j.get<long long>();
  };

  // Model and GPU.
  const std::string hf = kw.value("model", meta.value("model", std::string()));
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
  std::string hardware;
  if (const json& h = at(cluster, {"nodes"}); h.is_array() && !h.empty()) {
    const json& inst = at(h[0], {"instances"});
    if (inst.is_array() && !inst.empty() && inst[0].contains("hardware") &&
        inst[0]["hardware"].is_string())
      hardware = inst[0]["hardware"].get<std::string>();
  }
  const json& dev = at(meta, {"hardware", "device_name"});
  const GpuSpec* gpu = nullptr;
  std::string custom_gpu;  // a gpus: entry when no preset matches
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
      custom_gpu = "  - name: replay-gpu\n    memory_bytes: " + config::format_double(mem) +
                   "\n    memory_bandwidth_Bps: " + config::format_double(bw > 1e9 ? bw : 1e12) +
                   "\n    bf16_flops: 1e14\n    source: " +
                   yaml_quote("the run's " + what +
                              ": memory from its files; compute and "
                              "bandwidth unknown (the profile prices the steps)") +
                   "\n";
      note("gpu '" + what + "' is no preset: its memory (" + config::format_double(mem / 1e9) +
           " GB) from the run's files; the profile prices the steps, so utilisation figures of "
           "this replay are not meaningful");
    } else {
      note("gpu " + gpu->name + " (matches the run's hardware " +
           (!hardware.empty() ? hardware : dev.get<std::string>()) + ")");
    }
  }

  // Engine arguments, with vLLM 0.19's defaults where the run left them unset.
  auto arg = [&](const char* key, long long fallback) -> long long {
    const json& j = at(kw, {key});
    return j.is_null() ? fallback : integer(j, std::string("engine_kwargs.") + key);
  };
  const long long tp = arg("tensor_parallel_size", 1), dp = arg("data_parallel_size", 1);
  const json& ep_j = at(kw, {"enable_expert_parallel"});
  const bool ep = ep_j.is_boolean() && ep_j.get<bool>();
  const long long seqs = arg("max_num_seqs", 256), batched = arg("max_num_batched_tokens", 2048);
  const long long max_len = arg("max_model_len", 0);
  const json& cache = at(meta, {"kv_cache"});
  const json& rcache = at(meta, {"resolved_config", "cache_config"});
  const long long block = at(cache, {"block_size"}).is_number_integer()
                              ? integer(cache["block_size"], "kv_cache.block_size")
                              : 16;
  const long long gpu_blocks = at(cache, {"num_gpu_blocks"}).is_number_integer()
                                   ? integer(cache["num_gpu_blocks"], "kv_cache.num_gpu_blocks")
                                   : 0;
  double util = 0.9;
  for (const json* j :
       {&at(cache, {"gpu_memory_utilization"}), &at(kw, {"gpu_memory_utilization"})})
    if (j->is_number()) util = j->get<double>();
  bool prefix = true;
  for (const json* j : {&at(rcache, {"enable_prefix_caching"}),
                        &at(cache, {"enable_prefix_caching"}), &at(kw, {"enable_prefix_caching"})})
    if (j->is_boolean()) prefix = j->get<bool>();
  bool chunked = true;
  for (const json* j :
       {&at(meta, {"resolved_config", "scheduler_config", "enable_chunked_prefill"}),
        &at(kw, {"enable_chunked_prefill"})})
    if (j->is_boolean()) chunked = j->get<bool>();
  std::string kv_dtype = "auto";
  if (const json& j = at(kw, {"kv_cache_dtype"}); j.is_string()) kv_dtype = j.get<std::string>();
  // Async scheduling: as resolved, else as given, else vLLM's default (on from 0.11).
  bool async = true;
  std::string async_from = "vLLM's default";
  for (const auto& [j, from] :
       {std::pair{&at(kw, {"async_scheduling"}), "engine_kwargs"},
        std::pair{&at(meta, {"resolved_config", "scheduler_config", "async_scheduling"}),
                  "resolved scheduler_config"}})
    if (j->is_boolean()) {
      async = j->get<bool>();
      async_from = from;
    }
  bool eager = false;
  for (const json* j : {&at(meta, {"resolved_config", "model_config", "enforce_eager"}),
                        &at(kw, {"enforce_eager"})})
    if (j->is_boolean()) eager = j->get<bool>();
  std::vector<long long> capture;
  if (const json& j =
          at(meta, {"resolved_config", "compilation_config", "cudagraph_capture_sizes"});
      j.is_array())
    for (const auto& x : j) capture.push_back(integer(x, "cudagraph_capture_sizes"));
  double link_Bps = 0, link_lat = 0;
  if (const json& j = at(cluster, {"link_bw"}); j.is_number() && j.get<double>() > 0)
    link_Bps = j.get<double>() * 1e9;  // GB/s
  if (const json& j = at(cluster, {"link_latency"}); j.is_number() && j.get<double>() > 0)
    link_lat = j.get<double>() * 1e-9;  // ns

  std::ostringstream y;
  y << "# Replay of " << fs::absolute(dir).lexically_normal().string()
    << " (kvfleet replay): every setting from the run's own files.\n"
    << "name: " << yaml_quote("replay-" + fs::absolute(dir).lexically_normal().filename().string())
    << "\n"
    << "seed: 1\n"
    << "workload:\n  impl: trace\n  format: vllm_jsonl\n  path: "
    << yaml_quote(fs::absolute(req).lexically_normal().string()) << "\n"
    << "pools:\n  - name: replay\n    model: " << model->name
    << "\n    gpu: " << (gpu != nullptr ? gpu->name : std::string("replay-gpu"))
    << "\n    tensor_parallel: " << tp << "\n    data_parallel: " << dp
    << "\n    expert_parallel: " << (ep ? "true" : "false") << "\n";
  if (link_Bps > 0) y << "    link_Bps: " << config::format_double(link_Bps) << "\n";
  if (link_lat > 0) y << "    link_latency_s: " << config::format_double(link_lat) << "\n";
  // requests.jsonl's timestamps are the engine's own (queued, first token, last token): the API
  // server's time is outside them, so the replay measures as the engine does.
  y << "    frontend: {enabled: false}\n";
  y << "    engine:\n      max_num_seqs: " << seqs << "\n      max_num_batched_tokens: " << batched
    << "\n      enable_chunked_prefill: " << (chunked ? "true" : "false")
    << "\n      enable_prefix_caching: " << (prefix ? "true" : "false")
    << "\n      async_scheduling: " << (async ? "true" : "false") << "\n      block_size: " << block
    << "\n      gpu_memory_utilization: " << config::format_double(util) << "\n";
  if (max_len > 0) y << "      max_model_len: " << max_len << "\n";
  if (gpu_blocks > 0) y << "      num_gpu_blocks_override: " << gpu_blocks << "\n";
  if (kv_dtype != "auto") y << "      kv_cache_dtype: " << kv_dtype << "\n";
  if (!o.profile.empty()) {
    y << "    cost_model:\n      impl: profile\n      path: "
      << yaml_quote(fs::absolute(o.profile).lexically_normal().string()) << "\n";
    if (!eager) {
      if (!capture.empty()) {
        y << "      cuda_graph_sizes: [";
        for (std::size_t i = 0; i < capture.size(); ++i) y << (i ? ", " : "") << capture[i];
        y << "]\n";
      } else {
        y << "      pad_to_cuda_graph_sizes: true\n";
      }
    }
  } else {
    y << "    cost_model: {impl: roofline}\n";
  }
  y << "simulation:\n  timeseries_interval_s: 1.0\n";
  if (!custom_gpu.empty()) y << "gpus:\n" << custom_gpu;
  plan.yaml = y.str();
  note("parallelism: tensor " + std::to_string(tp) + ", data " + std::to_string(dp) +
       (ep ? ", experts whole per GPU (enable_expert_parallel)" : "") +
       " (meta.json engine_kwargs)");
  note(
      "engine: max_num_seqs " + std::to_string(seqs) + ", max_num_batched_tokens " +
      std::to_string(batched) +
      (max_len > 0 ? ", max_model_len " + std::to_string(max_len) : ", max_model_len the model's") +
      (gpu_blocks > 0 ? ", " + std::to_string(gpu_blocks) + " GPU blocks (kv_cache)" : ""));
  note(std::string("async scheduling ") + (async ? "on" : "off") + " (" + async_from + ")");
  note(
      "latencies as the engine measures them (requests.jsonl's queued and token timestamps are "
      "the engine's): API server time off");
  if (link_Bps > 0 || link_lat > 0) {
    char buf[120];
    std::snprintf(buf, sizeof buf, "GPU-to-GPU link %.4g GB/s, %.4g us", link_Bps / 1e9,
                  link_lat * 1e6);
    note(std::string(buf) + " (config.json link_bw, link_latency)");
  }
  if (!o.profile.empty())
    note(std::string("CUDA graphs: ") +
         (eager ? "off (enforce_eager)"
          : !capture.empty()
              ? std::to_string(capture.size()) + " capture sizes (resolved compilation_config)"
              : "on, vLLM's default capture sizes"));
  return plan;
}

}  // namespace

MeasuredLatencies read_measured(const std::string& path) {
  std::ifstream in = open_input_file(path, "requests.jsonl");
  MeasuredLatencies m;
  std::string line;
  long n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      const json j = json::parse(line);
      const double q = j.at("queued_ts"), f = j.at("first_token_ts"), l = j.at("last_token_ts");
      const int out = j.at("output_toks");
      m.ttft.push_back(f - q);
      m.e2e.push_back(l - q);
      if (out > 1) m.tpot.push_back((l - f) / (out - 1));
    } catch (const json::exception& e) {
      throw InputError(path + ": line " + std::to_string(n), "",
                       std::string("needs queued_ts, first_token_ts, last_token_ts and "
                                   "output_toks: ") +
                           e.what());
    }
  }
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
