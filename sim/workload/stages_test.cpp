// Load stages (workload/stages.h) and inference-perf's shared_prefix workload, driven directly:
// the stage plan's counts and windows, the drain between stages, the round-robin over the
// prompts, and multi-turn sessions that wait for their previous round.
#include "sim/workload/stages.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "sim/simulation/scenario.h"
#include "sim/workload/workload.h"

namespace kvfleet::sim {
namespace {

const char* kLengths =
    "input_tokens: {impl: fixed, value: 100}, output_tokens: {impl: fixed, value: 10}";

std::unique_ptr<Workload> make(const std::string& w, std::uint64_t seed = 5) {
  static std::vector<Scenario> keep;  // ImplSpec params live in the scenario
  keep.push_back(load_scenario_text("workload: " + w + "\npools: [{}]\n", "<t>", ".", {}));
  static const std::vector<std::string> pools = {"pool0"};
  return workload_registry().make(keep.back().config.workload, seed, pools);
}

// Ends every request `service_s` after it arrives, in arrival order, the way a client would
// report them, and returns the requests in the order they were sent.
std::vector<RequestSpec> serve(Workload& w, double service_s) {
  std::vector<RequestSpec> sent;
  std::multimap<SimTime, RequestRecord> ends;
  for (;;) {
    SimTime t = 0;
    const bool has = w.peek(t);
    if (!ends.empty() && (!has || ends.begin()->first <= t)) {
      const auto e = ends.begin()->first;
      const RequestRecord r = ends.begin()->second;
      ends.erase(ends.begin());
      w.on_request_end(r, e);
      continue;
    }
    if (!has) break;
    RequestSpec s = w.pop();
    RequestRecord r;
    r.stage = s.stage;
    r.session = s.session;
    r.arrival = s.arrival;
    r.finish = s.arrival + from_seconds(service_s);
    ends.emplace(r.finish, r);
    sent.push_back(std::move(s));
  }
  EXPECT_TRUE(w.finished());
  return sent;
}

const char* kStages =
    "load: {type: constant, interval_s: 2, lead_in_s: 1, stages: [{rate_per_s: 2.5, duration_s: "
    "10}, {rate_per_s: 7, duration_s: 3}]}";

TEST(LoadStages, ConstantStageSendsRateTimesDurationEndingExactlyAtTheWindow) {
  auto w = make(std::string("{impl: synthetic, ") + kLengths + ", " + kStages + "}");
  const auto v = serve(*w, 0.5);
  std::map<int, std::vector<double>> at;
  for (const auto& r : v) at[r.stage].push_back(to_seconds(r.arrival));
  ASSERT_EQ(at.size(), 2u);
  ASSERT_EQ(at[0].size(), 25u);  // floor(2.5 × 10)
  ASSERT_EQ(at[1].size(), 21u);  // floor(7 × 3)
  // Stage 0: lead-in 1 s, the last request exactly at the end of its 10 s window.
  EXPECT_GT(at[0].front(), 1.0);
  EXPECT_NEAR(at[0].back(), 11.0, 1e-6);
  // Uneven gaps (exponential, rescaled), not a metronome.
  std::set<long> gaps;
  for (std::size_t i = 1; i < at[0].size(); ++i)
    gaps.insert(std::lround(1e3 * (at[0][i] - at[0][i - 1])));
  EXPECT_GT(gaps.size(), 10u);
  // Stage 1 starts after stage 0 drained (its last reply at 11.5 s), the 2 s interval and the
  // 1 s lead-in; it ends 3 s later.
  EXPECT_GT(at[1].front(), 11.5 + 2 + 1);
  EXPECT_NEAR(at[1].back(), 11.5 + 2 + 1 + 3, 1e-6);
  EXPECT_DOUBLE_EQ(w->nominal_rate_per_s(), (25.0 + 21.0) / 13.0);
}

TEST(LoadStages, DrainWaitsForTheSlowestReplyOfTheStage) {
  auto w = make(std::string("{impl: synthetic, ") + kLengths + ", " + kStages + "}");
  const auto v = serve(*w, 30.0);  // every reply takes 30 s
  double last0 = 0, first1 = 1e9;
  for (const auto& r : v) {
    if (r.stage == 0) last0 = std::max(last0, to_seconds(r.arrival));
    if (r.stage == 1) first1 = std::min(first1, to_seconds(r.arrival));
  }
  EXPECT_GT(first1, last0 + 30 + 2 + 1);
}

TEST(LoadStages, PoissonStagesCountPerSecondAndKeepTheFirstRateTimesDuration) {
  auto w = make(std::string("{impl: synthetic, ") + kLengths +
                ", load: {type: poisson, lead_in_s: 0, stages: [{rate_per_s: 40, "
                "duration_s: 500}]}}");
  const auto v = serve(*w, 0.1);
  ASSERT_EQ(v.size(), 20000u);
  std::map<long, int> per_second;
  for (const auto& r : v) ++per_second[static_cast<long>(std::ceil(to_seconds(r.arrival))) - 1];
  double s = 0, s2 = 0, n = 0;
  for (const auto& [sec, k] : per_second) {
    if (sec >= static_cast<long>(per_second.rbegin()->first)) continue;  // the cut last second
    s += k, s2 += static_cast<double>(k) * k, ++n;
  }
  const double mean = s / n, var = s2 / n - mean * mean;
  // Poisson(40) counts per non-empty second: mean and variance both 40 (±5% over ~500 s).
  EXPECT_NEAR(mean, 40, 2);
  EXPECT_NEAR(var, 40, 8);
}

TEST(LoadStages, PoissonCountHasItsMeanAndVarianceOnBothBranches) {
  RngStream rng(3, "test");
  for (const double mean : {0.7, 6.0, 30.0, 900.0}) {
    double s = 0, s2 = 0;
    const int n = 100000;
    for (int i = 0; i < n; ++i) {
      const double k = static_cast<double>(poisson_count(rng, mean));
      s += k, s2 += k * k;
    }
    const double m = s / n, v = s2 / n - m * m;
    EXPECT_NEAR(m, mean, 4 * std::sqrt(mean / n) + 1e-9) << mean;
    EXPECT_NEAR(v / mean, 1.0, 0.03) << mean;
  }
}

TEST(LoadStages, AStageTooLargeIsRefusedByName) {
  try {
    make(std::string("{impl: synthetic, ") + kLengths +
         ", load: {stages: [{rate_per_s: 1e7, duration_s: 1e6}]}}");
    FAIL() << "accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("stages"), std::string::npos) << e.what();
  }
}

const char* kSharedPrefix =
    "{impl: shared_prefix, num_groups: 3, num_prompts_per_group: 4, "
    "system_prompt_len: {impl: fixed, value: 300}, question_len: {impl: uniform, min: 20, max: "
    "80}, output_len: {impl: fixed, value: 16}";

TEST(SharedPrefix, RoundRobinOverTheShuffledPromptsSharingEachGroupsSystemPrompt) {
  auto w = make(std::string(kSharedPrefix) +
                ", num_requests: 36, arrival: {impl: poisson, rate_per_s: 5}}");
  const auto v = serve(*w, 0.2);
  ASSERT_EQ(v.size(), 36u);
  std::set<std::uint64_t> systems, questions;
  for (std::size_t i = 0; i < v.size(); ++i) {
    ASSERT_EQ(v[i].segments.size(), 2u);
    EXPECT_EQ(v[i].segments[0].tokens, 300);
    EXPECT_EQ(v[i].input_tokens, 300 + v[i].segments[1].tokens);
    EXPECT_EQ(v[i].output_tokens, 16);
    systems.insert(v[i].segments[0].content);
    questions.insert(v[i].segments[1].content);
    // The list of 12 prompts wraps around: request i + 12 sends request i's prompt.
    if (i >= 12) {
      EXPECT_EQ(v[i].segments[1].content, v[i - 12].segments[1].content);
      EXPECT_EQ(v[i].input_tokens, v[i - 12].input_tokens);
    }
  }
  EXPECT_EQ(systems.size(), 3u);
  EXPECT_EQ(questions.size(), 12u);
  // Shuffled: the first four prompts are not one group's.
  std::set<std::uint64_t> first4;
  for (int i = 0; i < 4; ++i) first4.insert(v[i].segments[0].content);
  EXPECT_GT(first4.size(), 1u);
}

TEST(SharedPrefix, EachStageStartsTheRoundRobinAgain) {
  auto w = make(std::string(kSharedPrefix) +
                ", load: {stages: [{rate_per_s: 5, duration_s: 1}, {rate_per_s: 5, "
                "duration_s: 1}]}}");
  const auto v = serve(*w, 0.2);
  ASSERT_EQ(v.size(), 10u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(v[i].stage, 0);
    EXPECT_EQ(v[5 + i].stage, 1);
    EXPECT_EQ(v[5 + i].segments[1].content, v[i].segments[1].content);
  }
}

TEST(SharedPrefix, MultiTurnRoundsCarryTheConversationAndWaitForTheRoundBefore) {
  auto w = make(std::string(kSharedPrefix) +
                ", multi_turn: true, num_requests: 36, arrival: {impl: constant, rate_per_s: "
                "100}}");
  const double service = 2.0;  // far longer than the 0.12 s between a session's rounds
  const auto v = serve(*w, service);
  ASSERT_EQ(v.size(), 36u);
  std::map<std::uint64_t, std::vector<const RequestSpec*>> by_session;
  for (const auto& r : v) by_session[r.session].push_back(&r);
  ASSERT_EQ(by_session.size(), 12u);
  for (const auto& [session, rounds] : by_session) {
    ASSERT_EQ(rounds.size(), 3u);
    const std::int32_t prompt = rounds[0]->input_tokens;
    for (std::size_t k = 0; k < rounds.size(); ++k) {
      EXPECT_EQ(rounds[k]->turn, static_cast<int>(k + 1));
      // Round k sends k earlier prompts and replies, then the prompt again.
      EXPECT_EQ(rounds[k]->input_tokens, static_cast<std::int32_t>((k + 1) * prompt + k * 16));
      if (k > 0) {
        // Sent when the round before was answered, not on its own schedule.
        EXPECT_GE(to_seconds(rounds[k]->arrival),
                  to_seconds(rounds[k - 1]->arrival) + service - 1e-9);
        // The conversation so far is the previous round's prompt followed by its reply.
        ASSERT_GE(rounds[k]->segments.size(), rounds[k - 1]->segments.size() + 1);
        for (std::size_t s = 0; s < rounds[k - 1]->segments.size(); ++s)
          EXPECT_EQ(rounds[k]->segments[s].content, rounds[k - 1]->segments[s].content);
        EXPECT_EQ(rounds[k]->segments[rounds[k - 1]->segments.size()].content,
                  rounds[k - 1]->output_content);
      }
    }
  }
}

}  // namespace
}  // namespace kvfleet::sim
