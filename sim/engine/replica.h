#pragma once
// One serving engine (one or more GPUs under tensor parallelism) with vLLM v1 scheduling
// semantics (vllm/v1/core/sched/scheduler.py, Scheduler.schedule):
//  - every step has a token budget (max_num_batched_tokens) and at most max_num_seqs running;
//  - RUNNING requests are scheduled first, in order, each taking the tokens it still needs
//    (one for a decode, a chunk for a prefill), capped by the remaining budget;
//  - when a request needs KV blocks and none are free, the newest running request (FCFS) is
//    preempted by recompute: its blocks are freed and it goes back to the front of the waiting
//    queue with nothing computed; if it was the request itself, scheduling of running stops;
//  - WAITING requests are admitted only in steps that preempted nothing, in order, while budget,
//    max_num_seqs and KV blocks allow; with chunked prefill a prompt may take part of the budget.
// The step then takes the cost model's time; tokens are emitted at its end.
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <absl/container/inlined_vector.h>

#include "sim/core/event_queue.h"
#include "sim/core/ids.h"
#include "sim/cost/cost_model.h"
#include "sim/cost/work.h"
#include "sim/engine/block_hash.h"
#include "sim/engine/engine_config.h"
#include "sim/engine/engine_stats.h"
#include "sim/engine/frontend.h"
#include "sim/engine/kv_cache.h"
#include "sim/engine/kv_layout.h"
#include "sim/engine/kv_tier.h"
#include "sim/engine/memory.h"
#include "sim/engine/preemption.h"
#include "sim/engine/retention.h"
#include "sim/engine/scheduler.h"
#include "sim/engine/wait_queue.h"
#include "sim/request/request.h"
#include "sim/request/request_log.h"

namespace kvfleet::sim {

// Told when a request ends on a replica (completed, rejected, or abandoned at the stop).
class RequestObserver {
 public:
  virtual ~RequestObserver() = default;
  virtual void on_request_end(RequestId request, SimTime now) = 0;
  // Its first token was emitted.
  virtual void on_first_token(RequestId request, SimTime now) {}
  // A prefill-only request (RequestSpec::handoff) produced its first token and left this
  // replica, its KV to be sent to a decode replica.
  virtual void on_handoff(RequestId request, SimTime now) {}
};

struct ReplicaSetup {
  std::string name;
  EngineConfig engine;
  MemoryBudget memory;
  int max_model_len = 0;
  double host_link_Bps = 0;  // per GPU, for swapping KV
  int gpus = 1;              // GPUs of the replica (tensor parallelism), for GPU-seconds
  WorkModel work;            // FLOPs and bytes of a step, for utilisation
  // Decoding sequences advance in bulk between the steps where something happens to them (see
  // Replica::coast_steps): the same events, times and counts as visiting each one every step.
  // Off (simulation.fast_decode: false) for the differential test, which compares the two.
  bool fast_decode = true;
  // Pipeline parallelism: stages, and the link that carries activations between them.
  int pipeline_stages = 1;
  double p2p_Bps = 0, p2p_latency_s = 0;
  double activation_bytes_per_token = 0;
  bool check_invariants = false;
  // The API server in front of the engine: its output side (detokenisation, streaming, the
  // final chunk) moves the first-token and finish times the request log records to when a
  // client sees them. Its input side is the simulation's (Simulation::dispatch). Off unless the
  // scenario's pool turns it on (a replica built in code measures as the engine does).
  FrontendConfig frontend{.enabled = false};
  // Every step's time × this (PoolConfig::step_time_scale): a what-if and the capacity search's
  // sensitivity to the cost model.
  double step_time_scale = 1;
};

// One engine step, for traces (kvfleet run --trace): when it started, how long it took and what
// it computed.
struct StepTrace {
  SimTime start = 0;
  float dur_s = 0;
  std::int32_t seqs = 0;
  std::int32_t prefill_tokens = 0;
  std::int32_t decode_seqs = 0;
};

// One engine step's batch as the cost model saw it, for checking a cost model step by step
// (tests/validation/step_oracle_test.cpp): its prefill chunks and decode contexts.
struct BatchTrace {
  SimTime start = 0;
  double step_s = 0;  // the step's time (StepCost::total_s)
  std::int32_t num_seqs = 0;
  std::int32_t num_sampled = 0;
  std::int64_t dp_padded_tokens = 0;
  std::int32_t dp_ranks = 1;
  std::vector<PrefillChunk> chunks;
  std::vector<std::int32_t> decode_contexts;  // new token included
};

class LockstepGroup;

// The events of one engine: a step starts (after every arrival of its instant), a step ends.
enum class ReplicaEvent : std::uint32_t { kStepStart, kStepEnd, kCount };

class Replica final : public EventHandlerOf<ReplicaEvent>, private VictimChooser {
 public:
  // Records every step into `out` (at most `limit` steps) while set; nullptr stops recording.
  void trace_steps(std::vector<StepTrace>* out, std::size_t limit) {
    trace_ = out;
    trace_limit_ = limit;
  }
  // Records every step's batch into `out` (at most `limit`) while set; nullptr stops recording.
  void trace_batches(std::vector<BatchTrace>* out, std::size_t limit) {
    batch_trace_ = out;
    batch_trace_limit_ = limit;
  }
  Replica(ReplicaSetup setup, std::unique_ptr<CostModel> cost, RequestLog& log, EventQueue& q,
          int index, RequestObserver* observer = nullptr);

