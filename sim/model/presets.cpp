#include "sim/model/presets.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace kvfleet::sim {

const std::vector<std::string_view> kKvDtypes = {"bf16",     "fp16", "fp8",  "fp8_e4m3",
                                                 "fp8_e5m2", "int8", "int4", "nvfp4"};
const std::vector<std::string_view> kWeightDtypes = [] {
  std::vector<std::string_view> v = kKvDtypes;
  v.push_back("mxfp4");
  return v;
}();

std::vector<std::string_view> with_auto(const std::vector<std::string_view>& formats) {
  std::vector<std::string_view> v = {"auto"};
  v.insert(v.end(), formats.begin(), formats.end());
  return v;
}

double weight_dtype_bytes(const std::string& d) {
  if (d == "int8") return 1.0;
  if (d == "int4") return 0.5 + 4.0 / 128;
  return dtype_bytes(d);
}

namespace {
bool is_fp4(const std::string& d) { return d == "nvfp4" || d == "mxfp4"; }
}  // namespace

double stage_weight_params(const ModelSpec& m, int stages) {
  if (stages <= 1) return m.num_params;
  const double embed = static_cast<double>(m.vocab_size) * m.hidden_size;
  return std::max(0.0, m.num_params - 2.0 * embed) * stage_layers(m, stages) / m.num_layers + embed;
}

double gemm_peak_flops(const GpuSpec& gpu, const std::string& d) {
  if ((d == "fp8" || d == "fp8_e4m3" || d == "fp8_e5m2") && gpu.fp8_flops > 0) return gpu.fp8_flops;
  if (d == "int8" && gpu.int8_flops > 0) return gpu.int8_flops;
  if (is_fp4(d) && gpu.fp4_flops > 0) return gpu.fp4_flops;
  return gpu.bf16_flops;
}

// Bytes per element, scale overhead included. fp8 uses per-tensor scales (vLLM's fp8 KV cache),
// negligible per element. int8 is symmetric with one fp16 scale per group of 64 elements; int4 is
// asymmetric with an fp16 scale and an fp16 zero point per group of 64 (KIVI-style grouping).
// nvfp4: e2m1 values with an e4m3 scale per 16 (NVIDIA's NVFP4); mxfp4: e2m1 with an e8m0 scale
// per 32 (OCP Microscaling spec v1.0).
double dtype_bytes(const std::string& d) {
  if (d == "bf16" || d == "fp16") return 2.0;
  if (d == "fp8" || d == "fp8_e4m3" || d == "fp8_e5m2") return 1.0;
  if (d == "int8") return 1.0 + 2.0 / 64;
  if (d == "int4") return 0.5 + 4.0 / 64;
  if (d == "nvfp4") return 0.5 + 1.0 / 16;
  if (d == "mxfp4") return 0.5 + 1.0 / 32;
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
  if (num_experts > 0) {
    if (experts_per_token <= 0 || experts_per_token > num_experts)
      r.fail_key("experts_per_token",
                 "must be from 1 to num_experts (" + std::to_string(num_experts) + ")");
    if (moe_intermediate_size <= 0) r.fail_key("moe_intermediate_size", "must be > 0 for MoE");
    if (first_dense_layers >= num_layers)
      r.fail_key("first_dense_layers",
                 "must be below num_layers (" + std::to_string(num_layers) + ")");
    if (routed_expert_params() >= num_params)
      r.fail_key("num_params", "must exceed the routed experts' parameters (" +
                                   std::to_string(routed_expert_params() / 1e9) + "B)");
    // Shared experts are priced as part of num_params (every token uses them, as it does the
    // attention and dense layers): they must fit in it beside the routed ones.
    const double shared = static_cast<double>(moe_layers()) * num_shared_experts * expert_params();
    if (num_shared_experts > 0 && routed_expert_params() + shared >= num_params)
      r.fail_key("num_shared_experts", "its experts (" + std::to_string(shared / 1e9) +
                                           "B parameters) and the routed ones exceed num_params (" +
                                           std::to_string(num_params / 1e9) +
                                           "B); shared experts are priced as part of num_params");
  } else if (experts_per_token > 0 || moe_intermediate_size > 0 || num_shared_experts > 0) {
    r.fail_key("num_experts", "must be > 0 when expert sizes are given");
  }
}

