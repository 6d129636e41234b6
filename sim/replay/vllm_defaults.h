#pragma once
// What `vllm serve` runs with when an argument is not given, by vLLM release: the defaults as
// resolved at start-up (several are None in the argument parser and resolved from the usage
// context, the engine generation and the GPU's memory). Sources, per value: docs/calibration.md,
// "vLLM's defaults by release".
#include <string>
#include <vector>

namespace kvfleet::sim {

struct VllmVersion {
  int major = 0, minor = 0, patch = 0;
  std::string text;  // as given
  bool operator<(const VllmVersion& o) const;
};

// "0.11.0", "v0.15.1", "0.10.1.1", "0.11.1rc2", "0.12.0+cu129" (the release's numbers; a
// pre-release counts as its release). Throws InputError naming `where` for another form.
VllmVersion parse_vllm_version(const std::string& text, const std::string& where);

// One engine setting's default: the scenario key under pools[] (engine.max_num_seqs), its value
// (YAML scalar text), and why (the release and the rule, in words).
struct VllmDefault {
  std::string key, value, why;
};

struct VllmDefaults {
  std::string release;  // the first release of the era these defaults hold for ("0.11.1")
  std::vector<VllmDefault> values;
  const VllmDefault* find(const std::string& key) const;
};

// What the defaults depend on beyond the release: the GPU (its memory as the driver reports it,
// and its name, which some releases matched) and the parallel layout the arguments set.
struct VllmServerContext {
  double device_gib = 0;
  std::string gpu_name;  // kvfleet's preset name ("H100-SXM", "A100-80GB"); matched by family
  int pipeline_parallel = 1;
};

// The defaults of `v` for a server in `ctx`.
VllmDefaults vllm_defaults(const VllmVersion& v, const VllmServerContext& ctx);

// vLLM's default CUDA-graph capture sizes in `v` for `max_num_seqs` (V1 engine, piecewise
// graphs): 1, 2, 4, then multiples of 8 to 512 up to 0.11.0; from 0.11.1 multiples of 8 below
// 256 and of 16 from 256, up to min(2 × max_num_seqs, 512).
std::vector<long long> vllm_cuda_graph_sizes(const VllmVersion& v, long long max_num_seqs);

// The newest release whose defaults kvfleet has read (assumed when a run records no version).
VllmVersion newest_known_vllm();
// The oldest release kvfleet has defaults for; older ones are refused by name.
VllmVersion oldest_known_vllm();

}  // namespace kvfleet::sim
