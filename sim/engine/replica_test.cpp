// Scheduler behaviour on small scenarios with exact step times (linear cost model).
#include "sim/engine/replica.h"

#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <fstream>

#include "tests/support/run.h"

namespace kvfleet::sim {
namespace {

using testing::run_yaml;

// A trace with the given (arrival_s, input, output) rows, as a Vidur CSV.
std::string trace(const std::string& name, const std::vector<std::array<double, 3>>& rows) {
  const auto p = std::filesystem::temp_directory_path() / ("kvfleet_replica_test_" + name + ".csv");
  std::ofstream o(p);
  o << "arrived_at,num_prefill_tokens,num_decode_tokens\n";
  for (const auto& r : rows) o << r[0] << "," << r[1] << "," << r[2] << "\n";
  return p.string();
}

std::string scenario(const std::string& trace_path, const std::string& engine,
                     const std::string& cost = "{impl: linear, fixed_s: 0.001}") {
  return "workload: {impl: trace, format: vidur, path: " + trace_path +
         "}\npools:\n  - model: Llama-3.1-8B\n    gpu: H100-SXM\n    engine: " + engine +
         "\n    cost_model: " + cost + "\nsimulation: {check_invariants: true}\n";
}

TEST(Replica, ChunkedPrefillSpreadsALongPromptOverSteps) {
  // 10,000 prompt tokens under a 2,048-token budget: 5 steps of 1 ms to the first token.
  const auto r =
      run_yaml(scenario(trace("chunk", {{0, 10000, 3}}), "{max_num_batched_tokens: 2048}"));
  const auto& q = r.result.requests.at(0);
  EXPECT_EQ(q.first_token, from_seconds(0.005));
  EXPECT_EQ(q.finish, from_seconds(0.007));  // two more decode steps
  EXPECT_EQ(r.result.replicas[0].stats.prompt_tokens, 10000);
}

TEST(Replica, WithoutChunkingALongPromptIsRejected) {
  const auto r =
      run_yaml(scenario(trace("nochunk", {{0, 4000, 3}, {0, 100, 3}}),
                        "{max_num_batched_tokens: 2048, enable_chunked_prefill: false}"));
  EXPECT_EQ(r.result.requests[0].outcome, Outcome::kRejected);
  EXPECT_EQ(r.result.requests[0].reject_reason, RejectReason::kExceedsBatchedTokens);
  EXPECT_EQ(r.result.requests[1].outcome, Outcome::kOk);
}

TEST(Replica, RunningDecodesComeBeforeWaitingPrefills) {
  // Request 0 decodes; request 1 (200 prompt tokens) arrives with a 100-token budget: each step
  // gives 1 token to the decode and 99 to the prefill, so its prefill needs 3 steps.
  const auto r = run_yaml(
      scenario(trace("order", {{0, 10, 50}, {0.0105, 200, 2}}), "{max_num_batched_tokens: 100}"));
  const auto& b = r.result.requests[1];
  EXPECT_EQ(b.first_scheduled, from_seconds(0.011));
  EXPECT_EQ(b.first_token, from_seconds(0.014));  // 99 + 99 + 2 tokens over 3 steps
  EXPECT_EQ(r.summary.ok, 2);
}

TEST(Replica, MaxNumSeqsLimitsTheBatch) {
  const auto r = run_yaml(
      scenario(trace("seqs", {{0, 10, 10}, {0, 10, 10}, {0, 10, 10}}), "{max_num_seqs: 2}"));
  // Two run together for 10 steps; the third starts when they finish.
  EXPECT_EQ(r.result.requests[0].finish, from_seconds(0.010));
  EXPECT_EQ(r.result.requests[1].finish, from_seconds(0.010));
  EXPECT_EQ(r.result.requests[2].first_scheduled, from_seconds(0.010));
  EXPECT_EQ(r.result.requests[2].finish, from_seconds(0.020));
}

TEST(Replica, NewestRequestIsPreemptedAndRecomputed) {
  // 4 blocks of 16 tokens. Two requests of 16 prompt + 40 output tokens each need 4 blocks
  // alone; together they run out and the newer one (request 1) is preempted by recompute.
  const auto r = run_yaml(
      scenario(trace("preempt", {{0, 16, 40}, {0.0001, 16, 40}}), "{num_gpu_blocks_override: 4}"));
  const auto& a = r.result.requests[0];
  const auto& b = r.result.requests[1];
  EXPECT_EQ(a.outcome, Outcome::kOk);
  EXPECT_EQ(b.outcome, Outcome::kOk);
  EXPECT_EQ(a.num_preemptions, 0);
  EXPECT_GE(b.num_preemptions, 1);
  EXPECT_GT(b.recomputed_tokens, 16);  // prompt and some output recomputed
  EXPECT_EQ(r.summary.num_preemptions, b.num_preemptions);
  EXPECT_EQ(a.generated_tokens, 40);
  EXPECT_EQ(b.generated_tokens, 40);
  // Request 0 never waits for request 1: it finishes after its 40 steps.
  EXPECT_EQ(a.finish, from_seconds(0.040));
}

TEST(Replica, RequestsThatCanNeverFitAreRejectedWithAReason) {
  const auto r = run_yaml(scenario(trace("never", {{0, 100, 100}, {0, 9000, 10}, {0, 140000, 10}}),
                                   "{num_gpu_blocks_override: 500}"));
  EXPECT_EQ(r.result.requests[0].outcome, Outcome::kOk);
  EXPECT_EQ(r.result.requests[1].reject_reason, RejectReason::kExceedsKvCapacity);
  EXPECT_EQ(r.result.requests[2].reject_reason, RejectReason::kExceedsMaxModelLen);
  EXPECT_EQ(r.summary.rejected, 2);
}

TEST(Replica, TpotAndTtftFromStepTimes) {
  // Decode steps cost 1 ms + 0.1 ms per sequence.
  const auto r = run_yaml(scenario(trace("tpot", {{0, 32, 11}}), "{}",
                                   "{impl: linear, fixed_s: 0.001, per_seq_s: 0.0001}"));
  const auto& q = r.result.requests[0];
  EXPECT_NEAR(q.ttft_s(), 0.0011, 1e-12);
  EXPECT_NEAR(q.tpot_s(), 0.0011, 1e-12);
  EXPECT_NEAR(q.e2e_s(), 11 * 0.0011, 1e-12);
}

}  // namespace
}  // namespace kvfleet::sim
