// Conversations and context policies: what the application sends turn after turn.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "sim/testing/run.h"

namespace kvfleet {
namespace {

// One session of 50 turns with fixed lengths (system s, user u, reply r; not multiples of the
// 16-token block on purpose) on a KV pool far larger than the conversation.
constexpr std::int64_t kS = 100, kU = 37, kR = 53, kTurns = 50;

std::string one_session(const std::string& extra = "") {
  return "seed: 4\nworkload:\n  impl: conversations\n  num_sessions: 1\n"
         "  turns: {impl: fixed, value: 50}\n  user_tokens: {impl: fixed, value: 37}\n"
         "  reply_tokens: {impl: fixed, value: 53}\n  think_time_s: 1\n"
         "  system_prompt_tokens: 100\n" +
         extra +
         "pools:\n  - model: Llama-3.1-8B\n    gpu: H100-SXM\n"
         "    engine: {max_model_len: 32768}\nsimulation: {check_invariants: true}\n";
}

std::vector<const sim::RequestRecord*> turns_of(const testing::Run& r) {
  std::vector<const sim::RequestRecord*> v;
  for (const auto& q : r.result.requests)
    if (q.purpose == sim::kPurposeTurn) v.push_back(&q);
  std::sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->turn < b->turn; });
  return v;
}

// Without reuse every turn prefills its whole prompt P_k = s + (k − 1)(u + r) + u: the total grows
// with the square of the number of turns. With prefix caching turn k reuses every full block of
// turn k − 1 (its prompt and its reply but the last token): only the new tokens and the tail of
// the last block are computed, and the total grows linearly.
TEST(Conversations, PrefillGrowsQuadraticallyWithoutReuseAndLinearlyWithIt) {
  const auto without =
      testing::run_yaml(one_session(), {"pools[0].engine.enable_prefix_caching=false"});
  const auto with = testing::run_yaml(one_session());
  ASSERT_EQ(without.summary.ok, kTurns);
  ASSERT_EQ(with.summary.ok, kTurns);

  const std::int64_t quadratic = kTurns * (kS + kU) + (kU + kR) * kTurns * (kTurns - 1) / 2;
  std::int64_t linear = 0, prev = 0;
  for (std::int64_t k = 1; k <= kTurns; ++k) {
    const std::int64_t p = kS + (k - 1) * (kU + kR) + kU;
    const std::int64_t cached = k == 1 ? 0 : (prev + kR - 1) / 16 * 16;
    linear += p - cached;
    prev = p;
  }
  const std::int64_t computed_without = without.result.replicas[0].stats.prompt_tokens;
  const std::int64_t computed_with = with.result.replicas[0].stats.prompt_tokens;
  std::printf("50 turns: %lld prefill tokens without reuse (closed form %lld), %lld with (%lld)\n",
              static_cast<long long>(computed_without), static_cast<long long>(quadratic),
              static_cast<long long>(computed_with), static_cast<long long>(linear));
  EXPECT_EQ(computed_without, quadratic);
  EXPECT_EQ(computed_with, linear);
  // Linear: at most the new tokens of each turn plus a block's remainder.
  EXPECT_LE(linear, kS + kTurns * (kU + kR) + kTurns * 16);
  EXPECT_GT(quadratic, 20 * linear);
  // And per turn, the reuse shows in the records.
  const auto t = turns_of(with);
  for (std::size_t k = 1; k < t.size(); ++k) EXPECT_GT(t[k]->cached_tokens, t[k]->stable_tokens);
}

TEST(Conversations, WindowSendsTheLastTurns) {
  const auto r = testing::run_yaml(one_session("  context_policy: {impl: window, turns: 3}\n"));
  const auto t = turns_of(r);
  ASSERT_EQ(t.size(), static_cast<std::size_t>(kTurns));
  for (std::size_t k = 1; k <= t.size(); ++k)
    EXPECT_EQ(t[k - 1]->input_tokens, kS + std::min<std::int64_t>(k - 1, 3) * (kU + kR) + kU)
        << "turn " << k;
}

