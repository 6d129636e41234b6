#include "sim/cost/work.h"

#include <algorithm>

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
  const double linear_params = std::max(0.0, m.active_params() - 2.0 * embed) * share;
  flops_per_token_ = 2.0 * linear_params / tp;
  lm_head_flops_per_row_ = 2.0 * embed / tp;
  weight_bytes_ = stage_weight_params(m, ctx.pipeline_stages) * ctx.weight_elem_bytes / tp;
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
  if (b.num_seqs == 0) return w;
  const double tokens = static_cast<double>(b.num_tokens());
  w.gemm_flops = tokens * flops_per_token_ + b.num_sampled * lm_head_flops_per_row_;
  w.gemm_bytes = weight_bytes_;
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
