#pragma once
// Replays a measured vLLM run as a user would: the scenario is built from the run's own files
// (meta.json's engine arguments, KV-cache and resolved vLLM configuration where recorded,
// config.json's GPU-to-GPU link where there is one, requests.jsonl's arrivals and lengths), run,
// and its latencies compared with the measured ones. `kvfleet replay` prints the comparison;
// docs/validation.md reports it for the runs in ../shared/reference/validation.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/metrics/summary.h"
#include "sim/results/run_result.h"

namespace kvfleet::sim {

struct ReplayOptions {
  std::string run_dir;  // meta.json and requests.jsonl (config.json optional)
  std::string profile;  // a kvfleet profile (HDF5) for the `profile` cost model; "" = roofline
  std::string model;    // a model preset; "" = the one matching meta.json's model
  std::string gpu;      // a GPU preset; "" = the one matching the run's hardware
  // Without a profile: roofline (default) or fitted (cost/fitted.h), with these public fits left
  // out (validation without the run's own GPU).
  std::string cost_model;
  std::vector<std::string> leave_out;
  std::string model_config;  // a Hugging Face config.json for the model instead of a preset
  std::string weight_dtype;  // weight precision; "" = from the run's files (quantization, dtype)
};

// The scenario (YAML) and, line by line, where each setting came from.
struct ReplayPlan {
  std::string yaml;
  std::vector<std::string> notes;
  // The preset whose datasheet prices the replay's GPU: the preset itself, or the `replay-gpu`
  // made of it (--gpu) with the run's memory; "" for a GPU that only a profile prices.
  std::string gpu_datasheet;
};
// The model preset one of whose names the text (a Hugging Face id, a served model name) holds,
// the longest such name winning; nullptr when none does.
struct ModelSpec;
const ModelSpec* match_model_preset(const std::string& text);

// The weight precision (a scenario's pools[].weight_dtype) of a vLLM server from its
// `quantization` and `dtype` arguments and, where vLLM detects the method from the checkpoint
// (quantization unset or compressed-tensors), the model's name (…-FP8, …-W8A8, …-AWQ). `where`
// names the file and key in messages; `how` receives where the answer came from. "auto" when
// nothing says the weights are other than the model's own precision. Throws InputError for a
// method kvfleet does not price.
std::string vllm_weight_dtype(const std::string& quantization, const std::string& dtype,
                              const std::string& model_name, const std::string& where,
                              const std::string& key, std::string& how);

// The cost_model mapping of a replay without a profile, as YAML text: roofline (`impl` ""), or
// fitted with `leave_out`. Throws InputError naming --cost-model for another name.
std::string replay_cost_model_yaml(const std::string& impl,
                                   const std::vector<std::string>& leave_out);

// Throws InputError naming the file and key that is missing or unusable.
ReplayPlan plan_replay(const ReplayOptions& opts);

// TTFT = first − queued, TPOT = (last − first) / (output − 1), E2E = last − queued (seconds).
struct MeasuredLatencies {
  std::vector<double> ttft, tpot, e2e;
  std::int64_t aborted = 0;  // rows with a null first or last token time: not compared
};
MeasuredLatencies read_measured(const std::string& requests_jsonl);

// Which requests a run folder's comparison scores: the `from`-th up to (not including) the
// `to`-th in arrival order (queued_ts measured, arrival simulated), counted from 0; the others
// are replayed but not scored: a warm-up, or one run split by load into parts that each carry
// the queue the part before left. `to` < 0: to the end.
struct ScoreWindow {
  std::int64_t from = 0, to = -1;
  bool all() const { return from == 0 && to < 0; }
  std::string text() const;  // "requests 150 to the end"
};
// "A:B", "A:" or ":B" (InputError naming `option` otherwise).
ScoreWindow parse_score_window(const std::string& text, const std::string& option);
// The measured requests of the window (InputError when it holds none).
MeasuredLatencies read_measured(const std::string& requests_jsonl, const ScoreWindow& w);
// The simulated requests of the window, in arrival order, as a result to summarize.
RunResult window_of(const RunResult& r, const ScoreWindow& w);

// A Markdown table of mean, p50, p90 and p99 of TTFT, TPOT and E2E, measured against simulated,
// with the relative errors; `mean_abs_error` receives their mean absolute value (fraction) over
// the statistics both sides have (`compared` of the twelve; TPOT needs outputs over one token).
std::string comparison_table(const MeasuredLatencies& measured, const Summary& simulated,
                             double* mean_abs_error = nullptr, int* compared = nullptr);

}  // namespace kvfleet::sim
