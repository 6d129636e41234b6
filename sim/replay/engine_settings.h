#pragma once
// A replayed server's engine settings, each from where it was recorded: the server's own
// arguments (file and line), else the default of the vLLM release it ran (given, recorded, or the
// newest kvfleet knows, said so), never silently kvfleet's own default. Every setting the replay
// used is listed with its source (ReplaySetting), and every argument the file gave that kvfleet
// does not use is named.
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "sim/replay/engine_args.h"
#include "sim/replay/vllm_defaults.h"

namespace kvfleet::sim {

// One setting a replay used: the scenario key (pools[0].engine.max_num_seqs), the value, and
// where the value came from ("engine_args.yaml:3 (--max-num-seqs)", "vLLM 0.15.1's default").
struct ReplaySetting {
  std::string key, value, from;
};

// The vLLM release whose defaults apply, and why that one.
struct VllmRelease {
  VllmVersion version;
  std::string from;  // "--vllm-version", "engine_args.yaml:1 (the vllm/vllm-openai image's tag)"
  bool assumed = false;  // no record: the newest release kvfleet knows
};

// --vllm-version, else the version `args` state, else `recorded` (a result's own record, with
// `recorded_where`), else the newest kvfleet knows (assumed).
VllmRelease choose_vllm_release(const std::string& cli_version, const EngineArgs* args,
                                const std::string& recorded, const std::string& recorded_where);

struct EngineSettingsOut {
  std::vector<ReplaySetting> settings;
  std::vector<std::string> warnings;  // arguments not modelled or not known, dropped values
  std::string quantization, dtype, quant_where;  // the weights' arguments, for the model
  std::string model;                             // the model the arguments name ("" if none)
};

// Sets `pool`'s parallelism and engine (pools[0].…) from `args` (nullptr: none given), the rest
// from `release`'s defaults for the server `ctx` describes (its pipeline_parallel is taken from
// the arguments). `cli_tp` (--tp, 0 = not given) must agree
// with the arguments. `graphs`: also set the cost model's CUDA-graph keys (profile and fitted
// cost models). Throws InputError naming the file, line and argument for a value kvfleet cannot
// use.
EngineSettingsOut apply_engine_settings(const EngineArgs* args, const VllmRelease& release,
                                        VllmServerContext ctx, int cli_tp, bool graphs,
                                        YAML::Node pool);

}  // namespace kvfleet::sim
