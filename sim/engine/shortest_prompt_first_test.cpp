// The shortest_prompt_first scheduling policy: a short prompt that arrives behind a long one is
// admitted first; under FCFS it waits its turn.
#include "sim/engine/shortest_prompt_first.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sim/testing/run.h"

namespace kvfleet::sim {
namespace {

TEST(ShortestPromptFirst, AShortPromptOvertakesALongOneWaitingBeforeIt) {
  // One sequence at a time; request 0 runs for 20 steps while a 4,000-token prompt (1) and then
  // a 50-token prompt (2) arrive.
  const auto path = std::filesystem::temp_directory_path() / "kvfleet_spf_test.csv";
  std::ofstream(path) << "arrived_at,num_prefill_tokens,num_decode_tokens\n"
                         "0,10,20\n0.001,4000,5\n0.002,50,5\n";
  auto run = [&](const std::string& policy) {
    return testing::run_yaml("workload: {impl: trace, format: vidur, path: " + path.string() +
                             "}\npools:\n  - model: Llama-3.1-8B\n    gpu: H100-SXM\n"
                             "    frontend: {enabled: false}\n"
                             "    engine: {max_num_seqs: 1, scheduling_policy: " +
                             policy +
                             "}\n    cost_model: {impl: linear, fixed_s: 0.001}\n"
                             "simulation: {check_invariants: true}\n");
  };
  const auto spf = run("shortest_prompt_first");
  const auto fcfs = run("fcfs");
  const auto& s = spf.result.requests;
  const auto& f = fcfs.result.requests;
  EXPECT_LT(s[2].first_scheduled, s[1].first_scheduled);
  EXPECT_LT(f[1].first_scheduled, f[2].first_scheduled);
  EXPECT_LT(s[2].ttft_s(), f[2].ttft_s());
  EXPECT_EQ(spf.summary.ok, 3);
  // The policy's key is the tokens a request still has to compute.
  ShortestPromptFirst p{ShortestPromptFirst::Config{}};
  SchedView v;
  v.prompt_tokens = 100;
  v.num_output = 7;
  v.num_computed = 40;
  EXPECT_EQ(p.key(v), 67);
}

}  // namespace
}  // namespace kvfleet::sim
