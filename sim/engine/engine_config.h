#pragma once
// Serving-engine settings of one replica. Names and defaults follow vLLM's engine arguments where
// the meaning is the same (vllm/config/scheduler.py, vllm/config/cache.py).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/config/params.h"
#include "sim/engine/kv_layout.h"
#include "sim/engine/preemption.h"
#include "sim/engine/retention.h"
#include "sim/engine/scheduler.h"
#include "sim/model/presets.h"

namespace kvfleet::sim {

// One tier of KV storage below GPU memory. Capacities and bandwidths are per GPU.
struct KvTierConfig {
  std::string name = "cpu";
  double capacity_gib = 64;
  double read_GBps = 25;
  double write_GBps = 25;
  template <class V>
  void visit(V& v) {
    v.param("name", name, {.desc = "tier name for reports (cpu, nvme, ...)"});
    v.param("capacity_gib", capacity_gib,
            {.unit = "GiB", .desc = "KV this tier holds, per GPU", .positive = true});
    v.param("read_GBps", read_GBps,
            {.unit = "GB/s",
             .desc = "bandwidth loading KV back to the GPU, per GPU",
             .positive = true});
    v.param(
        "write_GBps", write_GBps,
        {.unit = "GB/s", .desc = "bandwidth storing KV into this tier, per GPU", .positive = true});
  }
};

// The simulator keeps about 50 bytes of host memory per KV block (free-queue links, block hash,
// prefix index, block tables): these limits keep a replica under 1 GB and a fleet under 4 GB.
inline constexpr std::int64_t kMaxKvBlocksPerReplica = std::int64_t{1} << 24;  // 16,777,216
inline constexpr std::int64_t kMaxKvBlocksPerFleet = std::int64_t{1} << 26;    // 67,108,864
inline constexpr std::string_view kMaxKvBlocksWhy =
    "the simulator keeps about 50 bytes per KV block; 16,777,216 blocks per replica (1e9 tokens "
    "of 64-token blocks) is above any GPU's pool";

struct EngineConfig {
  int max_num_seqs = 256;
  int max_num_batched_tokens = 8192;
  bool enable_chunked_prefill = true;
  bool async_scheduling = false;
  bool enable_prefix_caching = true;
  int long_prefill_token_threshold = 0;
  int block_size = 16;
  double gpu_memory_utilization = 0.9;
  int max_model_len = 0;
  std::int64_t num_gpu_blocks_override = 0;
  std::string kv_cache_dtype = "auto";
  double runtime_overhead_gib = 0.6;
  double activation_peak_gib = 0;
  std::string scheduling_policy = "fcfs";
  std::string preemption_mode = "recompute";
  double swap_space_gib = 4.0;
  std::string kv_layout = "paged";
  std::string contiguous_reservation = "max";
  std::string contiguous_allocator = "buddy";
  std::vector<KvTierConfig> kv_tiers;
  bool tier_load_overlap = true;
  config::ImplSpec retention;