  // A request reaches this engine at `now`; the engine keeps its content (`spec.segments`). It is
  // rejected at once if it can never run here.
  void submit(RequestId request, RequestSpec&& spec, SimTime now);

  // Load signals (as vLLM's metrics name them).
  int num_requests_running() const { return static_cast<int>(running_.size()); }
  int num_requests_waiting() const { return static_cast<int>(waiting_.size()); }
  double kv_cache_usage() const { return layout_->usage(); }
  // Token states held by requests (their computed tokens) and KV memory given to them, in tokens
  // (blocks × block_size, or contiguous reservations).
  std::int64_t kv_tokens_held() const { return held_tokens_; }
  std::int64_t kv_tokens_allocated() const { return layout_->allocated_tokens(); }
  bool idle() const;
  bool has_work() const { return !running_.empty() || !waiting_.empty(); }

  // Data-parallel lockstep (engine/lockstep.h): the group drives this engine's steps. A group
  // step schedules every rank (group_begin: false = nothing to run, the rank runs a dummy
  // step), prices each at the group's padding (group_price), runs them all for the slowest
  // rank's time (group_launch) and ends them together (group_end).
  void join(LockstepGroup* group) { group_ = group; }
  bool group_begin(SimTime now);
  std::int64_t scheduled_tokens() const { return batch_.num_tokens(); }
  StepCost group_price(std::int64_t padded_tokens, int ranks, bool scheduled, StepWork& w);
  void group_launch(SimTime now, StepCost c, const StepWork& w, SimTime dur, bool scheduled);
  // The group's step ended on every rank (called on all ranks before any group_end, so that a
  // request one rank's end sends to another finds no step in flight anywhere).
  void group_landed();
  void group_end(SimTime now, bool scheduled);

  const std::string& name() const { return setup_.name; }
  int index() const { return index_; }
  const EngineStats& stats() const { return stats_; }
  const MemoryBudget& memory() const { return setup_.memory; }
  const KvCacheManager& kv() const { return kv_; }
  const std::vector<KvTier>& tiers() const { return tiers_; }
  // Prefix-cache lookups by tenant: tenant -> (queried tokens, hit tokens).
  const absl::flat_hash_map<std::uint32_t, std::pair<std::int64_t, std::int64_t>>&
  tenant_prefix_stats() const {
    return tenant_prefix_;
  }

  // Marks every request still here as unfinished (the simulation stopped early).
  void abandon(SimTime now);
  // The client cancelled `request` and the cancellation reaches the engine: its work stops at the
  // next step boundary (vLLM processes aborts between steps) and its KV is freed.
  void cancel(RequestId request, SimTime now);
  // The application says a session went idle: drop the KV its free cached blocks hold (only
  // session-based retention keeps the per-session index this needs). Returns blocks dropped.
  std::int64_t release_session(std::uint64_t session);
  // The engine stops (failure, or a restart for a deploy): every request still here ends with
  // `outcome` (failed), the step in flight never ends, and its KV (GPU, host swap, tiers) is gone:
  // it starts again empty.
  void stop(SimTime now, Outcome outcome = Outcome::kFailed);
  // A request handed over to a decode replica (RequestSpec::handoff) keeps its KV here until
  // the transfer completes; this frees it.
  void release_handoff(RequestId request, SimTime now);

