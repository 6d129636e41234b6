#pragma once
// The `profile` cost model: each step's time from a calibration profile (cost/profile_data.h),
// measured by kvfleet-calibrate on the user's GPU or imported from another simulator's profile.
//
//   step = Σ layer ops(T) × count × layers + Σ step ops(T or S) × count
//        + attention(prefill chunk, its prefix, decode sequences, their mean context) × layers
//        + tensor-parallel all-reduces + configured overheads
// with T the step's tokens (prefill chunk tokens plus decode sequences) and S its sequences (vLLM
// computes logits for each, a partial prefill's too). This is how LLMServingSim composes a step
// from the same bundle; tests/validation/step_oracle_test.cpp checks it step by step. Curves are
// interpolated linearly and extrapolated linearly from their last two points (a GEMM past the grid
// is compute bound, so time grows linearly in tokens). Attention interpolates the profile's 4-D
// grid multilinearly when it holds mixed prefill+decode points (one kernel serves both, as in
// vLLM's FlashAttention backend); otherwise the prefill and decode parts are looked up separately
// and added (kvfleet's own kernels launch separately). Several prefill chunks in one step count as
// one chunk of their total tokens over the prefix that gives the same number of (query, key) pairs;
// decode sequences count at their mean context, corrected for uneven contexts by the profile's skew
// fit where it has one (SkewTable).
#include <array>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/cost/cost_model.h"
#include "sim/cost/profile_data.h"

namespace kvfleet::sim {

// A measured curve, interpolated linearly, extrapolated from its two end points, never negative.
class PiecewiseLinear {
 public:
  PiecewiseLinear() = default;
  PiecewiseLinear(std::vector<double> x, std::vector<double> y);
  double at(double q) const;
  bool empty() const { return x_.empty(); }

 private:
  std::vector<double> x_, y_;
};

// A profile's MoE layer times against routed tokens and activated experts (the /moe table):
// linear between token rows and, within a row, between expert counts (a row with one point
// takes the slope of the nearest row with two); extended linearly past both ends.
class MoeGrid {
 public:
  MoeGrid() = default;
  explicit MoeGrid(const std::vector<MoePoint>& points);
  double at(double tokens, double experts) const;
  bool empty() const { return rows_.empty(); }

 private:
  double row_at(std::size_t i, double experts) const;
  std::vector<double> tokens_;
  std::vector<std::vector<std::pair<double, double>>> rows_;  // (experts, seconds), ascending
};

// The profile's skew correction (/skew): alpha for a batch's prefill chunk (one the fit measured;
// another takes the default), decode sequences, skew rate, longest decode context and prefill
// prefix; the profile's default where no bucket holds the batch. The fit measured bimodal batches
// (n_big at the longest context, the rest shorter) and defines the rate as (mean - shortest) /
// (longest - shortest) and alpha as the step's place between all contexts at the mean and all
// at the longest: ProfileCostModel applies it with those definitions.
class SkewTable {
 public:
  SkewTable() = default;
  SkewTable(const std::vector<SkewBucket>& buckets, double alpha_default);
  double alpha(double chunk, double n, double rate, double kv_max, double prefix) const;
  bool empty() const { return by_chunk_.empty(); }

 private:
  std::vector<double> chunks_;  // distinct profiled prefill chunks, ascending
  std::vector<std::vector<SkewBucket>> by_chunk_;
  double default_ = 0;
};

// The per-layer attention grid of a profile (see the header comment). A profile need not hold
// every combination of its axes' values (LLMServingSim's profiler sweeps the prefix and decode
// context axes differently for each prefill chunk and decode count), so the grid is kept as one
// slice per measured (prefill chunk, decode sequences) pair, each with its own prefix values and,
// per prefix, its own decode-context values: a query is interpolated linearly within the slices
// of the four bracketing pairs, and across them.
class AttentionGrid {
 public:
  explicit AttentionGrid(const std::vector<AttentionPoint>& points);
  // Per-layer seconds for one prefill chunk of `chunk` tokens over `prefix` cached tokens and
  // `n` decode sequences of `kv` cached tokens each (the new token not included, as the profile
  // measures them); prefill_s and decode_s split the total.
  void at(double chunk, double prefix, double n, double kv, double* prefill_s,
          double* decode_s) const;
  // The whole per-layer time, prefill and decode together.
  double total(double chunk, double prefix, double n, double kv) const;
  bool mixed() const { return mixed_; }
  bool empty() const { return slices_.empty(); }