  template <class V>
  void visit(V& v) {
    visit_step(v);
    visit_memory(v);
    visit_policies(v);
  }
  // The step: its sequences, token budget, chunking, scheduling and prefix caching.
  template <class V>
  void visit_step(V& v) {
    v.param("max_num_seqs", max_num_seqs,
            {.unit = "sequences",
             .desc = "most sequences in one step (running requests)",
             .min = 1,
             .label = "Max running sequences"});
    v.param("max_num_batched_tokens", max_num_batched_tokens,
            {.unit = "tokens",
             .desc = "token budget of one step (prefill chunks + decodes)",
             .min = 1,
             .label = "Step token budget"});
    v.param("enable_chunked_prefill", enable_chunked_prefill,
            {.desc = "split long prompts across steps to fit the token budget"});
    v.param("async_scheduling", async_scheduling,
            {.desc = "vLLM's async scheduling (its default from 0.11 on): the next step is "
                     "scheduled while this one runs, so a request that arrives during a step "
                     "joins the step after the next; false = the next step is scheduled after "
                     "this one ends, with every request that arrived meanwhile"});
    v.param("enable_prefix_caching", enable_prefix_caching,
            {.desc = "reuse the KV of cached full blocks with equal content (vLLM v1 default: on)",
             .label = "Prefix caching"});
    v.param("long_prefill_token_threshold", long_prefill_token_threshold,
            {.unit = "tokens",
             .desc = "cap on one request's prefill chunk per step; 0 = none",
             .min = 0});
  }
  // KV blocks and the memory budget.
  template <class V>
  void visit_memory(V& v) {
    v.param("block_size", block_size,
            {.unit = "tokens",
             .desc = "tokens per KV block (paged attention)",
             .min = 1,
             .max = 1024,
             .label = "KV block size"});
    v.param("gpu_memory_utilization", gpu_memory_utilization,
            {.unit = "fraction",
             .desc = "share of device memory the engine may use",
             .max = 1,
             .positive = true,
             .label = "GPU memory utilization"});
    v.param("max_model_len", max_model_len,
            {.unit = "tokens",
             .desc = "longest prompt + output accepted; 0 = the model's limit",
             .min = 0});
    v.param("num_gpu_blocks_override", num_gpu_blocks_override,
            {.unit = "blocks",
             .desc = "use this many KV blocks instead of the memory budget's; 0 = computed",
             .min = 0,
             .max = kMaxKvBlocksPerReplica,
             .why = kMaxKvBlocksWhy});
    v.param(
        "kv_cache_dtype", kv_cache_dtype,
        {.desc = "KV cache precision; auto = the activations' (fp16 for fp16 models, else bf16, "
                 "whatever weight_dtype is). int8: fp16 scale per "
                 "64 elements (1.03 bytes/element); int4: fp16 scale and zero per 64 (0.56); "
                 "nvfp4: fp8 scale per 16 (0.5625)",
         .choices = with_auto(kKvDtypes),
         .label = "KV precision"});
    v.param("runtime_overhead_gib", runtime_overhead_gib,
            {.unit = "GiB",
             .desc = "memory outside weights, activations and KV (CUDA context, graphs, NCCL)",
             .min = 0});
    v.param("activation_peak_gib", activation_peak_gib,
            {.unit = "GiB",
             .desc = "peak activation memory; 0 = estimate from max_num_batched_tokens",
             .min = 0});
  }
  // Scheduling, preemption, KV layout, tiers and retention.
  template <class V>
  void visit_policies(V& v) {
    v.param(
        "scheduling_policy", scheduling_policy,
        {.desc = "the waiting queue's order and which running request yields its KV when "
                 "blocks run out (fcfs and priority as vLLM v1; every policy is described under "
                 "'Scheduling policies' below)",
         .choices = config::choices_of(scheduling_registry())});
    v.param("preemption_mode", preemption_mode,
            {.desc = "what becomes of a preempted request's KV (recompute as vLLM v1, swap as "
                     "vLLM v0; every mode is described under 'Preemption modes' below)",
             .choices = config::choices_of(preemption_registry())});
    v.param("swap_space_gib", swap_space_gib,
            {.unit = "GiB",
             .desc = "host memory per GPU for swapped KV (vLLM's swap_space)",
             .min = 0});
    v.param("kv_layout", kv_layout,
            {.desc = "paged: blocks allocated as tokens arrive (vLLM); contiguous: each request "
                     "reserves one contiguous region when admitted (systems before paging)",
             .choices = config::choices_of(kv_layout_registry())});
    v.param(
        "contiguous_reservation", contiguous_reservation,
        {.desc = "contiguous layout: reserve max_model_len (max), the prompt plus the output "
                 "rounded up to a power of two (pow2: at most 2x the output), or exactly prompt "
                 "+ output (oracle)",
         .choices = {"max", "pow2", "oracle"}});
    v.param("contiguous_allocator", contiguous_allocator,
            {.desc = "contiguous layout: buddy (power-of-two regions, as PagedAttention's Orca "
                     "baselines) or first_fit (exact regions in the first hole that fits)",
             .choices = {"buddy", "first_fit"}});
    v.param("kv_tiers", kv_tiers,
            {.desc = "storage below GPU memory, fastest first: cached blocks evicted from the GPU "
                     "move down here and can be loaded back instead of recomputed"});
    v.impl("retention", retention, retention_registry(),
           {.desc = "which cached KV blocks are given up first, and whether before they must be"});
    v.param("tier_load_overlap", tier_load_overlap,
            {.desc = "loads from tiers overlap the step's compute layer by layer (only the part "
                     "longer than the step adds time)"});
  }
  void check(config::Reader& r) const {
    if (kv_layout == "contiguous" && enable_prefix_caching)
      r.fail_key("kv_layout",
                 "the contiguous layout has no prefix cache: set enable_prefix_caching: false");
    if (!kv_tiers.empty() && !enable_prefix_caching)
      r.fail_key("kv_tiers", "KV tiers hold cached blocks: they need enable_prefix_caching: true");
  }
};

}  // namespace kvfleet::sim
