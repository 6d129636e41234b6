#pragma once
// Importers: other simulators' measured profiles converted into kvfleet profiles
// (sim/cost/profile_data.h), keeping their provenance in the metadata.
#include <string>

#include "sim/cost/profile_data.h"

namespace kvfleet::calibration {

// LLMServingSim's bundle: `dir` holds meta.yaml and tp<N>/{dense,per_sequence,attention}.csv
// (…/<hardware>/<org>/<model>/<variant>). Per-layer rows (one layer was profiled) become layer
// curves, lm_head and sampler per-sequence step curves, embedding and final_layernorm step
// curves, attention.csv the attention grid. Times in µs become seconds.
sim::Profile import_llmservingsim(const std::string& dir, int tp);

// Vidur's CSV tree: `dir` is compute/<gpu>/<org>/<model> holding mlp.csv (and attention.csv
// when profiled); `network_dir`, when not empty, is network/<node> holding all_reduce.csv.
// Rows of tensor parallelism `tp` become per-layer curves against num_tokens (ms → s).
sim::Profile import_vidur(const std::string& dir, int tp, const std::string& network_dir = "");

// The first line of the SNAPSHOT_COMMIT.txt or SOURCE.txt nearest above `dir`, with that file's
// folder: where the imported numbers came from.
std::string find_provenance(const std::string& dir);

}  // namespace kvfleet::calibration
