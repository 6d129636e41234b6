#include "sim/replay/engine_settings.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "sim/config/params.h"
#include "sim/core/error.h"
#include "sim/model/presets.h"

namespace kvfleet::sim {

namespace {

std::string source(const EngineArg& a) {
  return a.where + " (" + a.given + (a.value.empty() ? "" : " " + a.value) + ")";
}

[[noreturn]] void refuse(const EngineArg& a, const std::string& problem) {
  throw InputError(a.where, a.given, problem);
}

long long as_int(const EngineArg& a, long long lo, long long hi) {
  const auto v = parse_vllm_int(a.value);
  if (!v || *v < lo || *v > hi)
    refuse(a, "must be a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) +
                  ", not '" + a.value + "'");
  return *v;
}

double as_real(const EngineArg& a, double lo, double hi) {
  double v = NAN;
  try {
    std::size_t used = 0;
    v = std::stod(a.value, &used);
    if (used != a.value.size()) v = NAN;
  } catch (const std::exception&) {
  }
  if (!(v >= lo && v <= hi))
    refuse(a, "must be a number from " + config::format_double(lo) + " to " +
                  config::format_double(hi) + ", not '" + a.value + "'");
  return v;
}

bool as_bool(const EngineArg& a) {
  std::string v = a.value;
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  if (v == "true" || v == "1" || v == "yes" || v == "on") return true;
  if (v == "false" || v == "0" || v == "no" || v == "off") return false;
  refuse(a, "must be true or false, not '" + a.value + "'");
}

std::string as_choice(const EngineArg& a, const std::vector<std::string>& ok) {
  if (std::find(ok.begin(), ok.end(), a.value) != ok.end()) return a.value;
  std::string list;
  for (const auto& o : ok) list += (list.empty() ? "" : ", ") + o;
  refuse(a, "'" + a.value + "' is not one kvfleet models (" + list + ")");
}

// Where a modelled argument goes: the key under pools[0] and how its value is read.
struct Target {
  const char* key;  // under pools[0]: "tensor_parallel", "engine.max_num_seqs"
  std::function<YAML::Node(const EngineArg&)> read;
};

YAML::Node node(long long v) { return YAML::Node(v); }

const std::map<std::string, Target>& targets() {
  static const std::map<std::string, Target> t = {
      {"tensor_parallel_size", {"tensor_parallel", [](auto& a) { return node(as_int(a, 1, 64)); }}},
      {"pipeline_parallel_size",
       {"pipeline_parallel", [](auto& a) { return node(as_int(a, 1, 64)); }}},
      {"data_parallel_size", {"data_parallel", [](auto& a) { return node(as_int(a, 1, 64)); }}},
      {"enable_expert_parallel",
       {"expert_parallel", [](auto& a) { return YAML::Node(as_bool(a)); }}},
      {"max_num_seqs",
       {"engine.max_num_seqs", [](auto& a) { return node(as_int(a, 1, 1 << 20)); }}},
      {"max_num_batched_tokens",
       {"engine.max_num_batched_tokens", [](auto& a) { return node(as_int(a, 1, 100'000'000)); }}},
      {"max_model_len",
       {"engine.max_model_len",
        [](auto& a) {
          // -1 and auto: as long as the model (and memory) allow.
          if (a.value == "-1" || a.value == "auto") return node(0);
          return node(as_int(a, 1, 100'000'000));
        }}},
      {"block_size", {"engine.block_size", [](auto& a) { return node(as_int(a, 1, 1024)); }}},
      {"num_gpu_blocks_override",
       {"engine.num_gpu_blocks_override", [](auto& a) { return node(as_int(a, 1, 16777216)); }}},
      {"gpu_memory_utilization",
       {"engine.gpu_memory_utilization", [](auto& a) { return YAML::Node(as_real(a, 0.01, 1)); }}},
      {"enable_prefix_caching",
       {"engine.enable_prefix_caching", [](auto& a) { return YAML::Node(as_bool(a)); }}},
      {"enable_chunked_prefill",
       {"engine.enable_chunked_prefill", [](auto& a) { return YAML::Node(as_bool(a)); }}},
      {"async_scheduling",
       {"engine.async_scheduling", [](auto& a) { return YAML::Node(as_bool(a)); }}},
      {"kv_cache_dtype",
       {"engine.kv_cache_dtype",
        [](auto& a) {
          static const std::vector<std::string> kv = [] {
            const std::vector<std::string_view> v = with_auto(kKvDtypes);
            return std::vector<std::string>(v.begin(), v.end());
          }();
          return YAML::Node(as_choice(a, kv));
        }}},
      {"long_prefill_token_threshold",
       {"engine.long_prefill_token_threshold",
        [](auto& a) { return node(as_int(a, 0, 100'000'000)); }}},
      {"scheduling_policy",
       {"engine.scheduling_policy",
        [](auto& a) {
          return YAML::Node(as_choice(a, {"fcfs", "priority"}));
        }}},
      {"preemption_mode",
       {"engine.preemption_mode",
        [](auto& a) {
          return YAML::Node(as_choice(a, {"recompute", "swap"}));
        }}},
      {"swap_space",
       {"engine.swap_space_gib", [](auto& a) { return YAML::Node(as_real(a, 0, 1e5)); }}},
  };
  return t;
}

void set_path(YAML::Node pool, const std::string& key, const YAML::Node& v) {
  const auto dot = key.find('.');
  if (dot == std::string::npos) {
    pool[key] = v;
  } else {
    YAML::Node sub = pool[key.substr(0, dot)];
    sub[key.substr(dot + 1)] = v;
  }
}

std::string scalar_text(const YAML::Node& v) {
  YAML::Emitter em;
  em << v;
  return em.c_str();
}

// compilation_config, every form merged in order: a JSON mapping (command line) or mapping
// (file), -O3 (a level: the graphs as they are), -O.key=value (one key). `last` is the last
// argument that set it (nullptr when none did).
nlohmann::json compilation_config(const EngineArgs* args, const EngineArg*& last) {
  nlohmann::json cc = nlohmann::json::object();
  if (!args) return cc;
  // The arguments themselves, not a copy: `last` points into them.
  for (const EngineArg& a : args->args) {
    if (a.key != "compilation_config") continue;
    last = &a;
    nlohmann::json j;
    if (!a.value.empty() && a.value[0] == '.' && a.value.find('=') != std::string::npos) {
      const auto eq = a.value.find('=');
      const std::string v = a.value.substr(eq + 1);
      try {
        j[a.value.substr(1, eq - 1)] = nlohmann::json::parse(v);
      } catch (const std::exception&) {
        j[a.value.substr(1, eq - 1)] = v;
      }
    } else {
      try {
        j = nlohmann::json::parse(a.value);
      } catch (const std::exception&) {
      }
      if (j.is_number_integer()) j = nlohmann::json::object();
    }
    if (!j.is_object())
      refuse(a,
             "must be a mapping (JSON on the command line, e.g. "
             "'{\"cudagraph_capture_sizes\": [1, 2, 4, 8]}'), a level (-O3) or -O.key=value");
    for (auto it = j.begin(); it != j.end(); ++it) cc[it.key()] = it.value();
  }
  return cc;
}

// CUDA graphs for the cost models that pad a step to a capture size.
void apply_graphs(const EngineArgs* args, const VllmRelease& release, YAML::Node pool,
                  EngineSettingsOut& out) {
  const EngineArg* eager = args ? args->find("enforce_eager") : nullptr;
  const EngineArg* sizes = args ? args->find("cudagraph_capture_sizes") : nullptr;
  if (eager && as_bool(*eager)) {
    out.settings.push_back({"CUDA graphs", "off", source(*eager)});
    return;
  }
  const EngineArg* comp = nullptr;
  const nlohmann::json cc = compilation_config(args, comp);
  if (comp && cc.contains("cudagraph_mode") && cc["cudagraph_mode"].is_string()) {
    std::string mode = cc["cudagraph_mode"].get<std::string>();
    for (char& c : mode) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (mode == "NONE") {
      out.settings.push_back({"CUDA graphs", "off", source(*comp) + " cudagraph_mode NONE"});
      return;
    }
  }
  const bool from_comp = !sizes && comp && cc.contains("cudagraph_capture_sizes");
  if (sizes || from_comp) {
    const EngineArg& a = sizes ? *sizes : *comp;
    nlohmann::json j;
    if (sizes) {
      try {
        j = nlohmann::json::parse(sizes->value);
      } catch (const std::exception&) {
      }
    } else {
      j = cc["cudagraph_capture_sizes"];
    }
    if (!j.is_array() || j.empty())
      refuse(a, std::string(from_comp ? "cudagraph_capture_sizes " : "") +
                    "must be a list of token counts");
    YAML::Node list(YAML::NodeType::Sequence);
    for (const auto& x : j) {
      if (!x.is_number_integer() || x.get<long long>() < 1 || x.get<long long>() > 1 << 20)
        refuse(a, "must hold whole numbers from 1 to 1048576, not " + x.dump());
      list.push_back(x.get<long long>());
    }
    pool["cost_model"]["cuda_graph_sizes"] = list;
    out.settings.push_back({"pools[0].cost_model.cuda_graph_sizes",
                            std::to_string(j.size()) + " capture sizes",
                            source(a) + (from_comp ? " cudagraph_capture_sizes" : "")});
    return;
  }
  const long long seqs = pool["engine"]["max_num_seqs"].as<long long>();
  const std::vector<long long> def = vllm_cuda_graph_sizes(release.version, seqs);
  YAML::Node list(YAML::NodeType::Sequence);
  for (long long x : def) list.push_back(x);
  pool["cost_model"]["cuda_graph_sizes"] = list;
  out.settings.push_back(
      {"pools[0].cost_model.cuda_graph_sizes",
       std::to_string(def.size()) + " capture sizes, 1 to " + std::to_string(def.back()),
       "vLLM " + release.version.text + "'s default for max_num_seqs " + std::to_string(seqs)});
}

}  // namespace

VllmRelease choose_vllm_release(const std::string& cli_version, const EngineArgs* args,
                                const std::string& recorded, const std::string& recorded_where) {
  VllmRelease r;
  if (!cli_version.empty()) {
    r.version = parse_vllm_version(cli_version, "--vllm-version");
    r.from = "--vllm-version";
  } else if (args != nullptr && !args->vllm_version.empty()) {
    r.version = parse_vllm_version(args->vllm_version, args->vllm_version_where);
    r.from = args->vllm_version_where;
  } else if (!recorded.empty()) {
    r.version = parse_vllm_version(recorded, recorded_where);
    r.from = recorded_where;
  } else {
    r.version = newest_known_vllm();
    r.from =
        "assumed: the run records no vLLM version, and this is the newest release kvfleet "
        "knows (--vllm-version settles it)";
    r.assumed = true;
  }
  if (r.version < oldest_known_vllm())
    throw InputError(r.from, "",
                     "vLLM " + r.version.text +
                         " is older than the oldest release whose defaults "
                         "kvfleet knows (" +
                         oldest_known_vllm().text + "): give its settings with --engine-args");
  return r;
}

namespace {

// The warnings for arguments kvfleet does not model, does not know, or that change nothing.
void add_argument_warnings(const std::vector<std::string>& not_modelled,
                           const std::vector<std::string>& unknown,
                           const std::vector<std::string>& no_effect, EngineSettingsOut& out) {
  if (!not_modelled.empty()) {
    std::string s =
        "WARNING: the server ran with arguments kvfleet does not model, so the "
        "replay leaves out:";
    for (const auto& n : not_modelled) s += "\n    " + n;
    out.warnings.push_back(s);
  }
  if (!unknown.empty()) {
    std::string s = "WARNING: arguments kvfleet does not know, not used:";
    for (const auto& n : unknown) s += " " + n + ";";
    s.pop_back();
    out.warnings.push_back(s);
  }
  if (!no_effect.empty()) {
    std::string s = "arguments read that change nothing kvfleet simulates:";
    for (const auto& n : no_effect) s += " " + n;
    out.warnings.push_back(s);
  }
}

}  // namespace

EngineSettingsOut apply_engine_settings(const EngineArgs* args, const VllmRelease& release,
                                        VllmServerContext ctx, int cli_tp, bool graphs,
                                        YAML::Node pool) {
  EngineSettingsOut out;
  std::set<std::string> set_keys;
  std::vector<std::string> not_modelled, unknown, no_effect;
  if (args != nullptr) {
    // The last spelling of each argument counts, as in vLLM's parser; an earlier one that
    // differs is named.
    std::map<std::string, const EngineArg*> last;
    for (const EngineArg& a : args->args) {
      if (const auto it = last.find(a.key); it != last.end() && it->second->value != a.value)
        out.warnings.push_back(a.given + " is given twice (" + it->second->where + ": '" +
                               it->second->value + "', " + a.where + ": '" + a.value +
                               "'): the last counts, as in vLLM");
      last[a.key] = &a;
    }
    for (const auto& [key, a] : last) {
      if (const auto t = targets().find(key); t != targets().end()) {
        const YAML::Node v = t->second.read(*a);
        set_path(pool, t->second.key, v);
        set_keys.insert(t->second.key);
        out.settings.push_back(
            {"pools[0]." + std::string(t->second.key), scalar_text(v), source(*a)});
      } else if (key == "quantization") {
        out.quantization = a->value, out.quant_where = a->where;
      } else if (key == "dtype") {
        out.dtype = a->value,
        out.quant_where = out.quant_where.empty() ? a->where : out.quant_where;
      } else if (key == "model") {
        out.model = a->value;
      } else if (a->spec == nullptr) {
        unknown.push_back(a->given + " (" + a->where + ")");
      } else if (a->spec->effect == VllmArgEffect::kNotModelled) {
        not_modelled.push_back(a->given + " = " + a->value + ": " + a->spec->what + " (" +
                               a->where + ")");
      } else if (a->spec->effect == VllmArgEffect::kNoEffect) {
        no_effect.push_back(a->given);
      }
    }
  }
  if (cli_tp > 0) {
    if (set_keys.count("tensor_parallel") && pool["tensor_parallel"].as<long long>() != cli_tp)
      throw InputError("--tp", "",
                       std::to_string(cli_tp) + " contradicts the engine arguments' " +
                           pool["tensor_parallel"].Scalar() + ": give one of them");
    if (!set_keys.count("tensor_parallel")) {
      pool["tensor_parallel"] = cli_tp;
      set_keys.insert("tensor_parallel");
      out.settings.push_back({"pools[0].tensor_parallel", std::to_string(cli_tp), "--tp"});
    }
  }
  // Every engine setting the arguments left out: the release's default.
  if (set_keys.count("pipeline_parallel"))
    ctx.pipeline_parallel = pool["pipeline_parallel"].as<int>();
  const VllmDefaults d = vllm_defaults(release.version, ctx);
  for (const VllmDefault& v : d.values) {
    if (set_keys.count(v.key)) continue;
    set_path(pool, v.key, YAML::Load(v.value));
    out.settings.push_back(
        {"pools[0]." + v.key, v.value, "vLLM " + release.version.text + "'s default: " + v.why});
  }
  if (graphs) apply_graphs(args, release, pool, out);
  add_argument_warnings(not_modelled, unknown, no_effect, out);
  return out;
}

}  // namespace kvfleet::sim
