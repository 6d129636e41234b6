#pragma once
// A scenario: one YAML file describing the workload and the fleet (DESIGN.md, "Scenario").
// The schema is the set of visit() declarations below and in the components they name;
// docs/scenarios.md is generated from it (`kvfleet schema`).
#include <cstdint>
#include <string>
#include <vector>

#include "sim/config/params.h"
#include "sim/engine/engine_config.h"
#include "sim/engine/frontend.h"
#include "sim/engine/memory.h"
#include "sim/fleet/client.h"
#include "sim/fleet/disaggregation.h"
#include "sim/fleet/gateway.h"
#include "sim/fleet/lifecycle.h"
#include "sim/metrics/alerts.h"
#include "sim/model/presets.h"

namespace kvfleet::sim {

struct PoolConfig {
  std::string name = "pool0";
  int replicas = 1;
  std::string model = "Llama-3-8B";
  std::string gpu = "H100-SXM";
  int tensor_parallel = 1;
  int pipeline_parallel = 1;
  int data_parallel = 1;
  bool expert_parallel = false;
  double link_Bps = 0;        // GPU-to-GPU link of this system; 0 = the GPU preset's
  double link_latency_s = 0;  // 0 = the GPU preset's
  // GPUs of one engine (a data-parallel rank): its tensor and pipeline parallel group.
  int gpus_per_replica() const { return tensor_parallel * pipeline_parallel; }
  std::string weight_dtype = "auto";
  double price_per_hour = 0;
  double step_time_scale = 1;
  std::string calibration;  // merged into the pool's keys on load (cost/calibration_file.h)
  EngineConfig engine;
  FrontendConfig frontend;
  config::ImplSpec cost_model;
  AdmissionConfig admission;
  double startup_s = 0;
  double weight_load_GBps = 0;
  FailureConfig failures;
  DeployConfig deploy;
  AutoscaleConfig autoscale;
  // Replicas built: max_replicas when autoscaling, else replicas.
  int max_replicas() const {
    return autoscale.enabled ? std::max(replicas, autoscale.max_replicas) : replicas;
  }
  // Engines built: every replica runs data_parallel engine ranks.
  int max_engines() const { return max_replicas() * data_parallel; }

  // The name of rank `rank` of replica `replica`: pool, pool/3, pool/dp1 or pool/3/dp1.
  std::string engine_name(int replica, int rank) const {
    std::string n = max_replicas() == 1 ? name : name + "/" + std::to_string(replica);
    return data_parallel == 1 ? n : n + "/dp" + std::to_string(rank);
  }

  template <class V>
  void visit(V& v);
};

struct SimulationConfig {
  double max_time_s = 0;
  double timeseries_interval_s = 1.0;
  double scrape_interval_s = 0.05;
  bool check_invariants = false;
  bool fast_decode = true;
  std::vector<double> report_context_tokens = {2048, 8192, 32768};
  template <class V>
  void visit(V& v) {
    v.param("max_time_s", max_time_s,
            {.unit = "s",
             .desc = "stop the clock here; requests still in flight end 'unfinished'; "
                     "0 = run until every request has ended",
             .min = 0});
    v.param("timeseries_interval_s", timeseries_interval_s,
            {.unit = "s",
             .desc = "sampling interval of the per-replica time series",
             .min = 1e-3,
             .why = "one row per replica per millisecond is finer than any engine step"});
    v.param("scrape_interval_s", scrape_interval_s,
            {.unit = "s",
             .desc = "routers see replicas' load signals as of the last scrape, this "
                     "often; 0 = always current (else at least 0.001)",
             .min = 0});
    v.param("check_invariants", check_invariants,
            {.desc = "verify KV block conservation and scheduler limits after every step (slow)"});
    v.param("fast_decode", fast_decode,
            {.desc = "advance decoding sequences in bulk between the steps where something "
                     "happens to them (same events, times and counts; false visits every "
                     "sequence every step, for comparison)"});
    v.param("report_context_tokens", report_context_tokens,
            {.unit = "tokens",
             .desc = "the report says how many sequences of each of these lengths fit in KV",
             .min = 1,
             .why = "a sequence holds at least one token"});
  }
  void check(config::Reader& r) const {
    if (scrape_interval_s > 0 && scrape_interval_s < 1e-3)
      r.fail_key("scrape_interval_s",
                 "must be 0 (always current) or at least 0.001 s: a scrape every microsecond "
                 "would cost a million events per simulated second");
  }
};

struct ScenarioConfig {
  std::string name = "scenario";
  std::string description;
  std::int64_t seed = 1;
  config::ImplSpec workload;
  config::ImplSpec router;
  ClientConfig client;
  GatewayConfig gateway;
  DisaggregationConfig disaggregation;
  std::vector<PoolConfig> pools;
  std::vector<ModelSpec> models;
  std::vector<GpuSpec> gpus;
  SimulationConfig simulation;
  AlertsConfig alerts;