void ModelSpec::read_hf(config::Reader& r) {
  try {
    ModelSpec m = read_hf_config(hf_config, name);
    m.hf_config = hf_config;
    *this = std::move(m);
  } catch (const InputError& e) {
    r.fail_key("hf_config", e.what());
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

ModelSpec moe(ModelSpec m, std::string arch, int experts, int top_k, int expert_inter,
              int shared = 0, int dense_layers = 0) {
  m.architecture = std::move(arch);
  m.num_experts = experts;
  m.experts_per_token = top_k;
  m.moe_intermediate_size = expert_inter;
  m.num_shared_experts = shared;
  m.first_dense_layers = dense_layers;
  return m;
}

ModelSpec arch(ModelSpec m, std::string a) {
  m.architecture = std::move(a);
  return m;
}

// A preset from its Hugging Face config.json, read by model_from_hf_config like a user's.
ModelSpec from_config(const char* name, const char* repo, const char* json) {
  ModelSpec m =
      model_from_hf_config(nlohmann::json::parse(json), std::string(repo) + " config.json", name);
  char count[48];
  if (m.moe())
    std::snprintf(count, sizeof count, "%.1fB (%.1fB active)", m.num_params / 1e9,
                  m.active_params() / 1e9);
  else
    std::snprintf(count, sizeof count, "%.2fB", m.num_params / 1e9);
  m.source = std::string(repo) + " config.json (its shapes and precision); " + count +
             " parameters counted from them";
  return m;
}

void add_dense_presets(std::vector<ModelSpec>& v) {
  v.push_back(from_config("Llama-3-8B", "meta-llama/Meta-Llama-3-8B", R"({
    "model_type": "llama", "hidden_act": "silu", "hidden_size": 4096,
    "intermediate_size": 14336, "max_position_embeddings": 8192, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "rope_theta": 500000.0,
    "tie_word_embeddings": false, "torch_dtype": "bfloat16", "vocab_size": 128256})"));
  v.push_back(from_config("Llama-3.1-8B", "meta-llama/Llama-3.1-8B", R"({
    "model_type": "llama", "hidden_act": "silu", "hidden_size": 4096,
    "intermediate_size": 14336, "max_position_embeddings": 131072, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "rope_theta": 500000.0,
    "rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "tie_word_embeddings": false, "torch_dtype": "bfloat16", "vocab_size": 128256})"));
  v.push_back(from_config("Llama-3-70B", "meta-llama/Meta-Llama-3-70B", R"({
    "model_type": "llama", "hidden_act": "silu", "hidden_size": 8192,
    "intermediate_size": 28672, "max_position_embeddings": 8192, "num_attention_heads": 64,
    "num_hidden_layers": 80, "num_key_value_heads": 8, "rope_theta": 500000.0,
    "tie_word_embeddings": false, "torch_dtype": "bfloat16", "vocab_size": 128256})"));
  v.push_back(from_config("Llama-2-7B", "meta-llama/Llama-2-7b-hf", R"({
    "model_type": "llama", "hidden_act": "silu", "hidden_size": 4096,
    "intermediate_size": 11008, "max_position_embeddings": 4096, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 32, "rope_scaling": null,
    "tie_word_embeddings": false, "torch_dtype": "float16", "vocab_size": 32000})"));
  v.push_back(arch(gqa("Mistral-7B", 32, 4096, 32, 8, 128, 14336, 32000, 7.24e9, 32768,
                       "mistralai/Mistral-7B-v0.1 config.json; 7.24B parameters"),
                   "mistral"));
  // Qwen2.5-7B: not yet given as its config.json, whose max_position_embeddings (131,072) differs
  // from the 32,768 this preset has always used (the context its model card gives).
  v.push_back(arch(gqa("Qwen2.5-7B", 28, 3584, 28, 4, 128, 18944, 152064, 7.62e9, 32768,
                       "Qwen/Qwen2.5-7B config.json; 7.62B parameters"),
                   "qwen2"));
  v.push_back(from_config("Llama-3.1-70B", "meta-llama/Llama-3.1-70B", R"({
    "model_type": "llama", "hidden_act": "silu", "hidden_size": 8192,
    "intermediate_size": 28672, "max_position_embeddings": 131072, "num_attention_heads": 64,
    "num_hidden_layers": 80, "num_key_value_heads": 8, "rope_theta": 500000.0,
    "rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "tie_word_embeddings": false, "torch_dtype": "bfloat16", "vocab_size": 128256})"));
  v.push_back(from_config("Llama-2-70B", "meta-llama/Llama-2-70b-hf", R"({
    "model_type": "llama", "hidden_act": "silu", "hidden_size": 8192,
    "intermediate_size": 28672, "max_position_embeddings": 4096, "num_attention_heads": 64,
    "num_hidden_layers": 80, "num_key_value_heads": 8, "rope_scaling": null,
    "tie_word_embeddings": false, "torch_dtype": "float16", "vocab_size": 32000})"));
  v.push_back(from_config("CodeLlama-34B", "codellama/CodeLlama-34b-Instruct-hf", R"({
    "model_type": "llama", "hidden_act": "silu", "hidden_size": 8192,
    "intermediate_size": 22016, "max_position_embeddings": 16384, "num_attention_heads": 64,
    "num_hidden_layers": 48, "num_key_value_heads": 8, "rope_theta": 1000000,
    "tie_word_embeddings": false, "torch_dtype": "bfloat16", "vocab_size": 32000})"));
  v.push_back(from_config("Llama-3.3-70B", "meta-llama/Llama-3.3-70B-Instruct", R"({
    "model_type": "llama", "hidden_act": "silu", "hidden_size": 8192,
    "intermediate_size": 28672, "max_position_embeddings": 131072, "num_attention_heads": 64,
    "num_hidden_layers": 80, "num_key_value_heads": 8,
    "rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "tie_word_embeddings": false, "torch_dtype": "bfloat16", "vocab_size": 128256})"));
  v.push_back(from_config("Qwen3-14B", "Qwen/Qwen3-14B", R"({
    "model_type": "qwen3", "hidden_act": "silu", "hidden_size": 5120, "head_dim": 128,
    "intermediate_size": 17408, "max_position_embeddings": 40960, "num_attention_heads": 40,
    "num_hidden_layers": 40, "num_key_value_heads": 8, "rope_theta": 1000000,
    "sliding_window": null, "use_sliding_window": false, "tie_word_embeddings": false,
    "torch_dtype": "bfloat16", "vocab_size": 151936})"));
  v.push_back(from_config("Qwen3-8B", "Qwen/Qwen3-8B", R"({
    "model_type": "qwen3", "hidden_act": "silu", "hidden_size": 4096, "head_dim": 128,
    "intermediate_size": 12288, "max_position_embeddings": 40960, "num_attention_heads": 32,
    "num_hidden_layers": 36, "num_key_value_heads": 8, "rope_theta": 1000000,
    "sliding_window": null, "use_sliding_window": false, "tie_word_embeddings": false,
    "torch_dtype": "bfloat16", "vocab_size": 151936})"));
  v.push_back(from_config("Qwen3-32B", "Qwen/Qwen3-32B", R"({
    "model_type": "qwen3", "hidden_act": "silu", "hidden_size": 5120, "head_dim": 128,
    "intermediate_size": 25600, "max_position_embeddings": 40960, "num_attention_heads": 64,
    "num_hidden_layers": 64, "num_key_value_heads": 8, "rope_theta": 1000000,
    "sliding_window": null, "use_sliding_window": false, "tie_word_embeddings": false,
    "torch_dtype": "bfloat16", "vocab_size": 151936})"));
}

void add_moe_presets(std::vector<ModelSpec>& v) {
  // Mixture-of-experts models: intermediate_size is the dense MLP (unused where every layer
  // is MoE), moe_intermediate_size one expert's FFN width.
  v.push_back(from_config("Qwen3-30B-A3B", "Qwen/Qwen3-30B-A3B-Instruct-2507", R"({
    "model_type": "qwen3_moe", "hidden_act": "silu", "hidden_size": 2048, "head_dim": 128,
    "intermediate_size": 6144, "moe_intermediate_size": 768, "max_position_embeddings": 262144,
    "num_attention_heads": 32, "num_hidden_layers": 48, "num_key_value_heads": 4,
    "num_experts": 128, "num_experts_per_tok": 8, "decoder_sparse_step": 1,
    "mlp_only_layers": [], "norm_topk_prob": true, "rope_theta": 10000000,
    "sliding_window": null, "use_sliding_window": false, "tie_word_embeddings": false,
    "torch_dtype": "bfloat16", "vocab_size": 151936})"));
  v.push_back(from_config("Qwen3-235B-A22B", "Qwen/Qwen3-235B-A22B", R"({
    "model_type": "qwen3_moe", "hidden_act": "silu", "hidden_size": 4096, "head_dim": 128,
    "intermediate_size": 12288, "moe_intermediate_size": 1536, "max_position_embeddings": 40960,
    "num_attention_heads": 64, "num_hidden_layers": 94, "num_key_value_heads": 4,
    "num_experts": 128, "num_experts_per_tok": 8, "decoder_sparse_step": 1,
    "mlp_only_layers": [], "norm_topk_prob": true, "rope_theta": 1000000,
    "sliding_window": null, "use_sliding_window": false, "tie_word_embeddings": false,
    "torch_dtype": "bfloat16", "vocab_size": 151936})"));
  v.push_back(from_config("Mixtral-8x7B", "mistralai/Mixtral-8x7B-v0.1", R"({
    "model_type": "mixtral", "hidden_act": "silu", "hidden_size": 4096,
    "intermediate_size": 14336, "max_position_embeddings": 32768, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "num_local_experts": 8,
    "num_experts_per_tok": 2, "rope_theta": 1000000.0, "sliding_window": null,
    "tie_word_embeddings": false, "torch_dtype": "bfloat16", "vocab_size": 32000})"));
  // gpt-oss: experts in MXFP4 (4.25 bits per weight, 0.53 bytes); attention and embeddings
  // (about 3% of the parameters) are bf16 in the release, priced as mxfp4 with the rest.
  const auto gpt_oss = [](std::string name, int layers, int experts, double params, double active,
                          std::string source) {
    ModelSpec g = moe(gqa(std::move(name), layers, 2880, 64, 8, 64, 2880, 201088, params, 131072,
                          std::move(source)),
                      "gpt_oss", experts, 4, 2880);
    g.dtype = "mxfp4";
    g.num_active_params = active;
    return g;
  };
  v.push_back(gpt_oss("gpt-oss-20b", 24, 32, 20.9e9, 3.61e9,
                      "openai/gpt-oss-20b config.json (32 experts, 4 per token, expert FFN 2880, "
                      "MXFP4 experts); 20.9B parameters, 3.6B active"));
  v.push_back(gpt_oss("gpt-oss-120b", 36, 128, 116.8e9, 5.13e9,
                      "openai/gpt-oss-120b config.json (128 experts, 4 per token, expert FFN "
                      "2880, MXFP4 experts); 116.8B parameters, 5.1B active"));
  // DeepSeek-V3: MLA (kv_lora_rank 512, rope 64), the first three layers dense, then 256 routed
  // experts (8 per token) and one shared; weights in fp8 (block-wise). The multi-token
  // prediction layer (num_nextn_predict_layers) is not served by default and not counted.
  v.push_back(from_config("DeepSeek-V3", "deepseek-ai/DeepSeek-V3", R"({
    "model_type": "deepseek_v3", "hidden_act": "silu", "hidden_size": 7168,
    "intermediate_size": 18432, "moe_intermediate_size": 2048, "max_position_embeddings": 163840,
    "num_attention_heads": 128, "num_hidden_layers": 61, "num_key_value_heads": 128,
    "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8,
    "first_k_dense_replace": 3, "moe_layer_freq": 1, "kv_lora_rank": 512, "q_lora_rank": 1536,
    "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
    "num_nextn_predict_layers": 1, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
    "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3",
                            "quant_method": "fp8", "weight_block_size": [128, 128]},
    "vocab_size": 129280})"));
}

}  // namespace

