// kvfleet replay of an inference-perf result folder: its stages, request lengths and measured
// latencies as a scenario and a comparison.
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
#include "sim/replay/bench_files.h"
#include "sim/replay/inference_perf_detail.h"
#include "sim/replay/replay.h"
#include "sim/simulation/scenario.h"

namespace kvfleet::sim::bench_detail {

using json = nlohmann::json;

namespace {

// The folder's files: config.yaml and one set of lifecycle reports.
struct IpFiles {
  fs::path dir, config;
  std::map<int, fs::path> stages;
  fs::path summary, per_request;
};

// The folder's config.yaml and the reports it names: those of its report_file_prefix, else the
// one set of reports in the folder (several sets without a prefix to choose: refused, listed).
IpFiles ip_files(const fs::path& dir) {
  IpFiles f;
  f.dir = dir;
  for (const char* n : {"config.yaml", "config.yml"})
    if (std::error_code ec; fs::is_regular_file(dir / n, ec)) f.config = dir / n;
  std::vector<IpReports> sets = inference_perf_reports(dir);
  std::optional<std::string> prefix;
  if (!f.config.empty()) {
    try {
      const YAML::Node cfg =
          config::parse_yaml(read_input_file(f.config.string(), "inference-perf config", 16u << 20),
                             f.config.string());
      const YAML::Node p = cfg["storage"]["local_storage"]["report_file_prefix"];
      if (p && p.IsScalar() && !p.IsNull() && !p.Scalar().empty()) prefix = p.Scalar();
    } catch (const std::exception&) {
      // read_config reports a damaged config.yaml with its own message.
    }
  }
  const IpReports* chosen = nullptr;
  if (prefix) {
    for (const IpReports& r : sets)
      if (r.prefix == *prefix || r.prefix == *prefix + "_" || r.prefix == *prefix + "-")
        chosen = &r;
    if (chosen == nullptr)
      throw InputError(f.config.string(), "storage.local_storage.report_file_prefix",
                       "names reports '" + *prefix + "…' that are not in " + dir.string());
  } else if (sets.size() == 1) {
    chosen = &sets.front();
  } else if (sets.size() > 1) {
    std::string list;
    for (const IpReports& r : sets)
      list += (list.empty() ? "" : ", ") + ("'" + r.prefix + "stage_N…'");
    throw InputError(dir.string(), "",
                     "holds " + std::to_string(sets.size()) +
                         " sets of lifecycle reports with different file-name prefixes (" + list +
                         ") and config.yaml names none: keep one set in the folder");
  }
  if (chosen != nullptr) {
    f.stages = chosen->stages;
    f.summary = chosen->summary;
    f.per_request = chosen->per_request;
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

YAML::Node read_config(const BenchOptions& o, const IpFiles& f) {
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
  return cfg;
}

// The load's stages (rate_per_s, duration_s): config.yaml's, or a sweep's from its stage files.
YAML::Node load_stages(const YAML::Node& load, const std::string& cfg_where, const IpFiles& f,
                       const std::map<int, json>& stage_json, BenchReplay& plan) {
  YAML::Node stages(YAML::NodeType::Sequence);
  if (load["stages"] && load["stages"].IsSequence() && load["stages"].size() > 0) {
    for (std::size_t i = 0; i < load["stages"].size(); ++i) {
      const YAML::Node s = load["stages"][i];
      const std::string k = "load.stages[" + std::to_string(i) + "]";
      YAML::Node st;
      // Stages of every type hold both keys, null where they do not apply.
      if (s.IsMap() && s["concurrency_level"] && !s["concurrency_level"].IsNull()) {
        // A concurrent stage: num_requests enqueued over one second (inference-perf's main.py
        // sets rate = num_requests, duration = 1), at most concurrency_level in flight.
        if (!s["num_requests"] || s["num_requests"].IsNull())
          throw InputError(cfg_where, k, "needs num_requests");
        const double n = number_at(cfg_where, s["num_requests"], k + ".num_requests", 1, 1e7);
        st["rate_per_s"] = n;
        st["duration_s"] = 1;
        st["max_concurrency"] = static_cast<std::int64_t>(
            number_at(cfg_where, s["concurrency_level"], k + ".concurrency_level", 1, 1e7));
      } else {
        if (!s.IsMap() || !s["rate"] || !s["duration"])
          throw InputError(cfg_where, k, "needs rate and duration");
        st["rate_per_s"] = number_at(cfg_where, s["rate"], k + ".rate", 1e-9, 1e7);
        st["duration_s"] = number_at(cfg_where, s["duration"], k + ".duration", 1e-9, 1e7);
      }
      stages.push_back(st);
    }
  } else {
    // A sweep writes no stages into its config: the stage files hold each stage's rate.
    const double dur = load["sweep"] && load["sweep"]["stage_duration"]
                           ? number_at(cfg_where, load["sweep"]["stage_duration"],
                                       "load.sweep.stage_duration", 1e-9, 1e7)
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
  return stages;
}

// data.type shared_prefix as kvfleet's shared_prefix workload.
void shared_prefix_workload(const YAML::Node& data, const std::string& cfg_where, YAML::Node& wl,
                            BenchReplay& plan) {
  const YAML::Node sp = data["shared_prefix"];
  if (!sp || !sp.IsMap()) throw InputError(cfg_where, "data.shared_prefix", "missing");
  auto pick = [&](const char* a, const char* b, double dflt) {
    const YAML::Node n = sp[a] ? sp[a] : sp[b];
    return n ? number_at(cfg_where, n, std::string("data.shared_prefix.") + (sp[a] ? a : b), 1, 1e6)
             : dflt;
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
  const bool multi = yaml_bool(sp["enable_multi_turn_chat"], cfg_where,
                               "data.shared_prefix.enable_multi_turn_chat", false);
  if (multi) {
    wl["multi_turn"] = true;
    plan.notes.push_back(
        "multi-turn chat: each prompt a session, each round after the one "
        "before with the conversation so far in front (enable_multi_turn_chat)");
  }
  plan.notes.push_back("workload: shared_prefix, " + wl["num_groups"].as<std::string>() +
                       " groups × " + wl["num_prompts_per_group"].as<std::string>() +
                       " prompts, sent round-robin (config.yaml data.shared_prefix)");
}

// The workload that config.yaml's data describes (its load is added by the caller).
YAML::Node data_workload(const YAML::Node& cfg, const std::string& cfg_where, BenchReplay& plan) {
  const YAML::Node data = cfg["data"];
  const std::string dtype =
      data && data["type"] && data["type"].IsScalar() ? data["type"].Scalar() : "mock";
  YAML::Node wl;
  if (dtype == "shared_prefix") {
    shared_prefix_workload(data, cfg_where, wl, plan);
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
  } else if (dtype == "mock") {
    // inference-perf's mock data: tiny fixed prompts; the lengths come from what the run
    // measured (measured_lengths), the output from the client's default max_tokens.
    wl["impl"] = "synthetic";
    wl["input_tokens"]["impl"] = "fixed";
    wl["input_tokens"]["value"] = 1;
    wl["output_tokens"]["impl"] = "fixed";
    wl["output_tokens"]["value"] = 30;
    plan.notes.push_back("workload: inference-perf's mock data, the lengths the run measured");
  } else {
    throw InputError(
        cfg_where, "data.type",
        "'" + dtype + "' is not replayed (shared_prefix, synthetic, random and mock are)");
  }
  return wl;
}

// The model (server.model_name, else the tokenizer's) and the engine's arguments.
void model_and_engine(const BenchOptions& o, const LocatedResult& where, const YAML::Node& cfg,
                      YAML::Node& sc, BenchReplay& plan) {
  std::string model_name;
  if (const YAML::Node s = cfg["server"]; s && s["model_name"] && s["model_name"].IsScalar())
    model_name = s["model_name"].Scalar();
  if (model_name.empty())
    if (const YAML::Node t = cfg["tokenizer"];
        t && t["pretrained_model_name_or_path"] && t["pretrained_model_name_or_path"].IsScalar())
      model_name = t["pretrained_model_name_or_path"].Scalar();
  server_settings(o, where, model_name, "", "", sc, plan);
}

// ---- what the files tell of inference-perf's version ---------------------------------------

// The latency definitions of the inference-perf that wrote the folder, told from its files
// (tests/data/conformance/README.md, "Telling the era from the files"): report keys that only
// some versions write, then config.yaml's keys.
LatencyDefinition ip_definition(const BenchOptions& o, const YAML::Node& cfg,
                                const std::string& cfg_where, const json& report,
                                const std::string& report_where, BenchReplay& plan) {
  if (!o.tool_version.empty()) return latency_definition_for("inference-perf", o.tool_version);
  const JsonObject root(report, report_where);
  const auto succ = root.object("successes");
  auto has = [&](const char* k) { return succ && succ->has(k); };
  auto from = [&](const std::string& id, const std::string& why) {
    return latency_definition_id(id, "told from the files: " + why);
  };
  if (has("prompt_tokens") && !has("prompt_len"))
    return from("inference-perf:tokens",
                report_where +
                    " has successes.prompt_tokens and no prompt_len (commit a486b01, "
                    "August 2026, on)");
  if (has("output_tokens"))
    return from("inference-perf:tokens", report_where + " has successes.output_tokens (v0.6.0 on)");
  if (has("token_count_mismatches")) {
    plan.notes.push_back(
        "WARNING: " + report_where +
        " has successes.token_count_mismatches but no output_tokens: inference-perf v0.5.x, "
        "which counted each streamed chunk with the tokenizer's special tokens, so with a "
        "tokenizer that adds a BOS its TPOT divides by about twice the tokens; the replay "
        "assumes a tokenizer without one");
    return from("inference-perf:tokens",
                report_where + " has successes.token_count_mismatches (v0.5.x)");
  }
  if (root.has("benchmark_time_seconds"))
    return from("inference-perf:events",
                report_where +
                    " has benchmark_time_seconds but no token_count_mismatches (April 2026, "
                    "before v0.5.0)");
  const YAML::Node load = cfg["load"], data = cfg["data"];
  const bool trace =
      (load && load.IsMap() && load["trace"]) || (data && data.IsMap() && data["trace"]);
  if (trace)
    return from("inference-perf:events",
                cfg_where + " has a trace key and the report no v0.5 keys (v0.3.0 to v0.4.x)");
  return from("inference-perf:lines",
              cfg_where +
                  " has no trace key (written before commit 3631096, 14 November 2025: "
                  "v0.2.x or older)");
}

// The measured groups: each stage, and the whole run.
void measured_groups(const BenchOptions& o, const IpFiles& f, const std::map<int, json>& stage_json,
                     const YAML::Node& stages, bool streaming, BenchReplay& plan) {
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
    g.name = "stage " + std::to_string(i) + " (" +
             (stages[i]["max_concurrency"]
                  ? "concurrency " + stages[i]["max_concurrency"].as<std::string>()
                  : fmt("%g", rate) + " requests/s") +
             ")";
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
  // A stage that should have sent requests but left no file: its requests are simulated but
  // were not measured (a run cut short, or a file lost).
  for (std::size_t i = 0; i < stages.size(); ++i) {
    const double rate = stages[i]["rate_per_s"].as<double>();
    const double duration = stages[i]["duration_s"].as<double>();
    if (!stage_json.count(static_cast<int>(i)) && std::floor(rate * duration) >= 1)
      plan.notes.push_back(
          "WARNING: stage " + std::to_string(i) + " of config.yaml (" + fmt("%g", rate) +
          " requests/s for " + fmt("%g", duration) + " s) has no stage_" + std::to_string(i) +
          "_lifecycle_metrics.json in " + o.path +
          ": the replay sends its requests, but none was measured (a run cut short?); "
          "\"all requests\" compares what the summary measured with every simulated request");
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
}

// The latency definition and the measured lengths, from the report that tells them: the
// summary, else the first stage's.
void definition_and_lengths(const BenchOptions& o, const IpFiles& f, const YAML::Node& cfg,
                            const std::string& cfg_where, const std::map<int, json>& stage_json,
                            YAML::Node& sc, BenchReplay& plan) {
  std::string report_where;
  json report;
  if (!f.summary.empty()) {
    report_where = f.summary.string();
    report = parse_json(read_input_file(report_where, "inference-perf summary", 256u << 20),
                        report_where);
  } else if (!stage_json.empty()) {
    report_where = f.stages.begin()->second.string();
    report = stage_json.begin()->second;
  }
  if (!report_where.empty()) {
    plan.latency = ip_definition(o, cfg, cfg_where, report, report_where, plan);
    const std::string dtype = cfg["data"] && cfg["data"]["type"] && cfg["data"]["type"].IsScalar()
                                  ? cfg["data"]["type"].Scalar()
                                  : "mock";
    YAML::Node w = sc["workload"];
    if (w["impl"].as<std::string>() == "shared_prefix")
      measured_lengths(report, report_where, cfg, cfg_where, w,
                       {"system_prompt_len", "question_len"}, "output_len", plan);
    else
      measured_lengths(report, report_where, dtype == "mock" ? YAML::Node() : cfg, cfg_where, w,
                       {"input_tokens"}, "output_tokens", plan);
  } else {
    plan.latency = !o.tool_version.empty()
                       ? latency_definition_for("inference-perf", o.tool_version)
                       : latency_definition_id("inference-perf:tokens",
                                               "assumed: no report to tell the version from");
  }
}

}  // namespace

BenchReplay plan_inference_perf(const BenchOptions& o, const LocatedResult& where) {
  BenchReplay plan;
  plan.format = "inference-perf";
  plan.source = o.path;
  const IpFiles f = ip_files(where.path);
  const YAML::Node cfg = read_config(o, f);
  const std::string cfg_where = f.config.string();
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
  if (ltype != "constant" && ltype != "poisson" && ltype != "concurrent")
    throw InputError(cfg_where, "load.type",
                     "'" + ltype + "' is not replayed (constant, poisson and concurrent are)");
  const YAML::Node stages = load_stages(load, cfg_where, f, stage_json, plan);
  // The workload.
  YAML::Node sc = base_scenario(
      o, "replay-" + fs::absolute(where.path).lexically_normal().filename().string(), plan);
  YAML::Node wl = data_workload(cfg, cfg_where, plan);
  YAML::Node ld;
  ld["type"] = ltype == "concurrent" ? "constant" : ltype;  // inference-perf's timer for both
  ld["interval_s"] =
      load["interval"] ? number_at(cfg_where, load["interval"], "load.interval", 0, 1e6) : 1.0;
  ld["lead_in_s"] = 1.0;
  ld["drain"] = true;
  ld["stages"] = stages;
  wl["load"] = ld;
  sc["workload"] = wl;
  plan.notes.push_back("load: " + std::to_string(stages.size()) + " " + ltype +
                       (stages.size() == 1 ? " stage" : " stages, each drained before the next") +
                       " (config.yaml load)");
  // The model and the server.
  model_and_engine(o, where, cfg, sc, plan);
  const YAML::Node api = cfg["api"];
  const bool streaming =
      yaml_bool(api ? api["streaming"] : YAML::Node(), cfg_where, "api.streaming", false);
  const std::string api_type =
      api && api["type"] && api["type"].IsScalar() ? api["type"].Scalar() : "completion";
  if (api_type != "completion" && api_type != "chat")
    throw InputError(cfg_where, "api.type",
                     "'" + api_type + "' is not replayed (completion and chat are)");
  definition_and_lengths(o, f, cfg, cfg_where, stage_json, sc, plan);
  plan.latency.chat = api_type == "chat";
  client_timeout(cfg, cfg_where, sc, plan);
  measured_groups(o, f, stage_json, stages, streaming, plan);
  if (!streaming)
    plan.notes.push_back("api.streaming was off: inference-perf measured request latency only");
  plan.scenario = sc;
  return plan;
}

}  // namespace kvfleet::sim::bench_detail
