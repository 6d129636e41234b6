#include "sim/model/presets.h"

#include <gtest/gtest.h>

#include "sim/engine/memory.h"

namespace kvfleet::sim {
namespace {

const ModelSpec& model(const std::string& name) {
  for (const auto& m : model_presets())
    if (m.name == name) return m;
  throw std::runtime_error("no preset " + name);
}
const GpuSpec& gpu(const std::string& name) {
  for (const auto& g : gpu_presets())
    if (g.name == name) return g;
  throw std::runtime_error("no preset " + name);
}

// Figures from shared/reference/README.md (2 × layers × kv_heads × head_dim × bytes; MLA:
// layers × (512 + 64) × bytes).
TEST(Presets, KvBytesPerToken) {
  EXPECT_EQ(model("Llama-3-8B").kv_bytes_per_token(2.0), 131072.0);
  EXPECT_EQ(model("Llama-3-70B").kv_bytes_per_token(2.0), 327680.0);
  EXPECT_EQ(model("Llama-2-7B").kv_bytes_per_token(2.0), 524288.0);
  EXPECT_EQ(model("Qwen2.5-7B").kv_bytes_per_token(2.0), 57344.0);
  EXPECT_EQ(model("DeepSeek-V3").kv_bytes_per_token(2.0), 70272.0);
  EXPECT_EQ(model("Llama-3-8B").kv_bytes_per_token(dtype_bytes("fp8")), 65536.0);
}

TEST(Presets, KvPerGpuUnderTensorParallelism) {
  const auto& l70 = model("Llama-3-70B");
  EXPECT_EQ(kv_bytes_per_token_per_gpu(l70, 2.0, 4), 327680.0 / 4);
  // 8 KV heads over 16 GPUs: each GPU still holds one head (replicated).
  EXPECT_EQ(kv_bytes_per_token_per_gpu(l70, 2.0, 16), 327680.0 / 8);
  // MLA's latent is replicated on every GPU.
  EXPECT_EQ(kv_bytes_per_token_per_gpu(model("DeepSeek-V3"), 2.0, 8), 70272.0);
}

TEST(Presets, MemoryBudgetArithmetic) {
  EngineConfig e;
  e.gpu_memory_utilization = 0.9;
  e.runtime_overhead_gib = 0.5;
  e.activation_peak_gib = 1.0;
  e.block_size = 16;
  const auto b = compute_memory_budget(model("Llama-3-8B"), gpu("H100-SXM"), 2, "bf16", e);
  const double GiB = 1024.0 * 1024 * 1024;
  EXPECT_DOUBLE_EQ(b.usable_bytes, 81559.0 * 1024 * 1024 * 0.9);
  EXPECT_DOUBLE_EQ(b.weights_bytes, 8030261248.0 * 2 / 2);  // counted from config.json's shapes
  EXPECT_DOUBLE_EQ(b.kv_pool_bytes, b.usable_bytes - b.weights_bytes - 1.5 * GiB);
  EXPECT_DOUBLE_EQ(b.block_bytes, 16 * 131072.0 / 2);
  EXPECT_EQ(b.num_blocks, static_cast<std::int64_t>(b.kv_pool_bytes / b.block_bytes));
}

TEST(Presets, ModelThatDoesNotFitIsReported) {
  EngineConfig e;
  EXPECT_THROW(compute_memory_budget(model("Llama-3-70B"), gpu("RTX-4090"), 1, "bf16", e),
               std::invalid_argument);
}

TEST(Presets, FourBitFloatsRunAtTheFp4RateWhereAGpuHasOne) {
  // NVFP4: e2m1 with an e4m3 scale per 16; MXFP4: e2m1 with an e8m0 scale per 32.
  EXPECT_DOUBLE_EQ(weight_dtype_bytes("nvfp4"), 0.5625);
  EXPECT_DOUBLE_EQ(weight_dtype_bytes("mxfp4"), 0.53125);
  EXPECT_DOUBLE_EQ(dtype_bytes("nvfp4"), 0.5625);  // as a KV cache precision too
  // W4A4 on Blackwell's fp4 tensor cores; weight-only (bf16 rate) on Hopper.
  EXPECT_DOUBLE_EQ(gemm_peak_flops(gpu("B200"), "nvfp4"), 9000e12);
  EXPECT_DOUBLE_EQ(gemm_peak_flops(gpu("MI355X"), "mxfp4"), 10000e12);
  EXPECT_DOUBLE_EQ(gemm_peak_flops(gpu("H100-SXM"), "mxfp4"), gpu("H100-SXM").bf16_flops);
  EXPECT_DOUBLE_EQ(gemm_peak_flops(gpu("B300"), "bf16"), 2250e12);
  // The GPUs architects buy in 2026 are presets; gpt-oss is MXFP4.
  for (const char* g : {"B300", "GB200", "GB300", "H20", "MI325X", "MI355X"})
    EXPECT_NO_THROW(gpu(g)) << g;
  EXPECT_EQ(model("gpt-oss-120b").dtype, "mxfp4");
}

TEST(Presets, EveryPresetHasASourceAndSaneNumbers) {
  for (const auto& m : model_presets()) {
    EXPECT_FALSE(m.source.empty()) << m.name;
    EXPECT_GT(m.num_params, 1e9) << m.name;
  }
  for (const auto& g : gpu_presets()) {
    EXPECT_FALSE(g.source.empty()) << g.name;
    EXPECT_GT(g.memory_bytes, 20e9) << g.name;
  }
}

}  // namespace
}  // namespace kvfleet::sim