const std::vector<ModelSpec>& model_presets() {
  static const std::vector<ModelSpec> presets = [] {
    std::vector<ModelSpec> v;
    // Hugging Face config.json of each model; parameter counts from the model cards.
    // Every preset is its Hugging Face config.json (the shapes and precision it publishes), read
    // by model_from_hf_config like a user's: the parameter count is counted from the shapes.
    // Mistral-7B-v0.1 (a 4,096-token sliding window, which kvfleet does not model: priced as full
    // attention) and gpt-oss (sliding-window layers, MXFP4 experts) are given by hand below.
    add_dense_presets(v);
    add_moe_presets(v);
    return v;
  }();
  return presets;
}

namespace {

const double MiB = 1024.0 * 1024.0;

// Ampere, Ada, Hopper and the RTX PRO 6000: memory sizes are what nvidia-smi reports as total
// (MiB), which is what the engine sees; compute peaks are dense (no sparsity) tensor-core rates
// from the vendors' datasheets.
void add_gpus_to_hopper(std::vector<GpuSpec>& v) {
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
  v.push_back(
      {"H100-PCIe", 81559 * MiB, 2.0e12, 756e12, 1513e12, 1513e12, 64e9, 10e-6, 64e9,
       "NVIDIA H100 datasheet (PCIe 80GB): 2 TB/s HBM2e, 756 TFLOP/s bf16, 1,513 fp8 and int8 "
       "dense (half the sparse figures); peers over PCIe Gen5 x16 (an NVLink bridge, where "
       "fitted, joins pairs only)"});
  v.push_back(
      {"H100-NVL", 95830 * MiB, 3.9e12, 835e12, 1671e12, 1671e12, 600e9 / 2, 5e-6, 64e9,
       "NVIDIA H100 datasheet (H100 NVL, 94 GB): 3.9 TB/s HBM3, 835 TFLOP/s bf16, 1,671 fp8 "
       "and int8 dense (half the sparse figures); NVLink bridge 600 GB/s total, PCIe Gen5"});
  v.push_back(
      {"A100-40GB", 40960 * MiB, 1.555e12, 312e12, 0.0, 624e12, 600e9 / 2, 5e-6, 32e9,
       "NVIDIA A100 datasheet (SXM4 40GB): 1,555 GB/s HBM2, 312 TFLOP/s bf16, no fp8, 624 TOPS "
       "int8; NVLink3 600 GB/s total, PCIe Gen4"});
  v.push_back({"L40S", 46068 * MiB, 864e9, 362.05e12, 733e12, 733e12, 32e9, 10e-6, 32e9,
               "NVIDIA L40S datasheet: 48 GB GDDR6 at 864 GB/s, 362 TFLOP/s bf16 and 733 fp8 "
               "and int8 dense; no NVLink, peers over PCIe Gen4"});
  v.push_back({"L40", 46068 * MiB, 864e9, 181.05e12, 362.1e12, 362.1e12, 32e9, 10e-6, 32e9,
               "NVIDIA L40 datasheet: 48 GB GDDR6 at 864 GB/s, 181 TFLOP/s bf16 and 362 fp8 "
               "and int8 dense (half the sparse figures); no NVLink, peers over PCIe Gen4"});
  v.push_back({"L4", 23034 * MiB, 300e9, 121e12, 242.5e12, 242.5e12, 32e9, 10e-6, 32e9,
               "NVIDIA L4 datasheet: 24 GB GDDR6 at 300 GB/s, 121 TFLOP/s bf16 and 242.5 fp8 "
               "and int8 dense (half the sparse figures); peers over PCIe Gen4"});
  v.push_back(
      {"RTX-4090", 25250627584.0, 1008e9, 165.2e12, 330.3e12, 660.6e12, 25e9, 10e-6, 25e9,
       "NVIDIA Ada whitepaper (RTX 4090): 1,008 GB/s GDDR6X, 165.2 TFLOP/s bf16 and 330.3 "
       "fp8 dense (660.6 TOPS int8) with fp32 accumulate; memory as torch reports it in the vLLM "
       "0.19 run "
       "of shared/reference/validation; PCIe Gen4"});
  v.push_back(
      {"RTX-PRO-6000", 97887 * MiB, 1597e9, 503.8e12, 1007.6e12, 1007.6e12, 64e9, 10e-6, 64e9,
       "NVIDIA RTX PRO 6000 Blackwell Server Edition datasheet: 96 GB GDDR7 at 1,597 GB/s; "
       "4 PFLOPS fp4 with sparsity, i.e. 2,015 fp4, 1,007.6 TFLOP/s fp8 and 503.8 bf16 dense; "
       "no NVLink, peers and host over PCIe Gen5 x16 (64 GB/s each way)",
       2015.2e12});
}

// Blackwell, Blackwell Ultra and AMD Instinct, with their fp4 rates where they have them.
void add_gpus_from_blackwell(std::vector<GpuSpec>& v) {
  // Dense fp4 rates (NVFP4/MXFP4) where a GPU has them: set after the others, in fp4().
  const auto fp4 = [](GpuSpec g, double flops) {
    g.fp4_flops = flops;
    return g;
  };
  v.push_back(
      fp4({"B200", 183359 * MiB, 8e12, 2250e12, 4500e12, 4500e12, 1800e9 / 2, 5e-6, 64e9,
           "NVIDIA HGX B200 datasheet (per GPU): 180 GB HBM3e at 8 TB/s, 2.25 PFLOP/s bf16, 4.5 "
           "fp8 and int8 and 9 fp4 dense (72 PFLOPS fp4 per 8-GPU board); NVLink5 1.8 TB/s total, "
           "PCIe Gen5"},
          9000e12));
  v.push_back(
      fp4({"B300", 288e9, 8e12, 2250e12, 4500e12, 0.0, 1800e9 / 2, 5e-6, 128e9,
           "NVIDIA HGX B300 (Blackwell Ultra) per GPU, as tabulated at "
           "glennklockwood.com/garden/processors/B300 from NVIDIA's HGX specifications: 288 GB "
           "HBM3e (12-high) at 8 TB/s, 2.25 PFLOP/s bf16, 4.5 fp8 and 13.125 fp4 dense (105 "
           "PFLOPS fp4 per 8-GPU board); int8 rates differ between sources (Blackwell Ultra cuts "
           "them): int8 GEMMs at the bf16 rate; memory nominal (the driver reports a little less); "
           "NVLink5 1.8 TB/s total, PCIe Gen6"},
          13125e12));
  v.push_back(
      fp4({"GB200", 186e9, 8e12, 2500e12, 5000e12, 5000e12, 1800e9 / 2, 5e-6, 450e9,
           "NVIDIA GB200 NVL72 specifications, per GPU (the rack's 72): 186 GB HBM3e (13.4 TB per "
           "rack; MLPerf Inference v6.1 system descriptions list 186 GB) at 8 TB/s, 2.5 PFLOP/s "
           "bf16, 5 fp8 and int8 and 10 fp4 dense (half the sparse figures); NVLink5 1.8 TB/s "
           "total; NVLink-C2C to the Grace CPU, 900 GB/s total"},
          10000e12));
  v.push_back(
      fp4({"GB300", 20e12 / 72, 8e12, 2500e12, 5000e12, 0.0, 1800e9 / 2, 5e-6, 450e9,
           "NVIDIA GB300 NVL72 specifications, per GPU, as tabulated at "
           "glennklockwood.com/garden/processors/B300: 20 TB HBM3e per 72 GPUs at 576 TB/s (278 "
           "GB at 8 TB/s each), 1.1 EFLOPS fp4 dense per rack (15 per GPU), 360 PFLOPS fp8 (5 per "
           "GPU), bf16 2.5 dense as GB200; int8 cut on Blackwell Ultra: int8 GEMMs at the bf16 "
           "rate; NVLink5 1.8 TB/s total; NVLink-C2C to the Grace CPU, 900 GB/s total"},
          15000e12));
  v.push_back({"H20", 96e9, 4.0e12, 148e12, 296e12, 296e12, 900e9 / 2, 5e-6, 64e9,
               "NVIDIA H20 (Hopper for the Chinese market) as listed at "
               "willitrunai.com/es/gpus/h20-96gb: 96 GB HBM3 at 4.0 TB/s, 148 TFLOP/s bf16 and 296 "
               "fp8 and int8 dense; NVLink4 900 GB/s total, PCIe Gen5; memory nominal"});
  v.push_back(
      {"MI300X", 196608 * MiB, 5.3e12, 1307.4e12, 2614.9e12, 2614.9e12, 448e9, 10e-6, 64e9,
       "AMD Instinct MI300X datasheet: 192 GB HBM3 at 5.3 TB/s, 1,307.4 TFLOP/s bf16 and "
       "2,614.9 fp8 and int8 dense; Infinity Fabric 7 links x 64 GB/s each way to the other "
       "seven GPUs of a node, PCIe Gen5"});
  v.push_back(
      {"MI325X", 256e9, 6e12, 1307.4e12, 2614.9e12, 2614.9e12, 448e9, 10e-6, 64e9,
       "AMD Instinct MI325X datasheet: 256 GB HBM3E at 6 TB/s, the MI300X's compute (1,307.4 "
       "TFLOP/s bf16 and 2,614.9 fp8 and int8 dense); Infinity Fabric as MI300X, PCIe Gen5; "
       "memory nominal"});
  v.push_back(fp4(
      {"MI355X", 288e9, 8e12, 2500e12, 5000e12, 5000e12, 448e9, 10e-6, 64e9,
       "AMD Instinct MI355X (CDNA 4): 288 GB HBM3E at 8 TB/s "
       "(aiwiki.ai/wiki/amd_instinct_mi355x), "
       "5 PFLOP/s fp8 dense (AMD at ISSCC 2026, as reported by world-today-news.com/?p=7253162), "
       "2.5 bf16 and 10 MXFP4 dense (theregister.com/2025/06/12/amd_mi355x); Infinity Fabric "
       "as MI300X, PCIe Gen5; memory nominal"},
      10000e12));
}

}  // namespace

