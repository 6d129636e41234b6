#pragma once
// The memory budget of one replica, per GPU (DESIGN.md, "Replica"): as vLLM sizes its KV pool
// (vllm/v1/worker/gpu_worker.py determine_available_memory):
//   KV pool = memory × gpu_memory_utilization − weights − activation peak − runtime overhead
//   blocks  = KV pool / (block_size × KV bytes per token on this GPU)
#include <algorithm>
#include <cstdint>
#include <string>

#include "sim/engine/engine_config.h"
#include "sim/model/presets.h"

namespace kvfleet::sim {

// KV bytes per token held by one GPU of a tensor-parallel group. GQA shards KV heads across GPUs
// (replicating them when tp exceeds the KV head count); MLA's latent is replicated on every GPU.
double kv_bytes_per_token_per_gpu(const ModelSpec& m, double kv_elem_bytes, int tp);

struct MemoryBudget {
  double device_bytes = 0;   // one GPU
  double usable_bytes = 0;   // device × gpu_memory_utilization
  double weights_bytes = 0;  // this GPU's shard
  double activation_peak_bytes = 0;
  double runtime_overhead_bytes = 0;
  double kv_pool_bytes = 0;       // what is left for KV on this GPU
  double kv_bytes_per_token = 0;  // this GPU's share
  double block_bytes = 0;
  std::int64_t num_blocks = 0;  // KV blocks (same count on every GPU of the group)
  bool blocks_overridden = false;
  // What the budget leaves for KV (usable − weights − activations − overhead), before an
  // override replaced it: an override far above it means the model, its precision or the GPU
  // differ from what the blocks were counted on.
  double computed_pool_bytes = 0;
  // An override more than a quarter above what the budget leaves: this GPU could not hold it.
  bool override_exceeds_budget() const {
    return blocks_overridden && kv_pool_bytes > 1.25 * std::max(computed_pool_bytes, 0.0);
  }
  double margin_bytes = 0;  // device − usable: memory the engine leaves alone
  std::string weight_dtype, kv_dtype;
  int pipeline_stages = 1;
  int stage_layers = 0;  // layers on the GPU with the most (what the KV pool is sized by)

  std::int64_t kv_capacity_tokens(int block_size) const { return num_blocks * block_size; }
};

// Computes the budget. Throws std::invalid_argument with a readable reason when the model does
// not fit (caller adds file and key).
// Under pipeline parallelism (`pp` stages) each GPU holds its stage's layers' weights and KV; the
// stage with the most layers (and an embedding-sized matrix) sets the block count, as vLLM takes
// the smallest KV pool over its workers.
// A mixture-of-experts model's routed experts are spread over `expert_gpus` GPUs (0 = tp): under
// data parallelism every MoE layer spans the tp × dp GPUs of the group, by expert (expert
// parallelism) or by slicing each expert (vLLM's flattened tensor parallelism); the rest of the
// weights are sharded over the tp GPUs of each rank.
MemoryBudget compute_memory_budget(const ModelSpec& m, const GpuSpec& g, int tp,
                                   const std::string& weight_dtype, const EngineConfig& e,
                                   int pp = 1, int expert_gpus = 0);

// Weight parameters one GPU holds (see compute_memory_budget).
double weight_params_per_gpu(const ModelSpec& m, int tp, int pp, int expert_gpus);

// Peak activation bytes on one GPU for a forward pass over `tokens` tokens with `seqs` sampled
// rows: the MLP intermediate (gate/up output and activation), a few hidden-size buffers, and the
// fp32 logits and probabilities of the sampler.
double estimate_activation_peak_bytes(const ModelSpec& m, int tp, int tokens, int seqs);

}  // namespace kvfleet::sim
