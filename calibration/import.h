#pragma once
// Importers: other simulators' measured profiles converted into kvfleet profiles
// (sim/cost/profile_data.h), keeping their provenance in the metadata.
#include <string>
#include <vector>

#include "sim/cost/profile_data.h"

namespace kvfleet::calibration {

// LLMServingSim's bundle: `dir` holds meta.yaml and tp<N>/{dense,per_sequence,attention}.csv,
// with moe.csv for mixture-of-experts models (…/<hardware>/<org>/<model>/<variant>). Per-layer
// rows (the profiler runs a reduced model of one layer) become layer curves, every operation
// the bundle lists (one it does not know is imported by name, once per layer, and priced as
// overhead); per_sequence.csv's rows step curves against sampled sequences (lm_head, sampler);
// embedding and final_layernorm step curves; attention.csv the attention grid; moe.csv the MoE
// layer's times (from tp1 when tp<N> has none: with expert parallelism each GPU runs whole
// experts, as at tp1). Times in µs become seconds. The model's facts (architecture; heads, KV
// heads and vocabulary from meta.yaml's hf_overrides, which the profiler writes for its highest
// tensor-parallel degree, i.e. per GPU there) are recorded so that another model is refused.
// `report`, when given, receives one line per operation saying what it became.
sim::Profile import_llmservingsim(const std::string& dir, int tp,
                                  std::vector<std::string>* report = nullptr);

// Vidur's CSV tree: `dir` is compute/<gpu>/<org>/<model> holding mlp.csv (and attention.csv
// when profiled); `network_dir`, when not empty, is network/<node> holding all_reduce.csv.
// Rows of tensor parallelism `tp` become per-layer curves against num_tokens (ms → s).
sim::Profile import_vidur(const std::string& dir, int tp, const std::string& network_dir = "");

// The first line of the SNAPSHOT_COMMIT.txt or SOURCE.txt nearest above `dir`, with that file's
// folder: where the imported numbers came from.
std::string find_provenance(const std::string& dir);

}  // namespace kvfleet::calibration