const std::vector<GpuSpec>& gpu_presets() {
  static const std::vector<GpuSpec> presets = [] {
    std::vector<GpuSpec> v;
    add_gpus_to_hopper(v);
    add_gpus_from_blackwell(v);
    return v;
  }();
  return presets;
}

const std::vector<GpuListPrice>& gpu_list_prices() {
  // RunPod's on-demand rates in March 2026 as DeployBase reports them, one provider for every
  // preset it lists: deploybase.ai/articles/best-gpu-for-llm-training ("RunPod On-Demand, from
  // RunPod's official API as of March 21, 2026": A100 SXM, H100 SXM, H200, B200, RTX 4090),
  // deploybase.ai/articles/nvidia-l40s-price (L40S, March 2026) and
  // deploybase.ai/articles/runpod-gpu-pricing (RTX PRO 6000, March 10, 2026, the column whose
  // other rates are those above). No source lists an MI300X at RunPod: no default.
  static const std::vector<GpuListPrice> prices = [] {
    const std::string runpod = "RunPod on-demand, March 2026 (DeployBase, ";
    return std::vector<GpuListPrice>{
        {"A100-80GB", 1.39, runpod + "deploybase.ai/articles/best-gpu-for-llm-training)"},
        {"H100-SXM", 2.69, runpod + "deploybase.ai/articles/best-gpu-for-llm-training)"},
        {"H200-SXM", 3.59, runpod + "deploybase.ai/articles/best-gpu-for-llm-training)"},
        {"B200", 5.98, runpod + "deploybase.ai/articles/best-gpu-for-llm-training)"},
        {"RTX-4090", 0.34, runpod + "deploybase.ai/articles/best-gpu-for-llm-training)"},
        {"L40S", 0.79, runpod + "deploybase.ai/articles/nvidia-l40s-price)"},
        {"RTX-PRO-6000", 0.89, runpod + "deploybase.ai/articles/runpod-gpu-pricing)"},
    };
  }();
  return prices;
}

const GpuListPrice* gpu_list_price(const std::string& gpu) {
  for (const auto& p : gpu_list_prices())
    if (p.gpu == gpu) return &p;
  return nullptr;
}

}  // namespace kvfleet::sim