TEST(Conversations, BudgetKeepsEveryInputWithinTheLimit) {
  const auto r =
      testing::run_yaml(one_session("  context_policy: {impl: budget}\n  max_context_tokens: 1200\n"
                                    "  output_reservation_tokens: 200\n"));
  ASSERT_EQ(r.summary.ok, kTurns);
  EXPECT_EQ(r.summary.context_overflows, 0);
  std::int64_t longest = 0;
  for (const auto* q : turns_of(r)) longest = std::max<std::int64_t>(longest, q->input_tokens);
  EXPECT_LE(longest, 1000);
  EXPECT_GT(longest, 1000 - (kU + kR));  // it drops no more than it must
}

TEST(Conversations, FullHistoryOverflowIsRejectedOrTruncatedNeverSilent) {
  // Full history passes 1,000 input tokens at turn 11: P_11 = 100 + 10 × 90 + 37 = 1,037.
  const auto rej = testing::run_yaml(one_session(
      "  max_context_tokens: 1200\n  output_reservation_tokens: 200\n  overflow: reject\n"));
  EXPECT_EQ(rej.summary.context_overflows, 1);
  EXPECT_EQ(rej.summary.ok, 10);  // the session ends at the turn that does not fit
  const auto* last = turns_of(rej).back();
  EXPECT_EQ(last->turn, 11);
  EXPECT_EQ(last->reject_reason, sim::RejectReason::kContextOverflow);
  EXPECT_EQ(last->replica, -1);  // never reached the fleet

  const auto tr = testing::run_yaml(one_session(
      "  max_context_tokens: 1200\n  output_reservation_tokens: 200\n  overflow: truncate\n"));
  EXPECT_EQ(tr.summary.ok, kTurns);
  EXPECT_EQ(tr.summary.truncated_requests, kTurns - 10);
  EXPECT_GT(tr.summary.total("truncated_tokens"), 0);
}

TEST(Conversations, SummarizeReplacesOlderTurnsWithASummary) {
  const auto r = testing::run_yaml(
      one_session("  context_policy: {impl: summarize, threshold_tokens: 800, keep_turns: 2}\n"
                  "  summary_tokens: 120\n"));
  EXPECT_EQ(r.summary.ok - r.summary.summary_requests, kTurns);
  EXPECT_GT(r.summary.summary_requests, 3);
  std::int64_t longest = 0;
  for (const auto* q : turns_of(r)) longest = std::max<std::int64_t>(longest, q->input_tokens);
  // At most: system + summary + history just under the threshold + one turn + new message.
  EXPECT_LT(longest, kS + 120 + 800 + (kU + kR) + kU);
  // The summarisation work is counted apart from the users' latencies.
  EXPECT_EQ(r.summary.ttft.count, kTurns);
}

TEST(Conversations, ADynamicHeaderFirstDestroysPrefixReuse) {
  const std::string many =
      "seed: 8\nworkload:\n  impl: conversations\n  num_sessions: 40\n"
      "  session_arrival: {impl: poisson, rate_per_s: 1}\n  turns: {impl: fixed, value: 6}\n"
      "  user_tokens: {impl: fixed, value: 60}\n  reply_tokens: {impl: fixed, value: 80}\n"
      "  think_time_s: 2\n  system_prompt_tokens: 500\n  dynamic_header_tokens: 20\n"
      "pools:\n  - model: Llama-3-8B\n    gpu: H100-SXM\n";
  const auto first = testing::run_yaml(many, {"workload.dynamic_header_position=first"});
  const auto after = testing::run_yaml(many, {"workload.dynamic_header_position=after_system"});
  const auto last = testing::run_yaml(many, {"workload.dynamic_header_position=last"});
  std::printf("prefix hit rate, header first %.1f%%, after the system prompt %.1f%%, last %.1f%%\n",
              100 * first.summary.prefix_cache_hit_rate(),
              100 * after.summary.prefix_cache_hit_rate(),
              100 * last.summary.prefix_cache_hit_rate());
  EXPECT_EQ(first.summary.total("prefix_cache_hits"), 0);
  EXPECT_GT(after.summary.prefix_cache_hit_rate(), 0.3);  // the system prompt still hits
  EXPECT_GT(last.summary.prefix_cache_hit_rate(), after.summary.prefix_cache_hit_rate() + 0.2);
}

