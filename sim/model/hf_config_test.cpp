// Hugging Face config.json as a model: the shapes of the presets it replaces, parameter counts,
// precision, the refusals, and a scenario that names a config.json running exactly as the preset.
// The configs below are written here with the published shapes of each model (not copied files).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "sim/core/error.h"
#include "sim/metrics/summary.h"
#include "sim/model/presets.h"
#include "sim/testing/run.h"

namespace kvfleet::sim {
namespace {

const ModelSpec& preset(const std::string& name) {
  for (const auto& m : model_presets())
    if (m.name == name) return m;
  throw std::runtime_error("no preset " + name);
}

ModelSpec from(const std::string& json) {
  return model_from_hf_config(nlohmann::json::parse(json), "config.json", "m");
}

std::string refusal(const std::string& json) {
  try {
    from(json);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

const char* kLlama3_8B = R"({
  "model_type": "llama", "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 14336,
  "max_position_embeddings": 8192, "num_attention_heads": 32, "num_hidden_layers": 32,
  "num_key_value_heads": 8, "rope_theta": 500000.0, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16", "vocab_size": 128256})";

TEST(HfConfig, ShapesOfTheDensePresets) {
  const ModelSpec m = from(kLlama3_8B);
  const ModelSpec& p = preset("Llama-3-8B");
  EXPECT_EQ(m.attention, "gqa");
  EXPECT_EQ(m.num_layers, p.num_layers);
  EXPECT_EQ(m.hidden_size, p.hidden_size);
  EXPECT_EQ(m.num_attention_heads, p.num_attention_heads);
  EXPECT_EQ(m.num_kv_heads, p.num_kv_heads);
  EXPECT_EQ(m.head_dim, p.head_dim);
  EXPECT_EQ(m.intermediate_size, p.intermediate_size);
  EXPECT_EQ(m.vocab_size, p.vocab_size);
  EXPECT_EQ(m.max_position_embeddings, p.max_position_embeddings);
  EXPECT_EQ(m.dtype, "bf16");
  EXPECT_EQ(m.architecture, "llama");
  // 8,030,261,248 parameters: embeddings and lm_head 2 × 128256 × 4096, 32 layers of attention
  // (4096 × (4096 + 2 × 1024 + 4096)), MLP 3 × 4096 × 14336 and two norms, a final norm.
  EXPECT_DOUBLE_EQ(m.num_params, 8030261248.0);
  EXPECT_NEAR(m.num_params, p.num_params, 0.001 * p.num_params);  // the card's 8.03B
  EXPECT_DOUBLE_EQ(m.kv_bytes_per_token(2), p.kv_bytes_per_token(2));
  // Multi-head attention: no num_key_value_heads means as many KV heads as heads.
  nlohmann::json mha = nlohmann::json::parse(kLlama3_8B);
  mha.erase("num_key_value_heads");
  EXPECT_EQ(model_from_hf_config(mha, "c", "m").num_kv_heads, 32);
  // Tied embeddings count once.
  nlohmann::json tied = nlohmann::json::parse(kLlama3_8B);
  tied["tie_word_embeddings"] = true;
  EXPECT_DOUBLE_EQ(model_from_hf_config(tied, "c", "m").num_params, 8030261248.0 - 128256.0 * 4096);
  // Qwen2: biases on q, k and v; Qwen3: q and k norms.
  const ModelSpec q25 = from(R"({"model_type": "qwen2", "hidden_size": 3584,
    "intermediate_size": 18944, "max_position_embeddings": 32768, "num_attention_heads": 28,
    "num_hidden_layers": 28, "num_key_value_heads": 4, "tie_word_embeddings": false,
    "torch_dtype": "bfloat16", "vocab_size": 152064, "use_sliding_window": false,
    "sliding_window": 131072})");
  EXPECT_NEAR(q25.num_params, preset("Qwen2.5-7B").num_params, 0.001 * 7.62e9);
  EXPECT_EQ(q25.head_dim, 128);
}

TEST(HfConfig, MixturesOfExpertsAndLatentAttention) {
  const ModelSpec mx = from(R"({"model_type": "mixtral", "hidden_act": "silu",
    "hidden_size": 4096, "intermediate_size": 14336, "max_position_embeddings": 32768,
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "num_local_experts": 8, "num_experts_per_tok": 2, "sliding_window": null,
    "tie_word_embeddings": false, "torch_dtype": "bfloat16", "vocab_size": 32000})");
  const ModelSpec& pm = preset("Mixtral-8x7B");
  EXPECT_EQ(mx.num_experts, 8);
  EXPECT_EQ(mx.experts_per_token, 2);
  EXPECT_EQ(mx.moe_intermediate_size, pm.moe_intermediate_size);
  EXPECT_NEAR(mx.num_params, pm.num_params, 0.001 * pm.num_params);  // 46.7B
  EXPECT_NEAR(mx.active_params(), 12.9e9, 0.01 * 12.9e9);            // 12.9B active
  const ModelSpec ds = from(R"({"model_type": "deepseek_v3", "hidden_act": "silu",
    "hidden_size": 7168, "intermediate_size": 18432, "max_position_embeddings": 163840,
    "num_attention_heads": 128, "num_hidden_layers": 61, "num_key_value_heads": 128,
    "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
    "v_head_dim": 128, "n_routed_experts": 256, "n_shared_experts": 1,
    "num_experts_per_tok": 8, "moe_intermediate_size": 2048, "first_k_dense_replace": 3,
    "moe_layer_freq": 1, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
    "vocab_size": 129280,
    "rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096},
    "quantization_config": {"quant_method": "fp8", "fmt": "e4m3",
                            "weight_block_size": [128, 128]}})");
  const ModelSpec& pd = preset("DeepSeek-V3");
  EXPECT_EQ(ds.attention, "mla");
  EXPECT_DOUBLE_EQ(ds.kv_bytes_per_token(2), pd.kv_bytes_per_token(2));  // 61 × 576 × 2
  EXPECT_EQ(ds.first_dense_layers, 3);
  EXPECT_EQ(ds.num_shared_experts, 1);
  EXPECT_EQ(ds.dtype, "fp8");
  EXPECT_EQ(ds.max_position_embeddings, 163840);                     // 4096 × 40 (yarn)
  EXPECT_NEAR(ds.num_params, pd.num_params, 0.005 * pd.num_params);  // 671B
  EXPECT_NEAR(ds.active_params(), 37e9, 0.03 * 37e9);
}

TEST(HfConfig, QuantisationConfigSetsTheWeightPrecision) {
  auto with = [](const std::string& q) {
    nlohmann::json j = nlohmann::json::parse(kLlama3_8B);
    j["quantization_config"] = nlohmann::json::parse(q);
    return model_from_hf_config(j, "c", "m").dtype;
  };
  EXPECT_EQ(with(R"({"quant_method": "fp8"})"), "fp8");
  EXPECT_EQ(with(R"({"quant_method": "awq", "bits": 4, "group_size": 128})"), "int4");
  EXPECT_EQ(with(R"({"quant_method": "gptq", "bits": 8})"), "int8");
  EXPECT_EQ(with(R"({"quant_method": "compressed-tensors", "config_groups": {"group_0":
      {"weights": {"num_bits": 8, "type": "float"}}}})"),
            "fp8");
  EXPECT_EQ(with(R"({"quant_method": "compressed-tensors", "config_groups": {"group_0":
      {"weights": {"num_bits": 8, "type": "int"}}}})"),
            "int8");
  EXPECT_EQ(with(R"({"quant_method": "compressed-tensors", "config_groups": {"group_0":
      {"weights": {"num_bits": 4, "type": "int"}}}})"),
            "int4");
  // Four-bit floats: OCP MX (gpt-oss), NVIDIA's NVFP4 (ModelOpt, compressed-tensors).
  EXPECT_EQ(with(R"({"quant_method": "mxfp4"})"), "mxfp4");
  EXPECT_EQ(with(R"({"quant_method": "modelopt", "quant_algo": "NVFP4"})"), "nvfp4");
  EXPECT_EQ(with(R"({"quant_method": "modelopt", "quant_algo": "FP8"})"), "fp8");
  EXPECT_EQ(with(R"({"quant_method": "compressed-tensors", "config_groups": {"group_0":
      {"weights": {"num_bits": 4, "type": "float", "group_size": 16}}}})"),
            "nvfp4");
  EXPECT_THROW(with(R"({"quant_method": "modelopt", "quant_algo": "W4A8_AWQ"})"), InputError);
  EXPECT_THROW(with(R"({"quant_method": "bitsandbytes"})"), InputError);
}

