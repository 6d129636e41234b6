#pragma once
#include <cstdint>
#include <vector>

#include "sim/core/time.h"

namespace kvfleet::sim {

// A piece of prompt content: `tokens` tokens of content `content`, owned by tenant `owner`.
// Equal (content, owner) means equal tokens, so prefix sharing is real without storing tokens.
// Content 0 is unique to its request: it never matches anything (DESIGN.md, "Prompt content").
struct Segment {
  std::uint64_t content = 0;
  std::int32_t tokens = 0;
  std::uint32_t owner = 0;  // tenant; 0 = public content, shared across tenants
};

// Priority classes: 0 is the most urgent; at most kMaxPriority (reports keep a row per class).
inline constexpr int kMaxPriority = 1000;
inline constexpr const char* kMaxPriorityWhy = "priority classes are counted one by one";

// One request as the workload produces it. Later stages add routing and outcome.
struct RequestSpec {
  SimTime arrival = 0;
  std::int32_t input_tokens = 0;
  std::int32_t output_tokens = 0;  // tokens to generate (max_tokens, honoured exactly)
  // The prompt's content in order; its lengths add up to input_tokens. Empty = all unique.
  std::vector<Segment> segments;
  std::uint64_t output_content = 0;  // content id of the generated tokens; 0 = unique
  std::uint32_t tenant = 0;
  std::uint64_t session = 0;  // conversation the request belongs to; 0 = none
  std::int32_t priority = 0;  // lower is more urgent (vLLM's convention)
  // Conversations: what the request is for, and which turn of its session it is (1-based).
  std::uint8_t purpose = 0;  // 0: a user's turn; 1: a summarisation request
  std::int32_t pool = -1;    // index of the pool to serve it; -1: the first pool
  std::int32_t turn = 0;
  std::int16_t stage = -1;  // load stage it was sent in (workload/stages.h); -1: none
  // The application refused to send it: its context did not fit (context policy hard limit).
  bool context_overflow = false;
  std::int32_t truncated_tokens = 0;  // history the application cut to make the prompt fit
  std::int32_t stable_tokens = 0;     // prompt tokens before the history (system, document, header)
  // The client gives up at this time if the reply has not finished (kTimeNever: never); the
  // server stops working on it only if the cancellation propagates.
  SimTime cancel_at = kTimeNever;
  bool cancel_propagates = true;
  // Disaggregated prefill and decode (set by the fleet, not by workloads): a prefill replica runs
  // the prompt and hands the request over after its first token; a decode replica receives the
  // first `preloaded_tokens` of its prompt as KV over the network and continues, its first
  // `output_offset` output tokens already produced elsewhere.
  bool handoff = false;
  std::int32_t preloaded_tokens = 0;
  std::int32_t output_offset = 0;
  // The prompt's full-block hashes at block size `block_hashes_size` (0: none), when the router
  // computed them already: the engine continues from them instead of hashing the prompt again.
  std::vector<std::uint64_t> block_hashes;
  std::int32_t block_hashes_size = 0;
};

inline constexpr std::uint8_t kPurposeTurn = 0;
inline constexpr std::uint8_t kPurposeSummary = 1;
// Not a request: the session went idle, and the fleet may drop the state it holds for it.
inline constexpr std::uint8_t kPurposeRelease = 2;

}  // namespace kvfleet::sim