// Two tenants' sessions work on the same shared document (same content id) but each tenant owns
// its copy: a tenant's first turn never hits the other tenant's cached document.
TEST(Conversations, HistoryAndDocumentsStayWithinATenant) {
  const auto r = testing::run_yaml(
      "seed: 2\nworkload:\n  impl: conversations\n  num_sessions: 12\n  tenants: 2\n"
      "  session_arrival: {impl: poisson, rate_per_s: 0.5}\n  turns: {impl: fixed, value: 3}\n"
      "  user_tokens: {impl: fixed, value: 30}\n  reply_tokens: {impl: fixed, value: 30}\n"
      "  think_time_s: 1\n  document_probability: 1\n  document_tokens: 1000\n"
      "  shared_documents: 1\npools:\n  - model: Llama-3-8B\n    gpu: H100-SXM\n");
  std::map<std::uint32_t, int> seen;
  int later_hits = 0;
  for (const auto& q : r.result.requests) {
    if (q.turn != 1) continue;
    if (seen[q.tenant]++ == 0)
      EXPECT_EQ(q.cached_tokens, 0) << "tenant " << q.tenant << " hit another tenant's document";
    else
      later_hits += q.cached_tokens >= 992;  // the document's full blocks
  }
  EXPECT_EQ(seen.size(), 2u);
  EXPECT_GT(later_hits, 0);  // within a tenant the document is shared
}

TEST(Conversations, ClosedLoopUsersRunAtMostOneSessionEach) {
  const auto r = testing::run_yaml(
      "seed: 6\nworkload:\n  impl: conversations\n  num_sessions: 30\n  users: 4\n"
      "  session_gap_s: 2\n  turns: {impl: fixed, value: 3}\n  user_tokens: {impl: fixed, value: "
      "50}\n"
      "  reply_tokens: {impl: fixed, value: 50}\n  think_time_s: 1\n"
      "pools:\n  - model: Llama-3-8B\n    gpu: H100-SXM\n");
  EXPECT_EQ(r.summary.sessions, 30);
  std::map<std::uint64_t, std::pair<double, double>> span;
  for (const auto& q : r.result.requests) {
    auto [it, fresh] =
        span.try_emplace(q.session, sim::to_seconds(q.arrival), sim::to_seconds(q.finish));
    if (!fresh) {
      it->second.first = std::min(it->second.first, sim::to_seconds(q.arrival));
      it->second.second = std::max(it->second.second, sim::to_seconds(q.finish));
    }
  }
  int most = 0;
  for (const auto& [a, sa] : span) {
    int overlap = 0;
    for (const auto& [b, sb] : span) overlap += sb.first <= sa.first && sa.first < sb.second;
    most = std::max(most, overlap);
  }
  EXPECT_LE(most, 4);
  EXPECT_GE(most, 2);
}

// A user who gives up cancels the turn. Propagated, the engine stops at the next step and frees the
// KV: the wasted work is what it computed so far. Not propagated, it finishes the reply for nobody.
TEST(Conversations, CancelledTurnsStopOrWasteTheServersWork) {
  // Replies of 400 tokens take about 4 s on an H100; users wait 1 s.
  const std::string y =
      "seed: 5\nworkload:\n  impl: conversations\n  num_sessions: 20\n"
      "  session_arrival: {impl: poisson, rate_per_s: 2}\n  turns: {impl: fixed, value: 3}\n"
      "  user_tokens: {impl: fixed, value: 200}\n  reply_tokens: {impl: fixed, value: 400}\n"
      "  think_time_s: 1\n  patience_s: 1\n"
      "pools:\n  - model: Llama-3-8B\n    gpu: H100-SXM\nsimulation: {check_invariants: true}\n";
  const auto stop = testing::run_yaml(y, {"workload.cancel_propagates=true"});
  const auto waste = testing::run_yaml(y, {"workload.cancel_propagates=false"});
  for (const auto* r : {&stop, &waste}) {
    EXPECT_EQ(r->summary.cancelled, 20);  // every session's first turn, then the user leaves
    EXPECT_EQ(r->summary.ok, 0);
  }
  for (const auto& q : stop.result.requests) {
    EXPECT_EQ(q.outcome, sim::Outcome::kCancelled);
    EXPECT_LT(q.generated_tokens, 400);  // stopped early
    EXPECT_LT(q.work_tokens, 200 + 400 - 1);
    EXPECT_GT(q.work_tokens, 0);
  }
  for (const auto& q : waste.result.requests) {
    EXPECT_EQ(q.outcome, sim::Outcome::kCancelled);
    EXPECT_EQ(q.generated_tokens, 400);       // finished for nobody
    EXPECT_EQ(q.work_tokens, 200 + 400 - 1);  // every position but the last token's
  }
  EXPECT_LT(stop.summary.wasted_tokens, waste.summary.wasted_tokens);
  EXPECT_EQ(waste.summary.wasted_tokens, 20 * 599);
}

