#pragma once
// Per-request records: what happened to every request, filled in as it moves through the fleet.
#include <cstdint>
#include <string_view>
#include <vector>

#include "sim/core/field.h"
#include "sim/core/time.h"

namespace kvfleet::sim {

enum class Outcome : std::uint8_t {
  kPending = 0,  // still in the system
  kOk,           // completed all its output tokens
  kRejected,     // refused before running (reason in RejectReason)
  kTimedOut,
  kCancelled,
  kFailed,
  kUnfinished,  // still in the system when the simulation stopped (simulation.max_time_s)
};
std::string_view outcome_name(Outcome o);

enum class RejectReason : std::uint8_t {
  kNone = 0,
  kExceedsMaxModelLen,    // input + output > max_model_len
  kExceedsKvCapacity,     // needs more KV blocks than the replica has
  kExceedsBatchedTokens,  // prompt > max_num_batched_tokens without chunked prefill
  kContextOverflow,       // the application's context did not fit its limit (not sent)
  // The gateway (admission control; the client gets a 429 with a retry-after):
  kShed,          // the pool was saturated and the request's priority band is shed
  kQueueFull,     // the gateway queue of its pool was full
  kQueueTimeout,  // waited at the gateway longer than its limit
};
// Rejections a client may retry (the gateway's; the others would fail again).
inline bool retryable(RejectReason r) {
  return r == RejectReason::kShed || r == RejectReason::kQueueFull ||
         r == RejectReason::kQueueTimeout;
}
std::string_view reject_reason_name(RejectReason r);

struct RequestRecord {
  std::uint64_t id = 0;
  SimTime arrival = 0;
  SimTime first_scheduled = -1;  // first step that computed any of its tokens
  SimTime first_token = -1;
  SimTime finish = -1;  // completion, rejection or stop time
  std::int32_t input_tokens = 0;
  std::int32_t output_tokens = 0;  // requested
  std::int32_t generated_tokens = 0;
  std::int32_t cached_tokens = 0;  // prompt tokens served from the prefix cache
  std::int32_t loaded_tokens = 0;  // prompt tokens loaded from a KV tier (first admission)
  std::int32_t num_preemptions = 0;
  std::int64_t recomputed_tokens = 0;  // tokens computed again after preemption
  std::int32_t replica = -1;
  std::uint32_t tenant = 0;
  std::uint64_t session = 0;
  std::int32_t priority = 0;
  std::uint8_t purpose = 0;           // 0: a user's turn; 1: summarisation
  std::int32_t turn = 0;              // turn of its session (1-based; 0: not a conversation)
  std::int32_t truncated_tokens = 0;  // history cut by the application to fit
  std::int32_t stable_tokens = 0;     // prompt tokens before its history (conversations)
  bool client_gone = false;           // the client cancelled; the server may still be working on it
  bool cancel_propagates = true;      // a cancellation stops the engine's work on it
  std::int64_t work_tokens = 0;       // token positions the engine computed for it (all steps)
  double gpu_s = 0;  // GPU-seconds of the steps it took part in, shared by tokens (× GPUs)
  // Clients: an attempt of a logical request. Retries are new records; `origin` is the id of
  // the first attempt, and `retried` says a later attempt followed this one.
  std::uint64_t origin = 0;
  std::int16_t attempt = 0;  // 0 = first
  std::int16_t pool = 0;     // pool that served (or refused) it
  std::int16_t stage = -1;   // load stage it was sent in; -1: none
  bool retried = false;
  std::int32_t prefill_replica = -1;  // disaggregated: where its prompt ran (replica: decode)
  float kv_transfer_s = 0;            // disaggregated: time its KV spent on the network
  // Time the serving frontend (API server) added to its end-to-end latency: HTTP and
  // tokenisation before the engine saw it, streaming its last token and closing the stream.
  float frontend_s = 0;
  Outcome gone_as = Outcome::kCancelled;  // outcome when the client left: cancelled or timed out
  Outcome outcome = Outcome::kPending;
  RejectReason reject_reason = RejectReason::kNone;

  double ttft_s() const { return first_token >= 0 ? to_seconds(first_token - arrival) : -1; }
  double e2e_s() const { return finish >= 0 ? to_seconds(finish - arrival) : -1; }
  double queue_s() const {
    return first_scheduled >= 0 ? to_seconds(first_scheduled - arrival) : -1;
  }
  // Mean time per output token after the first; negative when undefined (one output token).
  double tpot_s() const {
    return generated_tokens > 1 ? to_seconds(finish - first_token) / (generated_tokens - 1) : -1;
  }

  // Its token counters as output fields, in /requests' order (tenant to turn are inserted after
  // recomputed_tokens: output/run_tables.cpp), as EngineStats::declare: v.integer(name, getter,
  // FieldDecl). A per-request counter is a field above, its line here, last (.total =
  // Total::kSum gives the run's sum in /summary, the report and the GUI; a name no /summary
  // metric has) and the code that counts it.
  template <class V>
  static void declare_counters(V& v) {
    using R = RequestRecord;
    constexpr Total sum = Total::kSum;
    v.integer("input_tokens", &R::input_tokens, {.unit = "tokens", .desc = "prompt tokens"});
    v.integer("output_tokens", &R::output_tokens,
              {.unit = "tokens", .desc = "output tokens requested"});
    v.integer("generated_tokens", &R::generated_tokens,
              {.unit = "tokens", .desc = "output tokens emitted"});
    v.integer(
        "cached_tokens", &R::cached_tokens,
        {.unit = "tokens", .desc = "prompt tokens served from the prefix cache (first admission)"});
    v.integer("loaded_tokens", &R::loaded_tokens,
              {.unit = "tokens", .desc = "prompt tokens loaded from a KV tier (first admission)"});
    v.integer("num_preemptions", &R::num_preemptions,
              {.unit = "preemptions", .desc = "times it was preempted"});
    v.integer("recomputed_tokens", &R::recomputed_tokens,
              {.unit = "tokens",
               .desc = "tokens computed again after preemption",
               .total = sum,
               .label = "Tokens recomputed"});
    v.integer("truncated_tokens", &R::truncated_tokens,
              {.unit = "tokens",
               .desc = "history the application cut to fit",
               .total = sum,
               .label = "History tokens cut"});
  }
};

using RequestLog = std::vector<RequestRecord>;

}  // namespace kvfleet::sim
