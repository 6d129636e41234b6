// Replica: what a step costs and what it counts (the cost model's price, scaled, with KV
// transfers and pipeline stages), alone or as a rank of a data-parallel group stepping in
// lockstep (engine/lockstep.h).
#include "sim/engine/replica.h"

#include "sim/engine/lockstep.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace kvfleet::sim {

namespace {
// Every part of a step's time × f (ReplicaSetup::step_time_scale).
void scale(StepCost& c, double f) {
  if (f == 1) return;
  c.gemm_s *= f;
  c.prefill_attn_s *= f;
  c.decode_attn_s *= f;
  c.comm_s *= f;
  c.overhead_s *= f;
  c.pipeline_bubble_s *= f;
}
}  // namespace

double Replica::prefill_seconds(std::int64_t tokens, std::int64_t prefix) const {
  // Marginal cost: a one-sequence decode step with and without the chunk.
  const PrefillChunk chunk{static_cast<std::int32_t>(tokens), static_cast<std::int32_t>(prefix)};
  Batch base;
  base.num_seqs = 1;
  base.num_decode_seqs = 1;
  base.decode_context_tokens = prefix + tokens;
  base.num_sampled = 1;
  Batch with = base;
  with.num_seqs = 2;
  with.num_prefill_tokens = tokens;
  with.prefill_context_tokens = prefix + tokens;
  with.prefill_attention_pairs = static_cast<double>(tokens) * static_cast<double>(prefix) +
                                 static_cast<double>(tokens) * static_cast<double>(tokens + 1) / 2;
  with.prefill = std::span<const PrefillChunk>(&chunk, 1);
  return cost_->cost(with).total_s() - cost_->cost(base).total_s();
}

StepCost Replica::price_step(StepWork& w) {
  StepCost c;
  if (setup_.pipeline_stages > 1) {
    c = pipeline_cost(w);
  } else {
    c = cost_->cost(batch_);
    w = setup_.work.work(batch_);
  }
  scale(c, setup_.step_time_scale);
  c.kv_transfer_s = transfer_s_;
  if (load_s_ > 0) {
    // Layer by layer, loads hide behind the step's compute; only the excess adds time.
    c.kv_transfer_s +=
        setup_.engine.tier_load_overlap ? std::max(0.0, load_s_ - c.total_s()) : load_s_;
  }
  return c;
}

void Replica::count_step(const StepCost& c, const StepWork& w, double dur_s) {
  stats_.cost_sum.gemm_s += c.gemm_s;
  stats_.cost_sum.prefill_attn_s += c.prefill_attn_s;
  stats_.cost_sum.decode_attn_s += c.decode_attn_s;
  stats_.cost_sum.comm_s += c.comm_s;
  stats_.cost_sum.overhead_s += c.overhead_s;
  stats_.cost_sum.kv_transfer_s += c.kv_transfer_s;
  stats_.cost_sum.pipeline_bubble_s += c.pipeline_bubble_s;
  stats_.compute_s_at_peak += setup_.work.compute_s_at_peak(w);
  stats_.memory_s_at_peak += setup_.work.memory_s_at_peak(w);
  stats_.flops += w.flops();
  stats_.hbm_bytes += w.hbm_bytes();
  switch (wait_cause_) {
    case WaitCause::kNone:
      break;
    case WaitCause::kKv:
      stats_.wait_kv_s += dur_s;
      break;
    case WaitCause::kTokenBudget:
      stats_.wait_token_budget_s += dur_s;
      break;
    case WaitCause::kMaxSeqs:
      stats_.wait_max_seqs_s += dur_s;
      break;
  }
  const double u = kv_cache_usage();
  stats_.kv_usage_time_integral += u * dur_s;
  stats_.kv_held_token_seconds += static_cast<double>(held_tokens_) * dur_s;
  stats_.kv_allocated_token_seconds += static_cast<double>(kv_tokens_allocated()) * dur_s;
  stats_.max_kv_usage = std::max(stats_.max_kv_usage, u);
  stats_.busy_s += dur_s;
  ++stats_.steps;
}