 private:
  void handle(ReplicaEvent kind, std::uint64_t arg, SimTime now) override;
  const char* handler_name() const override { return "Replica"; }

  struct Seq {
    std::uint32_t request = 0;
    std::int32_t prompt_tokens = 0;
    std::int32_t max_output = 0;
    std::int32_t num_output = 0;    // tokens emitted so far
    std::int32_t num_computed = 0;  // tokens whose KV is computed
    std::int32_t max_computed = 0;  // highest num_computed reached (recomputation below it)
    std::int32_t kv_room = 0;       // tokens its KV blocks can hold (saves a block-table look)
    // While more of its blocks may be entered (wants_caching): the token count at which the
    // first block the index lacks is full, (num_cached_in_table + 1) × block size, set by each
    // cache_new_blocks; 0 after its table was emptied or refilled, until that call. Below it a
    // step has nothing to enter (saves a division and a block-table look per sequence and step).
    std::int32_t cache_at = 0;
    double gpu_s = 0;       // GPU-seconds of its share of the steps so far
    std::uint64_t ord = 0;  // admission order (running_ is sorted by it)
    // Coasting (fast decode): a pure decode that steps pass without visiting. num_computed,
    // num_output, max_computed and gpu_s are as of coast_tick; sync() adds the steps since.
    std::uint64_t coast_tick = 0;  // tick_ when it started coasting
    std::uint64_t coast_due = 0;   // the tick at whose step it must be visited again
    double coast_g = 0;            // coast_gpu_s_ when it started coasting
    bool coasting = false;
    bool hashable = false;    // more blocks may still be hashed (see Content)
    bool hashed = false;      // some of its blocks have hashes
    bool all_cached = false;  // hashing ended and every hash is in the index
    std::int32_t num_tokens() const { return prompt_tokens + num_output; }
  };
  // What a sequence holds, kept apart from Seq so that the scheduler's per-step loops over Seq
  // stay within few cache lines. Capacity is reused across the requests a slot serves.
  struct Content {
    std::uint32_t tenant = 0;
    std::uint64_t session = 0;         // retention key: the session, or the request alone
    std::int32_t swapped_tokens = 0;   // KV tokens held in host swap space while waiting
    std::int32_t preloaded = 0;        // prompt tokens whose KV arrived with the request
    bool handoff = false;              // prefill only: leaves after its first token
    bool preload_pending = false;      // its prompt's KV arrives with it (first admission only)
    std::uint64_t eligible_step = 0;   // async scheduling: first step (launch count) it may join
    std::int32_t output_offset = 0;    // output tokens produced before it came here
    std::int64_t free_base = 0;        // record's cached + loaded tokens when it came here
    std::int64_t recomputed_base = 0;  // record's recomputed tokens when it came here
    std::vector<Segment> segments;
    std::uint64_t output_content = 0;
    std::vector<std::uint64_t> hashes;  // full-block hashes computed so far
    BlockHasher hasher;
  };
  struct Scheduled {  // 8 bytes: written for every sequence of every step
    SlotId slot;
    std::int32_t tokens;
  };
  // One token of a request past its prompt (before the step's tokens are applied).
  static bool is_decode(const Seq& q, std::int32_t tokens) {
    return q.num_output > 0 && tokens == 1 && q.num_computed + 1 == q.num_tokens();
  }

