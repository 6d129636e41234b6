#pragma once
// Model and GPU descriptions, with built-in presets whose sources are noted beside each entry in
// presets.cpp. A scenario names a preset or declares its own under `models:` / `gpus:`.
#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include <nlohmann/json_fwd.hpp>
#include <vector>

#include "sim/config/params.h"

namespace kvfleet::sim {

// Bytes per element of a numeric format used for weights or KV.
double dtype_bytes(const std::string& dtype);
// The formats accepted for KV: bf16, fp16, fp8, fp8_e4m3, fp8_e5m2, int8, int4, nvfp4.
extern const std::vector<std::string_view> kKvDtypes;
// The formats accepted for weights: the KV formats and mxfp4.
extern const std::vector<std::string_view> kWeightDtypes;
// `formats` with "auto" in front (a scenario key's choices).
std::vector<std::string_view> with_auto(const std::vector<std::string_view>& formats);
// Bytes per stored weight element: bf16/fp16 2, fp8 1, int8 1 (per-channel scales, negligible),
// int4 0.5 + an fp16 scale and zero point per group of 128 (GPTQ/AWQ defaults); nvfp4 0.5 + an
// fp8 (e4m3) scale per 16 elements; mxfp4 0.5 + an 8-bit (e8m0) scale per 32 (OCP MX).
double weight_dtype_bytes(const std::string& weight_dtype);

struct ModelSpec {
  std::string name;
  std::string attention = "gqa";  // gqa (covers MHA and MQA) or mla
  int num_layers = 0;
  int hidden_size = 0;
  int num_attention_heads = 0;
  int num_kv_heads = 0;  // gqa only
  int head_dim = 0;
  int intermediate_size = 0;  // dense MLP width (SwiGLU: gate, up and down projections)
  int vocab_size = 0;
  double num_params = 0;         // all parameters
  double num_active_params = 0;  // parameters used per token (MoE); 0 = num_params
  int kv_lora_rank = 0;          // mla: compressed latent KV width
  int qk_rope_head_dim = 0;      // mla: decoupled rotary key width
  int max_position_embeddings = 0;
  std::string dtype = "bf16";  // native weight precision
  std::string source;          // where the numbers come from
  std::string hf_config;       // a Hugging Face config.json the fields were read from
  // The Hugging Face model_type (llama, qwen3, qwen3_moe, mixtral, deepseek_v3, gpt_oss): a
  // calibration profile of another architecture is refused. Empty = not checked.
  std::string architecture;
  // Mixture of experts (0 experts = a dense model). Each MoE layer routes every token to
  // experts_per_token of num_experts routed experts (SwiGLU FFNs of moe_intermediate_size) plus
  // num_shared_experts that every token uses; the first first_dense_layers layers keep a dense
  // MLP of intermediate_size (DeepSeek-V3: 3).
  int num_experts = 0;
  int experts_per_token = 0;
  int moe_intermediate_size = 0;
  int num_shared_experts = 0;
  int first_dense_layers = 0;