// Active -> idle -> archived: a session whose user thinks longer than idle_timeout_s turns idle
// and the fleet drops its KV (with a session-based retention policy: lru keeps no per-session
// index); one whose user thinks longer than archive_timeout_s is archived and sends nothing more.
TEST(Conversations, IdleSessionsDropTheirKvAndArchivedOnesEnd) {
  const std::string y =
      "seed: 7\nworkload:\n  impl: conversations\n  num_sessions: 40\n"
      "  session_arrival: {impl: poisson, rate_per_s: 1}\n  turns: {impl: fixed, value: 6}\n"
      "  user_tokens: {impl: fixed, value: 100}\n  reply_tokens: {impl: fixed, value: 100}\n"
      "  think_time_s: 20\n  idle_timeout_s: 10\n  archive_timeout_s: 40\n"
      "pools:\n  - model: Llama-3-8B\n    gpu: H100-SXM\nsimulation: {check_invariants: true}\n";
  const auto lru = testing::run_yaml(y, {"pools[0].engine.retention={impl: lru}"});
  const auto aware = testing::run_yaml(y, {"pools[0].engine.retention={impl: session_aware}"});
  for (const auto* r : {&lru, &aware}) {
    // Exponential think times of mean 20 s: about e^-0.5 = 61% exceed 10 s, e^-2 = 14% exceed 40.
    EXPECT_GT(r->summary.workload_stat("sessions_gone_idle"), 0);
    EXPECT_GT(r->summary.workload_stat("sessions_archived"), 0);
    // Archived sessions stop early: fewer turns than 40 sessions x 6.
    EXPECT_LT(r->summary.ok, 240);
    // Think times are drawn in the order turns complete, which the retention policy shifts: the
    // counts agree closely, not exactly.
    EXPECT_NEAR(r->summary.workload_stat("sessions_gone_idle"),
                lru.summary.workload_stat("sessions_gone_idle"),
                0.05 * lru.summary.workload_stat("sessions_gone_idle"));
  }
  EXPECT_EQ(lru.summary.workload_stat("released_blocks"), 0);
  EXPECT_GT(aware.summary.workload_stat("released_blocks"), 0);
  // Dropping an idle session's KV means its next turn recomputes its history.
  EXPECT_LT(aware.summary.prefix_cache_hit_rate(), lru.summary.prefix_cache_hit_rate());
}

// Summaries can go to a pool of their own: users' turns stay on the first pool.
TEST(Conversations, SummariesGoToTheNamedPool) {
  const std::string two_pools =
      "  context_policy: {impl: summarize, threshold_tokens: 800, keep_turns: 2}\n"
      "  summary_tokens: 120\n  summary_pool: summarizer\n";
  std::string y = one_session(two_pools);
  y.replace(y.find("simulation:"), 0,
            "  - name: summarizer\n    model: Llama-3.1-8B\n    gpu: L40S\n"
            "    engine: {max_model_len: 32768}\n");
  const auto r = testing::run_yaml(y);
  ASSERT_EQ(r.result.replicas.size(), 2u);
  EXPECT_EQ(r.result.replicas[1].pool, "summarizer");
  int summaries = 0;
  for (const auto& q : r.result.requests) {
    if (q.purpose == sim::kPurposeSummary) {
      EXPECT_EQ(q.replica, 1);
      ++summaries;
    } else {
      EXPECT_EQ(q.replica, 0);
    }
  }
  EXPECT_GT(summaries, 3);
  EXPECT_EQ(r.summary.ok - r.summary.summary_requests, kTurns);
  // A pool name that does not exist is an input error naming the key.
  try {
    testing::run_yaml(one_session(two_pools));
    FAIL() << "no error";
  } catch (const sim::InputError& e) {
    EXPECT_EQ(e.key(), "workload.summary_pool");
    EXPECT_NE(e.problem().find("no pool is named 'summarizer'"), std::string::npos);
  }
}

}  // namespace
}  // namespace kvfleet