  template <class V>
  void visit(V& v);
  void check(config::Reader& r) const;
};

// A loaded, checked scenario with everything resolved.
struct Scenario {
  ScenarioConfig config;
  std::string file;           // as given ("<built-in default>" for the embedded one)
  std::string resolved_yaml;  // every key, defaults filled in
  // Per pool: the resolved model, GPU, max_model_len and memory budget.
  struct PoolInfo {
    ModelSpec model;
    GpuSpec gpu;
    std::string weight_dtype;
    int max_model_len = 0;
    MemoryBudget memory;
  };
  std::vector<PoolInfo> pools;
};

// Loads a scenario file (or YAML text, with `file` naming it) and applies --set overrides.
// Throws InputError naming file, line and key.
Scenario load_scenario_file(const std::string& path, const std::vector<std::string>& overrides);
Scenario load_scenario_text(const std::string& yaml, const std::string& name,
                            const std::string& base_dir, const std::vector<std::string>& overrides);

// The scenario text `yaml` with `sets` applied, as a file to save: the text itself with the
// changed values edited in place (comments and layout kept, config::edit_yaml_text) when that
// loads to exactly the scenario `load_scenario_text(yaml, ..., sets)` gives; otherwise the
// resolved scenario (every key written out, comments lost). `kept` (when given) says which.
std::string scenario_text_with_sets(const std::string& yaml, const std::string& name,
                                    const std::string& base_dir,
                                    const std::vector<std::string>& sets, bool* kept = nullptr);

// A calibration file (kvfleet-calibrate fit, sim/cost/calibration_file.h) read and its settings
// checked as a pool's: a wrong one is named in the file (key pool.…), not in the scenario it is
// merged into.
YAML::Node read_checked_calibration(const std::string& path);

// Where a scenario comes from: a file (`path`), YAML text (`text`, named `name`, relative paths
// from `base_dir`), or, both empty, the built-in default. Sweeps and capacity searches load each
// run's scenario from one (the CLI gives files, the Python package any of the three).
struct ScenarioSource {
  std::string path;
  std::string text;
  std::string name = "<scenario text>";
  std::string base_dir = ".";
  Scenario load(const std::vector<std::string>& overrides) const;
};

// Every declared parameter as data (the rows of docs/scenarios.md: key with list elements as
// `[]`, type, unit, default, description), for tooltips and forms.
std::vector<config::Documenter::Row> scenario_parameters();

// What the declarations say of a --set key (pools[0].engine.max_num_seqs is declared as
// pools[].engine.max_num_seqs): its unit and whether it is an integer. A key declared in several
// implementations' sections with different units has none; `found` false for an undeclared key.
struct KeyDeclaration {
  std::string unit;
  bool integer = false;
  bool found = false;
};
KeyDeclaration declared_key(const std::string& key);

// The built-in default scenario (scenarios/default.yaml, embedded at build time).
const std::string& builtin_default_scenario();

}  // namespace kvfleet::sim