  template <class V>
  void visit(V& v) {
    v.param("name", name, {.desc = "model name, used by pools[].model", .required = true});
    v.param("hf_config", hf_config,
            {.desc = "a Hugging Face config.json (or the folder holding it) to read the model "
                     "from: its shapes, attention kind, experts, precision and parameter count; "
                     "keys given here beside it override what it says, and the keys marked "
                     "required are not",
             .path = true});
    if constexpr (std::is_same_v<V, config::Reader>) {
      if (!hf_config.empty()) read_hf(v);
    }
    // With a config.json every shape comes from it.
    const bool need = hf_config.empty();
    v.param("attention", attention,
            {.desc = "attention kind: gqa (also MHA, MQA) or mla (latent KV, DeepSeek)",
             .choices = {"gqa", "mla"}});
    v.param("num_layers", num_layers, {.unit = "layers", .positive = true, .required = need});
    v.param("hidden_size", hidden_size, {.unit = "elements", .positive = true, .required = need});
    v.param("num_attention_heads", num_attention_heads,
            {.unit = "heads", .positive = true, .required = need});
    v.param("num_kv_heads", num_kv_heads, {.unit = "heads", .desc = "KV heads (gqa)", .min = 0});
    v.param("head_dim", head_dim, {.unit = "elements", .positive = true, .required = need});
    v.param("intermediate_size", intermediate_size,
            {.unit = "elements", .desc = "MLP width", .positive = true, .required = need});
    v.param("vocab_size", vocab_size, {.unit = "tokens", .positive = true, .required = need});
    v.param("num_params", num_params, {.unit = "parameters", .positive = true, .required = need});
    v.param("num_active_params", num_active_params,
            {.unit = "parameters",
             .desc = "parameters used per token (MoE); 0 = num_params",
             .min = 0});
    v.param("kv_lora_rank", kv_lora_rank,
            {.unit = "elements", .desc = "mla latent width", .min = 0});
    v.param("qk_rope_head_dim", qk_rope_head_dim,
            {.unit = "elements", .desc = "mla rotary key width", .min = 0});
    v.param("max_position_embeddings", max_position_embeddings,
            {.unit = "tokens",
             .desc = "longest context the model supports",
             .positive = true,
             .required = need});
    v.param("dtype", dtype, {.desc = "native weight precision", .choices = kWeightDtypes});
    v.param("source", source, {.desc = "where the numbers come from"});
    v.param("architecture", architecture,
            {.desc = "Hugging Face model_type (llama, qwen3, qwen3_moe, mixtral, deepseek_v3, "
                     "gpt_oss); a calibration profile of another architecture is refused; empty = "
                     "not checked"});
    v.param("num_experts", num_experts,
            {.unit = "experts", .desc = "routed experts per MoE layer; 0 = dense model", .min = 0});
    v.param("experts_per_token", experts_per_token,
            {.unit = "experts", .desc = "routed experts each token uses (top-k)", .min = 0});
    v.param("moe_intermediate_size", moe_intermediate_size,
            {.unit = "elements", .desc = "width of one expert's SwiGLU FFN", .min = 0});
    v.param("num_shared_experts", num_shared_experts,
            {.unit = "experts",
             .desc = "experts of moe_intermediate_size every token uses (DeepSeek); priced "
                     "as part of num_params, which must hold them beside the routed experts",
             .min = 0});
    v.param("first_dense_layers", first_dense_layers,
            {.unit = "layers",
             .desc = "leading layers with a dense MLP of intermediate_size instead of experts",
             .min = 0});
  }
  void check(config::Reader& r) const;
  // Fills every field but name from hf_config (model_from_hf_config), failing on key hf_config.
  void read_hf(config::Reader& r);

  bool moe() const { return num_experts > 0; }
  int moe_layers() const { return moe() ? std::max(0, num_layers - first_dense_layers) : 0; }
  // Parameters of one expert (gate, up and down projections).
  double expert_params() const { return 3.0 * hidden_size * moe_intermediate_size; }
  // Parameters of all routed experts of all layers (sharded over the expert-parallel GPUs).
  double routed_expert_params() const {
    return static_cast<double>(moe_layers()) * num_experts * expert_params();
  }
  // Parameters used per token: num_active_params when given, else computed from the experts.
  double active_params() const {
    if (num_active_params > 0) return num_active_params;
    if (!moe()) return num_params;
    return num_params -
           static_cast<double>(moe_layers()) * (num_experts - experts_per_token) * expert_params();
  }
  // Bytes of KV cache per token for the whole model (all layers, all GPUs together).
  double kv_bytes_per_token(double kv_elem_bytes) const;
};

struct GpuSpec {
  std::string name;
  double memory_bytes = 0;            // as reported by the driver (cudaMemGetInfo total)
  double memory_bandwidth_Bps = 0;    // HBM/GDDR peak, bytes/s
  double bf16_flops = 0;              // dense tensor-core peak, FLOP/s
  double fp8_flops = 0;               // dense fp8 peak, FLOP/s (0 = no fp8 tensor cores)
  double int8_flops = 0;              // dense int8 peak, OP/s (0 = unknown: bf16 rate used)
  double interconnect_Bps = 0;        // per-GPU bandwidth to peers for tensor parallelism, bytes/s
  double interconnect_latency_s = 0;  // per collective step
  double host_link_Bps = 0;           // to host memory (PCIe), bytes/s
  std::string source;
  double fp4_flops = 0;  // dense fp4 (NVFP4/MXFP4) peak, FLOP/s (0 = none)

