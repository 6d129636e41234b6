#pragma once
// Cumulative counters of one replica, each declared once beside its field (declare()): that
// declaration is the replica's columns in /replicas (HDF5, CSV, docs/outputs.md) and, for a
// field that totals, a /summary metric (sweeps, --slo, --y, Python), a line of the report's
// counters, an OpenMetrics counter per replica and a column of the GUI's table of points.
#include <cmath>
#include <cstdint>

#include "sim/core/field.h"
#include "sim/cost/cost_model.h"

namespace kvfleet::sim {

struct EngineStats {
  std::int64_t steps = 0;
  std::int64_t num_preemptions = 0;
  std::int64_t prompt_tokens = 0;      // prefill tokens computed, recomputation included
  std::int64_t generation_tokens = 0;  // tokens emitted
  std::int64_t recomputed_tokens = 0;  // prefill tokens computed again after preemption
  std::int64_t rejected = 0;
  double busy_s = 0;                  // time spent in steps
  double kv_usage_time_integral = 0;  // ∫ usage dt over steps, for the time-weighted mean
  double max_kv_usage = 0;
  std::int64_t prefix_cache_queries = 0;         // prompt tokens looked up in the prefix cache
  std::int64_t prefix_cache_hits = 0;            // of which found cached
  std::int64_t cache_evictions = 0;              // cached blocks reused for other content
  std::int64_t num_swaps = 0;                    // preemptions that swapped KV to the host
  std::int64_t cancelled = 0;                    // requests stopped by a propagated cancellation
  std::int64_t tier_hit_tokens = 0;              // prompt tokens loaded from KV tiers
  std::int64_t tier_recomputed_tokens = 0;       // found in a tier but cheaper to recompute
  double swap_out_bytes = 0, swap_in_bytes = 0;  // per GPU
  double kv_held_token_seconds = 0;              // ∫ token states held (Σ computed tokens) dt
  double kv_allocated_token_seconds = 0;         // ∫ KV memory given to requests, in tokens, dt
  StepCost cost_sum;                             // seconds by kind of work, summed over steps
  // Utilisation (per GPU): Σ over steps of the seconds the step's FLOPs and device-memory bytes
  // need at the GPU's peaks (WorkModel); divided by elapsed time they are the achieved fractions.
  double compute_s_at_peak = 0, memory_s_at_peak = 0;
  double flops = 0, hbm_bytes = 0;  // per GPU, summed over steps
  // Time requests waited in this engine's queue, by what stopped the scheduler admitting them:
  // KV blocks ran out (or a preemption this step), the step's token budget was spent, or
  // max_num_seqs requests were already running.
  double wait_kv_s = 0, wait_token_budget_s = 0, wait_max_seqs_s = 0;
  double first_preemption_s = -1;  // when KV first ran out for a running request; -1 = never

  // The output fields, in /replicas' order (its memory-budget and tier columns are inserted
  // after busy_s and tier_hit_tokens: output/run_tables.cpp): v.integer or v.number (name,
  // getter of the value from an EngineStats, FieldDecl). A counter is a field above, its line
  // here (with .total = Total::kSum to show it fleet-wide; a name no /summary metric has) and the
  // code that counts it. A new one goes last, so that no existing column moves.
  template <class V>
  static void declare(V& v) {
    using S = EngineStats;
    constexpr Total sum = Total::kSum;
    v.integer("steps", &S::steps,
              {.unit = "steps", .desc = "engine steps", .total = sum, .label = "Engine steps"});
    v.integer("num_preemptions", &S::num_preemptions,
              {.unit = "preemptions",
               .desc = "preemptions of running requests",
               .total = sum,
               .label = "Preemptions"});
    v.integer("prompt_tokens", &S::prompt_tokens,
              {.unit = "tokens", .desc = "prefill tokens computed (recomputation included)"});
    v.integer("generation_tokens", &S::generation_tokens,
              {.unit = "tokens", .desc = "tokens emitted"});
    v.number("busy_s", &S::busy_s, {.unit = "s", .desc = "time in steps"});
    declare_time(v);
    declare_waits(v);
    v.integer("num_swaps", &S::num_swaps,
              {.unit = "preemptions",
               .desc = "preemptions that swapped KV to the host",
               .total = sum,
               .label = "Swaps to host"});
    v.number("swap_out_bytes", &S::swap_out_bytes,
             {.unit = "bytes", .desc = "KV swapped out to the host, per GPU"});
    v.integer("tier_hit_tokens", &S::tier_hit_tokens,
              {.unit = "tokens",
               .desc = "prompt tokens loaded from KV tiers",
               .total = sum,
               .label = "Tokens loaded from KV tiers"});
    v.integer("tier_recomputed_tokens", &S::tier_recomputed_tokens,
              {.unit = "tokens",
               .desc = "found in a KV tier but recomputed as cheaper",
               .total = sum,
               .label = "Tier tokens recomputed"});
  }

