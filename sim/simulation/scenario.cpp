#include "sim/simulation/scenario.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "sim/config/yaml_edit.h"
#include "sim/core/error.h"
#include "sim/core/memory_limit.h"
#include "sim/cost/calibration_file.h"
#include "sim/cost/cost_model.h"
#include "sim/fleet/router.h"
#include "sim/model/presets.h"
#include "sim/workload/workload.h"

namespace kvfleet::sim {

namespace {

// A pool's parallelism and the link its collectives cross.
template <class V>
void visit_parallelism(PoolConfig& p, V& v) {
  v.param("tensor_parallel", p.tensor_parallel,
          {.unit = "GPUs",
           .desc = "GPUs per replica (tensor parallelism)",
           .min = 1,
           .max = 64,
           .label = "Tensor-parallel GPUs"});
  v.param("pipeline_parallel", p.pipeline_parallel,
          {.unit = "stages",
           .desc = "pipeline stages per replica, each on tensor_parallel GPUs holding its share of "
                   "the layers; the engine splits each step into as many micro-batches",
           .min = 1,
           .max = 64,
           .label = "Pipeline stages"});
  v.param("data_parallel", p.data_parallel,
          {.unit = "ranks",
           .desc = "engine ranks per replica (vLLM data_parallel_size), each on tensor_parallel "
                   "GPUs with its own scheduler, queue and KV pool; requests go to the rank "
                   "with the lowest 4 × waiting + running, as vLLM's DP load balancer sends them. "
                   "Ranks of a mixture-of-experts model step in lockstep through the MoE layers "
                   "(a rank with no work runs a dummy batch), whose experts span all the ranks",
           .min = 1,
           .max = 64,
           .label = "Data-parallel ranks"});
  v.param("expert_parallel", p.expert_parallel,
          {.desc = "vLLM enable_expert_parallel: a MoE layer's experts are placed whole on the "
                   "tensor_parallel × data_parallel GPUs, tokens dispatched to them and combined "
                   "back (all-gather and reduce-scatter); false = each expert is sliced over "
                   "those GPUs"});
  v.param("link_Bps", p.link_Bps,
          {.unit = "bytes/s",
           .desc = "GPU-to-GPU bandwidth of this system's collectives (tensor-parallel "
                   "all-reduce, MoE dispatch and combine), as NCCL achieves it; 0 = the GPU "
                   "preset's interconnect_Bps (its datasheet link)",
           .min = 0});
  v.param("link_latency_s", p.link_latency_s,
          {.unit = "s",
           .desc = "latency of one step of those collectives; 0 = the GPU preset's",
           .min = 0,
           .max = 1,
           .why = "a collective step takes microseconds; a second is far beyond any link"});
}

}  // namespace

template <class V>
void PoolConfig::visit(V& v) {
  v.param("name", name, {.desc = "pool name, used in reports and result files"});
  v.param("replicas", replicas,
          {.unit = "replicas", .desc = "engines in this pool", .min = 1, .label = "Replicas"});
  v.param("model", model,
          {.desc = "a model preset name or a name declared under models:", .label = "Model"});
  v.param("gpu", gpu, {.desc = "a GPU preset name or a name declared under gpus:", .label = "GPU"});
  visit_parallelism(*this, v);
  v.param("weight_dtype", weight_dtype,
          {.desc = "weight precision; auto = the model's native precision. Sets the weights' bytes "
                   "and the linear layers' tensor rate (fp8 and int8 W8A8 at the GPU's fp8/int8 "
                   "rate, int4 weight-only at the bf16 rate, nvfp4 and mxfp4 at the fp4 rate "
                   "where the GPU has one, else weight-only at the bf16 rate); KV precision is "
                   "kv_cache_dtype",
           .choices = with_auto(kWeightDtypes),
           .label = "Weight precision"});
  v.param("price_per_hour", price_per_hour,
          {.unit = "$/hour",
           .desc = "price of one GPU (for cost reports)",
           .min = 0,
           .label = "Price per GPU"});
  v.param("step_time_scale", step_time_scale,
          {.unit = "factor",
           .desc = "every engine step's time × this (a what-if: a GPU a few percent faster or "
                   "slower; kvfleet capacity uses it for the answer's sensitivity to step time)",
           .min = 0.01,
           .max = 100,
           .why = "a hundred times faster or slower is another GPU, not a step-time error"});
  v.param("calibration", calibration,
          {.desc = "a calibration file from `kvfleet-calibrate fit` (measured runs on this "
                   "pool's GPU): its settings (the fitted cost model's factors and step "
                   "overheads, the frontend's times, the link) are merged under this pool's own "
                   "keys when the scenario loads; empty in the resolved scenario, which holds "
                   "them",
           .path = true});
  v.param("engine", engine, {.desc = "serving-engine settings (vLLM names)"});
  v.param("frontend", frontend,
          {.desc = "the API server in front of each engine (HTTP, tokenisation, detokenisation, "
                   "streaming), counted in latencies as a benchmark client measures them"});
  v.impl("cost_model", cost_model, cost_model_registry(), {.desc = "step-time model"});
  v.param("admission", admission, {.desc = "admission control and backpressure at the gateway"});
  v.param("startup_s", startup_s,
          {.unit = "s",
           .desc = "provisioning delay of a replica that starts (scale-up, deploy, repair), "
                   "before it loads its weights",
           .min = 0});
  v.param("weight_load_GBps", weight_load_GBps,
          {.unit = "GB/s",
           .desc = "bandwidth at which each GPU of a starting replica loads its weights shard; "
                   "0 = instant",
           .min = 0});
  v.param("failures", failures, {.desc = "replica failures"});
  v.param("deploy", deploy, {.desc = "a rolling deploy"});
  v.param("autoscale", autoscale, {.desc = "autoscaling of this pool"});
}

template <class V>
void ScenarioConfig::visit(V& v) {
  v.param("name", name, {.desc = "scenario name, shown in reports"});
  v.param("description", description, {.desc = "what the scenario shows"});
  v.param("seed", seed,
          {.desc = "seed of every random stream in the run",
           .min = 0,
           .max = 9007199254740992.0,
           .why = "seeds up to 2^53 are exact in every tool that reads them as numbers"});
  v.impl("workload", workload, workload_registry(), {.desc = "where requests come from"});
  v.impl("router", router, router_registry(),
         {.desc = "how requests are spread over replicas", .label = "Routing policy"});
  v.param("client", client, {.desc = "clients: timeouts, retries, backoff and retry budget"});
  v.param("gateway", gateway, {.desc = "fleet-wide gateway rules"});
  v.param("disaggregation", disaggregation, {.desc = "disaggregated prefill and decode pools"});
  v.param("pools", pools,
          {.desc = "the fleet: pools of identical replicas; requests go to the first pool unless "
                   "they name another, the gateway's long-prompt rule or disaggregation sends "
                   "them elsewhere",
           .required = true});
  v.param("models", models, {.desc = "extra model definitions (presets are always available)"});
  v.param("gpus", gpus, {.desc = "extra GPU definitions (presets are always available)"});
  v.param("simulation", simulation, {.desc = "clock and sampling"});
  v.param("alerts", alerts,
          {.desc = "alert rules evaluated on the simulated signals, with the events they should "
                   "warn of (docs/operations.md)"});
}

namespace {

// Extra models and GPUs: each name once, and none a preset's (which it would hide silently).
void check_custom_names(const config::Reader& r, const char* key, const auto& custom,
                        const auto& presets) {
  for (std::size_t i = 0; i < custom.size(); ++i) {
    config::Reader cr(r.node()[key][i], std::string(key) + "[" + std::to_string(i) + "]",
                      r.source());
    for (std::size_t j = 0; j < i; ++j)
      if (custom[j].name == custom[i].name)
        cr.fail_key("name", "'" + custom[i].name + "' is declared twice");
    for (const auto& p : presets)
      if (p.name == custom[i].name)
        cr.fail_key("name", "'" + custom[i].name +
                                "' is a preset's name; give yours another (presets are "
                                "listed by kvfleet presets)");
  }
}

// Pool names name replicas, HDF5 groups and CSV files: letters, digits, '_', '-', '.', and every
// replica's file name ("pool" or "pool_3") distinct.
void check_pool_names(const config::Reader& r, const std::vector<PoolConfig>& pools) {
  std::map<std::string, std::size_t> replica_files;
  for (std::size_t i = 0; i < pools.size(); ++i) {
    const std::string& n = pools[i].name;
    const bool ok = !n.empty() && n != "." && n != ".." && n.size() <= 64 &&
                    n.find_first_not_of(
                        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                        "0123456789_-.") == std::string::npos;
    config::Reader pr(r.node()["pools"][i], "pools[" + std::to_string(i) + "]", r.source());
    if (!ok)
      pr.fail_key("name", "'" + n +
                              "': a pool name is 1 to 64 letters, digits, '_', '-' or '.' (it "
                              "names replicas, result groups and files)");
    const int n_rep = pools[i].max_replicas();
    for (int k = 0; k < n_rep * pools[i].data_parallel; ++k) {
      std::string file =
          pools[i].engine_name(k / pools[i].data_parallel, k % pools[i].data_parallel);
      std::replace(file.begin(), file.end(), '/', '_');
      const auto [at, fresh] = replica_files.emplace(file, i);
      if (!fresh)
        pr.fail_key("name", "'" + n + "': its replica '" + file +
                                "' would share result files "
                                "with pool '" +
                                pools[at->second].name + "'; rename one of them");
    }
  }
}

// A pool's own rules: autoscale bounds, what data parallelism does not model yet, failures of
// replicas it has.
void check_pool_rules(const config::Reader& r, const PoolConfig& p, std::size_t i,
                      const DisaggregationConfig& disaggregation) {
  const std::string path = "pools[" + std::to_string(i) + "]";
  const YAML::Node pn = r.node()["pools"][i];
  const AutoscaleConfig& a = p.autoscale;
  if (a.enabled && a.max_replicas > 0 && a.max_replicas < p.replicas) {
    config::Reader ar(pn["autoscale"], path + ".autoscale", r.source());
    ar.fail_key("max_replicas",
                "is below the pool's " + std::to_string(p.replicas) + " starting replicas");
  }
  if (a.enabled && a.min_replicas > p.max_replicas()) {
    config::Reader ar(pn["autoscale"], path + ".autoscale", r.source());
    ar.fail_key("min_replicas", "exceeds max_replicas");
  }
  if (p.data_parallel > 1) {
    // A data-parallel group fails, deploys and scales as one; not modelled yet.
    const auto refuse = [&](const std::string& what) {
      config::Reader dr(pn, path, r.source());
      dr.fail_key("data_parallel", "data_parallel > 1 with " + what +
                                       " is not modelled yet; use data_parallel: 1 there");
    };
    if (p.failures.mtbf_s > 0 || !p.failures.at.empty()) refuse("failures");
    if (p.deploy.enabled) refuse("a rolling deploy");
    if (p.autoscale.enabled) refuse("autoscaling");
    if (p.pipeline_parallel > 1) refuse("pipeline_parallel > 1");
    if (disaggregation.enabled &&
        (p.name == disaggregation.prefill_pool || p.name == disaggregation.decode_pool))
      refuse("disaggregated prefill and decode");
  }
  for (std::size_t k = 0; k < p.failures.at.size(); ++k) {
    if (p.failures.at[k].replica >= p.max_replicas()) {
      config::Reader fr(pn["failures"]["at"][k], path + ".failures.at[" + std::to_string(k) + "]",
                        r.source());
      fr.fail_key("replica", "the pool has " + std::to_string(p.max_replicas()) + " replicas");
    }
  }
}

}  // namespace

void ScenarioConfig::check(config::Reader& r) const {
  for (std::size_t i = 0; i < pools.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (pools[i].name == pools[j].name)
        r.fail_key("pools", "two pools are named '" + pools[i].name + "'");
  check_custom_names(r, "models", models, model_presets());
  check_custom_names(r, "gpus", gpus, gpu_presets());
  check_pool_names(r, pools);
  const auto pool_named = [&](const std::string& n) {
    for (const auto& p : pools)
      if (p.name == n) return true;
    return false;
  };
  if (gateway.long_prompt_tokens > 0 && !pool_named(gateway.long_prompt_pool)) {
    config::Reader g(r.node()["gateway"], "gateway", r.source());
    g.fail_key("long_prompt_pool", "no pool is named '" + gateway.long_prompt_pool + "'");
  }
  if (disaggregation.enabled) {
    config::Reader d(r.node()["disaggregation"], "disaggregation", r.source());
    if (!pool_named(disaggregation.prefill_pool))
      d.fail_key("prefill_pool", "no pool is named '" + disaggregation.prefill_pool + "'");
    if (!pool_named(disaggregation.decode_pool))
      d.fail_key("decode_pool", "no pool is named '" + disaggregation.decode_pool + "'");
    if (disaggregation.prefill_pool == disaggregation.decode_pool)
      d.fail_key("decode_pool", "must differ from prefill_pool");
  }
  for (std::size_t i = 0; i < pools.size(); ++i) check_pool_rules(r, pools[i], i, disaggregation);
  // A workload may send some requests to a named pool (conversations: summaries).
  const YAML::Node& w = workload.params;
  if (w.IsMap() && w["summary_pool"].IsDefined()) {
    const std::string pool = w["summary_pool"].as<std::string>();
    if (!pool.empty() && !pool_named(pool)) {
      throw InputError(r.source().where(w["summary_pool"], "workload.summary_pool"),
                       "workload.summary_pool", "no pool is named '" + pool + "'");
    }
  }
}

namespace {

std::string names_of(const auto& custom, const auto& presets) {
  std::string s;
  for (const auto& x : custom) s += (s.empty() ? "" : ", ") + x.name;
  for (const auto& x : presets) s += (s.empty() ? "" : ", ") + x.name;
  return s;
}

template <class T>
const T* find_named(const std::vector<T>& custom, const std::vector<T>& presets,
                    const std::string& name) {
  for (const auto& x : custom)
    if (x.name == name) return &x;
  for (const auto& x : presets)
    if (x.name == name) return &x;
  return nullptr;
}

std::string emit_yaml(const YAML::Node& n) {
  YAML::Emitter e;
  e.SetIndent(2);
  e << n;
  return std::string(e.c_str()) + "\n";
}

// Memory asked for up front: what the run's largest structures would take (every replica the
// fleet may start holds its KV block records and a batch's worth of sequence slots) against what
// this process may still take (core/memory_limit.h). A scenario that would not fit is refused
// here, naming the pool that holds the most, instead of failing with an allocation error later.
// The per-item sizes are measured (docs/reliability.md): about 36 bytes per KV block, 200 per
// running sequence; 256 MB is kept for the rest (requests, time series, the router).
void check_memory(const ScenarioConfig& c, const Scenario& sc, const YAML::Node& croot,
                  const config::Source& src) {
  constexpr double kBytesPerBlock = 40, kBytesPerSeq = 200, kRest = 256e6;
  double total = kRest, largest = 0;
  std::size_t largest_pool = 0;
  for (std::size_t i = 0; i < c.pools.size(); ++i) {
    const double engines = c.pools[i].max_engines();
    const double seqs = std::min<double>(c.pools[i].engine.max_num_seqs,
                                         static_cast<double>(sc.pools[i].memory.num_blocks));
    const double bytes =
        engines *
        (static_cast<double>(sc.pools[i].memory.num_blocks) * kBytesPerBlock + seqs * kBytesPerSeq);
    total += bytes;
    if (bytes > largest) largest = bytes, largest_pool = i;
  }
  const MemoryLimit room = available_memory();
  if (total <= room.bytes) return;
  const auto& p = sc.pools[largest_pool];
  config::Reader r(croot["pools"][largest_pool], "pools[" + std::to_string(largest_pool) + "]",
                   src);
  r.fail_key("replicas",
             "the run would need about " + format_bytes(total) + " (this pool: " +
                 std::to_string(c.pools[largest_pool].max_engines()) + " engines × " +
                 std::to_string(p.memory.num_blocks) + " KV blocks at about 40 bytes each), " +
                 "more than the " + format_bytes(room.bytes) + " left under " + room.what +
                 ": simulate fewer replicas or fewer KV blocks (engine.num_gpu_blocks_override, "
                 "engine.gpu_memory_utilization)");
}

}  // namespace

YAML::Node read_checked_calibration(const std::string& path) {
  YAML::Node cal = read_calibration_file(path);
  YAML::Node doc = YAML::Load(
      "workload: {impl: synthetic, num_requests: 1, input_tokens: {impl: fixed, value: 1}, "
      "output_tokens: {impl: fixed, value: 1}}");
  YAML::Node pool = YAML::Clone(cal["pool"]);
  pool["gpu"] = cal["gpu"];
  doc["pools"].push_back(pool);
  config::Source src;
  src.file = path;
  try {
    config::read_document<ScenarioConfig>(doc, src);
  } catch (const InputError& e) {
    const std::string& key = e.key();
    if (key.rfind("pools[0].", 0) == 0)
      throw InputError(path, "pool." + key.substr(9), e.problem());
    throw;
  }
  return cal;
}

namespace {

// Each pool's calibration file (kvfleet-calibrate fit): its settings under the pool's own keys.
void apply_pool_calibrations(YAML::Node root, const config::Source& src) {
  if (root.IsMap() && root["pools"] && root["pools"].IsSequence()) {
    for (std::size_t i = 0; i < root["pools"].size(); ++i) {
      YAML::Node pool = root["pools"][i];
      if (!pool.IsMap() || !pool["calibration"]) continue;
      const std::string where = (src.file.empty() ? std::string("scenario") : src.file) +
                                ": pools[" + std::to_string(i) + "]";
      if (!pool["calibration"].IsScalar())
        throw InputError(where, "calibration", "must be the path of a calibration file");
      std::filesystem::path f = pool["calibration"].as<std::string>();
      if (f.empty()) continue;
      if (f.is_relative() && !src.base_dir.empty()) f = std::filesystem::path(src.base_dir) / f;
      const YAML::Node cal = read_checked_calibration(f.string());
      pool.remove("calibration");
      apply_calibration(pool, cal, f.string(), where);
    }
  }
}

Scenario load(YAML::Node root, config::Source src, const std::vector<std::string>& overrides) {
  for (const auto& o : overrides) config::apply_override(root, o, src);
  apply_pool_calibrations(root, src);
  Scenario sc;
  sc.file = src.file;
  sc.config = config::read_document<ScenarioConfig>(root, src);
  const ScenarioConfig& c = sc.config;

  const YAML::Node& croot = root;
  for (std::size_t i = 0; i < c.pools.size(); ++i) {
    const PoolConfig& p = c.pools[i];
    const std::string path = "pools[" + std::to_string(i) + "]";
    config::Reader r(croot["pools"][i], path, src);
    const ModelSpec* m = find_named(c.models, model_presets(), p.model);
    if (!m)
      r.fail_key("model", "unknown model '" + p.model +
                              "' (known: " + names_of(c.models, model_presets()) + ")");
    const GpuSpec* g = find_named(c.gpus, gpu_presets(), p.gpu);
    if (!g)
      r.fail_key("gpu",
                 "unknown GPU '" + p.gpu + "' (known: " + names_of(c.gpus, gpu_presets()) + ")");
    if (p.pipeline_parallel > m->num_layers)
      r.fail_key("pipeline_parallel",
                 "exceeds the model's " + std::to_string(m->num_layers) + " layers");
    if (p.expert_parallel && m->moe() && p.tensor_parallel * p.data_parallel > m->num_experts)
      r.fail_key("expert_parallel",
                 "places whole experts on each GPU: " +
                     std::to_string(p.tensor_parallel * p.data_parallel) +
                     " GPUs (tensor_parallel × data_parallel) exceed the model's " +
                     std::to_string(m->num_experts) + " experts");
    if (m->num_attention_heads % p.tensor_parallel != 0)
      r.fail_key(
          "tensor_parallel",
          "must divide the model's " + std::to_string(m->num_attention_heads) + " attention heads");
    Scenario::PoolInfo info;
    info.model = *m;
    info.gpu = *g;
    if (p.link_Bps > 0) info.gpu.interconnect_Bps = p.link_Bps;
    if (p.link_latency_s > 0) info.gpu.interconnect_latency_s = p.link_latency_s;
    info.weight_dtype = p.weight_dtype == "auto" ? m->dtype : p.weight_dtype;
    info.max_model_len =
        p.engine.max_model_len > 0 ? p.engine.max_model_len : m->max_position_embeddings;
    if (info.max_model_len > m->max_position_embeddings) {
      config::Reader er(croot["pools"][i]["engine"], path + ".engine", src);
      er.fail_key("max_model_len", "exceeds the model's limit of " +
                                       std::to_string(m->max_position_embeddings) + " tokens");
    }
    try {
      info.memory = compute_memory_budget(*m, *g, p.tensor_parallel, info.weight_dtype, p.engine,
                                          p.pipeline_parallel, p.tensor_parallel * p.data_parallel);
    } catch (const std::invalid_argument& e) {
      r.fail_key("gpu", e.what());
    }
    sc.pools.push_back(std::move(info));
  }
  // Every replica the run may start holds its KV tables: the fleet's total is bounded too.
  double fleet_blocks = 0;
  for (std::size_t i = 0; i < c.pools.size(); ++i) {
    fleet_blocks += static_cast<double>(sc.pools[i].memory.num_blocks) * c.pools[i].max_engines();
    if (fleet_blocks > static_cast<double>(kMaxKvBlocksPerFleet)) {
      config::Reader r(croot["pools"][i], "pools[" + std::to_string(i) + "]", src);
      r.fail_key("replicas",
                 "the fleet's replicas would hold " + std::to_string(std::int64_t(fleet_blocks)) +
                     " KV blocks together, above the limit of " +
                     std::to_string(kMaxKvBlocksPerFleet) +
                     " (the simulator keeps about 50 bytes per block): simulate fewer or "
                     "smaller replicas");
    }
  }
  check_memory(c, sc, croot, src);
  sc.resolved_yaml = emit_yaml(config::Writer::write(c));
  return sc;
}

}  // namespace

Scenario load_scenario_file(const std::string& path, const std::vector<std::string>& overrides) {
  YAML::Node root = config::load_yaml_file(path, "scenario");
  // A sweep file given where a scenario belongs: say so, instead of its first missing key.
  if (root.IsMap() && (root["axes"] || root["sample"]) && root["base"] && !root["pools"])
    throw InputError(path, "",
                     "this is a sweep file (base:, axes: or sample:), not a scenario: run it "
                     "with 'kvfleet sweep " +
                         path + " --out RESULTS.h5', or run its base scenario");
  config::Source src;
  src.file = path;
  src.base_dir = std::filesystem::path(path).parent_path().string();
  return load(root, src, overrides);
}

Scenario load_scenario_text(const std::string& yaml, const std::string& name,
                            const std::string& base_dir,
                            const std::vector<std::string>& overrides) {
  YAML::Node root = config::parse_yaml(yaml, name);
  // A sweep file given where a scenario belongs: say so, instead of its first missing key.
  if (root.IsMap() && (root["axes"] || root["sample"]) && root["base"] && !root["pools"])
    throw InputError(name, "",
                     "this is a sweep file (base:, axes: or sample:), not a scenario: run it "
                     "with 'kvfleet sweep " +
                         name +
                         " --out RESULTS.h5', or give its base "
                         "scenario");
  config::Source src;
  src.file = name;
  src.base_dir = base_dir;
  return load(root, src, overrides);
}

std::string scenario_text_with_sets(const std::string& yaml, const std::string& name,
                                    const std::string& base_dir,
                                    const std::vector<std::string>& sets, bool* kept) {
  const Scenario want = load_scenario_text(yaml, name, base_dir, sets);
  if (kept) *kept = false;
  if (const auto edited = config::edit_yaml_text(yaml, sets)) {
    try {
      if (load_scenario_text(*edited, name, base_dir, {}).resolved_yaml == want.resolved_yaml) {
        if (kept) *kept = true;
        return *edited;
      }
    } catch (const InputError&) {
      // The edit loads to something else (an impl changed in place keeps the old one's keys).
    }
  }
  return want.resolved_yaml;
}

Scenario ScenarioSource::load(const std::vector<std::string>& overrides) const {
  if (!path.empty()) return load_scenario_file(path, overrides);
  if (!text.empty()) return load_scenario_text(text, name, base_dir, overrides);
  return load_scenario_text(builtin_default_scenario(), "<built-in default.yaml>", ".", overrides);
}

KeyDeclaration declared_key(const std::string& key) {
  std::string generic;  // pools[0].replicas -> pools[].replicas, as the declarations name it
  for (std::size_t i = 0; i < key.size(); ++i) {
    generic += key[i];
    if (key[i] == '[')
      while (i + 1 < key.size() && key[i + 1] != ']') ++i;
  }
  static const std::vector<config::Documenter::Row> rows = scenario_parameters();
  KeyDeclaration d;
  for (const auto& row : rows) {
    if (row.key != generic) continue;
    const bool integer = row.type.rfind("integer", 0) == 0;
    if (!d.found) {
      d = {row.unit, integer, true};
    } else {
      if (row.unit != d.unit) d.unit.clear();
      d.integer = d.integer && integer;
    }
  }
  return d;
}

std::vector<config::Documenter::Row> scenario_parameters() {
  config::Documenter d;
  ScenarioConfig def;
  def.visit(d);
  std::vector<config::Documenter::Row> rows = d.rows();
  for (const auto& s : d.sections()) rows.insert(rows.end(), s.rows.begin(), s.rows.end());
  return rows;
}

}  // namespace kvfleet::sim
