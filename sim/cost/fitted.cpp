#include "sim/cost/fitted.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "sim/config/params.h"
#include "sim/core/error.h"

namespace kvfleet::sim {

const std::vector<GpuFit>& public_fits() {
  // Each entry names the kinds fitted on its GPU; the others stay absent (FitParams::has false).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
  static const std::vector<GpuFit> fits = {
#include "sim/cost/public_fits.inc"
  };
#pragma GCC diagnostic pop
  return fits;
}

namespace {

using Member = FitParams GpuFit::*;

const std::map<std::string, Member>& kinds() {
  static const std::map<std::string, Member> m = {{"gemm", &GpuFit::gemm},
                                                  {"attention_decode", &GpuFit::attention_decode},
                                                  {"attention_prefill", &GpuFit::attention_prefill},
                                                  {"attention_mixed", &GpuFit::attention_mixed},
                                                  {"norm", &GpuFit::norm},
                                                  {"rotary", &GpuFit::rotary},
                                                  {"act", &GpuFit::act},
                                                  {"embedding", &GpuFit::embedding},
                                                  {"qk_norm", &GpuFit::qk_norm},
                                                  {"sampler", &GpuFit::sampler}};
  return m;
}

bool left_out(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The kinds a step cannot be priced without (act and qk_norm have a stand-in, mixed attention
// the sum of the prefill and decode fits).
constexpr const char* kRequired[] = {
    "gemm", "attention_decode", "attention_prefill", "norm", "rotary", "embedding", "sampler"};

// The fits' names, comma-separated.
std::string names_of(const std::vector<const GpuFit*>& fits) {
  std::string s;
  for (const GpuFit* f : fits) s += (s.empty() ? "" : ", ") + std::string(f->name);
  return s;
}

// Kinds a fit may lack on every GPU left: the stand-in priced by the same per-token form.
const char* stand_in(const std::string& kind) {
  if (kind == "act" || kind == "qk_norm") return "norm";
  return nullptr;
}

}  // namespace

FitParams fit_for(const std::string& kind, const std::string& gpu, bool use_own,
                  const std::vector<std::string>& leave_out, std::string* from, double ridge) {
  const Member mem = kinds().at(kind);
  if (use_own && !left_out(leave_out, gpu)) {
    for (const GpuFit& f : public_fits()) {
      if (gpu == f.name && (f.*mem).has) {
        if (from) *from = f.name;
        return f.*mem;
      }
    }
  }
  std::vector<const GpuFit*> others;
  for (const GpuFit& f : public_fits())
    if ((f.*mem).has && !left_out(leave_out, f.name) && gpu != f.name) others.push_back(&f);
  FitParams out;
  if (others.empty()) {
    if (const char* s = stand_in(kind)) {
      out = fit_for(s, gpu, use_own, leave_out, from, ridge);
      if (from) *from = std::string("the norm fit (") + *from + ")";
    } else if (from) {
      *from = "none";
    }
    return out;
  }
  out.has = true;
  for (int i = 0; i < 5; ++i) {
    std::vector<double> v;
    for (const GpuFit* f : others) v.push_back((f->*mem).p[i]);
    out.p[i] = median(v);
  }
  // The linear layers' falloff (m_half, tokens) carries over relative to the ridge point.
  const bool scaled =
      kind == "gemm" && ridge > 0 &&
      std::all_of(others.begin(), others.end(), [](const GpuFit* f) { return f->ridge > 0; });
  if (scaled) {
    std::vector<double> v;
    for (const GpuFit* f : others) v.push_back((f->*mem).p[1] / f->ridge);
    out.p[1] = median(v) * ridge;
  }
  if (from)
    *from = (others.size() == 1 ? "" : "median of ") + names_of(others) +
            (scaled ? " (falloff scaled by the ridge point)" : "");
  return out;
}

void FittedCostModel::Config::check(config::Reader& r) const {
  for (const std::string& name : leave_out) {
    const bool known = std::any_of(public_fits().begin(), public_fits().end(),
                                   [&](const GpuFit& f) { return name == f.name; });
    if (!known) {
      std::vector<const GpuFit*> all;
      for (const GpuFit& f : public_fits()) all.push_back(&f);
      r.fail_key("leave_out",
                 "no public fit is named '" + name + "' (there are: " + names_of(all) + ")");
    }
  }
  for (const char* kind : kRequired) {
    if (!fit_for(kind, "", false, leave_out).has)
      r.fail_key("leave_out", std::string("it leaves no fit of ") + kind + " to price it with");
  }
}

namespace {

// A curve of the fitted form t0 + max(a (x + h), b0 + b1 x), exact under linear interpolation:
// its points are 1, the kink, and two far points (extrapolated linearly beyond).
ProfileCurve max_of_lines(std::string op, std::string scope, std::string axis, double count,
                          double t0, double a, double h, double b0, double b1) {
  constexpr double kFar = 1 << 20;
  auto t = [&](double x) { return t0 + std::max(a * (x + h), b0 + b1 * x); };
  std::vector<double> xs = {1};
  if (a != b1) {
    const double kink = (b0 - a * h) / (a - b1);
    if (kink > 1 && kink < kFar) xs.push_back(kink);
  }
  xs.push_back(kFar);
  xs.push_back(2 * kFar);
  ProfileCurve c{std::move(op), std::move(scope), std::move(axis), count, xs, {}, {}};
  for (double x : xs) {
    c.time_s.push_back(t(x));
    c.spread_s.push_back(0);
  }
  return c;
}

// The fitted form of one linear layer of n outputs and k inputs over m tokens:
// t0 + max(2mnk / (peak ec m / (m + m_half)), (nk weight + (mk + mn) activation bytes) / (B em)).
struct GemmForm {
  double ec, mh, em, t0, B;
  double seconds(double m, double n, double k, double peak, double wbytes) const {
    return t0 + std::max(2 * n * k * (m + mh) / (peak * ec),
                         (n * k * wbytes + m * (n + k) * 2) / (B * em));
  }
  // The same form as a curve (exact under interpolation), `count` times per layer (or step).
  void add(Profile& p, const std::string& op, const std::string& scope, const std::string& axis,
           double count, double n, double k, double peak, double wbytes) const {
    if (count <= 0 || n <= 0 || k <= 0) return;
    p.curves.push_back(max_of_lines(op, scope, axis, count, t0, 2 * n * k / (peak * ec), mh,
                                    n * k * wbytes / (B * em), 2 * (n + k) / (B * em)));
  }
};

// The step's operations other than attention and the MoE layer, as curves of the fitted forms.
void add_operation_curves(Profile& p, const ModelSpec& m, const CostContext& ctx,
                          const GemmForm& gemm, std::map<std::string, FitParams>& fit, double P,
                          double P16, double B) {
  const double tp = ctx.tensor_parallel;
  const double wb = ctx.weight_elem_bytes;
  // A per-token kernel over `width` elements.
  auto kernel = [&](const std::string& kind, const std::string& op, const std::string& scope,
                    double count, double width) {
    const double* q = fit[kind].p;
    if (count <= 0) return;
    p.curves.push_back(
        max_of_lines(op, scope, "tokens", count, q[0], 0, 0, 0, q[1] * width * 2 / B));
  };
  const double H = m.hidden_size, heads = m.num_attention_heads / tp, hd = m.head_dim;
  const double kvh = std::max(1.0, m.num_kv_heads / tp);
  const double moe_share = m.moe() ? m.moe_layers() / static_cast<double>(m.num_layers) : 0;
  if (m.attention == "mla") {
    // Latent attention: the queries' projection and the compressed KV's, approximately.
    gemm.add(p, "qkv_proj", "layer", "tokens", 1, heads * hd + m.kv_lora_rank + m.qk_rope_head_dim,
             H, P, wb);
  } else {
    gemm.add(p, "qkv_proj", "layer", "tokens", 1, (heads + 2 * kvh) * hd, H, P, wb);
  }
  gemm.add(p, "o_proj", "layer", "tokens", 1, H, heads * hd, P, wb);
  const double I = m.intermediate_size / tp;
  gemm.add(p, "gate_up_proj", "layer", "tokens", 1 - moe_share, 2 * I, H, P, wb);
  gemm.add(p, "down_proj", "layer", "tokens", 1 - moe_share, H, I, P, wb);
  if (m.moe() && m.num_shared_experts > 0) {
    const double Is = static_cast<double>(m.moe_intermediate_size) * m.num_shared_experts / tp;
    gemm.add(p, "shared_gate_up_proj", "layer", "tokens", moe_share, 2 * Is, H, P, wb);
    gemm.add(p, "shared_down_proj", "layer", "tokens", moe_share, H, Is, P, wb);
  }
  gemm.add(p, "lm_head", "step", "sequences", 1, m.vocab_size / tp, H, P16, 2);
  kernel("norm", "layernorm", "layer", 2, H);
  kernel("norm", "final_layernorm", "step", 1, H);
  kernel("rotary", "rotary_emb", "layer", 1, (heads + kvh) * hd);
  kernel("act", "act_fn", "layer", 1 - moe_share, I);
  kernel("embedding", "embedding", "step", 1, H);
  if (m.architecture.rfind("qwen3", 0) == 0)
    kernel("qk_norm", "qk_norm", "layer", 1, (heads + kvh) * hd);
  const double* q = fit["sampler"].p;
  p.curves.push_back(max_of_lines("sampler", "step", "sequences", 1, q[0], 0, 0, 0,
                                  q[1] * (m.vocab_size / tp) * 4 / B));
}

// Attention per layer from the decode-only, prefill-only and (where measured) mixed fits.
auto attention_formula(const ModelSpec& m, const CostContext& ctx,
                       std::map<std::string, FitParams>& fit, double P16, double B) {
  const double tp = ctx.tensor_parallel;
  const double heads = m.num_attention_heads / tp, hd = m.head_dim;
  const double kvh = std::max(1.0, m.num_kv_heads / tp);
  const double kv_elem = ctx.kv_elem_bytes;
  const double kvb = m.attention == "mla" ? (m.kv_lora_rank + m.qk_rope_head_dim) * kv_elem
                                          : 2 * kvh * hd * kv_elem;
  const double fpp = m.attention == "mla" ? 2 * heads * (2.0 * m.kv_lora_rank + m.qk_rope_head_dim)
                                          : 4 * heads * hd;
  const FitParams ad = fit["attention_decode"], ap = fit["attention_prefill"],
                  am = fit["attention_mixed"];
  return [=](double chunk, double prefix, double n, double kv, double* ps, double* ds) {
    if (chunk <= 0 && n <= 0) return;
    // One fit for the whole batch (decode only, prefill only, or mixed where measured), or the
    // prefill fit for the chunk and the decode fit for the decodes, one launch time.
    const bool both = chunk > 0 && n > 0;
    const double* qp = both && am.has ? am.p : ap.p;
    const double* qd = both && am.has ? am.p : ad.p;
    if (chunk > 0) {
      const double pairs = chunk * prefix + 0.5 * chunk * (chunk + 1);
      *ps = qp[0] + std::max(fpp * pairs / (P16 * qp[3]), (prefix + chunk) * kvb / (B * qp[4]));
    }
    if (n > 0) *ds = (chunk > 0 ? 0 : qd[0]) + n * qd[1] + n * kv * kvb / (B * qd[2]);
  };
}

// A MoE layer: the router, the experts' two fused GEMMs at the tokens each activated expert
// sees (the falloff at that size), and their activation.
auto moe_formula(const ModelSpec& m, const CostContext& ctx, const GemmForm& gemm,
                 const FitParams& act, double P, double P16, double B) {
  const double E = m.num_experts, k = m.experts_per_token, Ie = m.moe_intermediate_size;
  const double H = m.hidden_size, wb = ctx.weight_elem_bytes;
  return [=](double tokens, double experts) {
    if (tokens <= 0) return 0.0;
    const double x = std::max(1.0, experts), pairs = tokens * k, me = pairs / x;
    const double slow = (me + gemm.mh) / me;  // the falloff at the tokens each expert sees
    auto fused = [&](double n, double kk) {
      return gemm.t0 + std::max(2 * pairs * n * kk * slow / (P * gemm.ec),
                                (x * n * kk * wb + pairs * (n + kk) * 2) / (B * gemm.em));
    };
    const double router = gemm.seconds(tokens, E, H, P16, 2);
    return router + fused(2 * Ie, H) + fused(H, Ie) + act.p[0] + act.p[1] * pairs * Ie * 2 / B;
  };
}

}  // namespace

FittedCostModel::FittedCostModel(const Config& cfg, const CostContext& ctx) {
  const ModelSpec& m = ctx.model;
  const GpuSpec& gpu = ctx.gpu;
  const bool own = cfg.fit == "auto";
  const double P = ctx.gemm_peak_flops > 0 ? ctx.gemm_peak_flops : gpu.bf16_flops;
  const double P16 = gpu.bf16_flops;
  const double B = gpu.memory_bandwidth_Bps;
  std::map<std::string, FitParams> fit;
  std::map<std::string, std::string> from;
  for (const auto& [kind, mem] : kinds()) {
    (void)mem;
    fit[kind] = fit_for(kind, gpu.name, own, cfg.leave_out, &from[kind], P16 / B);
  }
  // Mixed batches: the GPU's own measurement of them, or (none, or by choice) the sum of the
  // prefill and decode fits; FlashAttention-2's mixed kernels on the two GPUs measured are not
  // evidence about another GPU's backend.
  const bool sum_mixed = cfg.mixed_attention == "sum" ||
                         (cfg.mixed_attention == "auto" && from["attention_mixed"] != gpu.name) ||
                         !fit["attention_mixed"].has;
  if (sum_mixed) {
    fit["attention_mixed"] = FitParams{};
    from["attention_mixed"] = "the sum of the prefill and decode fits";
  }
  // A team's own runs correct the public fits (kvfleet-calibrate fit).
  const FitAdjust& a = cfg.adjust;
  fit["gemm"].p[0] *= a.gemm_compute;
  fit["gemm"].p[1] *= a.gemm_falloff;
  fit["gemm"].p[2] *= a.gemm_bandwidth;
  for (const char* k : {"attention_decode", "attention_mixed"}) {
    fit[k].p[1] *= a.attention_per_seq;
    fit[k].p[2] *= a.attention_bandwidth;
  }
  for (const char* k : {"attention_prefill", "attention_mixed"}) fit[k].p[3] *= a.attention_compute;
  if (!a.is_identity()) from["adjust"] = "factors learned from measured runs";
  for (const auto& [kind, src] : from)
    if (kind != "qk_norm" || m.architecture.rfind("qwen3", 0) == 0)
      provenance_ += (provenance_.empty() ? "" : "; ") + kind + ": " + src;
  for (const char* k : kRequired) {
    if (!fit[k].has)
      throw InputError("", "cost_model.leave_out", std::string("no fit of ") + k + " is left");
  }
  const double* g = fit["gemm"].p;
  const GemmForm gemm{g[0], g[1], g[2], g[3], B};

  Profile p;
  p.set("tensor_parallel", std::to_string(ctx.tensor_parallel));
  set_model_facts(p, m);
  add_operation_curves(p, m, ctx, gemm, fit, P, P16, B);
  ProfileCostModel::Formulas f;
  f.attention = attention_formula(m, ctx, fit, P16, B);
  if (m.moe()) f.moe = moe_formula(m, ctx, gemm, fit["act"], P, P16, B);
  ProfileCostModel::Config pc;
  static_cast<StepComposition&>(pc) = cfg.composition;
  pc.path = "cost_model (fitted)";
  inner_ = ProfileCostModel::with_formulas(pc, ctx, p, std::move(f));
}

}  // namespace kvfleet::sim
