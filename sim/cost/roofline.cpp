#include "sim/cost/roofline.h"

#include "sim/cost/fitted.h"
#include "sim/cost/moe.h"
#include "sim/cost/profile_cost.h"

#include <algorithm>

namespace kvfleet::sim {

RooflineCostModel::RooflineCostModel(const Config& cfg, const CostContext& ctx)
    : cfg_(cfg),
      work_(ctx),
      layers_(ctx.stage_layers()),
      tp_(ctx.tensor_parallel),
      link_bw_(ctx.gpu.interconnect_Bps),
      link_lat_(ctx.gpu.interconnect_latency_s),
      moe_layers_(static_cast<double>(ctx.model.moe_layers()) * ctx.stage_layers() /
                  ctx.model.num_layers),
      data_parallel_(ctx.data_parallel),
      hidden_bytes_(2.0 * ctx.model.hidden_size) {}

StepCost RooflineCostModel::cost(const Batch& b) const {
  StepCost c;
  if (b.padded_tokens() == 0) return c;
  const StepWork w = work_.work(b);
  const double bw = work_.bandwidth_Bps();
  const double attn_peak = work_.attention_peak_flops();
  c.gemm_s = std::max(w.gemm_flops / (work_.gemm_peak_flops() * cfg_.gemm_compute_efficiency),
                      w.gemm_bytes / (bw * cfg_.gemm_memory_efficiency));
  if (b.num_prefill_tokens > 0) {
    c.prefill_attn_s =
        std::max(w.prefill_attn_flops / (attn_peak * cfg_.attention_compute_efficiency),
                 w.prefill_attn_bytes / (bw * cfg_.attention_memory_efficiency));
  }
  if (b.num_decode_seqs > 0) {
    c.decode_attn_s =
        std::max(w.decode_attn_flops / (attn_peak * cfg_.attention_compute_efficiency),
                 w.decode_attn_bytes / (bw * cfg_.attention_memory_efficiency));
  }
  if (tp_ > 1 && link_bw_ > 0) {
    // Two all-reduces per layer (after attention and after the MLP), ring algorithm.
    const double per =
        2.0 * (tp_ - 1) * link_lat_ + 2.0 * (tp_ - 1) / tp_ * w.comm_bytes / link_bw_;
    c.comm_s = 2.0 * layers_ * per;
  }
  if (moe_layers_ > 0) {
    c.comm_s +=
        moe_layers_ * moe_dispatch_combine_s(static_cast<double>(b.padded_tokens()), data_parallel_,
                                             hidden_bytes_, link_bw_, link_lat_);
  }
  c.overhead_s = cfg_.step_overhead_s + cfg_.per_seq_overhead_s * b.num_seqs;
  return c;
}

double RooflineCostModel::gemm_s(const Config& cfg, const GpuSpec& gpu, double m, double n,
                                 double k, double weight_elem_bytes, double act_elem_bytes,
                                 double peak_flops) {
  const double peak = peak_flops > 0 ? peak_flops : gpu.bf16_flops;
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
    r.add<FittedCostModel>("fitted",
                           "Roofline with per-operation efficiencies fitted to every public GPU "
                           "profile (the GPU's own fit, else the median of the others'), composed "
                           "as a profile is.");
    return r;
  }();
  return reg;
}

}  // namespace kvfleet::sim
