#pragma once
// Cost models turn one engine step's batch into its duration, with a breakdown by kind of work
// (DESIGN.md, "Cost model"). Backends are chosen by `cost_model.impl` in a pool.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>

#include "sim/config/params.h"
#include "sim/model/presets.h"

namespace kvfleet::sim {

// One prefill chunk: `tokens` new tokens of one sequence computed on top of `prefix` tokens whose
// KV is already in memory.
struct PrefillChunk {
  std::int32_t tokens;
  std::int32_t prefix;
};

// What one engine step computes. Aggregates are kept up to date by the scheduler so that a cost
// model need not walk sequences; `prefill` lists each chunk for backends that want them.
struct Batch {
  std::int32_t num_seqs = 0;            // sequences in the step
  std::int64_t num_prefill_tokens = 0;  // sum of prefill chunk tokens
  std::int32_t num_decode_seqs = 0;     // sequences computing exactly one decode token
  std::int64_t decode_context_tokens =
      0;  // sum of decode sequences' context lengths, new token included
  std::int64_t prefill_context_tokens = 0;  // sum over chunks of prefix + tokens (KV touched)
  double prefill_attention_pairs = 0;       // sum over chunks: tokens*prefix + tokens*(tokens+1)/2
  std::int32_t num_sampled = 0;             // sequences that emit a token (rows through lm_head)
  std::span<const PrefillChunk> prefill;
  // Each decode sequence's context, for backends that price uneven contexts
  // (CostModel::wants_decode_contexts); empty otherwise.
  std::span<const std::int32_t> decode_contexts;
  // Data-parallel ranks of a mixture-of-experts model step together (engine/lockstep.h): every
  // rank's step is padded to the group's largest token count, which every MoE layer then sees
  // from each of the dp_ranks ranks. 0 = the batch runs alone. A rank with nothing scheduled
  // still runs a dummy step of dp_padded_tokens (num_seqs 0).
  std::int64_t dp_padded_tokens = 0;
  std::int32_t dp_ranks = 1;

  std::int64_t num_tokens() const { return num_prefill_tokens + num_decode_seqs; }
  // Tokens the linear layers of this rank run (its own, or the group's padding).
  std::int64_t padded_tokens() const { return std::max(num_tokens(), dp_padded_tokens); }
  // Tokens every MoE layer routes (all ranks' together).
  std::int64_t moe_tokens() const {
    return dp_padded_tokens > 0 ? dp_padded_tokens * dp_ranks : num_tokens();
  }
};

// Duration of one step, seconds, by kind of work. The total is their sum.
struct StepCost {
  double gemm_s = 0;          // linear layers (QKV, output, MLP, lm_head)
  double prefill_attn_s = 0;  // attention of prefill chunks, KV writes included
  double decode_attn_s = 0;   // attention of decode tokens over their cached KV
  double comm_s = 0;          // collectives: tensor-parallel all-reduces, MoE dispatch and
                              // combine (waiting there for slower data-parallel ranks included)
  double overhead_s = 0;      // fixed per-step and per-sequence engine overhead
  double kv_transfer_s = 0;   // KV copied between GPU and host or lower tiers, not overlapped
  // Pipeline parallelism: time a stage's GPUs wait for micro-batches (fill, drain, unequal
  // micro-batches, activations sent between stages). The kinds above are one stage's busy time.
  double pipeline_bubble_s = 0;
  double total_s() const {
    return gemm_s + prefill_attn_s + decode_attn_s + comm_s + overhead_s + kv_transfer_s +
           pipeline_bubble_s;
  }
};

// What a backend is built for: one replica's model on its GPUs. Under pipeline parallelism a
// backend prices one stage (stage_layers() layers; the lm_head too, as the last stage, the
// slowest, runs it); the engine runs the stages and micro-batches (Replica::pipeline_cost).
struct CostContext {
  const ModelSpec& model;
  const GpuSpec& gpu;
  int tensor_parallel;
  double weight_elem_bytes;    // bytes per weight element
  double kv_elem_bytes;        // bytes per KV element
  double gemm_peak_flops = 0;  // tensor rate of the linear layers (gemm_peak_flops()); 0 = bf16
  int pipeline_stages = 1;
  int data_parallel = 1;         // engine ranks whose GPUs a MoE layer spans with this one's
  bool expert_parallel = false;  // experts whole on GPUs (else each sliced over them)
  int stage_layers() const { return sim::stage_layers(model, pipeline_stages); }
  // GPUs one MoE layer's experts are spread over.
  int expert_gpus() const { return tensor_parallel * data_parallel; }
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  // Pure: the same batch always costs the same. Called once per engine step.
  virtual StepCost cost(const Batch& batch) const = 0;
  // Whether cost() reads Batch::decode_contexts (the engine lists them only then).
  virtual bool wants_decode_contexts() const { return false; }
};

using CostModelRegistry = config::Registry<CostModel, const CostContext&>;
const CostModelRegistry& cost_model_registry();

}  // namespace kvfleet::sim
