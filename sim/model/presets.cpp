#include "sim/model/presets.h"

#include <algorithm>
#include <stdexcept>

namespace kvfleet::sim {

const std::vector<std::string_view> kKvDtypes = {"bf16",     "fp16", "fp8", "fp8_e4m3",
                                                 "fp8_e5m2", "int8", "int4"};

double weight_dtype_bytes(const std::string& d) {
  if (d == "int8") return 1.0;
  if (d == "int4") return 0.5 + 4.0 / 128;
  return dtype_bytes(d);
}

double stage_weight_params(const ModelSpec& m, int stages) {
  if (stages <= 1) return m.num_params;
  const double embed = static_cast<double>(m.vocab_size) * m.hidden_size;
  return std::max(0.0, m.num_params - 2.0 * embed) * stage_layers(m, stages) / m.num_layers + embed;
}

double gemm_peak_flops(const GpuSpec& gpu, const std::string& d) {
  if ((d == "fp8" || d == "fp8_e4m3" || d == "fp8_e5m2") && gpu.fp8_flops > 0) return gpu.fp8_flops;
  if (d == "int8" && gpu.int8_flops > 0) return gpu.int8_flops;
  return gpu.bf16_flops;
}

// Bytes per element, scale overhead included. fp8 uses per-tensor scales (vLLM's fp8 KV cache),
// negligible per element. int8 is symmetric with one fp16 scale per group of 64 elements; int4 is
// asymmetric with an fp16 scale and an fp16 zero point per group of 64 (KIVI-style grouping).
double dtype_bytes(const std::string& d) {
  if (d == "bf16" || d == "fp16") return 2.0;
  if (d == "fp8" || d == "fp8_e4m3" || d == "fp8_e5m2") return 1.0;
  if (d == "int8") return 1.0 + 2.0 / 64;
  if (d == "int4") return 0.5 + 4.0 / 64;
  throw std::invalid_argument("unknown dtype '" + d + "'");
}

double ModelSpec::kv_bytes_per_token(double b) const {
  if (attention == "mla") {
    // One latent vector (kv_lora_rank) plus the decoupled rotary key per layer; K and V share
    // the latent, so there is no factor 2 (DeepSeek-V2 paper, section 2.1.2).
    return static_cast<double>(num_layers) * (kv_lora_rank + qk_rope_head_dim) * b;
  }
  return 2.0 * num_layers * num_kv_heads * head_dim * b;
}

void ModelSpec::check(config::Reader& r) const {
  if (attention == "gqa") {
    if (num_kv_heads <= 0) r.fail_key("num_kv_heads", "must be > 0 for gqa attention");
    if (num_attention_heads % num_kv_heads != 0)
      r.fail(YAML::Node(), r.child_path("num_kv_heads"),
             "must divide num_attention_heads (" + std::to_string(num_attention_heads) + ")");
  } else if (kv_lora_rank <= 0) {
    r.fail_key("kv_lora_rank", "must be > 0 for mla attention");
  }
}

namespace {

ModelSpec gqa(std::string name, int layers, int hidden, int heads, int kv, int hd, int inter,
              int vocab, double params, int max_pos, std::string source) {
  ModelSpec m;
  m.name = std::move(name);
  m.num_layers = layers;
  m.hidden_size = hidden;
  m.num_attention_heads = heads;
  m.num_kv_heads = kv;
  m.head_dim = hd;
  m.intermediate_size = inter;
  m.vocab_size = vocab;
  m.num_params = params;
  m.max_position_embeddings = max_pos;
  m.source = std::move(source);
  return m;
}

}  // namespace

const std::vector<ModelSpec>& model_presets() {
  static const std::vector<ModelSpec> presets = [] {
    std::vector<ModelSpec> v;
    // Hugging Face config.json of each model; parameter counts from the model cards.
    v.push_back(gqa("Llama-3-8B", 32, 4096, 32, 8, 128, 14336, 128256, 8.03e9, 8192,
                    "meta-llama/Meta-Llama-3-8B config.json; 8.03B parameters"));
    v.push_back(gqa("Llama-3.1-8B", 32, 4096, 32, 8, 128, 14336, 128256, 8.03e9, 131072,
                    "meta-llama/Llama-3.1-8B config.json; 8.03B parameters"));
    v.push_back(gqa("Llama-3-70B", 80, 8192, 64, 8, 128, 28672, 128256, 70.55e9, 8192,
                    "meta-llama/Meta-Llama-3-70B config.json; 70.6B parameters"));
    v.push_back(gqa("Llama-2-7B", 32, 4096, 32, 32, 128, 11008, 32000, 6.74e9, 4096,
                    "meta-llama/Llama-2-7b-hf config.json; 6.74B parameters"));
    v.push_back(gqa("Mistral-7B", 32, 4096, 32, 8, 128, 14336, 32000, 7.24e9, 32768,
                    "mistralai/Mistral-7B-v0.1 config.json; 7.24B parameters"));
    v.push_back(gqa("Qwen2.5-7B", 28, 3584, 28, 4, 128, 18944, 152064, 7.62e9, 32768,
                    "Qwen/Qwen2.5-7B config.json; 7.62B parameters"));
    // deepseek-ai/DeepSeek-V3 config.json and technical report: 61 layers, hidden 7168, 128
    // heads, MLA with kv_lora_rank 512 and qk_rope_head_dim 64 (qk_nope 128, v 128), 671B
    // parameters of which 37B are active per token, weights shipped in fp8. intermediate_size is
    // the dense MLP of the first three layers; the experts are folded into num_active_params.
    ModelSpec ds;
    ds.name = "DeepSeek-V3";
    ds.attention = "mla";
    ds.num_layers = 61;
    ds.hidden_size = 7168;
    ds.num_attention_heads = 128;
    ds.num_kv_heads = 0;
    ds.head_dim = 128;
    ds.intermediate_size = 18432;
    ds.vocab_size = 129280;
    ds.num_params = 671e9;
    ds.num_active_params = 37e9;
    ds.kv_lora_rank = 512;
    ds.qk_rope_head_dim = 64;
    ds.max_position_embeddings = 163840;
    ds.dtype = "fp8";
    ds.source = "deepseek-ai/DeepSeek-V3 config.json and technical report (671B total, 37B active)";
    v.push_back(ds);
    return v;
  }();
  return presets;
}

const std::vector<GpuSpec>& gpu_presets() {
  static const std::vector<GpuSpec> presets = [] {
    std::vector<GpuSpec> v;
    const double MiB = 1024.0 * 1024.0;
    // Memory sizes are what nvidia-smi reports as total (MiB), which is what the engine sees.
    // Compute peaks are dense (no sparsity) tensor-core rates from NVIDIA datasheets.
    v.push_back(
        {"A100-80GB", 81920 * MiB, 2.039e12, 312e12, 0.0, 624e12, 600e9 / 2, 5e-6, 32e9,
         "NVIDIA A100 datasheet (SXM4 80GB): 2,039 GB/s HBM2e, 312 TFLOP/s bf16, no fp8, 624 TOPS "
         "int8; "
         "NVLink3 600 GB/s total (300 GB/s each way), PCIe Gen4"});
    v.push_back(
        {"H100-SXM", 81559 * MiB, 3.35e12, 989.4e12, 1978.9e12, 1978.9e12, 900e9 / 2, 5e-6, 64e9,
         "NVIDIA H100 datasheet (SXM5 80GB): 3.35 TB/s HBM3, 989 TFLOP/s bf16, 1,979 fp8 and int8; "
         "NVLink4 900 GB/s total, PCIe Gen5"});
    v.push_back({"H200-SXM", 143771 * MiB, 4.8e12, 989.4e12, 1978.9e12, 1978.9e12, 900e9 / 2, 5e-6,
                 64e9,
                 "NVIDIA H200 datasheet (SXM 141GB): 4.8 TB/s HBM3e, compute as H100 SXM; "
                 "NVLink4 900 GB/s total, PCIe Gen5"});
    v.push_back({"L40S", 46068 * MiB, 864e9, 362.05e12, 733e12, 733e12, 32e9, 10e-6, 32e9,
                 "NVIDIA L40S datasheet: 48 GB GDDR6 at 864 GB/s, 362 TFLOP/s bf16 and 733 fp8 "
                 "and int8 dense; no NVLink, peers over PCIe Gen4"});
    v.push_back(
        {"RTX-4090", 25250627584.0, 1008e9, 165.2e12, 330.3e12, 660.6e12, 25e9, 10e-6, 25e9,
         "NVIDIA Ada whitepaper (RTX 4090): 1,008 GB/s GDDR6X, 165.2 TFLOP/s bf16 and 330.3 "
         "fp8 dense (660.6 TOPS int8) with fp32 accumulate; memory as torch reports it in the vLLM "
         "0.19 run "
         "of shared/reference/validation; PCIe Gen4"});
    return v;
  }();
  return presets;
}

}  // namespace kvfleet::sim
