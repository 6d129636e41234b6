#include "sim/cost/work.h"

#include <algorithm>

#include "sim/cost/moe.h"

namespace kvfleet::sim {

WorkModel::WorkModel(const CostContext& ctx) {
  const ModelSpec& m = ctx.model;
  const int tp = ctx.tensor_parallel;
  const double embed = static_cast<double>(m.vocab_size) * m.hidden_size;
  // Linear-layer parameters touched per token: all active parameters but the input embedding
  // (a lookup) and the lm_head (counted per sampled row below). Untied embeddings assumed.
  // A pipeline stage holds its share of the layers, and (the last) the lm_head.
  const int layers = ctx.stage_layers();
  const double share = static_cast<double>(layers) / m.num_layers;
  // Routed experts are counted apart (below): only the ones a step activates are read.
  const double routed_active =
      static_cast<double>(m.moe_layers()) * m.experts_per_token * m.expert_params();
  const double linear_params =
      std::max(0.0, m.active_params() - 2.0 * embed - routed_active) * share;
  flops_per_token_ = 2.0 * linear_params / tp;
  lm_head_flops_per_row_ = 2.0 * embed / tp;
  weight_bytes_ = (stage_weight_params(m, ctx.pipeline_stages) - m.routed_expert_params() * share) *
                  ctx.weight_elem_bytes / tp;
  if (m.moe()) {
    moe_layers_ = m.moe_layers() * share;
    num_experts_ = m.num_experts;
    experts_per_token_ = m.experts_per_token;
    expert_gpus_ = ctx.expert_gpus();
    expert_parallel_ = ctx.expert_parallel;
    expert_bytes_ = m.expert_params() * ctx.weight_elem_bytes;
    expert_flops_per_pair_ = 2.0 * m.expert_params();
  }
  kv_bytes_per_token_ = m.kv_bytes_per_token(ctx.kv_elem_bytes) * share / tp;
  const double heads = static_cast<double>(m.num_attention_heads) / tp;
  if (m.attention == "mla") {
    // Absorbed MLA: scores over (latent + rope) and values over the latent.
    attn_flops_per_pair_ = 2.0 * layers * heads * (2.0 * m.kv_lora_rank + m.qk_rope_head_dim);
  } else {
    attn_flops_per_pair_ = 4.0 * layers * heads * m.head_dim;  // QK^T and PV
  }
  act_bytes_per_token_allreduce_ = 2.0 * m.hidden_size;  // bf16 activations
  gemm_peak_ = ctx.gemm_peak_flops > 0 ? ctx.gemm_peak_flops : ctx.gpu.bf16_flops;
  attn_peak_ = ctx.gpu.bf16_flops;
  bandwidth_ = ctx.gpu.memory_bandwidth_Bps;
}

StepWork WorkModel::work(const Batch& b) const {
  StepWork w;
  const double tokens = static_cast<double>(b.padded_tokens());
  if (tokens == 0) return w;
  w.gemm_flops = tokens * flops_per_token_ + b.num_sampled * lm_head_flops_per_row_;
  w.gemm_bytes = weight_bytes_;
  if (moe_layers_ > 0) {
    const double routed = static_cast<double>(b.moe_tokens());
    if (expert_parallel_) {
      // Whole experts per GPU: the busiest GPU's pairs and its activated experts set the step.
      const MoeLoad l = moe_busiest_gpu(routed, num_experts_, experts_per_token_, expert_gpus_);
      w.gemm_flops += moe_layers_ * l.pairs * expert_flops_per_pair_;
      w.gemm_bytes += moe_layers_ * l.experts * expert_bytes_;
    } else {
      // Experts sliced over the GPUs: each computes every pair with its slice.
      const MoeLoad l = moe_busiest_gpu(routed, num_experts_, experts_per_token_, 1);
      w.gemm_flops +=
          moe_layers_ * routed * experts_per_token_ * expert_flops_per_pair_ / expert_gpus_;
      w.gemm_bytes += moe_layers_ * l.experts * expert_bytes_ / expert_gpus_;
    }
  }
  if (b.num_prefill_tokens > 0) {
    w.prefill_attn_flops = b.prefill_attention_pairs * attn_flops_per_pair_;
    // Read the cached prefix once per chunk, write the chunk's new KV.
    w.prefill_attn_bytes =
        static_cast<double>(b.prefill_context_tokens + b.num_prefill_tokens) * kv_bytes_per_token_;
  }
  if (b.num_decode_seqs > 0) {
    const double ctx = static_cast<double>(b.decode_context_tokens);
    w.decode_attn_flops = ctx * attn_flops_per_pair_;
    w.decode_attn_bytes = (ctx + b.num_decode_seqs) * kv_bytes_per_token_;
  }
  w.comm_bytes = tokens * act_bytes_per_token_allreduce_;
  return w;
}

}  // namespace kvfleet::sim