 private:
  struct Row {  // one prefix value: time against decode context
    std::vector<double> kv, time_s;
  };
  struct Slice {  // one (prefill chunk, decode sequences) pair
    std::vector<double> prefix;
    std::vector<Row> rows;  // by prefix
    double at(double p, double k) const;
  };
  double interp(double c, double p, double n, double k) const;
  // The grid's value at the axis indices (ci, ni), at prefix p and decode context k.
  double corner(int ci, int ni, double p, double k) const;
  const Slice* slice(int ci, int ni) const;
  std::vector<double> chunks_, decodes_;  // every measured value of each axis, ascending
  std::unordered_map<std::uint64_t, Slice> slices_;
  bool mixed_ = false;
};

// How a step is composed beyond its operations, shared by the cost models that compose a profile
// (`profile`, `fitted`): fixed overheads and CUDA-graph padding.
struct StepComposition {
  double step_overhead_s = 0;
  double per_seq_overhead_s = 0;
  bool pad_to_cuda_graph_sizes = false;
  std::vector<double> cuda_graph_sizes;

  template <class V>
  void visit(V& v) {
    v.param("step_overhead_s", step_overhead_s,
            {.unit = "s",
             .desc = "fixed time per step beyond its operations' GPU time (scheduling, launch)",
             .min = 0});
    v.param("per_seq_overhead_s", per_seq_overhead_s,
            {.unit = "s", .desc = "extra time per sequence in the step", .min = 0});
    v.param("pad_to_cuda_graph_sizes", pad_to_cuda_graph_sizes,
            {.desc = "time token-wise operations at the step's token count rounded up to vLLM's "
                     "CUDA-graph capture sizes (1, 2, 4, 8, then multiples of 8 to 256 and of "
                     "16 to 512), as an engine with CUDA graphs runs them"});
    v.param("cuda_graph_sizes", cuda_graph_sizes,
            {.unit = "tokens",
             .desc = "the engine's CUDA-graph capture sizes (vLLM "
                     "compilation_config.cudagraph_capture_sizes); when given, token-wise "
                     "operations are timed at the smallest size that holds the step's tokens "
                     "(none above the largest) instead of the built-in rule",
             .min = 1});
  }
};

class ProfileCostModel final : public CostModel {
 public:
  struct Config : StepComposition {
    std::string path;

    template <class V>
    void visit(V& v) {
      v.param("path", path,
              {.desc = "calibration profile (HDF5) from kvfleet-calibrate or its import command",
               .path = true,
               .required = true});
      StepComposition::visit(v);
    }
    void check(config::Reader& r) const;
  };

  ProfileCostModel(const Config& cfg, const CostContext& ctx);
  StepCost cost(const Batch& batch) const override;

  // Closed forms in place of the measured grids (the `fitted` cost model): attention of one layer
  // for a prefill chunk over its prefix and n decodes of kv cached tokens each (prefill and
  // decode seconds), and one MoE layer on one GPU for `tokens` tokens activating `experts`.
  struct Formulas {
    std::function<void(double chunk, double prefix, double n, double kv, double* prefill_s,
                       double* decode_s)>
        attention;
    std::function<double(double tokens, double experts)> moe;
  };
  // The profile's curves (no attention grid or MoE table needed) composed with the formulas, by
  // the same composition as a measured profile. `where` names the source in errors.
  static std::unique_ptr<ProfileCostModel> with_formulas(const Config& cfg, const CostContext& ctx,
                                                         const Profile& curves, Formulas f);
  bool wants_decode_contexts() const override { return !skew_.empty(); }
  // The MoE layers' expert time of a step (part of its gemm_s), 0 for a dense model.
  double moe_expert_s(const Batch& batch) const;

  // Token count as vLLM pads it for CUDA graphs (unchanged above 512).
  static double cuda_graph_size(double tokens);
  // The tokens token-wise operations are timed at (padding per the configuration).
  double padded(double tokens) const;

 private:
  ProfileCostModel(const Config& cfg, const CostContext& ctx, const Profile& profile,
                   Formulas f = {});
  void attention_at(double chunk, double prefix, double n, double kv, double* ps, double* ds) const;
  double moe_at(double tokens, double experts) const;
  bool has_moe() const { return moe_layers_ > 0; }
  struct Op {
    PiecewiseLinear curve;
    double times_per_step;  // count × layers (layer scope) or count (step scope)
    bool tokens_axis;       // false: sequences axis
    bool gemm;              // linear layer (else norms, activations, rotary, sampling: overhead)
  };
  Config cfg_;
  std::vector<Op> ops_;
  AttentionGrid attention_;
  PiecewiseLinear all_reduce_;  // seconds for one all-reduce of x bytes, if profiled
  MoeGrid moe_;
  Formulas formulas_;
  SkewTable skew_;
  double moe_layers_ = 0;  // MoE layers on this stage
  int num_experts_ = 0, experts_per_token_ = 0;
  int expert_gpus_ = 1;
  bool expert_parallel_ = false;
  double hidden_bytes_ = 0;  // one token's activations (bf16), for MoE dispatch and combine
  int data_parallel_ = 1;
  int layers_;
  int tp_;
  double allreduce_bytes_per_token_;
  double link_bw_, link_lat_;
};

}  // namespace kvfleet::sim
