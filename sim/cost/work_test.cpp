// Weight precision apart from KV precision: the linear layers' bytes and tensor rate follow
// weight_dtype, KV stays as configured; and the work model's FLOPs and bytes behind the roofline.
#include "sim/cost/work.h"

#include <gtest/gtest.h>

#include "sim/cost/roofline.h"
#include "sim/engine/memory.h"

namespace kvfleet::sim {
namespace {

const ModelSpec& llama8b() {
  for (const auto& m : model_presets())
    if (m.name == "Llama-3-8B") return m;
  throw std::logic_error("no Llama-3-8B preset");
}
const GpuSpec& gpu(const std::string& name) {
  for (const auto& g : gpu_presets())
    if (g.name == name) return g;
  throw std::logic_error("no GPU preset " + name);
}

// Linear-layer time of one step from the roofline, for weights of `dtype`.
double gemm_time(const GpuSpec& g, const std::string& dtype, const Batch& b) {
  const CostContext ctx{llama8b(), g, 1, weight_dtype_bytes(dtype), 2.0, gemm_peak_flops(g, dtype)};
  return RooflineCostModel({}, ctx).cost(b).gemm_s;
}

Batch prefill(int tokens) {
  Batch b;
  b.num_seqs = 1;
  b.num_prefill_tokens = tokens;
  b.prefill_context_tokens = tokens;
  b.prefill_attention_pairs = tokens * (tokens + 1.0) / 2;
  b.num_sampled = 1;
  return b;
}

Batch decode(int seqs, int context) {
  Batch b;
  b.num_seqs = b.num_decode_seqs = b.num_sampled = seqs;
  b.decode_context_tokens = static_cast<std::int64_t>(seqs) * context;
  return b;
}

TEST(WeightPrecision, LargeBatchesRunAtThePrecisionsTensorRate) {
  const Batch big = prefill(8192);  // compute-bound linear layers
  const GpuSpec& h100 = gpu("H100-SXM");
  EXPECT_NEAR(gemm_time(h100, "fp8", big) / gemm_time(h100, "bf16", big), 0.5, 1e-3);
  EXPECT_NEAR(gemm_time(h100, "int8", big) / gemm_time(h100, "bf16", big), 0.5, 1e-3);
  // Weight-only int4 computes at the bf16 rate.
  EXPECT_NEAR(gemm_time(h100, "int4", big) / gemm_time(h100, "bf16", big), 1.0, 1e-9);
  // The A100 has no fp8 tensor cores: fp8 weights are dequantised, bf16 rate; int8 is 2x.
  const GpuSpec& a100 = gpu("A100-80GB");
  EXPECT_NEAR(gemm_time(a100, "fp8", big) / gemm_time(a100, "bf16", big), 1.0, 1e-9);
  EXPECT_NEAR(gemm_time(a100, "int8", big) / gemm_time(a100, "bf16", big), 0.5, 1e-3);
}

TEST(WeightPrecision, SmallBatchesReadFewerWeightBytes) {
  const Batch small = decode(1, 1000);  // bandwidth-bound: weights streamed once
  const GpuSpec& h100 = gpu("H100-SXM");
  const double bf16 = gemm_time(h100, "bf16", small);
  EXPECT_NEAR(gemm_time(h100, "fp8", small) / bf16, 0.5, 1e-9);
  EXPECT_NEAR(gemm_time(h100, "int4", small) / bf16, (0.5 + 4.0 / 128) / 2, 1e-9);
}

TEST(WeightPrecision, KvStaysAsConfiguredWhateverTheWeights) {
  EngineConfig e;  // kv_cache_dtype auto
  const GpuSpec& h100 = gpu("H100-SXM");
  const MemoryBudget bf16 = compute_memory_budget(llama8b(), h100, 1, "bf16", e);
  const MemoryBudget int4 = compute_memory_budget(llama8b(), h100, 1, "int4", e);
  EXPECT_EQ(int4.kv_dtype, "bf16");
  EXPECT_EQ(int4.kv_bytes_per_token, bf16.kv_bytes_per_token);
  EXPECT_NEAR(int4.weights_bytes / bf16.weights_bytes, (0.5 + 4.0 / 128) / 2, 1e-12);
  EXPECT_GT(int4.num_blocks, bf16.num_blocks);  // the weights' savings go to KV
  e.kv_cache_dtype = "fp8";
  const MemoryBudget fp8kv = compute_memory_budget(llama8b(), h100, 1, "bf16", e);
  EXPECT_EQ(fp8kv.weights_bytes, bf16.weights_bytes);
  EXPECT_EQ(fp8kv.kv_bytes_per_token, bf16.kv_bytes_per_token / 2);
}

TEST(WorkModel, CountsFlopsAndBytesOfEachKind) {
  const ModelSpec& m = llama8b();
  const GpuSpec& h100 = gpu("H100-SXM");
  const WorkModel w(CostContext{m, h100, 2, 2.0, 2.0});
  const StepWork d = w.work(decode(4, 1000));
  // Per GPU at tensor parallelism 2: weights and KV halve.
  EXPECT_DOUBLE_EQ(d.gemm_bytes, m.num_params * 2.0 / 2);
  EXPECT_DOUBLE_EQ(d.decode_attn_bytes, (4000.0 + 4) * m.kv_bytes_per_token(2.0) / 2);
  EXPECT_DOUBLE_EQ(d.decode_attn_flops,
                   4000.0 * 4 * m.num_layers * (m.num_attention_heads / 2) * m.head_dim);
  EXPECT_EQ(d.prefill_attn_flops, 0);
  // At peak, a one-token-per-sequence step needs far less compute time than memory time.
  EXPECT_LT(w.compute_s_at_peak(d), 0.1 * w.memory_s_at_peak(d));
  const StepWork p = w.work(prefill(8192));
  EXPECT_GT(w.compute_s_at_peak(p), w.memory_s_at_peak(p));
  EXPECT_EQ(w.work(Batch{}).flops(), 0);
}

}  // namespace
}  // namespace kvfleet::sim