 private:
  // Where the step time went (StepCost's kinds), the prefix cache and the seconds at the GPU's
  // peaks.
  template <class V>
  static void declare_time(V& v) {
    using S = EngineStats;
    constexpr Total sum = Total::kSum;
    v.number("gemm_s", [](const S& s) { return s.cost_sum.gemm_s; },
             {.unit = "s", .desc = "step time in linear layers"});
    v.number("prefill_attention_s", [](const S& s) { return s.cost_sum.prefill_attn_s; },
             {.unit = "s", .desc = "step time in prefill attention"});
    v.number("decode_attention_s", [](const S& s) { return s.cost_sum.decode_attn_s; },
             {.unit = "s", .desc = "step time in decode attention"});
    v.number("communication_s", [](const S& s) { return s.cost_sum.comm_s; },
             {.unit = "s",
              .desc = "step time in collectives (tensor-parallel all-reduce, MoE dispatch and "
                      "combine, waiting there for slower data-parallel ranks)"});
    v.number("overhead_s", [](const S& s) { return s.cost_sum.overhead_s; },
             {.unit = "s", .desc = "fixed per-step and per-sequence overhead"});
    v.integer("prefix_cache_queries", &S::prefix_cache_queries,
              {.unit = "tokens",
               .desc = "prompt tokens looked up in the prefix cache",
               .total = sum,
               .label = "Prefix-cache lookups"});
    v.integer("prefix_cache_hits", &S::prefix_cache_hits,
              {.unit = "tokens",
               .desc = "of which found cached",
               .total = sum,
               .label = "Prefix-cache hits"});
    v.integer("cache_evictions", &S::cache_evictions,
              {.unit = "blocks",
               .desc = "cached blocks reused for other content",
               .total = sum,
               .label = "Cache evictions"});
    v.number("kv_transfer_s", [](const S& s) { return s.cost_sum.kv_transfer_s; },
             {.unit = "s", .desc = "KV copies not overlapped with compute (swap, tiers)"});
    v.number("pipeline_bubble_s", [](const S& s) { return s.cost_sum.pipeline_bubble_s; },
             {.unit = "s", .desc = "time pipeline stages waited for micro-batches"});
    v.number("compute_s_at_peak", &S::compute_s_at_peak,
             {.unit = "s", .desc = "seconds its steps' FLOPs take at the GPU's peak"});
    v.number(
        "memory_s_at_peak", &S::memory_s_at_peak,
        {.unit = "s", .desc = "seconds its steps' device-memory bytes take at peak bandwidth"});
  }
  // What kept requests waiting, and when KV first ran out.
  template <class V>
  static void declare_waits(V& v) {
    using S = EngineStats;
    v.number("wait_kv_s", &S::wait_kv_s,
             {.unit = "s", .desc = "time requests waited for KV blocks"});
    v.number("wait_token_budget_s", &S::wait_token_budget_s,
             {.unit = "s", .desc = "time requests waited for the token budget"});
    v.number("wait_max_seqs_s", &S::wait_max_seqs_s,
             {.unit = "s", .desc = "time requests waited for max_num_seqs"});
    v.number(
        "first_preemption_s",
        [](const S& s) { return s.first_preemption_s < 0 ? std::nan("") : s.first_preemption_s; },
        {.unit = "s", .desc = "when KV first ran out for a running request (NaN: never)"});
  }
};

}  // namespace kvfleet::sim
