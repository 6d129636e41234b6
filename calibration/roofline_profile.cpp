#include "calibration/roofline_profile.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace kvfleet::calibration {

std::vector<LinearShape> linear_shapes(const sim::ModelSpec& m, int tp) {
  const int qh = m.num_attention_heads / tp;
  const int kvh = std::max(1, m.num_kv_heads / tp);
  const int hd = m.head_dim;
  const int inter = m.intermediate_size / tp;
  return {{"qkv_proj", (qh + 2 * kvh) * hd, m.hidden_size, "layer", "tokens"},
          {"o_proj", m.hidden_size, qh * hd, "layer", "tokens"},
          {"gate_up_proj", 2 * inter, m.hidden_size, "layer", "tokens"},
          {"down_proj", m.hidden_size, inter, "layer", "tokens"},
          {"lm_head", m.vocab_size / tp, m.hidden_size, "step", "sequences"}};
}

sim::Profile roofline_profile(const sim::ModelSpec& m, const sim::GpuSpec& gpu, int tp,
                              const sim::RooflineCostModel::Config& cfg) {
  const double wbytes = sim::dtype_bytes(m.dtype);
  sim::Profile p;
  p.set("format", "kvfleet-profile");
  p.set("schema_version", sim::kProfileSchemaVersion);
  p.set("source", "roofline");
  p.set("measured", "false");
  p.set("note",
        "NOT MEASURED: the datasheet roofline's predictions (RooflineCostModel, default "
        "efficiencies), for comparison and as a placeholder until a GPU is calibrated");
  p.set("gpu", gpu.name);
  p.set("model", m.name);
  sim::set_model_facts(p, m);
  p.set("tensor_parallel", std::to_string(tp));
  p.set("dtype", m.dtype);
  p.set("kv_dtype", m.dtype);
  p.set("gpu_source", gpu.source);
  std::vector<double> tokens;
  for (double t = 1; t <= 16384; t *= 2) tokens.push_back(t);
  for (const auto& s : linear_shapes(m, tp)) {
    sim::ProfileCurve c{s.op, s.scope, s.axis, 1, tokens, {}, std::vector<double>(tokens.size())};
    for (double t : tokens) {
      c.time_s.push_back(sim::RooflineCostModel::gemm_s(cfg, gpu, t, s.n, s.k, wbytes));
    }
    p.curves.push_back(std::move(c));
  }
  // Attention per layer through the roofline cost model itself (its decode and prefill parts of
  // a one-kind batch, divided by the layer count).
  sim::RooflineCostModel::Config acfg = cfg;
  acfg.step_overhead_s = acfg.per_seq_overhead_s = 0;
  sim::CostContext ctx{m, gpu, tp, wbytes, wbytes};
  sim::RooflineCostModel model(acfg, ctx);
  for (int n : {1, 8, 32, 128, 256}) {
    for (int kv : {128, 1024, 4096, 16384, 65536}) {
      sim::Batch b;
      b.num_seqs = b.num_decode_seqs = n;
      b.decode_context_tokens = static_cast<std::int64_t>(n) * kv;
      p.attention.push_back(
          {0, 0, double(n), double(kv), model.cost(b).decode_attn_s / m.num_layers, 0});
    }
  }
  for (int c : {32, 256, 1024, 4096}) {
    for (int pre : {0, 2048, 16384}) {
      sim::Batch b;
      b.num_seqs = 1;
      b.num_prefill_tokens = c;
      b.prefill_context_tokens = pre + c;
      b.prefill_attention_pairs = double(c) * pre + 0.5 * c * (c + 1.0);
      p.attention.push_back(
          {double(c), double(pre), 0, 0, model.cost(b).prefill_attn_s / m.num_layers, 0});
    }
  }
  sim::check_profile(p, "roofline profile");
  return p;
}

std::vector<OpComparison> compare_with_roofline(const sim::Profile& measured,
                                                const sim::ModelSpec& m, const sim::GpuSpec& gpu,
                                                int tp, const sim::RooflineCostModel::Config& cfg) {
  std::vector<OpComparison> out;
  const double wbytes = 2;  // the measured profiles compared here are fp16/bf16
  for (const auto& s : linear_shapes(m, tp)) {
    const sim::ProfileCurve* c = measured.curve(s.op);
    if (c == nullptr) continue;
    std::vector<double> err, ape;
    for (std::size_t i = 0; i < c->x.size(); ++i) {
      if (c->time_s[i] <= 0) continue;
      const double r = sim::RooflineCostModel::gemm_s(cfg, gpu, c->x[i], s.n, s.k, wbytes);
      err.push_back((r - c->time_s[i]) / c->time_s[i]);
      ape.push_back(std::fabs(err.back()));
    }
    if (err.empty()) continue;
    OpComparison o;
    o.op = s.op;
    o.points = static_cast<int>(err.size());
    o.error_small = err.front();
    o.error_large = err.back();
    auto q = [](std::vector<double> v, double f) {
      std::sort(v.begin(), v.end());
      return v[static_cast<std::size_t>(f * (v.size() - 1) + 0.5)];
    };
    o.median_error = q(err, 0.5);
    o.median_ape = q(ape, 0.5);
    o.p95_ape = q(ape, 0.95);
    out.push_back(o);
  }
  return out;
}

}  // namespace kvfleet::calibration