  // Adds `tokens` of `q` to the step and to the batch the cost model sees.
  void schedule_tokens(SlotId slot, const Seq& q, std::int64_t tokens) {
    Scheduled sc{slot, static_cast<std::int32_t>(tokens)};
    add_to_batch(q, sc);
    scheduled_.push_back(sc);
  }
  void add_to_batch(const Seq& q, const Scheduled& sc) {
    if (wants_contexts_ && is_decode(q, sc.tokens)) decode_contexts_.push_back(q.num_computed + 1);
    add_to(batch_, chunks_, q, sc);
  }
  static void add_to(Batch& b, std::vector<PrefillChunk>& chunks, const Seq& q,
                     const Scheduled& sc) {
    const bool emits = q.num_computed + sc.tokens == q.num_tokens();
    if (is_decode(q, sc.tokens)) {
      ++b.num_decode_seqs;
      b.decode_context_tokens += q.num_computed + 1;
    } else {
      const double t = sc.tokens, p = q.num_computed;
      b.num_prefill_tokens += sc.tokens;
      b.prefill_context_tokens += q.num_computed + sc.tokens;
      b.prefill_attention_pairs += t * p + t * (t + 1) / 2;
      chunks.push_back({sc.tokens, q.num_computed});
    }
    b.num_sampled += emits;
  }
  // The step's time and work (per GPU) under pipeline parallelism: the scheduled sequences split
  // into one micro-batch per stage, each micro-batch priced as one stage.
  StepCost pipeline_cost(StepWork& work);
  void start_step(SimTime now);
  // start_step's parts: schedule the batch (false: no work), price it, and start it for `dur`.
  bool begin_step(SimTime now);
  StepCost price_step(StepWork& w);
  void launch(SimTime now, const StepCost& c, const StepWork& w, SimTime dur);
  // Applies the step's tokens (end_step without starting the next step).
  void finish_step(SimTime now);
  // Adds a step's cost, work and duration to the counters.
  void count_step(const StepCost& c, const StepWork& w, double dur_s);
  void end_step(SimTime now);
  void schedule();
  void schedule_running(std::int64_t& budget);
  // Fast decode. A step visits only the running sequences in active_ (not coasting) and adds
  // the coasting ones to its batch as a sum: each decodes one token. A sequence coasts from
  // the end of a step after which it is a pure decode until the step at which it would do
  // anything else: finish, need a KV block, fill a block the prefix cache should enter, or
  // reach max_model_len (coast_steps). A step that could run short of token budget or KV
  // blocks syncs every sequence and is scheduled as before (schedule_running).
  bool coasting_allowed() const {
    return fast_decode_ && group_ == nullptr && batch_trace_ == nullptr;
  }
  // The tokens schedule_running gives running sequence `q` when the budget does not run out.
  std::int64_t step_need(const Seq& q) const;
  // Schedules active_ as schedule_running would schedule running_ (false, scheduling nothing,
  // when the budget or the free KV blocks might not cover every running sequence).
  bool schedule_active(std::int64_t& budget);
  // Steps `q` (just past a step, up to date) may coast before it must be visited again.
  std::int64_t coast_steps(const Seq& q) const;
  // After a step: the active sequences that can coast start coasting; finished ones leave.
  void start_coasting();
  // Brings a coasting sequence up to date and stops its coasting.
  void sync(SlotId s);
  // Syncs every running sequence (active_ becomes running_).
  void sync_all();
  // Before a step: the sequences due this tick stop coasting and join active_.
  void wake_due();
  void verify_coasting();
  // num_computed of `q` as of now, coasting or not.
  std::int32_t computed_now(const Seq& q) const {
    return q.coasting ? q.num_computed + static_cast<std::int32_t>(tick_ - q.coast_tick)
                      : q.num_computed;
  }
  // Allocates KV for `tokens` of running slot `s` (index i of running_), preempting the policy's
  // victims until it fits; false when `s` itself was preempted.
  bool make_room(SlotId s, std::int64_t tokens, std::size_t& i, std::int64_t& budget);
  void admit_waiting(std::int64_t& budget, bool& prompt_over_budget);
  bool resume_swapped(SlotId s, std::int64_t& budget);
  bool admit(SlotId s, std::int64_t& budget, bool& prompt_over_budget);
  std::pair<std::int64_t, double> tier_prefix(std::span<const std::uint64_t> hashes,
                                              std::int64_t hit_blocks);
  void count_prefix_hits(SlotId s, const Seq& q, RequestRecord& rec, bool preload,
                         std::int64_t gpu_hit);
  void load_from_tiers(std::span<const std::uint64_t> hashes, std::int64_t hit_blocks,
                       std::int64_t tier_blocks, double load_s, RequestRecord& rec,
                       bool first_admission);
  void note_wait_cause(std::int64_t budget, bool prompt_over_budget);
  void preempt(SlotId slot);
  void keep_own_blocks(SlotId slot, Seq& q);
  // Session-based retention.
  std::uint64_t choose_victim() override;
  void session_start(std::uint64_t key, std::int32_t priority, SimTime now);
  void session_end(std::uint64_t key, SimTime now);
  void retain(SimTime now);  // proactive eviction after a step (watermark, idle TTL)
  // Moves blocks the GPU evicted this step down the tiers.
  void spill_evicted(SimTime now);
  // Seconds a prefill chunk of `tokens` on top of `prefix` adds to a typical step.
  double prefill_seconds(std::int64_t tokens, std::int64_t prefix) const;
  // Removes the running request the scheduling policy preempts. Returns its slot and its index
  // in running_ before removal.
  std::pair<SlotId, std::size_t> pop_victim();
  // What the scheduling policy sees of the request in `slot`.
  SchedView view(SlotId slot, SimTime now) const;
  SimTime sched_now_ = 0;  // the time of the step being planned (for the policy's views)
  // Puts `slot` in the waiting queue (new, or back after a preemption).
  void wait(SlotId slot, bool preempted);
  void finish(SlotId slot, SimTime now, Outcome o);
  void release_slot(SlotId slot, SimTime now);  // frees its KV and the slot
  // Builds the layout, tiers and session mode around a fresh kv_ (construction, stop()).
  void empty_memory();
  SlotId new_slot();
  void verify();
  void apply_cancels(SimTime now);
  std::vector<std::uint32_t> pending_cancels_;  // requests, taken at the next step boundary
  // Hashes of `q`'s full blocks up to `blocks` (fewer if its content turns unique).
  std::span<const std::uint64_t> hashes_upto(SlotId slot, std::int64_t blocks);
  // More of `q`'s blocks may still be hashed or entered in the index.
  static bool wants_caching(const Seq& q) { return q.hashable || (q.hashed && !q.all_cached); }
  // Enters the blocks `q` will have filled after this step in the prefix-cache index.
  void cache_full_blocks(SlotId slot, Seq& q, std::int64_t tokens_after_step) {
    if (wants_caching(q)) cache_new_blocks(slot, q, tokens_after_step);
  }
  void cache_new_blocks(SlotId slot, Seq& q, std::int64_t tokens_after_step);

