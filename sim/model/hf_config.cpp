// A Hugging Face config.json as a ModelSpec (presets.h: model_from_hf_config). Shapes and
// parameter counts follow the architectures' definitions in Hugging Face transformers and vLLM
// (modeling_llama, modeling_qwen2/3, modeling_mixtral, modeling_qwen3_moe, modeling_deepseek_v3):
// facts about the layers, computed here, no code of theirs.
#include <cmath>
#include <filesystem>
#include <set>
#include <string>

#include "sim/core/error.h"
#include "sim/io/input_file.h"
#include "sim/io/json.h"
#include "sim/model/presets.h"

namespace kvfleet::sim {

namespace {

// Architectures modelled, by model_type.
const std::set<std::string> kDense = {"llama", "mistral", "qwen2", "qwen3", "granite"};
const std::set<std::string> kMoe = {"mixtral", "qwen3_moe", "qwen2_moe", "deepseek_v2",
                                    "deepseek_v3"};

std::string supported() {
  std::string s;
  for (const auto* set : {&kDense, &kMoe})
    for (const auto& t : *set) s += (s.empty() ? "" : ", ") + t;
  return s;
}

// Weight precision from torch_dtype and quantization_config; refuses what it cannot price.
std::string weight_dtype(const JsonObject& c) {
  std::string d = "bf16";
  if (const auto t =
          c.string("torch_dtype").has_value() ? c.string("torch_dtype") : c.string("dtype")) {
    if (*t == "float16")
      d = "fp16";
    else if (*t == "bfloat16" || *t == "float32")
      d = "bf16";  // vLLM serves fp32 as bf16
    else
      c.fail(c.has("torch_dtype") ? "torch_dtype" : "dtype",
             "'" + *t + "' is not bfloat16, float16 or float32");
  }
  const auto q = c.object("quantization_config");
  if (!q) return d;
  const std::string method = q->need_string("quant_method");
  if (method == "fp8" || method == "fbgemm_fp8") return "fp8";
  if (method == "mxfp4") return "mxfp4";
  if (method == "modelopt" || method == "modelopt_fp4") {
    // NVIDIA ModelOpt checkpoints: quant_algo FP8 or NVFP4 (hf_quant_config.json's, copied here).
    const std::string algo =
        q->string("quant_algo").value_or(method == "modelopt_fp4" ? "NVFP4" : "");
    if (algo == "FP8") return "fp8";
    if (algo == "NVFP4") return "nvfp4";
    q->fail("quant_algo", "'" + algo + "' is not modelled (FP8, NVFP4)");
  }
  if (method == "awq" || method == "gptq" || method == "awq_marlin" || method == "gptq_marlin") {
    const auto bits = q->integer("bits", 1, 64).value_or(4);
    if (bits == 4) return "int4";
    if (bits == 8) return "int8";
    q->fail("bits", std::to_string(bits) + "-bit weights are not modelled (4 or 8)");
  }
  if (method == "compressed-tensors") {
    // The weights' scheme of the first config group: num_bits and type (int or float).
    if (const auto groups = q->object("config_groups")) {
      for (const auto& [name, g] : groups->raw().items()) {
        const JsonObject group(g, c.where(), groups->key_path(name));
        if (const auto w = group.object("weights")) {
          const auto bits = w->integer("num_bits", 1, 64).value_or(8);
          const std::string type = w->string("type").value_or("int");
          if (bits == 8) return type == "float" ? "fp8" : "int8";
          // 4-bit floats in groups of 16 are compressed-tensors' NVFP4 scheme.
          if (bits == 4) return type == "float" ? "nvfp4" : "int4";
          w->fail("num_bits", std::to_string(bits) + "-bit weights are not modelled");
        }
      }
    }
    q->fail("config_groups", "no weights scheme to price (compressed-tensors)");
  }
  q->fail("quant_method", "'" + method +
                              "' is not modelled (fp8, fbgemm_fp8, mxfp4, modelopt, awq, gptq, "
                              "compressed-tensors)");
}

// What it cannot model, refused by name.
void refuse_unmodelled(const JsonObject& c, const std::string& type) {
  if (c.has("text_config") || c.has("vision_config") || c.has("audio_config"))
    c.fail(c.has("text_config") ? "text_config" : "vision_config",
           "a multimodal model ('" + type +
               "'): only text decoders are modelled; give the text model's config");
  if (c.boolean("is_encoder_decoder").value_or(false))
    c.fail("is_encoder_decoder", "an encoder-decoder model is not modelled");
  if (!kDense.count(type) && !kMoe.count(type))
    c.fail("model_type", "'" + type + "' is not modelled (modelled: " + supported() + ")");
  if (const auto* lt = c.find("layer_types")) {
    if (!lt->is_array()) c.fail("layer_types", "must be an array");
    for (const auto& t : *lt)
      if (!t.is_string() || t.get<std::string>() != "full_attention")
        c.fail("layer_types", "holds " + t.dump() +
                                  ": layers other than full attention (sliding window, linear "
                                  "or state-space) are not modelled");
  }
}

// Sliding-window attention and MLPs other than SwiGLU, refused by name.
void refuse_unmodelled_layers(const JsonObject& c, std::int64_t max_pos) {
  if (const auto w = c.integer("sliding_window", 0, 1ll << 31)) {
    const bool used = c.boolean("use_sliding_window").value_or(true);
    if (used && *w > 0 && *w < max_pos)
      c.fail("sliding_window", "sliding-window attention (a window of " + std::to_string(*w) +
                                   " tokens within " + std::to_string(max_pos) +
                                   ") is not modelled");
  }
  if (const auto act = c.string("hidden_act"); act && *act != "silu" && *act != "swiglu")
    c.fail("hidden_act", "'" + *act + "': only SwiGLU MLPs (silu) are modelled");
}

// The longest context vLLM derives: max_position_embeddings, times the rope scaling factor for
// scalings that stretch it (linear, dynamic, yarn); llama3's already counts it.
int context_positions(const JsonObject& c, std::int64_t max_pos) {
  double positions = static_cast<double>(max_pos);
  if (const auto rs = c.object("rope_scaling")) {
    const std::string rt = rs->string("rope_type").value_or(rs->string("type").value_or(""));
    if (rt == "linear" || rt == "dynamic" || rt == "yarn") {
      const double f = rs->need_number("factor", 1, 1024);
      positions =
          static_cast<double>(
              rs->integer("original_max_position_embeddings", 1, 1ll << 31).value_or(max_pos)) *
          f;
    }
  }
  return static_cast<int>(std::min(positions, 2147483647.0));
}

// The attention's shapes into `m`, and its parameters per layer.
double attention_params(const JsonObject& c, const std::string& type, ModelSpec& m) {
  const double H = m.hidden_size;
  double attention = 0;
  if (c.has("kv_lora_rank")) {
    // Multi-head latent attention (DeepSeek-V2/V3).
    m.attention = "mla";
    m.num_kv_heads = 0;
    m.kv_lora_rank = static_cast<int>(c.need_integer("kv_lora_rank", 1, 1 << 20));
    m.qk_rope_head_dim = static_cast<int>(c.need_integer("qk_rope_head_dim", 0, 1 << 20));
    const double nope = static_cast<double>(c.need_integer("qk_nope_head_dim", 1, 1 << 20));
    const double vdim = static_cast<double>(c.need_integer("v_head_dim", 1, 1 << 20));
    m.head_dim = static_cast<int>(nope);
    const double heads = m.num_attention_heads, rope = m.qk_rope_head_dim;
    const double kv = m.kv_lora_rank;
    if (const auto ql = c.integer("q_lora_rank", 1, 1 << 20))
      attention += H * *ql + *ql + *ql * heads * (nope + rope);
    else
      attention += H * heads * (nope + rope);
    attention += H * (kv + rope) + kv + kv * heads * (nope + vdim) + heads * vdim * H;
    return attention;
  }
  m.attention = "gqa";
  m.num_kv_heads = static_cast<int>(
      c.integer("num_key_value_heads", 1, 1 << 20).value_or(m.num_attention_heads));
  if (m.num_attention_heads % m.num_kv_heads != 0)
    c.fail("num_key_value_heads",
           "must divide num_attention_heads (" + std::to_string(m.num_attention_heads) + ")");
  m.head_dim = static_cast<int>(
      c.integer("head_dim", 1, 1 << 20).value_or(m.hidden_size / m.num_attention_heads));
  const double q = m.num_attention_heads * static_cast<double>(m.head_dim);
  const double kv = m.num_kv_heads * static_cast<double>(m.head_dim);
  attention = H * q + 2 * H * kv + q * H;
  // Biases: Qwen2's on q, k and v always; attention_bias (Llama, Qwen3) on all four.
  if (type == "qwen2" || type == "qwen2_moe") attention += q + 2 * kv;
  if (c.boolean("attention_bias").value_or(false)) attention += q + 2 * kv + H;
  if (type == "qwen3" || type == "qwen3_moe") attention += 2 * m.head_dim;  // q and k norms
  return attention;
}

// A mixture-of-experts model's experts into `m`, and the parameters of all its MLP layers (MoE
// and the dense ones before them).
double moe_params(const JsonObject& c, const std::string& type, ModelSpec& m) {
  const double H = m.hidden_size, L = m.num_layers;
  int experts = 0, top_k = 0, expert_inter = 0, shared = 0, dense_layers = 0;
  double shared_params = 0, router_extra = 0;
  top_k = static_cast<int>(c.need_integer("num_experts_per_tok", 1, 1 << 16));
  if (type == "mixtral") {
    experts = static_cast<int>(c.need_integer("num_local_experts", 1, 1 << 16));
    expert_inter = m.intermediate_size;
  } else if (type == "qwen3_moe" || type == "qwen2_moe") {
    experts = static_cast<int>(c.need_integer("num_experts", 1, 1 << 16));
    expert_inter = static_cast<int>(c.need_integer("moe_intermediate_size", 1, 1 << 26));
    if (c.integer("decoder_sparse_step", 1, 1 << 16).value_or(1) != 1)
      c.fail("decoder_sparse_step", "MoE on every n-th layer only is not modelled (1)");
    if (const auto* only = c.find("mlp_only_layers"); only && !only->empty())
      c.fail("mlp_only_layers", "dense layers among the MoE layers are not modelled");
    if (const auto si = c.integer("shared_expert_intermediate_size", 0, 1 << 26); si && *si) {
      // One shared expert of its own width, with a gate of one output.
      shared_params = 3 * H * static_cast<double>(*si) + H;
    }
  } else {  // deepseek_v2 / v3
    experts = static_cast<int>(c.need_integer("n_routed_experts", 1, 1 << 16));
    expert_inter = static_cast<int>(c.need_integer("moe_intermediate_size", 1, 1 << 26));
    shared = static_cast<int>(c.integer("n_shared_experts", 0, 1 << 16).value_or(0));
    dense_layers = static_cast<int>(c.integer("first_k_dense_replace", 0, 100000).value_or(0));
    if (c.integer("moe_layer_freq", 1, 1 << 16).value_or(1) != 1)
      c.fail("moe_layer_freq", "MoE on every n-th layer only is not modelled (1)");
    shared_params = shared * 3 * H * static_cast<double>(expert_inter);
    if (type == "deepseek_v3") router_extra = experts;  // e_score_correction_bias
  }
  if (top_k > experts) c.fail("num_experts_per_tok", "exceeds the number of experts");
  if (dense_layers >= m.num_layers) c.fail("first_k_dense_replace", "leaves no MoE layer");
  m.num_experts = experts;
  m.experts_per_token = top_k;
  m.moe_intermediate_size = expert_inter;
  m.num_shared_experts = shared;
  m.first_dense_layers = dense_layers;
  const double moe_layers = L - dense_layers;
  const double moe_layer = experts * 3 * H * static_cast<double>(expert_inter) + H * experts +
                           router_extra + shared_params;
  // Shared experts: every token uses them. ModelSpec prices them as part of the active
  // parameters (num_params minus the unused routed experts).
  const double mlp_dense = 3 * H * m.intermediate_size;
  return moe_layers * moe_layer + dense_layers * mlp_dense;
}

}  // namespace

ModelSpec model_from_hf_config(const nlohmann::json& json, const std::string& where,
                               const std::string& name) {
  const JsonObject c(json, where);
  const std::string type = c.need_string("model_type");
  refuse_unmodelled(c, type);
  const std::int64_t max_pos = c.need_integer("max_position_embeddings", 1, 1ll << 31);
  refuse_unmodelled_layers(c, max_pos);

  ModelSpec m;
  m.name = name;
  m.architecture = type;
  m.num_layers = static_cast<int>(c.need_integer("num_hidden_layers", 1, 100000));
  m.hidden_size = static_cast<int>(c.need_integer("hidden_size", 1, 1 << 24));
  m.num_attention_heads = static_cast<int>(c.need_integer("num_attention_heads", 1, 1 << 20));
  m.vocab_size = static_cast<int>(c.need_integer("vocab_size", 1, 1 << 28));
  m.intermediate_size = static_cast<int>(c.need_integer("intermediate_size", 1, 1 << 26));
  m.dtype = weight_dtype(c);
  m.max_position_embeddings = context_positions(c, max_pos);

  const double H = m.hidden_size, V = m.vocab_size, L = m.num_layers;
  const bool tied = c.boolean("tie_word_embeddings").value_or(false);
  double params = V * H * (tied ? 1 : 2) + H;  // embeddings, lm_head, final norm
  const double attention = attention_params(c, type, m);
  const double mlp_dense = 3 * H * m.intermediate_size;
  double layers_params = L * (attention + 2 * H);
  layers_params += kMoe.count(type) ? moe_params(c, type, m) : L * mlp_dense;
  params += layers_params;
  m.num_params = params;
  m.source = "Hugging Face config.json (" + where + ", model_type " + type + "); " +
             std::to_string(std::llround(params / 1e6)) + "M parameters counted from its shapes";
  return m;
}

ModelSpec read_hf_config(const std::string& path, const std::string& name) {
  std::string file = path;
  if (std::filesystem::is_directory(path))
    file = (std::filesystem::path(path) / "config.json").string();
  const std::string text = read_input_file(file, "model config", 64u << 20);
  return model_from_hf_config(parse_json(text, file), file, name);
}

}  // namespace kvfleet::sim
