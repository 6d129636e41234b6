#pragma once
// The `fitted` cost model: a roofline whose efficiencies were fitted to every public GPU profile
// (calibration/tools/fit_roofline.py; docs/validation.md, "A roofline fitted from every public
// profile"), for a GPU and a model without a profile of their own.
//
// Each operation of a step has the fitted form of its kind, against the GPU's datasheet rate P
// (the linear layers' precision) and bandwidth B:
//   linear layer (m tokens, n outputs, k inputs):
//       t0 + max(2mnk / (P ec m / (m + m_half)), (nk weight + (mk + mn) activation bytes) / (B em))
//   attention per layer (decode only, prefill only, or mixed: three fits):
//       t0 + max(FLOPs / (P ea_flop), prefix KV / (B ea_prefix)) + n ts + decode KV / (B ea)
//   per-token kernels (norms, rotary, activation, embedding, Qwen3's q/k norm):
//       t0 + c tokens width 2 / B
//   sampler: a + c sequences vocabulary 4 / B
//   MoE layer: router, the experts' two fused GEMMs (tokens per activated expert in the falloff)
//       and their activation
// and the step is composed from them exactly as the `profile` cost model composes a measured
// profile (it builds one: curves per operation, closed forms for attention and MoE), so the two
// paths differ only in where each operation's time comes from. Each kind of operation takes the
// GPU's own fit where one was fitted on it (cost_model.fit auto), else the median of every other
// GPU's fit of that kind; `leave_out` removes fits (validation: a run replayed without its own
// GPU's profile).
#include <memory>
#include <string>
#include <vector>

#include "sim/cost/cost_model.h"
#include "sim/cost/profile_cost.h"

namespace kvfleet::sim {

// One fitted kind of operation on one GPU: its parameters, in the order the header gives them.
struct FitParams {
  bool has = false;
  double p[5] = {};
};

// What the public profiles fitted on one GPU (sim/cost/public_fits.inc, generated).
struct GpuFit {
  const char* name = "";    // kvfleet's GPU preset where there is one
  const char* source = "";  // the profiles it was fitted to
  double ridge = 0;  // the datasheet's bf16 FLOP/s over its bytes/s that the fit was made against
  FitParams gemm;    // ec, m_half, em, t0_s
  FitParams attention_decode, attention_prefill,
      attention_mixed;                              // t0_s, ts, ea, ea_flop, ea_prefix
  FitParams norm, rotary, act, embedding, qk_norm;  // t0_s, c
  FitParams sampler;                                // a_s, c
};
const std::vector<GpuFit>& public_fits();

// The parameters one kind of operation gets on `gpu`: its own fit (unless `use_own` is false or
// it is left out), else the median of the other GPUs' fits of that kind (never its own); `from`
// receives which.
// `kind` is one of gemm, attention_decode, attention_prefill, attention_mixed, norm, rotary, act,
// embedding, qk_norm, sampler.
// `ridge` is the GPU's datasheet bf16 FLOP/s over its memory bytes/s. Where it is given, a
// median of linear-layer fits takes the falloff m_half as a fraction of each GPU's ridge and
// scales it to this one's: a GPU with more compute per byte needs more tokens to fill it
// (docs/validation.md, "A roofline fitted from every public profile").
FitParams fit_for(const std::string& kind, const std::string& gpu, bool use_own,
                  const std::vector<std::string>& leave_out, std::string* from = nullptr,
                  double ridge = 0);

// Factors on the GPU's fitted parameters, learned from a team's own runs (`kvfleet-calibrate
// fit`, docs/calibration.md "Fit the cost model to your runs"); 1 leaves a parameter as the public
// fits have it.
struct FitAdjust {
  double gemm_compute = 1;         // linear layers' compute efficiency ec (prefill, large batches)
  double gemm_falloff = 1;         // their small-batch falloff m_half
  double gemm_bandwidth = 1;       // their weight-streaming efficiency em (decode)
  double attention_bandwidth = 1;  // decode attention's KV bandwidth efficiency ea
  double attention_per_seq = 1;    // decode attention's time per sequence ts
  double attention_compute = 1;    // prefill attention's compute efficiency
  bool is_identity() const {
    return gemm_compute == 1 && gemm_falloff == 1 && gemm_bandwidth == 1 &&
           attention_bandwidth == 1 && attention_per_seq == 1 && attention_compute == 1;
  }
  template <class V>
  void visit(V& v) {
    const char* why =
        "a factor outside 0.05-20 is no correction of a public fit but a "
        "different GPU";
    auto f = [&](const char* key, double& x, const char* desc) {
      v.param(key, x, {.desc = desc, .min = 0.05, .max = 20, .why = why});
    };
    f("gemm_compute", gemm_compute, "factor on the linear layers' compute efficiency");
    f("gemm_falloff", gemm_falloff,
      "factor on the linear layers' small-batch falloff (tokens to half efficiency)");
    f("gemm_bandwidth", gemm_bandwidth,
      "factor on the linear layers' weight-streaming bandwidth efficiency");
    f("attention_bandwidth", attention_bandwidth,
      "factor on attention's KV-reading bandwidth efficiency");
    f("attention_per_seq", attention_per_seq, "factor on attention's time per decoding sequence");
    f("attention_compute", attention_compute, "factor on prefill attention's compute efficiency");
  }
};

class FittedCostModel final : public CostModel {
 public:
  struct Config {
    std::string fit = "auto";
    std::vector<std::string> leave_out;
    std::string mixed_attention = "auto";
    FitAdjust adjust;
    StepComposition composition;  // its keys sit beside these, as the profile model's do
    template <class V>
    void visit(V& v) {
      v.param("fit", fit,
              {.desc = "auto: each kind of operation from the pool's GPU's own fit where the "
                       "public profiles have one, else the median of the other GPUs' fits; "
                       "median: always the median (a GPU priced as one without a profile)",
               .choices = {"auto", "median"}});
      v.param("leave_out", leave_out,
              {.desc = "fits not used, by GPU name (A100-80GB, A40, A800, H100-SXM, RTX-4090, "
                       "RTX-PRO-6000): validation without a run's own GPU"});
      v.param("mixed_attention", mixed_attention,
              {.desc = "a step's attention when it holds a prefill chunk and decodes: auto: the "
                       "GPU's own fit of such batches where the public profiles measured them "
                       "(one kernel serving both, its decodes reading KV at 23-38% of the "
                       "bandwidth on the RTX 4090 and RTX PRO 6000), else the sum of its prefill "
                       "and decode fits; median: the median of the measured GPUs' mixed fits; "
                       "sum: always the sum",
               .choices = {"auto", "median", "sum"}});
      v.param("adjust", adjust,
              {.desc = "factors on the GPU's fitted parameters, as `kvfleet-calibrate fit` "
                       "learns them from measured runs (all 1: the public fits as they are)"});
      composition.visit(v);
    }
    void check(config::Reader& r) const;
  };

  FittedCostModel(const Config& cfg, const CostContext& ctx);
  StepCost cost(const Batch& batch) const override { return inner_->cost(batch); }
  // Which fit each kind of operation took ("gemm: H100-SXM; attention_decode: median of A800,
  // RTX-4090, RTX-PRO-6000; ...").
  const std::string& provenance() const { return provenance_; }

 private:
  std::unique_ptr<ProfileCostModel> inner_;
  std::string provenance_;
};

}  // namespace kvfleet::sim