TEST(HfConfig, WhatItCannotModelIsRefusedByName) {
  EXPECT_NE(refusal(R"({"model_type": "llava", "text_config": {}})").find("multimodal"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"model_type": "t5", "is_encoder_decoder": true})").find("encoder-decoder"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"model_type": "jamba"})").find("model_type: 'jamba' is not modelled"),
            std::string::npos);
  nlohmann::json j = nlohmann::json::parse(kLlama3_8B);
  j["sliding_window"] = 4096;
  EXPECT_NE(refusal(j.dump()).find("sliding_window: sliding-window attention"), std::string::npos);
  j["use_sliding_window"] = false;  // Qwen's way of turning it off
  EXPECT_EQ(refusal(j.dump()), "");
  j = nlohmann::json::parse(kLlama3_8B);
  j["layer_types"] = {"full_attention", "sliding_attention"};
  EXPECT_NE(refusal(j.dump()).find("layer_types"), std::string::npos);
  j = nlohmann::json::parse(kLlama3_8B);
  j["hidden_act"] = "gelu";
  EXPECT_NE(refusal(j.dump()).find("only SwiGLU"), std::string::npos);
  j = nlohmann::json::parse(kLlama3_8B);
  j["num_hidden_layers"] = "32";  // a number written as text
  EXPECT_EQ(refusal(j.dump()), "config.json: num_hidden_layers: must be an integer, not a string");
  j = nlohmann::json::parse(kLlama3_8B);
  j.erase("hidden_size");
  EXPECT_EQ(refusal(j.dump()), "config.json: hidden_size: missing (required)");
}

