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

// ---- the server's engine arguments ------------------------------------------------------------

static std::string norm_key(std::string k) {
  while (!k.empty() && k[0] == '-') k.erase(0, 1);
  std::replace(k.begin(), k.end(), '-', '_');
  return k;
}

EngineArgs read_engine_args(const std::string& path) {
  EngineArgs a;
  a.where = path;
  const std::string text = read_input_file(path, "engine arguments", 1u << 20);
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    const json j = parse_json(text, path);
    const JsonObject o(j, path);
    const JsonObject kw = o.object("engine_kwargs").value_or(o);
    for (const auto& [k, v] : kw.raw().items()) {
      if (v.is_null()) continue;
      if (v.is_object() || v.is_array()) continue;  // nested settings are not read
      a.values[norm_key(k)] = v.is_string() ? v.get<std::string>() : v.dump();
    }
  } else if (text.find("vllm") != std::string::npos || text.find("--") != std::string::npos) {
    // A command line: words, flags with or without a value, --no-FLAG for false.
    std::istringstream in(text);
    std::vector<std::string> w;
    for (std::string s; in >> s;) {
      if (s == "\\") continue;
      if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front())
        s = s.substr(1, s.size() - 2);
      w.push_back(s);
    }
    for (std::size_t i = 0; i < w.size(); ++i) {
      if (w[i] == "serve" && i + 1 < w.size() && w[i + 1].rfind("--", 0) != 0) {
        a.model = w[++i];
        continue;
      }
      if (w[i].rfind("--", 0) != 0) continue;
      std::string k = w[i], v = "true";
      if (const auto eq = k.find('='); eq != std::string::npos) {
        v = k.substr(eq + 1);
        k = k.substr(0, eq);
      } else if (i + 1 < w.size() && w[i + 1].rfind("--", 0) != 0) {
        v = w[++i];
      }
      k = norm_key(k);
      if (k.rfind("no_", 0) == 0 && v == "true") {
        k = k.substr(3);
        v = "false";
      }
      a.values[k] = v;
    }
  } else {
    const YAML::Node y = config::parse_yaml(text, path);
    if (!y.IsMap())
      throw InputError(path, "", "is neither a mapping of engine arguments nor a command line");
    for (const auto& kv : y)
      if (kv.second.IsScalar()) a.values[norm_key(kv.first.as<std::string>())] = kv.second.Scalar();
  }
  if (a.model.empty()) {
    const auto it = a.values.find("model");
    if (it != a.values.end()) a.model = it->second;
  }
  return a;
}

