#include "sim/workload/context_policy.h"

#include <algorithm>

namespace kvfleet::sim {

std::int64_t history_tokens(std::span<const Turn> turns, std::size_t first) {
  std::int64_t n = 0;
  for (std::size_t i = first; i < turns.size(); ++i) n += turns[i].tokens();
  return n;
}

namespace {

// Everything, every time (with the summary if an earlier policy left one).
class Full final : public ContextPolicy {
 public:
  struct Config {
    template <class V>
    void visit(V&) {}
  };
  explicit Full(const Config&) {}
  HistoryChoice choose(const ConversationView& v) const override {
    return {v.summarized_turns, v.summary_tokens > 0, false, 0};
  }
};

// The last N turns.
class Window final : public ContextPolicy {
 public:
  struct Config {
    int turns = 8;
    template <class V>
    void visit(V& v) {
      v.param(
          "turns", turns,
          {.unit = "turns", .desc = "most recent turns to send", .min = 0, .label = "Turns kept"});
    }
  };
  explicit Window(const Config& c) : n_(static_cast<std::size_t>(c.turns)) {}
  HistoryChoice choose(const ConversationView& v) const override {
    const std::size_t first = v.turns.size() > n_ ? v.turns.size() - n_ : 0;
    return {first, false, false, 0};
  }

 private:
  std::size_t n_;
};

// Drop the oldest turns until the input fits the limit.
class Budget final : public ContextPolicy {
 public:
  struct Config {
    template <class V>
    void visit(V&) {}
  };
  explicit Budget(const Config&) {}
  HistoryChoice choose(const ConversationView& v) const override {
    std::size_t first = 0;
    if (v.limit_tokens > 0) {
      std::int64_t h = history_tokens(v.turns, 0);
      while (first < v.turns.size() && v.fixed_tokens + h > v.limit_tokens)
        h -= v.turns[first++].tokens();
    }
    return {first, false, false, 0};
  }
};

// When the history since the last summary reaches a threshold, summarise all but the most recent
// turns; the summary then replaces them.
class Summarize final : public ContextPolicy {
 public:
  struct Config {
    std::int64_t threshold_tokens = 4000;
    int keep_turns = 2;
    template <class V>
    void visit(V& v) {
      v.param("threshold_tokens", threshold_tokens,
              {.unit = "tokens",
               .desc = "summarise when summary + history reach this",
               .min = 1,
               .label = "Summarise at"});
      v.param("keep_turns", keep_turns,
              {.unit = "turns",
               .desc = "recent turns kept verbatim after summarising",
               .min = 0,
               .label = "Turns kept verbatim"});
    }
  };
  explicit Summarize(const Config& c) : c_(c) {}
  HistoryChoice choose(const ConversationView& v) const override {
    const std::int64_t context = v.summary_tokens + history_tokens(v.turns, v.summarized_turns);
    const std::size_t keep = static_cast<std::size_t>(c_.keep_turns);
    if (context >= c_.threshold_tokens && v.turns.size() > v.summarized_turns + keep)
      return {v.summarized_turns, v.summary_tokens > 0, true, v.turns.size() - keep};
    return {v.summarized_turns, v.summary_tokens > 0, false, 0};
  }

 private:
  Config c_;
};

}  // namespace

const ContextPolicyRegistry& context_policy_registry() {
  static const ContextPolicyRegistry reg = [] {
    ContextPolicyRegistry r("context policy", "full");
    r.add<Full>("full", "Send the whole history every turn.");
    r.add<Window>("window", "Send the last N turns.");
    r.add<Budget>("budget",
                  "Drop the oldest turns until the input fits max_context − output reservation.");
    r.add<Summarize>("summarize",
                     "At a threshold, ask the fleet for a summary of the older turns; the summary "
                     "replaces them in later prompts.");
    return r;
  }();
  return reg;
}

}  // namespace kvfleet::sim
