#pragma once
#include "sim/cost/cost_model.h"
#include "sim/cost/work.h"

namespace kvfleet::sim {

// Datasheet roofline: each kind of work takes max(FLOPs / (peak × efficiency), bytes /
// (bandwidth × efficiency)); kinds add up (no overlap). FLOPs and bytes come from WorkModel; linear
// layers run at the weight precision's rate (gemm_peak_flops), attention at the bf16 rate.
// Uncalibrated: its efficiencies are guesses until a calibration profile replaces them.
class RooflineCostModel final : public CostModel {
 public:
  struct Config {
    double gemm_compute_efficiency = 0.7;
    double gemm_memory_efficiency = 0.85;
    double attention_compute_efficiency = 0.5;
    double attention_memory_efficiency = 0.75;
    double step_overhead_s = 0.001;
    double per_seq_overhead_s = 5e-6;

    template <class V>
    void visit(V& v) {
      v.param("gemm_compute_efficiency", gemm_compute_efficiency,
              {.unit = "fraction",
               .desc = "achieved / peak FLOP/s in linear layers",
               .max = 1,
               .positive = true});
      v.param("gemm_memory_efficiency", gemm_memory_efficiency,
              {.unit = "fraction",
               .desc = "achieved / peak bandwidth streaming weights",
               .max = 1,
               .positive = true});
      v.param("attention_compute_efficiency", attention_compute_efficiency,
              {.unit = "fraction",
               .desc = "achieved / peak FLOP/s in attention",
               .max = 1,
               .positive = true});
      v.param("attention_memory_efficiency", attention_memory_efficiency,
              {.unit = "fraction",
               .desc = "achieved / peak bandwidth reading KV",
               .max = 1,
               .positive = true});
      v.param("step_overhead_s", step_overhead_s,
              {.unit = "s",
               .desc = "fixed time per engine step (scheduling, launch, sampling)",
               .min = 0});
      v.param("per_seq_overhead_s", per_seq_overhead_s,
              {.unit = "s", .desc = "extra time per sequence in the step", .min = 0});
    }
  };

  RooflineCostModel(const Config& cfg, const CostContext& ctx);
  StepCost cost(const Batch& batch) const override;

  // One linear layer D[m, n] = A[m, k] · W[k, n] by the same rule: max(2mnk FLOPs at the peak ×
  // compute efficiency, bytes (weights once, activations in and out) at the bandwidth × memory
  // efficiency). What calibration compares with measured GEMMs and writes into roofline profiles.
  // `peak_flops` 0 means the GPU's bf16 rate.
  static double gemm_s(const Config& cfg, const GpuSpec& gpu, double m, double n, double k,
                       double weight_elem_bytes, double act_elem_bytes = 2, double peak_flops = 0);

 private:
  Config cfg_;
  WorkModel work_;  // FLOPs and bytes per GPU; this model divides them by the GPU's rates
  int layers_;
  int tp_;
  double link_bw_, link_lat_;
  double moe_layers_ = 0;  // MoE layers on this stage (dispatch and combine between ranks)
  int data_parallel_ = 1;
  double hidden_bytes_ = 0;
};

// Step time as a linear function of the batch: the shape of fitted models such as BLIS's, and a
// way to give every request the same service time in queueing tests.
class LinearCostModel final : public CostModel {
 public:
  struct Config {
    double fixed_s = 0.0;
    double per_seq_s = 0.0;
    double per_prefill_token_s = 0.0;
    double per_decode_token_s = 0.0;
    double per_context_token_s = 0.0;
    template <class V>
    void visit(V& v) {
      v.param("fixed_s", fixed_s, {.unit = "s", .desc = "time of every step", .min = 0});
      v.param("per_seq_s", per_seq_s, {.unit = "s", .desc = "per sequence in the step", .min = 0});
      v.param("per_prefill_token_s", per_prefill_token_s,
              {.unit = "s", .desc = "per prefill token", .min = 0});
      v.param("per_decode_token_s", per_decode_token_s,
              {.unit = "s", .desc = "per decode token", .min = 0});
      v.param("per_context_token_s", per_context_token_s,
              {.unit = "s", .desc = "per cached token attended by decode sequences", .min = 0});
    }
    void check(config::Reader& r) const;
  };
  LinearCostModel(const Config& cfg, const CostContext&) : cfg_(cfg) {}
  StepCost cost(const Batch& b) const override;

 private:
  Config cfg_;
};

}  // namespace kvfleet::sim