StepCost Replica::pipeline_cost(StepWork& work) {
  // Micro-batches balanced by tokens: longest first, each to the lightest micro-batch so far.
  const int stages = setup_.pipeline_stages;
  std::vector<Scheduled>& order = pp_order_;
  order.assign(scheduled_.begin(), scheduled_.end());
  std::stable_sort(order.begin(), order.end(),
                   [](const Scheduled& a, const Scheduled& b) { return a.tokens > b.tokens; });
  std::vector<Batch>& micro = pp_micro_;
  micro.assign(stages, Batch{});
  std::vector<std::vector<PrefillChunk>>& chunks = pp_chunks_;
  chunks.resize(stages);
  for (auto& c : chunks) c.clear();
  for (const Scheduled& sc : order) {
    const auto lightest = std::min_element(micro.begin(), micro.end(), [](auto& a, auto& b) {
      return a.num_tokens() != b.num_tokens() ? a.num_tokens() < b.num_tokens()
                                              : a.num_seqs < b.num_seqs;
    });
    const auto m = static_cast<std::size_t>(lightest - micro.begin());
    add_to(micro[m], chunks[m], seq(sc.slot), sc);
    ++micro[m].num_seqs;
  }
  // Each stage runs every micro-batch once per step, so a stage's GPUs work Σ_m w_m (w_m: the
  // micro-batch's stage time without the engine's overhead); micro-batch m needs its own output
  // before its next step, so it comes round every stages × w_m plus its overhead (scheduling and
  // sampling, once per micro-batch, overlapping the other micro-batches' work) plus the hops
  // between stages. The step lasts the longer; overhead on the critical path and the stages'
  // idle time (the bubble) make up the rest.
  StepCost c;
  double busy = 0, cycle = 0, overhead = 0;
  for (int m = 0; m < stages; ++m) {
    if (micro[m].num_seqs == 0) continue;
    micro[m].prefill = chunks[m];
    const StepCost t = cost_->cost(micro[m]);
    c.gemm_s += t.gemm_s;
    c.prefill_attn_s += t.prefill_attn_s;
    c.decode_attn_s += t.decode_attn_s;
    c.comm_s += t.comm_s;
    busy += t.total_s() - t.overhead_s;
    overhead = std::max(overhead, t.overhead_s);
    const double hop = setup_.p2p_latency_s +
                       (setup_.p2p_Bps > 0 ? static_cast<double>(micro[m].num_tokens()) *
                                                 setup_.activation_bytes_per_token / setup_.p2p_Bps
                                           : 0.0);
    cycle =
        std::max(cycle, stages * (t.total_s() - t.overhead_s) + t.overhead_s + (stages - 1) * hop);
    work += setup_.work.work(micro[m]);
  }
  const double period = std::max(busy, cycle);
  c.overhead_s = std::min(overhead, period - busy);
  c.pipeline_bubble_s = period - busy - c.overhead_s;
  return c;
}

bool Replica::group_begin(SimTime now) { return begin_step(now); }

StepCost Replica::group_price(std::int64_t padded_tokens, int ranks, bool scheduled, StepWork& w) {
  if (!scheduled) {
    // A dummy step: no sequences, the group's padded tokens through the linear and MoE layers.
    batch_ = Batch{};
    chunks_.clear();
  }
  batch_.dp_padded_tokens = padded_tokens;
  batch_.dp_ranks = ranks;
  if (!scheduled) {
    transfer_s_ = load_s_ = 0;
    w = setup_.work.work(batch_);
    StepCost c = cost_->cost(batch_);
    scale(c, setup_.step_time_scale);
    return c;
  }
  return price_step(w);
}

void Replica::group_launch(SimTime now, StepCost c, const StepWork& w, SimTime dur,
                           bool scheduled) {
  // The rank waits in the MoE layers' collectives for the slowest rank.
  c.comm_s += std::max(0.0, to_seconds(dur) - c.total_s());
  if (scheduled) {
    launch(now, c, w, dur);
    return;
  }
  // A dummy step keeps the GPU busy but advances no request.
  wait_cause_ = WaitCause::kNone;
  count_step(c, w, to_seconds(dur));
  --stats_.steps;  // steps count batches that advanced requests
  in_flight_ = true;
  ++launched_;
  scheduled_.clear();
}

void Replica::group_end(SimTime now, bool scheduled) {
  if (scheduled) finish_step(now);
}

}  // namespace kvfleet::sim
