#include "sim/replay/vllm_args.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace kvfleet::sim {

namespace {

using T = VllmArgType;
using E = VllmArgEffect;

// Changes nothing kvfleet simulates: the server's address, security, logging, the tokenizer
// and chat template, loading, sampling and API options.
constexpr const char* kNoEffect[] = {"host",
                                     "port",
                                     "uds",
                                     "uvicorn_log_level",
                                     "disable_uvicorn_access_log",
                                     "allow_credentials",
                                     "allowed_origins",
                                     "allowed_methods",
                                     "allowed_headers",
                                     "api_key",
                                     "ssl_keyfile",
                                     "ssl_certfile",
                                     "ssl_ca_certs",
                                     "ssl_cert_reqs",
                                     "enable_ssl_refresh",
                                     "root_path",
                                     "middleware",
                                     "response_role",
                                     "chat_template",
                                     "chat_template_content_format",
                                     "return_tokens_as_token_ids",
                                     "enable_request_id_headers",
                                     "enable_auto_tool_choice",
                                     "tool_call_parser",
                                     "tool_parser_plugin",
                                     "tool_server",
                                     "reasoning_parser",
                                     "enable_reasoning",
                                     "served_model_name",
                                     "tokenizer",
                                     "tokenizer_mode",
                                     "skip_tokenizer_init",
                                     "trust_remote_code",
                                     "download_dir",
                                     "load_format",
                                     "config_format",
                                     "seed",
                                     "revision",
                                     "code_revision",
                                     "tokenizer_revision",
                                     "hf_token",
                                     "hf_config_path",
                                     "disable_log_stats",
                                     "disable_log_requests",
                                     "enable_log_requests",
                                     "enable_log_outputs",
                                     "max_log_len",
                                     "distributed_executor_backend",
                                     "worker_cls",
                                     "worker_extension_cls",
                                     "logits_processors",
                                     "logits_processor_pattern",
                                     "generation_config",
                                     "override_generation_config",
                                     "disable_fastapi_docs",
                                     "enable_prompt_tokens_details",
                                     "enable_server_load_tracking",
                                     "enable_force_include_usage",
                                     "enable_tokenizer_info_endpoint",
                                     "config",
                                     "model_impl",
                                     "max_logprobs",
                                     "logprobs_mode",
                                     "collect_detailed_traces",
                                     "otlp_traces_endpoint",
                                     "show_hidden_metrics_for_version",
                                     "headless",
                                     "data_parallel_address",
                                     "data_parallel_rpc_port",
                                     "data_parallel_start_rank",
                                     "data_parallel_size_local",
                                     "data_parallel_backend",
                                     "data_parallel_hybrid_lb",
                                     "data_parallel_external_lb",
                                     "ray_workers_use_nsight",
                                     "enable_sleep_mode",
                                     "task",
                                     "runner",
                                     "convert",
                                     "pooler_config",
                                     "override_pooler_config",
                                     "prefix_caching_hash_algo",
                                     "use_v2_block_manager",
                                     "device",
                                     "max_parallel_loading_workers",
                                     "allowed_local_media_path",
                                     "allowed_media_domains",
                                     "mm_processor_kwargs",
                                     "mm_processor_cache_gb",
                                     "disable_mm_preprocessor_cache",
                                     "kv_events_config",
                                     "safetensors_load_strategy",
                                     "pt_load_map_location",
                                     "max_cpu_loras",
                                     "fully_sharded_loras",
                                     "qlora_adapter_name_or_path",
                                     "enable_prompt_embeds",
                                     "disable_chunked_mm_input",
                                     "additional_config",
                                     "log_config_file",
                                     "enable_chunked_local_attn",
                                     "num_lookahead_slots",
                                     "override_neuron_config",
                                     "enable_prompt_adapter",
                                     "max_prompt_adapters",
                                     "lora_dtype",
                                     "lora_extra_vocab_size",
                                     "long_lora_scaling_factors",
                                     "ignore_patterns",
                                     "preemption_check_period",
                                     "h11_max_incomplete_event_size",
                                     "h11_max_header_count",
                                     "disable_hybrid_kv_cache_manager",
                                     "reasoning_parser_plugin",
                                     "exclude_tools_when_tool_choice_none",
                                     "expand_tools_even_if_tool_choice_none",
                                     "tokens_only",
                                     "log_error_stack",
                                     "enable_mfu_metrics",
                                     "kv_cache_metrics",
                                     "cuda_graph_capture_timeout"};

// The table's second half: frontend, scheduling and memory flags, and those without effect.
void add_frontend_and_more(std::vector<VllmArg>& t) {
  const std::vector<VllmArg> more = {
      {"disable_frontend_multiprocessing",
       T::kBool,
       E::kNotModelled,
       {},
       "the API server in the engine's process"},
      {"disable_async_output_proc", T::kBool, E::kNotModelled, {}, "output processing (V0)"},
      {"max_num_partial_prefills", T::kInt, E::kNotModelled, {}, "concurrent partial prefills"},
      {"max_long_partial_prefills", T::kInt, E::kNotModelled, {}, "concurrent long prefills"},
      {"scheduler_delay_factor", T::kReal, E::kNotModelled, {}, "a delay before scheduling"},
      {"disable_sliding_window", T::kBool, E::kNotModelled, {}, "sliding-window attention"},
      {"disable_custom_all_reduce",
       T::kBool,
       E::kNotModelled,
       {},
       "NCCL in place of vLLM's all-reduce"},
      {"enable_eplb", T::kBool, E::kNotModelled, {}, "expert load balancing"},
      {"num_redundant_experts", T::kInt, E::kNotModelled, {}, "redundant experts"},
      {"enable_dbo", T::kBool, E::kNotModelled, {}, "dual-batch overlap"},
      {"all2all_backend", T::kText, E::kNotModelled, {}, "the expert all-to-all's kernel"},
      {"attention_backend", T::kText, E::kNotModelled, {}, "the attention kernels' backend"},
      {"calculate_kv_scales", T::kBool, E::kNotModelled, {}, "KV scale calculation"},
      {"disable_cascade_attn", T::kBool, E::kNotModelled, {}, "cascade attention"},
      {"max_seq_len_to_capture", T::kInt, E::kNotModelled, {}, "CUDA graph capture length"},
      {"rope_scaling", T::kAny, E::kNotModelled, {}, "a context longer than the model's"},
      {"hf_overrides", T::kAny, E::kNotModelled, {}, "the model's configuration overridden"},
      {"limit_mm_per_prompt", T::kAny, E::kNotModelled, {}, "multimodal inputs"},
      {"structured_outputs_config", T::kAny, E::kNotModelled, {}, "structured output"},
      {"guided_decoding_backend", T::kText, E::kNotModelled, {}, "structured output"},
  };
  t.insert(t.end(), more.begin(), more.end());
  for (const char* n : kNoEffect) t.push_back({n, T::kAny, E::kNoEffect, {}});
}

std::vector<VllmArg> make_table() {
  std::vector<VllmArg> t = {
      // Parallelism. -tp, -pp, -dp are vLLM's short flags; the others are how launch
      // configurations (Helm values, run records, benchmark harnesses) often spell them.
      {"tensor_parallel_size",
       T::kInt,
       E::kModelled,
       {"tp", "tp_size", "tensor_parallel", "tensor_parallelism", "tensor_parallel_degree"}},
      {"pipeline_parallel_size",
       T::kInt,
       E::kModelled,
       {"pp", "pp_size", "pipeline_parallel", "pipeline_parallelism", "pipeline_parallel_degree"}},
      {"data_parallel_size",
       T::kInt,
       E::kModelled,
       {"dp", "dp_size", "data_parallel", "data_parallelism", "data_parallel_degree"}},
      {"enable_expert_parallel", T::kBool, E::kModelled, {"expert_parallel", "enable_ep"}},
      // The scheduler and the KV cache.
      {"max_num_seqs", T::kInt, E::kModelled, {"max_num_sequences", "max_concurrent_seqs"}},
      {"max_num_batched_tokens", T::kInt, E::kModelled, {"max_batched_tokens"}},
      {"max_model_len", T::kInt, E::kModelled, {"max_seq_len", "max_model_length"}},
      {"block_size", T::kInt, E::kModelled, {"kv_block_size"}},
      {"num_gpu_blocks_override", T::kInt, E::kModelled, {}},
      {"gpu_memory_utilization", T::kReal, E::kModelled, {"gpu_memory_util", "gpu_mem_util"}},
      {"enable_prefix_caching", T::kBool, E::kModelled, {"prefix_caching"}},
      {"enable_chunked_prefill", T::kBool, E::kModelled, {"chunked_prefill"}},
      {"async_scheduling", T::kBool, E::kModelled, {"enable_async_scheduling"}},
      {"kv_cache_dtype", T::kText, E::kModelled, {}},
      {"long_prefill_token_threshold", T::kInt, E::kModelled, {}},
      {"scheduling_policy", T::kText, E::kModelled, {}},
      {"preemption_mode", T::kText, E::kModelled, {}},
      {"swap_space", T::kReal, E::kModelled, {}},
      // The model and its weights.
      {"model", T::kText, E::kModelled, {"model_name", "model_id", "model_path"}},
      {"quantization", T::kText, E::kModelled, {"q"}},
      {"dtype", T::kText, E::kModelled, {"torch_dtype"}},
      // CUDA graphs (used by the profile and fitted cost models, which pad to capture sizes).
      {"enforce_eager", T::kBool, E::kModelled, {}},
      {"cudagraph_capture_sizes", T::kAny, E::kModelled, {"cuda_graph_sizes"}},
      {"compilation_config", T::kAny, E::kModelled, {"o"}},
      // Changes latency or capacity in ways kvfleet does not simulate: named in a warning.
      {"speculative_config",
       T::kAny,
       E::kNotModelled,
       {"speculative_model", "num_speculative_tokens"},
       "speculative decoding (draft tokens, acceptance)"},
      {"enable_lora", T::kBool, E::kNotModelled, {}, "LoRA adapters' extra GEMMs"},
      {"max_loras", T::kInt, E::kNotModelled, {}, "LoRA adapters"},
      {"max_lora_rank", T::kInt, E::kNotModelled, {}, "LoRA adapters"},
      {"lora_modules", T::kAny, E::kNotModelled, {}, "LoRA adapters"},
      {"cpu_offload_gb", T::kReal, E::kNotModelled, {}, "weights offloaded to CPU memory"},
      {"kv_offloading_size", T::kReal, E::kNotModelled, {}, "KV offloading (kvfleet: kv_tiers)"},
      {"kv_offloading_backend", T::kText, E::kNotModelled, {}, "KV offloading"},
      {"kv_transfer_config", T::kAny, E::kNotModelled, {}, "KV transfer between instances"},
      {"num_scheduler_steps", T::kInt, E::kNotModelled, {}, "multi-step scheduling (vLLM V0)"},
      {"stream_interval", T::kInt, E::kNotModelled, {}, "tokens per streamed chunk"},
      {"api_server_count",
       T::kInt,
       E::kNotModelled,
       {"api_servers"},
       "several API server processes (kvfleet: one frontend per engine)"},
  };
  add_frontend_and_more(t);
  return t;
}

const std::map<std::string, const VllmArg*>& index() {
  static const std::map<std::string, const VllmArg*> m = [] {
    std::map<std::string, const VllmArg*> out;
    for (const VllmArg& a : vllm_args()) {
      out[a.name] = &a;
      for (const char* s : a.aliases) out[s] = &a;
    }
    return out;
  }();
  return m;
}

}  // namespace

const std::vector<VllmArg>& vllm_args() {
  static const std::vector<VllmArg> t = make_table();
  return t;
}

std::string normalise_arg_key(const std::string& spelling) {
  std::string k = spelling;
  k.erase(0, std::min(k.find_first_not_of('-'), k.size()));
  std::replace(k.begin(), k.end(), '-', '_');
  std::transform(k.begin(), k.end(), k.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return k;
}

const VllmArg* find_vllm_arg(const std::string& spelling) {
  const auto it = index().find(normalise_arg_key(spelling));
  return it == index().end() ? nullptr : it->second;
}

}  // namespace kvfleet::sim