// A scenario naming a config.json runs exactly as the preset defined by the same config.
TEST(HfConfig, AScenarioNamingTheConfigRunsAsThePresetItReplaces) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "hf_codellama";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << R"({
      "model_type": "llama", "hidden_act": "silu", "hidden_size": 8192,
      "intermediate_size": 22016, "max_position_embeddings": 16384, "num_attention_heads": 64,
      "num_hidden_layers": 48, "num_key_value_heads": 8, "rope_theta": 1000000,
      "tie_word_embeddings": false, "torch_dtype": "bfloat16", "vocab_size": 32000})";
  const std::string common =
      "workload: {impl: synthetic, num_requests: 300, arrival: {impl: poisson, rate_per_s: 4},\n"
      "  input_tokens: {impl: fixed, value: 1000}, output_tokens: {impl: fixed, value: 200}}\n";
  const auto preset_run = testing::run_yaml(
      common + "pools:\n  - {model: CodeLlama-34B, gpu: H100-SXM, tensor_parallel: 2}\n");
  const auto config_run = testing::run_yaml(
      common + "models:\n  - {name: my-codellama, hf_config: " + dir.string() +
      "}\npools:\n  - {model: my-codellama, gpu: H100-SXM, tensor_parallel: 2}\n");
  EXPECT_EQ(preset_run.scenario.pools[0].memory.num_blocks,
            config_run.scenario.pools[0].memory.num_blocks);
  EXPECT_EQ(preset_run.summary.ok, 300);
  EXPECT_EQ(preset_run.summary.ttft.mean, config_run.summary.ttft.mean);
  EXPECT_EQ(preset_run.summary.tpot.p99, config_run.summary.tpot.p99);
  EXPECT_EQ(preset_run.summary.e2e.mean, config_run.summary.e2e.mean);
  // A key beside hf_config overrides the config.
  const auto sc = testing::scenario_from(
      common + "models:\n  - {name: mine, hf_config: " + dir.string() +
      ", max_position_embeddings: 8192}\npools:\n  - {model: mine, gpu: H100-SXM, "
      "tensor_parallel: 2}\n");
  EXPECT_EQ(sc.pools[0].model.max_position_embeddings, 8192);
  // A config it refuses stops the scenario, naming the key and the config's own key.
  std::ofstream(dir / "bad.json") << R"({"model_type": "jamba"})";
  try {
    testing::scenario_from(common +
                           "models:\n  - {name: bad, hf_config: " + (dir / "bad.json").string() +
                           "}\npools:\n  - {model: bad, gpu: H100-SXM}\n");
    FAIL() << "a refused config was accepted";
  } catch (const InputError& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("models[0].hf_config"), std::string::npos) << w;
    EXPECT_NE(w.find("model_type: 'jamba' is not modelled"), std::string::npos) << w;
  }
}

}  // namespace
}  // namespace kvfleet::sim
