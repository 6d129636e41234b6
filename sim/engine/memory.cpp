#include "sim/engine/memory.h"

#include <cmath>
#include <stdexcept>

namespace kvfleet::sim {

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
std::string gib(double b) {
  char buf[48];
  std::snprintf(buf, sizeof buf, std::fabs(b / kGiB) < 1e6 ? "%.2f GiB" : "%.3g GiB", b / kGiB);
  return buf;
}
std::string num(double x) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
}
}  // namespace

double kv_bytes_per_token_per_gpu(const ModelSpec& m, double b, int tp) {
  if (m.attention == "mla") return m.kv_bytes_per_token(b);
  const int heads_per_gpu = std::max(1, (m.num_kv_heads + tp - 1) / tp);
  return 2.0 * m.num_layers * heads_per_gpu * m.head_dim * b;
}

double estimate_activation_peak_bytes(const ModelSpec& m, int tp, int tokens, int seqs) {
  const double act = 2.0;  // bf16 activations
  const double mlp = static_cast<double>(tokens) * (3.0 * m.intermediate_size / tp) * act;
  const double hidden = static_cast<double>(tokens) * m.hidden_size * act * 4.0;
  const double logits = static_cast<double>(seqs) * m.vocab_size * 4.0 * 2.0 / tp;
  return mlp + hidden + logits;
}

double weight_params_per_gpu(const ModelSpec& m, int tp, int pp, int expert_gpus) {
  const double stage = stage_weight_params(m, pp);
  if (!m.moe()) return stage / tp;
  const double experts = m.routed_expert_params() * stage_layers(m, pp) / m.num_layers;
  return (stage - experts) / tp + experts / (expert_gpus > 0 ? expert_gpus : tp);
}

MemoryBudget compute_memory_budget(const ModelSpec& m, const GpuSpec& g, int tp,
                                   const std::string& weight_dtype, const EngineConfig& e, int pp,
                                   int expert_gpus) {
  MemoryBudget b;
  b.pipeline_stages = pp;
  b.stage_layers = stage_layers(m, pp);
  b.weight_dtype = weight_dtype;
  // "auto" is the activations' precision, as vLLM's (model_config.dtype): fp16 for fp16 models,
  // else bf16, whatever the weights are quantised to.
  b.kv_dtype = e.kv_cache_dtype != "auto" ? e.kv_cache_dtype : m.dtype == "fp16" ? "fp16" : "bf16";
  b.device_bytes = g.memory_bytes;
  b.usable_bytes = g.memory_bytes * e.gpu_memory_utilization;
  b.margin_bytes = b.device_bytes - b.usable_bytes;
  b.weights_bytes =
      weight_params_per_gpu(m, tp, pp, expert_gpus) * weight_dtype_bytes(weight_dtype);
  b.activation_peak_bytes =
      e.activation_peak_gib > 0
          ? e.activation_peak_gib * kGiB
          : estimate_activation_peak_bytes(m, tp, e.max_num_batched_tokens, e.max_num_seqs);
  b.runtime_overhead_bytes = e.runtime_overhead_gib * kGiB;
  b.kv_bytes_per_token =
      kv_bytes_per_token_per_gpu(m, dtype_bytes(b.kv_dtype), tp) * b.stage_layers / m.num_layers;
  b.block_bytes = b.kv_bytes_per_token * e.block_size;
  b.kv_pool_bytes =
      b.usable_bytes - b.weights_bytes - b.activation_peak_bytes - b.runtime_overhead_bytes;
  b.computed_pool_bytes = b.kv_pool_bytes;
  if (e.num_gpu_blocks_override > 0) {
    b.num_blocks = e.num_gpu_blocks_override;
    b.blocks_overridden = true;
    b.kv_pool_bytes = static_cast<double>(b.num_blocks) * b.block_bytes;
    return b;
  }
  if (b.kv_pool_bytes < b.block_bytes) {
    throw std::invalid_argument(
        "the model does not fit: " + gib(b.usable_bytes) + " usable (" + gib(b.device_bytes) +
        " × gpu_memory_utilization) − weights " + gib(b.weights_bytes) + " − activations " +
        gib(b.activation_peak_bytes) + " − runtime overhead " + gib(b.runtime_overhead_bytes) +
        " leaves " + gib(b.kv_pool_bytes) + " for KV; " +
        (b.activation_peak_bytes > b.weights_bytes && e.activation_peak_gib <= 0
             ? std::string("the activations (estimated from max_num_batched_tokens " +
                           std::to_string(e.max_num_batched_tokens) + " and max_num_seqs " +
                           std::to_string(e.max_num_seqs) +
                           ") take more than the weights: lower those limits, or ")
             : std::string()) +
        "use more GPUs (tensor_parallel, pipeline_parallel), a smaller model or a larger GPU");
  }
  const double blocks = std::floor(b.kv_pool_bytes / b.block_bytes);
  if (blocks > static_cast<double>(kMaxKvBlocksPerReplica)) {
    throw std::invalid_argument(
        "the KV pool would hold " + num(blocks) + " blocks (" + gib(b.kv_pool_bytes) +
        " for KV at " + num(b.block_bytes) + " bytes per block), above the limit of " +
        std::to_string(kMaxKvBlocksPerReplica) + " per replica (" + std::string(kMaxKvBlocksWhy) +
        "); check the GPU's memory_bytes and the model's dimensions");
  }
  b.num_blocks = static_cast<std::int64_t>(blocks);
  return b;
}

}  // namespace kvfleet::sim