  template <class V>
  void visit(V& v) {
    v.param("name", name, {.desc = "GPU name, used by pools[].gpu", .required = true});
    v.param("memory_bytes", memory_bytes,
            {.unit = "bytes",
             .desc = "device memory",
             .min = 1 << 30,
             .required = true,
             .why = "at least 1 GiB; at most 10 TB, a thousand times today's largest GPU"});
    v.param("memory_bandwidth_Bps", memory_bandwidth_Bps,
            {.unit = "bytes/s",
             .desc = "peak memory bandwidth",
             .min = 1e9,
             .required = true,
             .why = "at least 1 GB/s; at most 100 TB/s, a thousand times today's fastest memory"});
    v.param(
        "bf16_flops", bf16_flops,
        {.unit = "FLOP/s",
         .desc = "dense bf16 tensor peak",
         .min = 1e11,
         .required = true,
         .why = "at least 0.1 TFLOP/s; at most 1 EFLOP/s, a thousand times today's largest GPU"});
    v.param("fp8_flops", fp8_flops,
            {.unit = "FLOP/s", .desc = "dense fp8 peak; 0 = none", .min = 0});
    v.param("int8_flops", int8_flops,
            {.unit = "OP/s",
             .desc = "dense int8 peak; 0 = unknown (int8 GEMMs at bf16 rate)",
             .min = 0});
    v.param("fp4_flops", fp4_flops,
            {.unit = "FLOP/s",
             .desc = "dense fp4 peak (NVFP4, MXFP4: W4A4 GEMMs); 0 = none (4-bit weights at "
                     "the bf16 rate, weight-only)",
             .min = 0});
    v.param("interconnect_Bps", interconnect_Bps,
            {.unit = "bytes/s", .desc = "GPU-to-GPU bandwidth for tensor parallelism", .min = 0});
    v.param("interconnect_latency_s", interconnect_latency_s,
            {.unit = "s",
             .desc = "latency of one collective step",
             .min = 0,
             .max = 1,
             .why = "a collective step takes microseconds; a second is far beyond any link"});
    v.param("host_link_Bps", host_link_Bps,
            {.unit = "bytes/s", .desc = "GPU-host bandwidth", .min = 0});
    v.param("source", source, {.desc = "where the numbers come from"});
  }
};

// Dense tensor-core rate the linear layers run at with weights of this precision: bf16/fp16 at
// the bf16 rate; fp8 at the fp8 rate (W8A8) where the GPU has one, else the bf16 rate (weight-only
// fp8, as vLLM's Marlin kernels on Ampere); int8 at the int8 rate (W8A8) where known, else bf16;
// int4 at the bf16 rate (weight-only W4A16: dequantised inside the kernel, bf16 activations);
// nvfp4 and mxfp4 at the fp4 rate (W4A4) where the GPU has fp4 tensor cores, else the bf16 rate
// (weight-only, as vLLM's Marlin fp4 kernels on Hopper and Ampere).
double gemm_peak_flops(const GpuSpec& gpu, const std::string& weight_dtype);

// Layers on the largest of `stages` pipeline stages: ceil(layers / stages).
inline int stage_layers(const ModelSpec& m, int stages) {
  return (m.num_layers + stages - 1) / stages;
}
// Parameters one pipeline stage holds, the largest stage's: ceil(layers / stages) layers' worth of
// the non-embedding parameters plus one embedding-sized matrix (the first stage's input embedding
// or the last's lm_head); all parameters when stages is 1.
double stage_weight_params(const ModelSpec& m, int stages);

const std::vector<ModelSpec>& model_presets();

// A Hugging Face config.json (parsed; `where` names it in errors) as a model named `name`:
// dense (llama, mistral, qwen2, qwen3, granite) and mixture-of-experts (mixtral, qwen2_moe,
// qwen3_moe, deepseek_v2, deepseek_v3) decoders with grouped-query, multi-head or latent (MLA)
// attention, tied or untied embeddings, and their quantisation_config. The parameter count is
// computed from the shapes. What it cannot model (multimodal and encoder-decoder models, sliding
// window or hybrid layers, other MLPs, other architectures) is refused by name (InputError).
ModelSpec model_from_hf_config(const nlohmann::json& config, const std::string& where,
                               const std::string& name);
// The same from a file (or a folder holding config.json).
ModelSpec read_hf_config(const std::string& path, const std::string& name);
const std::vector<GpuSpec>& gpu_presets();

// What renting one GPU of a preset costs per hour, as a default for sizing (kvfleet size, the
// GUI's Sizing tab) when neither the scenario (pools[].price_per_hour) nor the user gives a
// price. Market data, not hardware: one public source for every preset, with its date; prices
// vary two to four times between providers and tiers, so a real study enters its own.
struct GpuListPrice {
  std::string gpu;
  double usd_per_hour = 0;
  std::string source;
};
const std::vector<GpuListPrice>& gpu_list_prices();
// The list price of a GPU preset by name; nullptr for a GPU without one (a custom GPU, MI300X).
const GpuListPrice* gpu_list_price(const std::string& gpu);

}  // namespace kvfleet::sim
