#pragma once
// What one engine step asks of each GPU: FLOPs and bytes moved through device memory, by kind of
// work. Independent of how long the step takes: the roofline cost model divides it by the GPU's
// rates, and the engine divides it by the step's duration to report utilisation.
#include <string>

#include "sim/cost/cost_model.h"

namespace kvfleet::sim {

// One step's demand on one GPU of the replica.
struct StepWork {
  double gemm_flops = 0, gemm_bytes = 0;                  // linear layers: weights read once
  double prefill_attn_flops = 0, prefill_attn_bytes = 0;  // KV read (prefix) and written (chunk)
  double decode_attn_flops = 0, decode_attn_bytes = 0;    // KV read (context) and written (new)
  double comm_bytes = 0;  // all-reduced activations per collective (interconnect, not HBM)

  double flops() const { return gemm_flops + prefill_attn_flops + decode_attn_flops; }
  StepWork& operator+=(const StepWork& o) {
    gemm_flops += o.gemm_flops, gemm_bytes += o.gemm_bytes;
    prefill_attn_flops += o.prefill_attn_flops, prefill_attn_bytes += o.prefill_attn_bytes;
    decode_attn_flops += o.decode_attn_flops, decode_attn_bytes += o.decode_attn_bytes;
    comm_bytes += o.comm_bytes;
    return *this;
  }
  double hbm_bytes() const { return gemm_bytes + prefill_attn_bytes + decode_attn_bytes; }
};

class WorkModel {
 public:
  WorkModel() = default;
  explicit WorkModel(const CostContext& ctx);
  StepWork work(const Batch& b) const;
  // Seconds the step's work needs at the GPU's peaks: FLOPs (linear layers at the GEMM rate,
  // attention at the bf16 rate) and device-memory bytes. Utilisation = these / step duration.
  double compute_s_at_peak(const StepWork& w) const {
    return w.gemm_flops / gemm_peak_ + (w.prefill_attn_flops + w.decode_attn_flops) / attn_peak_;
  }
  double memory_s_at_peak(const StepWork& w) const { return w.hbm_bytes() / bandwidth_; }

  double gemm_peak_flops() const { return gemm_peak_; }
  double attention_peak_flops() const { return attn_peak_; }
  double bandwidth_Bps() const { return bandwidth_; }

 private:
  double flops_per_token_ = 0;  // linear layers, excluding lm_head
  double lm_head_flops_per_row_ = 0;
  double weight_bytes_ = 0;         // read once per step
  double kv_bytes_per_token_ = 0;   // per GPU
  double attn_flops_per_pair_ = 0;  // per (query, key) pair, per GPU
  double act_bytes_per_token_allreduce_ = 0;
  double gemm_peak_ = 1, attn_peak_ = 1, bandwidth_ = 1;
  // Mixture of experts: routed experts, priced per step from the experts the tokens activate.
  double moe_layers_ = 0;  // on this stage
  int num_experts_ = 0, experts_per_token_ = 0, expert_gpus_ = 1;
  bool expert_parallel_ = false;
  double expert_bytes_ = 0, expert_flops_per_pair_ = 0;
};

}  // namespace kvfleet::sim
