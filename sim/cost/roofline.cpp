#include "sim/cost/roofline.h"

#include "sim/cost/profile_cost.h"

#include <algorithm>

namespace kvfleet::sim {

RooflineCostModel::RooflineCostModel(const Config& cfg, const CostContext& ctx) : cfg_(cfg) {
  const ModelSpec& m = ctx.model;
  tp_ = ctx.tensor_parallel;
  layers_ = m.num_layers;
  const double embed = static_cast<double>(m.vocab_size) * m.hidden_size;
  // Linear-layer parameters touched per token: all active parameters but the input embedding
  // (a lookup) and the lm_head (counted per sampled row below). Untied embeddings assumed.
  const double linear_params = std::max(0.0, m.active_params() - 2.0 * embed);
  flops_per_token_ = 2.0 * linear_params / tp_;
  lm_head_flops_per_row_ = 2.0 * embed / tp_;
  weight_bytes_ = m.num_params * ctx.weight_elem_bytes / tp_;
  kv_bytes_per_token_ = m.kv_bytes_per_token(ctx.kv_elem_bytes) / tp_;
  const double heads = static_cast<double>(m.num_attention_heads) / tp_;
  if (m.attention == "mla") {
    // Absorbed MLA: scores over (latent + rope) and values over the latent.
    attn_flops_per_pair_ = 2.0 * m.num_layers * heads * (2.0 * m.kv_lora_rank + m.qk_rope_head_dim);
  } else {
    attn_flops_per_pair_ = 4.0 * m.num_layers * heads * m.head_dim;  // QK^T and PV
  }
  decode_attn_flops_per_ctx_ = attn_flops_per_pair_;
  act_bytes_per_token_allreduce_ = 2.0 * m.hidden_size;  // bf16 activations
  peak_flops_ =
      (cfg.use_fp8_compute && ctx.gpu.fp8_flops > 0) ? ctx.gpu.fp8_flops : ctx.gpu.bf16_flops;
  bw_ = ctx.gpu.memory_bandwidth_Bps;
  link_bw_ = ctx.gpu.interconnect_Bps;
  link_lat_ = ctx.gpu.interconnect_latency_s;
}

StepCost RooflineCostModel::cost(const Batch& b) const {
  StepCost c;
  if (b.num_seqs == 0) return c;
  const double tokens = static_cast<double>(b.num_tokens());
  const double gemm_flops = tokens * flops_per_token_ + b.num_sampled * lm_head_flops_per_row_;
  c.gemm_s = std::max(gemm_flops / (peak_flops_ * cfg_.gemm_compute_efficiency),
                      weight_bytes_ / (bw_ * cfg_.gemm_memory_efficiency));
  if (b.num_prefill_tokens > 0) {
    const double flops = b.prefill_attention_pairs * attn_flops_per_pair_;
    // Read the cached prefix once per chunk, write the chunk's new KV.
    const double bytes =
        static_cast<double>(b.prefill_context_tokens + b.num_prefill_tokens) * kv_bytes_per_token_;
    c.prefill_attn_s = std::max(flops / (peak_flops_ * cfg_.attention_compute_efficiency),
                                bytes / (bw_ * cfg_.attention_memory_efficiency));
  }
  if (b.num_decode_seqs > 0) {
    const double ctx = static_cast<double>(b.decode_context_tokens);
    const double flops = ctx * decode_attn_flops_per_ctx_;
    const double bytes = (ctx + b.num_decode_seqs) * kv_bytes_per_token_;
    c.decode_attn_s = std::max(flops / (peak_flops_ * cfg_.attention_compute_efficiency),
                               bytes / (bw_ * cfg_.attention_memory_efficiency));
  }
  if (tp_ > 1 && link_bw_ > 0) {
    // Two all-reduces per layer (after attention and after the MLP), ring algorithm.
    const double bytes = tokens * act_bytes_per_token_allreduce_;
    const double per = 2.0 * (tp_ - 1) * link_lat_ + 2.0 * (tp_ - 1) / tp_ * bytes / link_bw_;
    c.comm_s = 2.0 * layers_ * per;
  }
  c.overhead_s = cfg_.step_overhead_s + cfg_.per_seq_overhead_s * b.num_seqs;
  return c;
}

double RooflineCostModel::gemm_s(const Config& cfg, const GpuSpec& gpu, double m, double n,
                                 double k, double weight_elem_bytes, double act_elem_bytes) {
  const double peak = (cfg.use_fp8_compute && gpu.fp8_flops > 0) ? gpu.fp8_flops : gpu.bf16_flops;
  const double flops = 2.0 * m * n * k;
  const double bytes = n * k * weight_elem_bytes + (m * k + m * n) * act_elem_bytes;
  return std::max(flops / (peak * cfg.gemm_compute_efficiency),
                  bytes / (gpu.memory_bandwidth_Bps * cfg.gemm_memory_efficiency));
}

void LinearCostModel::Config::check(config::Reader& r) const {
  if (fixed_s + per_seq_s + per_prefill_token_s + per_decode_token_s <= 0)
    r.fail_key("fixed_s", "a step must take time: set fixed_s, per_seq_s or a per-token cost > 0");
}

StepCost LinearCostModel::cost(const Batch& b) const {
  StepCost c;
  if (b.num_seqs == 0) return c;
  c.gemm_s = cfg_.per_prefill_token_s * static_cast<double>(b.num_prefill_tokens) +
             cfg_.per_decode_token_s * b.num_decode_seqs;
  c.decode_attn_s = cfg_.per_context_token_s * static_cast<double>(b.decode_context_tokens);
  c.overhead_s = cfg_.fixed_s + cfg_.per_seq_s * b.num_seqs;
  return c;
}

const CostModelRegistry& cost_model_registry() {
  static const CostModelRegistry reg = [] {
    CostModelRegistry r("cost model", "roofline");
    r.add<RooflineCostModel>("roofline",
                             "Datasheet roofline per kind of work (uncalibrated efficiencies).");
    r.add<LinearCostModel>("linear",
                           "Step time linear in the batch's sequences, tokens and context.");
    r.add<ProfileCostModel>("profile",
                            "Step time from a calibration profile (kvfleet-calibrate): measured "
                            "per-operation curves and an attention grid.");
    return r;
  }();
  return reg;
}

}  // namespace kvfleet::sim
