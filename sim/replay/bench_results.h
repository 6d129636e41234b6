#pragma once
// Benchmark results measured at the client (inference-perf result folders, `vllm bench serve`
// result JSON, GuideLLM benchmark reports) as replays: the scenario built from the result's own
// files (the workload and its load, the model; the server's engine arguments and GPU given beside
// it or on the command line) and the measured latencies by group (each load stage, or the whole
// run) to compare with. Formats, field by field: docs/calibration.md, "Bring your own
// measurements".
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "sim/metrics/summary.h"
#include "sim/replay/engine_settings.h"
#include "sim/replay/latency_definition.h"
#include "sim/results/run_result.h"

namespace kvfleet::sim {

struct Scenario;

// Mean and percentiles of one latency as measured (seconds; NaN where the result has none).
struct MeasuredStats {
  double mean = NAN, p50 = NAN, p90 = NAN, p99 = NAN;
  bool any() const;
};

// One group of measured requests: a load stage, or the whole run.
struct MeasuredGroup {
  std::string name;  // "stage 0 (2 requests/s)", "all requests"
  int stage = -1;    // the requests of this load stage; -1: every request
  std::int64_t requests = 0;
  MeasuredStats ttft, tpot, e2e;
};

struct BenchReplay {
  std::string format;  // "inference-perf", "vllm bench serve", "GuideLLM"
  std::string source;  // the folder or file read
  YAML::Node scenario;
  std::vector<std::string> notes;
  // Every setting the scenario took from somewhere other than the scenario reference's defaults,
  // with where it came from.
  std::vector<ReplaySetting> settings;
  VllmRelease release;
  std::vector<MeasuredGroup> groups;
  LatencyDefinition latency;  // how the tool measured what is compared
  // A trace the scenario reads (vllm bench serve with per-request data): rows of arrival (s),
  // input tokens, output tokens, written beside the scenario before it runs.
  std::vector<std::array<double, 3>> trace;
};

struct BenchOptions {
  std::string path;          // result folder or file
  std::string profile;       // "" = roofline
  std::string model;         // a preset, or "" = matched from the result's model name
  std::string model_config;  // a Hugging Face config.json instead of a preset
  std::string gpu;           // a GPU preset (required: results do not record the GPU)
  std::string engine_args;   // vLLM engine arguments: JSON/YAML mapping or a `vllm serve` line
  std::string weight_dtype;  // "" = from the engine arguments (quantization, dtype) and model name
  int tensor_parallel = 0;   // 0 = from the engine arguments (else 1)
  std::string vllm_version;  // the server's vLLM release ("" = recorded, else the newest known)
  std::string tool_version;  // the load generator's latency definitions ("" = from the files)
  int benchmark = -1;        // a GuideLLM report's benchmark to replay (-1 = the last)
  std::string cost_model;    // without a profile: roofline ("") or fitted
  std::vector<std::string> leave_out;  // public fits the fitted cost model leaves out
};

// Throws InputError naming the file and key that is missing or unusable.
BenchReplay plan_bench_replay(const BenchOptions& opts);

// One row of the replay's trace as its Vidur-format CSV holds it (arrival s, input, output
// tokens; newline included), every value whole whatever its size.
std::string trace_row(const std::array<double, 3>& row);

// The comparison of each group, measured against the simulated requests of that group, as a
// Markdown table; `mean_abs_error` receives the mean |error| over every statistic compared.
std::string bench_comparison(const BenchReplay& plan, const Scenario& sc, const RunResult& r,
                             double* mean_abs_error = nullptr);

}  // namespace kvfleet::sim