  ReplicaSetup setup_;
  LockstepGroup* group_ = nullptr;
  std::unique_ptr<CostModel> cost_;
  RequestLog& log_;
  EventQueue& queue_;
  RequestObserver* observer_;
  int index_;
  KvCacheManager kv_;
  std::unique_ptr<KvLayout> layout_;              // paged (kv_ with its prefix cache) or contiguous
  bool reserves_ = false;                         // layout_->reserves_at_admission(), read per step
  std::unique_ptr<PreemptionPolicy> preemption_;  // what a preempted request's KV becomes
  std::vector<KvTier> tiers_;
  std::unique_ptr<RetentionPolicy> retention_;
  bool by_session_ = false;
  absl::flat_hash_map<std::uint64_t, SessionState> sessions_;
  std::int64_t session_ends_ = 0;
  std::int64_t held_tokens_ = 0;  // Σ num_computed over running requests
  int max_model_len_;

  std::vector<Seq> seqs_;         // by slot: seq(slot)
  std::vector<Content> content_;  // by slot: content(slot)
  Seq& seq(SlotId s) { return seqs_[s.value()]; }
  const Seq& seq(SlotId s) const { return seqs_[s.value()]; }
  Content& content(SlotId s) { return content_[s.value()]; }
  const Content& content(SlotId s) const { return content_[s.value()]; }
  std::vector<SlotId> free_slots_;
  std::vector<SlotId> retired_slots_;                  // freed during end_step, reusable after it
  absl::flat_hash_map<std::uint32_t, SlotId> handed_;  // request -> slot, KV in transfer
  bool in_end_step_ = false;
  std::vector<SlotId> running_;  // slots, in admission order
  // Fast decode (see coasting_allowed).
  bool fast_decode_ = false;  // setup_.fast_decode, and nothing needs every sequence a step
  struct Active {
    std::uint64_t ord;  // seq(slot).ord, kept here so that merging reads no sequence
    SlotId slot;
  };
  std::vector<Active> active_;    // running, not coasting, in running_'s order (by ord)
  std::vector<Active> woken_;     // wake_due's scratch
  std::vector<Active> merged_;    // wake_due's scratch
  std::uint64_t next_ord_ = 0;    // Seq::ord of the next admission
  std::uint64_t tick_ = 0;        // steps ended (finish_step)
  double coast_gpu_s_ = 0;        // sum of gpu_s_per_token_ over the steps ended
  std::int64_t coast_count_ = 0;  // coasting sequences
  std::int64_t coast_ctx_ = 0;    // sum of num_computed of the coasting sequences, as of now
  // When each coasting sequence is due: in ring_[due % kRing] when due within kRing ticks (a
  // paged sequence coasts at most a block's tokens), else in far_ (in no order, scanned only
  // once its earliest is due). An entry leaves when it is due or when everything is synced,
  // never otherwise. The buckets keep a few entries inline: in a large fleet a replica's state
  // is cold again by its next step, and a pointer to chase would be a second cache miss.
  struct Due {
    std::uint64_t due, ord;
    SlotId slot;
  };
  static constexpr std::uint64_t kRing = 64;
  std::vector<absl::InlinedVector<Due, 4>> ring_ = std::vector<absl::InlinedVector<Due, 4>>(kRing);
  std::vector<Due> far_;
  std::uint64_t far_min_ = UINT64_MAX;
  std::int64_t due_count_ = 0;  // entries in ring_ and far_
  void activate_all();          // active_ = running_ (nothing coasts)
  std::unique_ptr<SchedulingPolicy> policy_;
  std::vector<SchedView>
      victims_;        // pop_victim's scratch: the running requests as the policy sees them
  WaitQueue waiting_;  // slots, in the policy's order

