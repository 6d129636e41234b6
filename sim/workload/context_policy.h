#pragma once
// Context policies: how much of a conversation's history the application sends with each turn
// (DESIGN.md, "ContextPolicy"). Chosen by `workload.context_policy.impl` in a conversations
// workload. A policy sees the finished turns and the summary, and decides which turns go into the
// next prompt and whether to summarise first.
#include <cstdint>
#include <span>

#include "sim/config/params.h"
#include "sim/request/request.h"

namespace kvfleet::sim {

// One finished turn: the user's message and the reply, as prompt content.
struct Turn {
  Segment user;
  Segment reply;
  std::int64_t tokens() const { return static_cast<std::int64_t>(user.tokens) + reply.tokens; }
};

struct ConversationView {
  std::span<const Turn> turns;       // every finished turn, oldest first
  std::size_t summarized_turns = 0;  // the summary (if any) stands for turns [0, this)
  std::int64_t summary_tokens = 0;   // 0: no summary
  std::int64_t fixed_tokens = 0;     // system prompt, documents, header and the new message
  std::int64_t limit_tokens = 0;     // max input: max context − output reservation (0: none)
};

struct HistoryChoice {
  std::size_t first_turn = 0;  // send turns [first_turn, end)
  bool use_summary = false;    // send the summary before them
  bool summarize_now = false;  // first ask for a summary of turns [0, summarize_upto)
  std::size_t summarize_upto = 0;
};

class ContextPolicy {
 public:
  virtual ~ContextPolicy() = default;
  virtual HistoryChoice choose(const ConversationView& v) const = 0;
};

using ContextPolicyRegistry = config::Registry<ContextPolicy>;
const ContextPolicyRegistry& context_policy_registry();

// Tokens of turns [first, end).
std::int64_t history_tokens(std::span<const Turn> turns, std::size_t first);

}  // namespace kvfleet::sim