// The server's engine arguments kept in `dir` beside the result, or "" when none are.
std::string engine_args_beside(const fs::path& dir) {
  for (const char* n :
       {"engine_args.json", "engine_args.yaml", "serve_args.txt", "vllm_serve.sh"}) {
    std::error_code ec;
    const fs::path p = dir / n;
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  return "";
}

namespace {

// Engine arguments read strictly by type: a value given is whole, in range, or an error naming
// the argument and the file.
struct TypedArgs {
  const EngineArgs& a;
  std::optional<long long> integer(const std::string& k, long long lo, long long hi) const {
    const auto it = a.values.find(k);
    if (it == a.values.end()) return std::nullopt;
    long long v = 0;
    std::size_t used = 0;
    try {
      v = std::stoll(it->second, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != it->second.size() || v < lo || v > hi)
      throw InputError(a.where, k,
                       "must be a whole number from " + std::to_string(lo) + " to " +
                           std::to_string(hi) + ", not '" + it->second + "'");
    return v;
  }
  std::optional<double> real(const std::string& k, double lo, double hi) const {
    const auto it = a.values.find(k);
    if (it == a.values.end()) return std::nullopt;
    double v = 0;
    std::size_t used = 0;
    try {
      v = std::stod(it->second, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != it->second.size() || !(v >= lo && v <= hi))
      throw InputError(a.where, k,
                       "must be a number from " + fmt("%g", lo) + " to " + fmt("%g", hi) +
                           ", not '" + it->second + "'");
    return v;
  }
  std::optional<bool> boolean(const std::string& k) const {
    const auto it = a.values.find(k);
    if (it == a.values.end()) return std::nullopt;
    if (it->second == "true" || it->second == "True") return true;
    if (it->second == "false" || it->second == "False") return false;
    throw InputError(a.where, k, "must be true or false, not '" + it->second + "'");
  }
};

}  // namespace

// Sets the pool's engine and parallelism from engine arguments, strictly typed.
void apply_engine_args(const EngineArgs& a, YAML::Node pool, std::vector<std::string>& notes) {
  const TypedArgs t{a};
  auto integer = [&](const std::string& k, long long lo, long long hi) {
    return t.integer(k, lo, hi);
  };
  auto real = [&](const std::string& k, double lo, double hi) { return t.real(k, lo, hi); };
  auto boolean = [&](const std::string& k) { return t.boolean(k); };
  std::vector<std::string> used;
  if (auto v = integer("tensor_parallel_size", 1, 64)) {
    // --tp was given (base_scenario set it): the two must agree.
    if (pool["tensor_parallel"] && pool["tensor_parallel"].as<long long>() != *v)
      throw InputError("--tp", "",
                       pool["tensor_parallel"].Scalar() + " contradicts tensor_parallel_size " +
                           std::to_string(*v) + " in " + a.where + ": give one of them");
    pool["tensor_parallel"] = *v, used.push_back("tensor_parallel_size");
  }
  if (auto v = integer("pipeline_parallel_size", 1, 64))
    pool["pipeline_parallel"] = *v, used.push_back("pipeline_parallel_size");
  if (auto v = integer("data_parallel_size", 1, 64))
    pool["data_parallel"] = *v, used.push_back("data_parallel_size");
  if (auto v = boolean("enable_expert_parallel"))
    pool["expert_parallel"] = *v, used.push_back("enable_expert_parallel");
  YAML::Node e = pool["engine"];
  if (auto v = integer("max_num_seqs", 1, 1 << 20))
    e["max_num_seqs"] = *v, used.push_back("max_num_seqs");
  if (auto v = integer("max_num_batched_tokens", 1, 1 << 26))
    e["max_num_batched_tokens"] = *v, used.push_back("max_num_batched_tokens");
  if (auto v = integer("max_model_len", 1, 1ll << 31))
    e["max_model_len"] = *v, used.push_back("max_model_len");
  if (auto v = integer("block_size", 1, 1024)) e["block_size"] = *v, used.push_back("block_size");
  if (auto v = integer("num_gpu_blocks_override", 1, 1 << 24))
    e["num_gpu_blocks_override"] = *v, used.push_back("num_gpu_blocks_override");
  if (auto v = real("gpu_memory_utilization", 0.01, 1))
    e["gpu_memory_utilization"] = *v, used.push_back("gpu_memory_utilization");
  if (auto v = boolean("enable_prefix_caching"))
    e["enable_prefix_caching"] = *v, used.push_back("enable_prefix_caching");
  if (auto v = boolean("enable_chunked_prefill"))
    e["enable_chunked_prefill"] = *v, used.push_back("enable_chunked_prefill");
  if (auto v = boolean("async_scheduling"))
    e["async_scheduling"] = *v, used.push_back("async_scheduling");
  if (const auto it = a.values.find("kv_cache_dtype"); it != a.values.end()) {
    static const std::vector<std::string> ok = {"auto",     "bf16",     "fp16", "fp8",
                                                "fp8_e4m3", "fp8_e5m2", "int8", "int4"};
    if (std::find(ok.begin(), ok.end(), it->second) == ok.end())
      throw InputError(a.where, "kv_cache_dtype", "'" + it->second + "' is not one kvfleet models");
    e["kv_cache_dtype"] = it->second;
    used.push_back("kv_cache_dtype");
  }
  if (auto v = boolean("enforce_eager")) used.push_back("enforce_eager"), (void)v;
  for (const char* k : {"quantization", "dtype"})
    if (a.values.count(k)) used.push_back(k);
  std::string list;
  for (const auto& u : used) list += (list.empty() ? "" : ", ") + u;
  notes.push_back("engine arguments from " + a.where + ": " +
                  (list.empty() ? "none kvfleet reads" : list));
}

// ---- the model ---------------------------------------------------------------------------------

namespace {
void set_weight_dtype(const BenchOptions& o, const std::string& model_name, YAML::Node pool,
                      std::vector<std::string>& notes, const WeightArgs& w) {
  if (!o.weight_dtype.empty()) {
    pool["weight_dtype"] = o.weight_dtype;
    notes.push_back("weights " + o.weight_dtype + " (--weight-dtype)");
    return;
  }
  if (!o.model_config.empty()) return;  // its quantization_config decides
  std::string how;
  const std::string d = vllm_weight_dtype(w.quantization, w.dtype, model_name,
                                          w.where.empty() ? o.path : w.where, "quantization", how);
  if (d != "auto") pool["weight_dtype"] = d;
  if (d != "auto" || !how.empty())
    notes.push_back("weights " + (d == "auto" ? std::string("the model's own precision") : d) +
                    (how.empty() ? "" : " (" + how + ")"));
}
}  // namespace

void set_model(const BenchOptions& o, const std::string& name_from_run, const std::string& where,
               YAML::Node sc, YAML::Node pool, std::vector<std::string>& notes,
               const WeightArgs& weights) {
  set_weight_dtype(o, name_from_run, pool, notes, weights);
  if (!o.model_config.empty()) {
    const ModelSpec m = read_hf_config(o.model_config, "replay-model");
    YAML::Node entry;
    entry["name"] = "replay-model";
    entry["hf_config"] = fs::absolute(o.model_config).lexically_normal().string();
    sc["models"].push_back(entry);
    pool["model"] = "replay-model";
    notes.push_back("model from " + o.model_config + " (" + m.source + ")");
    return;
  }
  if (!o.model.empty()) {
    pool["model"] = o.model;
    notes.push_back("model " + o.model + " (--model)");
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
  notes.push_back("model " + m->name + " (matches the result's model " + name_from_run + ")");
}

YAML::Node base_scenario(const BenchOptions& o, const std::string& name,
                         std::vector<std::string>& notes) {
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
  if (o.tensor_parallel > 0) pool["tensor_parallel"] = o.tensor_parallel;
  sc["pools"].push_back(pool);
  sc["simulation"]["timeseries_interval_s"] = 1.0;
  notes.push_back("gpu " + o.gpu + " (--gpu)");
  notes.push_back(
      "latencies as a benchmark client measures them: the API server's time counts "
      "(pools[].frontend, its defaults)");
  return sc;
}

// ---- inference-perf -----------------------------------------------------------------------------

static bool ends_with(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

IpFiles ip_files(const fs::path& dir) {
  IpFiles f;
  f.dir = dir;
  if (!fs::is_directory(dir)) return f;
  static const std::regex stage_re(R"(^(.*)stage_(\d+)_lifecycle_metrics\.json$)");
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    std::smatch m;
    if (std::regex_match(n, m, stage_re)) {
      const std::string prefix = m[1].str();
      if (prefix.find("adapter_") != std::string::npos ||
          prefix.find("session") != std::string::npos)
        continue;
      if (m[2].str().size() > 6) continue;
      f.stages[std::stoi(m[2].str())] = e.path();
    } else if (ends_with(n, "summary_lifecycle_metrics.json") &&
               n.find("session") == std::string::npos) {
      f.summary = e.path();
    } else if (ends_with(n, "per_request_lifecycle_metrics.json")) {
      f.per_request = e.path();
    } else if (n == "config.yaml" || n == "config.yml") {
      f.config = e.path();
    }
  }
  return f;
}

void apply_engine_args_file(const std::string& file, YAML::Node pool, std::string& model,
                            const char* beside, std::vector<std::string>& notes,
                            WeightArgs& weights) {
  if (file.empty()) {
    notes.push_back(std::string("engine arguments: none given (--engine-args FILE, or "
                                "engine_args.json or serve_args.txt ") +
                    beside + "): kvfleet's defaults");
    return;
  }
  const EngineArgs a = read_engine_args(file);
  apply_engine_args(a, pool, notes);
  weights.where = a.where;
  if (const auto it = a.values.find("quantization"); it != a.values.end())
    weights.quantization = it->second;
  if (const auto it = a.values.find("dtype"); it != a.values.end()) weights.dtype = it->second;
  if (model.empty()) model = a.model;
}

}  // namespace kvfleet::sim::bench_detail
