#include "sim/replay/bench_results.h"

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

namespace kvfleet::sim {

namespace fs = std::filesystem;
using json = nlohmann::json;

bool MeasuredStats::any() const {
  return std::isfinite(mean) || std::isfinite(p50) || std::isfinite(p90) || std::isfinite(p99);
}

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// ---- the server's engine arguments ------------------------------------------------------------

// vLLM engine arguments as kvfleet pool settings, from a JSON or YAML mapping (meta.json's
// engine_kwargs style) or a `vllm serve MODEL --flag value ...` command line.
struct EngineArgs {
  std::map<std::string, std::string> values;  // normalised key (underscores) -> text
  std::string model;
  std::string where;
};

std::string norm_key(std::string k) {
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

// Sets the pool's engine and parallelism from engine arguments, strictly typed.
void apply_engine_args(const EngineArgs& a, YAML::Node pool, std::vector<std::string>& notes) {
  auto integer = [&](const std::string& k, long long lo, long long hi) -> std::optional<long long> {
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
  };
  auto real = [&](const std::string& k, double lo, double hi) -> std::optional<double> {
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
  };
  auto boolean = [&](const std::string& k) -> std::optional<bool> {
    const auto it = a.values.find(k);
    if (it == a.values.end()) return std::nullopt;
    if (it->second == "true" || it->second == "True") return true;
    if (it->second == "false" || it->second == "False") return false;
    throw InputError(a.where, k, "must be true or false, not '" + it->second + "'");
  };
  std::vector<std::string> used;
  if (auto v = integer("tensor_parallel_size", 1, 64))
    pool["tensor_parallel"] = *v, used.push_back("tensor_parallel_size");
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
  std::string list;
  for (const auto& u : used) list += (list.empty() ? "" : ", ") + u;
  notes.push_back("engine arguments from " + a.where + ": " +
                  (list.empty() ? "none kvfleet reads" : list));
}

// ---- the model ---------------------------------------------------------------------------------

void set_model(const BenchOptions& o, const std::string& name_from_run, const std::string& where,
               YAML::Node sc, YAML::Node pool, std::vector<std::string>& notes) {
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

struct IpFiles {
  fs::path dir;
  std::map<int, fs::path> stages;
  fs::path summary, per_request, config;
};

bool ends_with(const std::string& s, std::string_view tail) {
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

MeasuredStats dist_stats(const JsonObject& latency, const std::string& key) {
  MeasuredStats s;
  const auto d = latency.object(key);
  if (!d) return s;
  const double big = 1e7;  // seconds: a latency of 116 days is no measurement
  s.mean = d->number("mean", 0, big).value_or(NAN);
  s.p50 = d->number("median", 0, big).value_or(d->number("p50", 0, big).value_or(NAN));
  s.p90 = d->number("p90", 0, big).value_or(NAN);
  s.p99 = d->number("p99", 0, big).value_or(NAN);
  return s;
}

// The successful requests of a lifecycle report (a stage's or the summary): their count, and the
// latencies measured (TTFT and TPOT only when the responses were streamed).
MeasuredGroup lifecycle_group(const JsonObject& root, bool streaming) {
  const auto succ = root.object("successes");
  if (!succ) throw InputError(root.where(), "successes", "missing");
  MeasuredGroup g;
  g.requests = succ->need_integer("count", 0, 1ll << 40);
  if (const auto lat = succ->object("latency")) {
    g.e2e = dist_stats(*lat, "request_latency");
    if (streaming) {
      g.ttft = dist_stats(*lat, "time_to_first_token");
      g.tpot = dist_stats(*lat, "time_per_output_token");
    }
  }
  return g;
}

// A length given as an int or an inference-perf Distribution mapping, as a kvfleet length
// distribution (normal and the others approximated by the lognormal of the same mean and
// spread, clamped to [min, max]).
YAML::Node length_dist(const YAML::Node& n, const std::string& where, const std::string& key,
                       std::vector<std::string>& notes) {
  YAML::Node d;
  auto num = [&](const YAML::Node& x, const std::string& k, double dflt) {
    if (!x || x.IsNull()) return dflt;
    try {
      const double v = x.as<double>();
      if (!std::isfinite(v) || v < 0 || v > 1e8) throw YAML::Exception(YAML::Mark(), "range");
      return v;
    } catch (const YAML::Exception&) {
      throw InputError(where, k,
                       "must be a number from 0 to 1e8, not '" +
                           (x.IsScalar() ? x.Scalar() : std::string("a collection")) + "'");
    }
  };
  if (n.IsScalar()) {
    d["impl"] = "fixed";
    d["value"] = std::max(1.0, std::round(num(n, key, 1)));
    return d;
  }
  if (!n.IsMap()) throw InputError(where, key, "must be a number or a distribution mapping");
  const std::string type = n["type"] && n["type"].IsScalar() ? n["type"].Scalar() : "normal";
  const double mean = num(n["mean"], key + ".mean", 512),
               sd = num(n["std_dev"], key + ".std_dev", 200);
  const double lo = std::max(1.0, num(n["min"], key + ".min", 10));
  const double hi = std::max(lo, num(n["max"], key + ".max", 1024));
  if (type == "fixed" || sd == 0) {
    d["impl"] = "fixed";
    d["value"] = std::max(1.0, std::round(mean));
  } else if (type == "uniform") {
    d["impl"] = "uniform";
    d["min"] = lo;
    d["max"] = hi;
  } else {
    const double cv = mean > 0 ? sd / mean : 1;
    d["impl"] = "lognormal";
    d["mean"] = std::max(1.0, mean);
    d["sigma"] = std::sqrt(std::log1p(cv * cv));
    d["min"] = lo;
    d["max"] = hi;
    if (type != "lognormal")
      notes.push_back(key + ": a " + type + " distribution priced as the lognormal of its mean " +
                      fmt("%g", mean) + " and spread " + fmt("%g", sd));
  }
  return d;
}

BenchReplay plan_inference_perf(const BenchOptions& o) {
  BenchReplay plan;
  plan.format = "inference-perf";
  plan.source = o.path;
  plan.tpot = TpotRule::kToLastToken;
  const IpFiles f = ip_files(o.path);
  if (f.config.empty())
    throw InputError(o.path, "config.yaml",
                     "not found: the resolved config.yaml inference-perf writes into its result "
                     "folder says what was sent");
  const std::string cfg_where = f.config.string();
  YAML::Node cfg;
  try {
    // Strict (config::parse_yaml): a key given twice, as in any kvfleet YAML, is an error.
    cfg = config::parse_yaml(read_input_file(cfg_where, "inference-perf config", 16u << 20),
                             cfg_where);
  } catch (const YAML::Exception& e) {
    throw InputError(cfg_where, "", std::string("not valid YAML: ") + e.what());
  }
  if (!cfg.IsMap()) throw InputError(cfg_where, "", "must be a mapping");
  // Per-stage measurements.
  std::map<int, json> stage_json;
  for (const auto& [i, p] : f.stages)
    stage_json[i] = parse_json(
        read_input_file(p.string(), "inference-perf stage metrics", 256u << 20), p.string());
  // The load.
  const YAML::Node load = cfg["load"];
  if (!load || !load.IsMap()) throw InputError(cfg_where, "load", "missing");
  const std::string ltype =
      load["type"] && load["type"].IsScalar() ? load["type"].Scalar() : "constant";
  if (ltype != "constant" && ltype != "poisson")
    throw InputError(cfg_where, "load.type",
                     "'" + ltype + "' is not replayed (constant and poisson are)");
  YAML::Node stages(YAML::NodeType::Sequence);
  auto number_at = [&](const YAML::Node& n, const std::string& key, double lo, double hi) {
    try {
      const double v = n.as<double>();
      if (std::isfinite(v) && v >= lo && v <= hi) return v;
    } catch (const YAML::Exception&) {
    }
    throw InputError(cfg_where, key,
                     "must be a number from " + fmt("%g", lo) + " to " + fmt("%g", hi));
  };
  if (load["stages"] && load["stages"].IsSequence() && load["stages"].size() > 0) {
    for (std::size_t i = 0; i < load["stages"].size(); ++i) {
      const YAML::Node s = load["stages"][i];
      const std::string k = "load.stages[" + std::to_string(i) + "]";
      if (!s.IsMap() || !s["rate"] || !s["duration"])
        throw InputError(cfg_where, k, "needs rate and duration");
      YAML::Node st;
      st["rate_per_s"] = number_at(s["rate"], k + ".rate", 1e-9, 1e7);
      st["duration_s"] = number_at(s["duration"], k + ".duration", 1e-9, 1e7);
      stages.push_back(st);
    }
  } else {
    // A sweep writes no stages into its config: the stage files hold each stage's rate.
    const double dur =
        load["sweep"] && load["sweep"]["stage_duration"]
            ? number_at(load["sweep"]["stage_duration"], "load.sweep.stage_duration", 1e-9, 1e7)
            : NAN;
    for (const auto& [i, j] : stage_json) {
      const auto summary = JsonObject(j, f.stages.at(i).string()).object("load_summary");
      if (!summary)
        throw InputError(f.stages.at(i).string(), "load_summary",
                         "missing: a sweep's stage rates are read from it");
      const JsonObject& ls = *summary;
      const double rate = ls.need_number("requested_rate", 1e-9, 1e7);
      const double count = static_cast<double>(ls.need_integer("count", 1, 1ll << 40));
      YAML::Node st;
      st["rate_per_s"] = rate;
      st["duration_s"] = std::isfinite(dur) ? dur : count / rate;
      stages.push_back(st);
    }
    plan.notes.push_back("stages: rates from the stage files (a sweep's config.yaml lists none)");
  }
  if (stages.size() == 0) throw InputError(cfg_where, "load.stages", "no stage to replay");
  // The workload.
  const YAML::Node data = cfg["data"];
  const std::string dtype =
      data && data["type"] && data["type"].IsScalar() ? data["type"].Scalar() : "mock";
  YAML::Node sc = base_scenario(
      o, "replay-" + fs::absolute(o.path).lexically_normal().filename().string(), plan.notes);
  YAML::Node wl;
  if (dtype == "shared_prefix") {
    const YAML::Node sp = data["shared_prefix"];
    if (!sp || !sp.IsMap()) throw InputError(cfg_where, "data.shared_prefix", "missing");
    auto pick = [&](const char* a, const char* b, double dflt) {
      const YAML::Node n = sp[a] ? sp[a] : sp[b];
      return n ? number_at(n, std::string("data.shared_prefix.") + (sp[a] ? a : b), 1, 1e6) : dflt;
    };
    wl["impl"] = "shared_prefix";
    wl["num_groups"] = static_cast<long long>(pick("num_groups", "num_unique_system_prompts", 10));
    wl["num_prompts_per_group"] =
        static_cast<long long>(pick("num_prompts_per_group", "num_users_per_system_prompt", 10));
    auto len = [&](const char* key, const char* legacy, double dflt) {
      const std::string k = std::string("data.shared_prefix.") + key;
      if (legacy && sp[legacy] && !sp[legacy].IsNull())
        return length_dist(sp[legacy], cfg_where, std::string("data.shared_prefix.") + legacy,
                           plan.notes);
      if (sp[key] && !sp[key].IsNull()) return length_dist(sp[key], cfg_where, k, plan.notes);
      YAML::Node d;
      d["impl"] = "fixed";
      d["value"] = dflt;
      return d;
    };
    wl["system_prompt_len"] = len("system_prompt_len", nullptr, 100);
    wl["question_len"] = len("question_len", "question_distribution", 50);
    wl["output_len"] = len("output_len", "output_distribution", 50);
    const bool multi = sp["enable_multi_turn_chat"] && sp["enable_multi_turn_chat"].IsScalar() &&
                       (sp["enable_multi_turn_chat"].Scalar() == "true" ||
                        sp["enable_multi_turn_chat"].Scalar() == "True");
    if (multi) {
      wl["multi_turn"] = true;
      plan.notes.push_back(
          "multi-turn chat: each prompt a session, each round after the one "
          "before with the conversation so far in front (enable_multi_turn_chat)");
    }
    plan.notes.push_back("workload: shared_prefix, " + wl["num_groups"].as<std::string>() +
                         " groups × " + wl["num_prompts_per_group"].as<std::string>() +
                         " prompts, sent round-robin (config.yaml data.shared_prefix)");
  } else if (dtype == "synthetic" || dtype == "random") {
    if (data["trace"] && !data["trace"].IsNull())
      throw InputError(cfg_where, "data.trace",
                       "random data with lengths from a trace file is not replayed (the trace "
                       "is not in the result folder): replay the trace itself as a kvfleet "
                       "trace workload");
    if (!data["input_distribution"] || !data["output_distribution"])
      throw InputError(cfg_where, "data.input_distribution",
                       "synthetic data needs input and output distributions");
    wl["impl"] = "synthetic";
    wl["input_tokens"] =
        length_dist(data["input_distribution"], cfg_where, "data.input_distribution", plan.notes);
    wl["output_tokens"] =
        length_dist(data["output_distribution"], cfg_where, "data.output_distribution", plan.notes);
    plan.notes.push_back("workload: " + dtype + " prompts of the configured length distributions");
  } else {
    throw InputError(cfg_where, "data.type",
                     "'" + dtype + "' is not replayed (shared_prefix, synthetic and random are)");
  }
  YAML::Node ld;
  ld["type"] = ltype;
  ld["interval_s"] = load["interval"] ? number_at(load["interval"], "load.interval", 0, 1e6) : 1.0;
  ld["lead_in_s"] = 1.0;
  ld["drain"] = true;
  ld["stages"] = stages;
  wl["load"] = ld;
  sc["workload"] = wl;
  plan.notes.push_back("load: " + std::to_string(stages.size()) + " " + ltype +
                       " stages, each drained before the next (config.yaml load)");
  // The model and the server.
  std::string model_name;
  if (const YAML::Node s = cfg["server"]; s && s["model_name"] && s["model_name"].IsScalar())
    model_name = s["model_name"].Scalar();
  if (model_name.empty())
    if (const YAML::Node t = cfg["tokenizer"];
        t && t["pretrained_model_name_or_path"] && t["pretrained_model_name_or_path"].IsScalar())
      model_name = t["pretrained_model_name_or_path"].Scalar();
  YAML::Node pool = sc["pools"][0];
  const std::string engine_args =
      o.engine_args.empty() ? engine_args_beside(o.path) : o.engine_args;
  if (!engine_args.empty()) {
    const EngineArgs a = read_engine_args(engine_args);
    apply_engine_args(a, pool, plan.notes);
    if (model_name.empty()) model_name = a.model;
  } else {
    plan.notes.push_back(
        "engine arguments: none given (--engine-args FILE, or engine_args.json "
        "or serve_args.txt in the folder): kvfleet's defaults");
  }
  set_model(o, model_name, cfg_where, sc, pool, plan.notes);
  const YAML::Node api = cfg["api"];
  const bool streaming =
      api && api["streaming"] && api["streaming"].IsScalar() && api["streaming"].Scalar() == "true";
  // The measured groups: each stage, and the whole run.
  for (const auto& [i, j] : stage_json) {
    const std::string where = f.stages.at(i).string();
    const JsonObject root(j, where);
    MeasuredGroup g = lifecycle_group(root, streaming);
    // Stage files are numbered by the stage list; a stage that sent nothing has none.
    g.stage = i;
    if (i >= static_cast<int>(stages.size()))
      throw InputError(
          where, "",
          "a stage file beyond the " + std::to_string(stages.size()) + " stages of config.yaml");
    const double rate = stages[i]["rate_per_s"].as<double>();
    g.name = "stage " + std::to_string(i) + " (" + fmt("%g", rate) + " requests/s)";
    // What the stage sent (successes and failures) against what its rate and duration send.
    if (const auto ls = root.object("load_summary")) {
      const std::int64_t sent = ls->need_integer("count", 0, 1ll << 40);
      const auto planned =
          static_cast<std::int64_t>(std::floor(rate * stages[i]["duration_s"].as<double>()));
      if (sent != planned)
        plan.notes.push_back("stage " + std::to_string(i) + " sent " + std::to_string(sent) +
                             " requests (" + where + " load_summary.count), its rate × duration " +
                             std::to_string(planned) + ": the replay sends " +
                             std::to_string(planned));
      if (g.requests < sent)
        plan.notes.push_back("stage " + std::to_string(i) + ": " +
                             std::to_string(sent - g.requests) +
                             " request(s) failed; the measured statistics are of the successes");
    }
    plan.groups.push_back(g);
  }
  if (!f.summary.empty()) {
    const json j =
        parse_json(read_input_file(f.summary.string(), "inference-perf summary", 256u << 20),
                   f.summary.string());
    MeasuredGroup g = lifecycle_group(JsonObject(j, f.summary.string()), streaming);
    g.name = "all requests";
    plan.groups.push_back(g);
  }
  if (plan.groups.empty())
    throw InputError(o.path, "",
                     "holds no stage_N_lifecycle_metrics.json nor summary_lifecycle_metrics.json");
  if (!streaming)
    plan.notes.push_back("api.streaming was off: inference-perf measured request latency only");
  plan.notes.push_back(
      "TPOT as inference-perf measures it: (last token − first token) / (output − 1)");
  plan.scenario = sc;
  return plan;
}

// ---- vllm bench serve ---------------------------------------------------------------------------

BenchReplay plan_vllm_bench(const BenchOptions& o) {
  BenchReplay plan;
  plan.format = "vllm bench serve";
  plan.source = o.path;
  plan.tpot = TpotRule::kToEnd;
  std::string text = read_input_file(o.path, "vllm bench serve result", 1u << 30);
  // --append-result writes one JSON object per line: the last is replayed.
  {
    const auto last = text.find_last_not_of(" \t\r\n");
    const auto nl = last == std::string::npos ? std::string::npos : text.rfind('\n', last);
    if (nl != std::string::npos && text.find_first_not_of(" \t\r\n") < nl &&
        text.compare(text.find_first_not_of(" \t\r\n"), 1, "{") == 0 &&
        text.find("}\n{") != std::string::npos)
      text = text.substr(nl + 1);
  }
  // Python's writer may emit Infinity and NaN (an unlimited rate): read them as strings.
  for (const char* w : {"-Infinity", "Infinity", "NaN"}) {
    for (std::size_t at = text.find(w); at != std::string::npos; at = text.find(w, at + 2)) {
      const bool quoted = at > 0 && text[at - 1] == '"';
      if (!quoted) text.replace(at, std::strlen(w), std::string("\"") + w + "\"");
    }
  }
  const json j = parse_json(text, o.path);
  const JsonObject r(j, o.path);
  const double big = 1e7;
  YAML::Node sc = base_scenario(o, "replay-" + fs::path(o.path).stem().string(), plan.notes);
  YAML::Node pool = sc["pools"][0];
  std::string model = r.string("model_id").value_or("");
  const std::string engine_args =
      o.engine_args.empty() ? engine_args_beside(fs::path(o.path).parent_path()) : o.engine_args;
  if (!engine_args.empty()) {
    const EngineArgs a = read_engine_args(engine_args);
    apply_engine_args(a, pool, plan.notes);
    if (model.empty()) model = a.model;
  } else {
    plan.notes.push_back(
        "engine arguments: none given (--engine-args FILE, or engine_args.json "
        "or serve_args.txt beside the result): kvfleet's defaults");
  }
  set_model(o, model, o.path, sc, pool, plan.notes);
  // Per-request data (--save-detailed): the lengths in dispatch order, and the arrivals where the
  // newest versions record them (start_times − queue_times).
  const json* in = r.find("input_lens");
  const json* out = r.find("output_lens");
  MeasuredGroup g;
  g.name = "all requests";
  auto array_of = [&](const char* key, std::size_t n) {
    std::vector<double> v;
    const json* a = r.find(key);
    if (a == nullptr) return v;
    if (!a->is_array()) r.fail(key, "must be an array");
    if (n && a->size() != n)
      r.fail(key, "has " + std::to_string(a->size()) + " entries, input_lens " + std::to_string(n));
    for (std::size_t i = 0; i < a->size(); ++i) {
      const json& x = (*a)[i];
      if (!x.is_number())
        r.fail(std::string(key) + "[" + std::to_string(i) + "]",
               "must be a number, not " + json_type_name(x));
      const double d = x.get<double>();
      if (!std::isfinite(d) || d < 0 || d > 1e9)
        r.fail(std::string(key) + "[" + std::to_string(i) + "]",
               "must be a finite number from 0 to 1e9");
      v.push_back(d);
    }
    return v;
  };
  const double rate_in = [&]() -> double {
    const json* v = r.find("request_rate");
    if (v == nullptr || (v->is_string() && v->get<std::string>() == "inf")) return INFINITY;
    if (v->is_string() && v->get<std::string>() == "Infinity") return INFINITY;
    if (!v->is_number()) r.fail("request_rate", "must be a number or \"inf\"");
    return v->get<double>();
  }();
  const double burst = r.number("burstiness", 1e-6, 1e6).value_or(1.0);
  if (in && out) {
    // The summary's counts are not used beside the requests' own data, but a file is checked
    // whole: a count written as text is a damaged file.
    (void)r.integer("completed", 0, 1ll << 40);
    (void)r.integer("num_prompts", 1, 1ll << 40);
    (void)r.number("duration", 0, 1e9);
    const std::vector<double> il = array_of("input_lens", 0);
    const std::vector<double> ol = array_of("output_lens", il.size());
    for (std::size_t i = 0; i < il.size(); ++i) {
      if (il[i] < 1 || il[i] != std::floor(il[i]))
        r.fail("input_lens[" + std::to_string(i) + "]", "must be a whole number of tokens >= 1");
      if (ol[i] != std::floor(ol[i]))
        r.fail("output_lens[" + std::to_string(i) + "]", "must be a whole number of tokens");
    }
    const std::vector<double> tt = array_of("ttfts", il.size());
    const std::vector<double> st = array_of("start_times", il.size());
    const std::vector<double> qt = array_of("queue_times", il.size());
    const std::vector<double> lat = array_of("latencies", il.size());
    std::vector<double> ttft, tpot, e2e;
    const json* itls = r.find("itls");
    const json* errors = r.find("errors");
    if (errors && (!errors->is_array() || errors->size() != il.size()))
      r.fail("errors",
             "must be an array of " + std::to_string(il.size()) + " strings, one per request");
    if (itls && (!itls->is_array() || itls->size() != il.size()))
      r.fail("itls",
             "must be an array of " + std::to_string(il.size()) + " arrays, one per request");
    for (std::size_t i = 0; itls && i < itls->size(); ++i) {
      const json& gaps = (*itls)[i];
      if (!gaps.is_array()) r.fail("itls[" + std::to_string(i) + "]", "must be an array");
      for (const auto& x : gaps)
        if (!x.is_number() || !std::isfinite(x.get<double>()) || x.get<double>() < 0)
          r.fail("itls[" + std::to_string(i) + "]", "must hold finite non-negative numbers");
    }
    // A request failed when its error is not empty, or (files without errors) when it has no
    // output and no latency.
    std::vector<bool> failed(il.size(), false);
    std::size_t n_failed = 0;
    for (std::size_t i = 0; i < il.size(); ++i) {
      if (errors) {
        const json& e = (*errors)[i];
        if (!e.is_string() && !e.is_null())
          r.fail("errors[" + std::to_string(i) + "]", "must be a string, not " + json_type_name(e));
        failed[i] = e.is_string() && !e.get<std::string>().empty();
      }
      if (ol[i] < 1 && (lat.empty() || lat[i] == 0)) failed[i] = true;
      n_failed += failed[i];
      if (failed[i]) continue;
      double lat_i = lat.empty() ? NAN : lat[i];
      if (lat.empty() && itls && !tt.empty()) {
        const json& gaps = (*itls)[i];
        if (!gaps.is_array()) r.fail("itls[" + std::to_string(i) + "]", "must be an array");
        lat_i = tt[i];
        for (const auto& x : gaps) {
          if (!x.is_number()) r.fail("itls[" + std::to_string(i) + "]", "must hold numbers");
          lat_i += x.get<double>();
        }
      }
      if (!tt.empty()) ttft.push_back(tt[i]);
      if (std::isfinite(lat_i)) e2e.push_back(lat_i);
      if (!tt.empty() && std::isfinite(lat_i) && ol[i] > 1)
        tpot.push_back((lat_i - tt[i]) / (ol[i] - 1));
    }
    if (n_failed == il.size()) r.fail("errors", "every request failed: nothing to compare");
    auto stats = [](std::vector<double> v) {
      MeasuredStats s;
      if (v.empty()) return s;
      const LatencyStats l = latency_stats(std::move(v));
      s.mean = l.mean, s.p50 = l.p50, s.p90 = l.p90, s.p99 = l.p99;
      return s;
    };
    g.ttft = stats(ttft);
    g.tpot = stats(tpot);
    g.e2e = stats(e2e);
    g.requests = static_cast<std::int64_t>(il.size() - n_failed);
    // The trace: arrivals recorded, or drawn as vllm bench draws them (gamma gaps of mean
    // 1/rate and shape burstiness, the first after one gap; all at once for an unlimited rate).
    // Versions that record `failed` (late 2025 on) scale the offsets so that the last falls at
    // num_prompts / rate.
    const bool recorded = !st.empty() && !qt.empty();
    std::vector<double> at(il.size(), 0.0);
    if (recorded) {
      double t0 = INFINITY;
      for (std::size_t i = 0; i < il.size(); ++i) t0 = std::min(t0, st[i] - qt[i]);
      for (std::size_t i = 0; i < il.size(); ++i) at[i] = st[i] - qt[i] - t0;
    } else if (std::isfinite(rate_in) && rate_in > 0) {
      RngStream rng(1, "replay.vllm_bench.arrivals");
      double t = 0;
      for (double& a : at) a = t += rng.gamma(burst, 1.0 / (rate_in * burst));
      if (r.has("failed") && t > 0)
        for (double& a : at) a *= static_cast<double>(il.size()) / rate_in / t;
    }
    // Failed requests are not replayed: a refused request put no load on the GPUs.
    for (std::size_t i = 0; i < il.size(); ++i)
      if (!failed[i]) plan.trace.push_back({at[i], std::max(1.0, il[i]), std::max(1.0, ol[i])});
    if (n_failed > 0)
      plan.notes.push_back(std::to_string(n_failed) +
                           " failed request(s) (errors) neither replayed nor compared");
    std::stable_sort(plan.trace.begin(), plan.trace.end(),
                     [](const auto& a, const auto& b) { return a[0] < b[0]; });
    YAML::Node wl;
    wl["impl"] = "trace";
    wl["format"] = "vidur";
    wl["path"] = "";  // written by the caller beside the scenario
    sc["workload"] = wl;
    plan.notes.push_back(std::string("workload: the ") + std::to_string(il.size()) +
                         " requests' lengths (input_lens, output_lens), " +
                         (recorded ? "sent when they were (start_times − queue_times)"
                          : std::isfinite(rate_in)
                              ? "sent at " + fmt("%g", rate_in) +
                                    " requests/s with gamma gaps of shape " + fmt("%g", burst) +
                                    " (request_rate, burstiness)"
                              : "all sent at once (request_rate inf)"));
  } else {
    // Aggregates only: every request at the mean lengths.
    const double n = static_cast<double>(r.need_integer("completed", 1, 1ll << 40));
    const double tin = r.need_number("total_input_tokens", 1, 1e15) / n;
    const double tout = r.need_number("total_output_tokens", 1, 1e15) / n;
    const std::int64_t prompts =
        r.integer("num_prompts", 1, 1ll << 40).value_or(static_cast<std::int64_t>(n));
    YAML::Node wl;
    wl["impl"] = "synthetic";
    wl["num_requests"] = prompts;
    wl["input_tokens"]["impl"] = "fixed";
    wl["input_tokens"]["value"] = std::max(1.0, std::round(tin));
    wl["output_tokens"]["impl"] = "fixed";
    wl["output_tokens"]["value"] = std::max(1.0, std::round(tout));
    if (std::isfinite(rate_in)) {
      wl["arrival"]["impl"] = burst == 1.0 ? "poisson" : "gamma";
      wl["arrival"]["rate_per_s"] = rate_in;
      if (burst != 1.0) wl["arrival"]["cv"] = 1.0 / std::sqrt(burst);
    } else {
      wl["arrival"]["impl"] = "constant";
      wl["arrival"]["rate_per_s"] = 1e6;
    }
    sc["workload"] = wl;
    plan.notes.push_back(
        "workload: no per-request data (--save-detailed): " + std::to_string(prompts) +
        " requests of the mean lengths " + fmt("%.0f", tin) + " in, " + fmt("%.0f", tout) + " out");
    auto ms = [&](const char* stat) {
      return r.number(std::string(stat), 0, big * 1e3).value_or(NAN) / 1e3;
    };
    g.ttft = {ms("mean_ttft_ms"), ms("median_ttft_ms"), ms("p90_ttft_ms"), ms("p99_ttft_ms")};
    g.tpot = {ms("mean_tpot_ms"), ms("median_tpot_ms"), ms("p90_tpot_ms"), ms("p99_tpot_ms")};
    g.e2e = {ms("mean_e2el_ms"), ms("median_e2el_ms"), ms("p90_e2el_ms"), ms("p99_e2el_ms")};
    g.requests = static_cast<std::int64_t>(n);
  }
  if (r.has("max_concurrency") && r.integer("max_concurrency", 1, 1ll << 30))
    plan.notes.push_back("max_concurrency " +
                         std::to_string(*r.integer("max_concurrency", 1, 1ll << 30)) +
                         " is not modelled: requests are sent on their schedule without a cap");
  plan.groups.push_back(g);
  plan.notes.push_back(
      "TPOT as vllm bench measures it: (end of stream − first token) / (output − 1)");
  plan.scenario = sc;
  return plan;
}

}  // namespace

std::string detect_bench_format(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    const IpFiles f = ip_files(path);
    if (!f.stages.empty() || !f.summary.empty()) return "inference-perf";
    return "";
  }
  if (fs::is_regular_file(path, ec) && fs::path(path).extension() == ".json") {
    // The keys may come after long values (a model id, a list of prompts): up to 64 MiB read.
    std::ifstream in(path);
    std::string head(std::min<std::uintmax_t>(fs::file_size(path, ec), 64u << 20), '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(in.gcount()));
    if (head.find("ttft_ms") != std::string::npos || head.find("\"ttfts\"") != std::string::npos ||
        head.find("request_throughput") != std::string::npos)
      return "vllm bench serve";
  }
  return "";
}

BenchReplay plan_bench_replay(const BenchOptions& o) {
  const std::string f = detect_bench_format(o.path);
  try {
    if (f == "inference-perf") return plan_inference_perf(o);
    if (f == "vllm bench serve") return plan_vllm_bench(o);
  } catch (const YAML::Exception& e) {
    throw InputError(o.path, "", std::string("a value has an unexpected form: ") + e.what());
  }
  throw InputError(o.path, "",
                   "is neither an inference-perf result folder nor a vllm bench serve result JSON");
}

std::string bench_comparison(const BenchReplay& plan, const Scenario& sc, const RunResult& res,
                             double* mae) {
  // What the client saw end its stream this long after the last token (the frontend's finish).
  const SimTime closing = sc.config.pools.empty() ? 0 : sc.config.pools[0].frontend.finish_delay();
  std::ostringstream o;
  double sum = 0;
  int k = 0;
  for (const MeasuredGroup& g : plan.groups) {
    std::vector<double> ttft, tpot, e2e;
    for (const auto& q : res.requests) {
      if (q.outcome != Outcome::kOk || q.purpose != kPurposeTurn) continue;
      if (g.stage >= 0 && q.stage != g.stage) continue;
      ttft.push_back(q.ttft_s());
      e2e.push_back(q.e2e_s());
      if (q.generated_tokens > 1) {
        const SimTime last = plan.tpot == TpotRule::kToLastToken ? q.finish - closing : q.finish;
        tpot.push_back(to_seconds(last - q.first_token) / (q.generated_tokens - 1));
      }
    }
    const std::size_t simulated = ttft.size();
    const LatencyStats st = latency_stats(std::move(ttft)), sp = latency_stats(std::move(tpot)),
                       se = latency_stats(std::move(e2e));
    o << "\n"
      << g.name << ": " << g.requests << " requests measured, " << simulated << " simulated\n\n";
    o << "| metric | statistic | measured | simulated | error |\n|---|---|---|---|---|\n";
    struct Row {
      const char* name;
      double scale;
      const MeasuredStats& m;
      const LatencyStats& s;
    };
    for (const Row& r : {Row{"TTFT (s)", 1, g.ttft, st}, Row{"TPOT (ms)", 1e3, g.tpot, sp},
                         Row{"E2E (s)", 1, g.e2e, se}}) {
      const std::pair<const char*, std::pair<double, double>> stats[] = {
          {"mean", {r.m.mean, r.s.mean}},
          {"p50", {r.m.p50, r.s.p50}},
          {"p90", {r.m.p90, r.s.p90}},
          {"p99", {r.m.p99, r.s.p99}}};
      for (const auto& [name, v] : stats) {
        if (!std::isfinite(v.first)) continue;  // not measured
        const double err = (v.second - v.first) / v.first;
        char buf[160];
        if (!std::isfinite(err)) {
          std::snprintf(buf, sizeof buf, "| %s | %s | %.4g | n/a | n/a |\n", r.name, name,
                        v.first * r.scale);
        } else {
          std::snprintf(buf, sizeof buf, "| %s | %s | %.4g | %.4g | %+.1f%% |\n", r.name, name,
                        v.first * r.scale, v.second * r.scale, 100 * err);
          sum += std::fabs(err);
          ++k;
        }
        o << buf;
      }
    }
  }
  if (mae) *mae = k > 0 ? sum / k : NAN;
  return o.str();
}

}  // namespace kvfleet::sim