  // The step in flight.
  bool stepping_ = false;
  bool in_flight_ = false;      // a step was launched and has not ended
  bool held_back_ = false;      // async scheduling held a waiting request back this step
  std::uint64_t launched_ = 0;  // steps launched (dummy steps of a lockstep group included)
  bool preempted_this_step_ = false;
  // Why the last schedule() left requests waiting (see EngineStats::wait_*_s).
  enum class WaitCause : std::uint8_t { kNone, kKv, kTokenBudget, kMaxSeqs } wait_cause_{};
  bool batch_dirty_ = false;
  double transfer_s_ = 0;  // KV copy time added to the step being scheduled
  double load_s_ = 0;      // tier loads of the step being scheduled
  double host_link_Bps_ = 0;
  SimTime step_start_ = 0;
  double gpu_s_per_token_ = 0;  // the step in flight's GPU-seconds per scheduled token
  // The frontend's output side: tokens of the step in flight (sequences that emit one), and,
  // while its end is applied, when they reach the clients.
  OutputProcessor output_{FrontendConfig{.enabled = false}};
  std::int32_t step_emits_ = 0;
  SimTime seen_ = 0;
  SimTime finish_delay_ = 0;
  EventId step_event_;  // the step start or end pending, cancelled by stop()
  std::vector<Scheduled> scheduled_;
  std::vector<PrefillChunk> chunks_;
  bool wants_contexts_ = false;                // the cost model reads decode contexts
  std::vector<std::int32_t> decode_contexts_;  // this step's, when it does
  // pipeline_cost's per-step scratch, kept to spare allocations: the scheduled sequences by
  // size, and each micro-batch with its prefill chunks.
  std::vector<Scheduled> pp_order_;
  std::vector<Batch> pp_micro_;
  std::vector<std::vector<PrefillChunk>> pp_chunks_;
  Batch batch_;
  EngineStats stats_;
  absl::flat_hash_map<std::uint32_t, std::pair<std::int64_t, std::int64_t>> tenant_prefix_;
  std::vector<std::uint8_t> verify_marks_;  // scratch for verify()
  std::vector<StepTrace>* trace_ = nullptr;
  std::size_t trace_limit_ = 0;
  std::vector<BatchTrace>* batch_trace_ = nullptr;
  std::size_t batch_trace_limit_ = 0;
};

}  // namespace kvfleet::sim
