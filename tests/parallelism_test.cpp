// Data and expert parallelism end to end: data-parallel ranks with vLLM's load balancing, a
// mixture-of-experts model's ranks in lockstep (dummy steps, the slowest rank's time), expert
// weights spread over the ranks' GPUs, and profiles of another model refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "calibration/import.h"
#include "sim/core/error.h"
#include "sim/engine/memory.h"
#include "sim/testing/run.h"

namespace kvfleet {
namespace {

std::string pool_yaml(const std::string& model, int dp, int requests, double rate,
                      const std::string& extra = "") {
  return "seed: 3\n"
         "workload:\n"
         "  impl: synthetic\n"
         "  num_requests: " +
         std::to_string(requests) +
         "\n"
         "  arrival: {impl: poisson, rate_per_s: " +
         std::to_string(rate) +
         "}\n"
         "  input_tokens: {impl: fixed, value: 500}\n"
         "  output_tokens: {impl: fixed, value: 40}\n"
         "pools:\n"
         "  - name: p\n"
         "    model: " +
         model +
         "\n"
         "    gpu: H100-SXM\n"
         "    data_parallel: " +
         std::to_string(dp) + "\n" + extra +
         "    engine: {max_num_seqs: 64}\n"
         "simulation: {check_invariants: true}\n";
}

const sim::ReplicaResult& rank(const testing::Run& r, const std::string& name) {
  for (const auto& x : r.result.replicas)
    if (x.name == name) return x;
  throw std::runtime_error("no engine " + name);
}

TEST(DataParallel, DenseRanksShareTheLoadAndStepAlone) {
  const auto r = testing::run_yaml(pool_yaml("Llama-3-8B", 2, 400, 20));
  ASSERT_EQ(r.result.replicas.size(), 2u);
  const auto& a = rank(r, "p/dp0");
  const auto& b = rank(r, "p/dp1");
  EXPECT_EQ(r.summary.ok, 400);
  // 4 × waiting + running balances requests evenly.
  std::int64_t on[2] = {0, 0};
  for (const auto& rec : r.result.requests) ++on[rec.replica];
  EXPECT_NEAR(static_cast<double>(on[0]) / (on[0] + on[1]), 0.5, 0.05) << on[0] << " " << on[1];
  // A dense model's ranks are independent engines: no dummy steps, busy only with their own.
  EXPECT_NE(a.stats.busy_s, b.stats.busy_s);
}

TEST(DataParallel, SimultaneousArrivalsGoToTheLeastLoadedRank) {
  // Two requests at once: the first to rank 0 (tie, lowest index), the second to rank 1.
  const auto r = testing::run_yaml(pool_yaml("Llama-3-8B", 2, 2, 1e6));
  ASSERT_EQ(r.result.requests.size(), 2u);
  EXPECT_EQ(r.result.requests[0].replica, 0);
  EXPECT_EQ(r.result.requests[1].replica, 1);
}

TEST(DataParallel, MoeRanksStepInLockstepAndAnIdleRankStillSteps) {
  // One request: rank 0 does all the work, rank 1 runs a dummy batch in every step.
  const auto r =
      testing::run_yaml(pool_yaml("Qwen3-30B-A3B", 2, 1, 1, "    expert_parallel: true\n"));
  const auto& a = rank(r, "p/dp0");
  const auto& b = rank(r, "p/dp1");
  EXPECT_EQ(r.summary.ok, 1);
  EXPECT_GT(a.stats.steps, 0);
  EXPECT_EQ(b.stats.steps, 0);  // no batch advanced a request there
  EXPECT_GT(b.stats.busy_s, 0);
  EXPECT_DOUBLE_EQ(a.stats.busy_s, b.stats.busy_s);  // the same steps, the same time
  // Under load both ranks work; every group step lasts as long on each rank.
  const auto l =
      testing::run_yaml(pool_yaml("Qwen3-30B-A3B", 2, 300, 30, "    expert_parallel: true\n"));
  EXPECT_EQ(l.summary.ok, 300);
  EXPECT_DOUBLE_EQ(rank(l, "p/dp0").stats.busy_s, rank(l, "p/dp1").stats.busy_s);
  EXPECT_GT(rank(l, "p/dp0").stats.steps, 0);
  EXPECT_GT(rank(l, "p/dp1").stats.steps, 0);
}

TEST(DataParallel, LockstepCostsTheSlowestRankAndMoreThanAlone) {
  // The same requests on one rank alone versus two ranks in lockstep: each step of the pair
  // moves the other rank's tokens through the experts too and waits for the slower rank, so a
  // lone request's time per output token is higher with a busy neighbour than without.
  const std::string trace_free = pool_yaml("Qwen3-30B-A3B", 1, 1, 1);
  const auto alone = testing::run_yaml(trace_free);
  const auto pair = testing::run_yaml(pool_yaml("Qwen3-30B-A3B", 2, 200, 1e6));
  EXPECT_GT(pair.summary.tpot.mean, alone.summary.tpot.mean);
}

TEST(ExpertParallel, ExpertWeightsAreSpreadOverTheRanksGpus) {
  const auto sc1 = testing::scenario_from(pool_yaml("Qwen3-30B-A3B", 1, 1, 1));
  const auto sc2 = testing::scenario_from(pool_yaml("Qwen3-30B-A3B", 2, 1, 1));
  const auto& m = sc1.pools[0].model;
  const double experts = 48.0 * 128 * 3 * 2048 * 768;
  EXPECT_DOUBLE_EQ(m.routed_expert_params(), experts);
  // 30.5B parameters counted from the config's shapes (the model card says 30.5B).
  EXPECT_NEAR(m.num_params / 1e9, 30.5, 0.05);
  EXPECT_DOUBLE_EQ(sc1.pools[0].memory.weights_bytes, m.num_params * 2);
  EXPECT_DOUBLE_EQ(sc2.pools[0].memory.weights_bytes, ((m.num_params - experts) + experts / 2) * 2);
  EXPECT_GT(sc2.pools[0].memory.num_blocks, sc1.pools[0].memory.num_blocks);
  // Active parameters from the experts: 3.3B as the model card says (3.35B counted).
  EXPECT_NEAR(m.active_params() / 1e9, 3.3, 0.06);
}

TEST(ExpertParallel, TensorParallelismCombinesWithDataAndExpertParallelism) {
  // Two ranks of two GPUs each: experts over all four GPUs, the rest over each rank's two.
  const auto sc = testing::scenario_from(
      pool_yaml("Qwen3-30B-A3B", 2, 1, 1, "    tensor_parallel: 2\n    expert_parallel: true\n"));
  const auto& m = sc.pools[0].model;
  const double experts = m.routed_expert_params();
  EXPECT_DOUBLE_EQ(sc.pools[0].memory.weights_bytes,
                   ((m.num_params - experts) / 2 + experts / 4) * 2);
  const auto r = testing::run_yaml(pool_yaml(
      "Qwen3-30B-A3B", 2, 100, 20, "    tensor_parallel: 2\n    expert_parallel: true\n"));
  EXPECT_EQ(r.summary.ok, 100);
  EXPECT_DOUBLE_EQ(rank(r, "p/dp0").stats.busy_s, rank(r, "p/dp1").stats.busy_s);
  EXPECT_GT(rank(r, "p/dp0").stats.cost_sum.comm_s, 0);  // all-reduces, dispatch and combine
}

TEST(DataParallel, ARequestReleasedByACancellationAtAGroupStepStillRuns) {
  // A (2 tokens) and C (5,000) start at once on the two ranks; B (8,000) waits at the gateway for
  // KV demand. C's client gives up at 1 s; the cancellation, applied when the group's next step
  // begins, releases B to rank 0, which had already found itself empty. B must run then, not
  // wait for a step that never comes.
  namespace fs = std::filesystem;
  const fs::path trace = fs::path(::testing::TempDir()) / "lockstep_cancel.jsonl";
  std::ofstream(trace) << R"({"input_toks": 16, "output_toks": 2, "queued_ts": 0.0})"
                       << "\n"
                       << R"({"input_toks": 16, "output_toks": 5000, "queued_ts": 0.0})"
                       << "\n"
                       << R"({"input_toks": 16, "output_toks": 8000, "queued_ts": 0.9})"
                       << "\n";
  const auto r =
      testing::run_yaml("workload: {impl: trace, format: vllm_jsonl, path: " + trace.string() +
                        "}\n"
                        "client: {timeout_s: 1}\n"
                        "pools:\n"
                        "  - name: p\n"
                        "    model: Qwen3-30B-A3B\n"
                        "    gpu: H100-SXM\n"
                        "    data_parallel: 2\n"
                        "    expert_parallel: true\n"
                        "    admission: {enabled: true, kv_demand_limit: 0.3}\n"
                        "    engine: {num_gpu_blocks_override: 1000}\n"
                        "simulation: {check_invariants: true}\n");
  ASSERT_EQ(r.result.requests.size(), 3u);
  const auto& b = r.result.requests[2];
  EXPECT_GT(b.generated_tokens, 0) << "B never ran after C's cancellation released it";
  fs::remove(trace);
}

TEST(DataParallel, WhatItDoesNotModelIsRefused) {
  for (const std::string extra :
       {"    failures: {mtbf_s: 100}\n", "    autoscale: {enabled: true, max_replicas: 2}\n",
        "    pipeline_parallel: 2\n"}) {
    try {
      testing::scenario_from(pool_yaml("Llama-3-8B", 2, 1, 1, extra));
      FAIL() << extra;
    } catch (const sim::InputError& e) {
      EXPECT_NE(std::string(e.what()).find("data_parallel"), std::string::npos) << e.what();
    }
  }
}

TEST(ExpertParallel, MoreGpusThanExpertsIsRefused) {
  // Mixtral has 8 experts: whole experts cannot spread over 8 × 2 GPUs.
  try {
    testing::scenario_from(
        pool_yaml("Mixtral-8x7B", 2, 1, 1, "    tensor_parallel: 8\n    expert_parallel: true\n"));
    FAIL() << "16 GPUs accepted for 8 experts";
  } catch (const sim::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("exceed the model's 8 experts"), std::string::npos)
        << e.what();
  }
}

TEST(ProfileModel, AProfileOfAnotherModelIsRefused) {
  const std::string bundle = testing::reference_file(
      "profiles/llmservingsim/RTXPRO6000/Qwen/Qwen3-30B-A3B-Instruct-2507/bf16");
  if (bundle.empty()) GTEST_SKIP() << "../shared/reference is absent";
  const std::string path = ::testing::TempDir() + "/parallelism_qwen3_moe.h5";
  sim::write_profile(path, calibration::import_llmservingsim(bundle, 1));
  const std::string profile = "    cost_model: {impl: profile, path: " + path + "}\n";
  // A Llama pool on the Qwen3 MoE profile: refused, naming both.
  try {
    testing::run_yaml(pool_yaml("Llama-3-8B", 1, 1, 1, profile));
    FAIL() << "a Llama pool ran on a Qwen3-30B-A3B profile";
  } catch (const sim::InputError& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("Qwen/Qwen3-30B-A3B-Instruct-2507"), std::string::npos) << w;
    EXPECT_NE(w.find("Llama-3-8B"), std::string::npos) << w;
    EXPECT_NE(w.find("architecture"), std::string::npos) << w;
  }
  // The same architecture with other dimensions (Qwen3-235B-A22B: 64 heads): refused too.
  const sim::Profile p = sim::read_profile(path);
  for (const auto& m : sim::model_presets()) {
    if (m.name != "Qwen3-235B-A22B") continue;
    try {
      sim::check_profile_model(p, m, path);
      FAIL() << "Qwen3-235B-A22B accepted a Qwen3-30B-A3B profile";
    } catch (const sim::InputError& e) {
      EXPECT_NE(std::string(e.what()).find("num_attention_heads 32"), std::string::npos)
          << e.what();
    }
  }
  // Its own model runs.
  EXPECT_EQ(testing::run_yaml(pool_yaml("Qwen3-30B-A3B", 1, 2, 1, profile)).summary.ok, 2);
}

}  // namespace
}  // namespace kvfleet
