#include "sim/config/params.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/reference/reference.h"
#include "sim/simulation/scenario.h"

namespace kvfleet::sim {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const char* kMinimal = R"(name: t
workload:
  impl: synthetic
  num_requests: 10
  arrival: {impl: poisson, rate_per_s: 5}
  input_tokens: {impl: fixed, value: 100}
  output_tokens: {impl: fixed, value: 10}
pools:
  - model: Llama-3-8B
    gpu: H100-SXM
)";

InputError load_error(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  try {
    load_scenario_text(yaml, "s.yaml", ".", sets);
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "no error";
  return InputError("", "", "");
}

TEST(Params, MinimalScenarioLoadsWithDefaults) {
  Scenario s = load_scenario_text(kMinimal, "s.yaml", ".", {});
  ASSERT_EQ(s.config.pools.size(), 1u);
  EXPECT_EQ(s.config.pools[0].engine.max_num_seqs, 256);
  EXPECT_EQ(s.config.pools[0].engine.block_size, 16);
  EXPECT_EQ(s.config.pools[0].cost_model.impl, "roofline");
  EXPECT_EQ(s.config.router.impl, "round_robin");
  // The resolved YAML holds defaults that the file did not write.
  EXPECT_THAT(s.resolved_yaml, HasSubstr("max_num_batched_tokens: 8192"));
  EXPECT_THAT(s.resolved_yaml, HasSubstr("gemm_compute_efficiency: 0.7"));
  // And it loads back to the same configuration.
  Scenario again = load_scenario_text(s.resolved_yaml, "r.yaml", ".", {});
  EXPECT_EQ(again.resolved_yaml, s.resolved_yaml);
}

TEST(Params, UnknownKeyNamesFileLineAndSuggestion) {
  std::string y = kMinimal;
  y += "    engine: {max_num_seq: 4}\n";
  const auto e = load_error(y);
  EXPECT_EQ(e.key(), "pools[0].engine.max_num_seq");
  EXPECT_EQ(e.where(), "s.yaml:11");
  EXPECT_THAT(e.problem(), HasSubstr("did you mean 'max_num_seqs'"));
}

TEST(Params, WrongTypeIsNamed) {
  std::string y = kMinimal;
  y += "    engine: {max_num_seqs: many}\n";
  const auto e = load_error(y);
  EXPECT_EQ(e.key(), "pools[0].engine.max_num_seqs");
  EXPECT_THAT(e.problem(), HasSubstr("expected an integer, got 'many'"));
  EXPECT_EQ(e.where(), "s.yaml:11");
}

TEST(Params, NegativeAndZeroRatesAreRejected) {
  for (const char* rate : {"-1", "0"}) {
    const auto e = load_error(kMinimal, {std::string("workload.arrival.rate_per_s=") + rate});
    EXPECT_EQ(e.key(), "workload.arrival.rate_per_s");
    EXPECT_THAT(e.problem(), HasSubstr("must be > 0"));
    EXPECT_EQ(e.where(), std::string("--set workload.arrival.rate_per_s=") + rate);
  }
}

TEST(Params, RangeAndChoiceChecks) {
  auto e = load_error(kMinimal, {"pools[0].engine.gpu_memory_utilization=1.5"});
  EXPECT_THAT(e.problem(), HasSubstr("must be <= 1"));
  e = load_error(kMinimal, {"pools.0.engine.kv_cache_dtype=fp4"});
  EXPECT_EQ(e.key(), "pools[0].engine.kv_cache_dtype");
  EXPECT_THAT(e.problem(), HasSubstr("not one of"));
  e = load_error(kMinimal, {"pools[0].model=Llama-9"});
  EXPECT_THAT(e.problem(), HasSubstr("unknown model 'Llama-9'"));
  e = load_error(kMinimal, {"workload.arrival.impl=lumpy"});
  EXPECT_THAT(e.problem(), HasSubstr("unknown arrival process 'lumpy'"));
}

TEST(Params, OverridesChangeValues) {
  Scenario s = load_scenario_text(kMinimal, "s.yaml", ".",
                                  {"pools[0].engine.max_num_seqs=8", "seed=99",
                                   "workload.arrival={impl: gamma, rate_per_s: 3, cv: 4}"});
  EXPECT_EQ(s.config.pools[0].engine.max_num_seqs, 8);
  EXPECT_EQ(s.config.seed, 99);
  EXPECT_THAT(s.resolved_yaml, HasSubstr("cv: 4"));
}

TEST(Params, ANewImplReplacesTheOldOnesParameters) {
  // The section names `window` with its `turns`; switching to `full` drops `turns` (an unknown
  // key for full), switching to `summarize` takes summarize's defaults plus what --set gives,
  // before or after the impl.
  const std::string yaml = R"(name: t
workload:
  impl: conversations
  users: 2
  num_sessions: 2
  turns: {impl: fixed, value: 3}
  user_tokens: {impl: fixed, value: 20}
  reply_tokens: {impl: fixed, value: 20}
  context_policy: {impl: window, turns: 4}
pools:
  - model: Llama-3-8B
    gpu: H100-SXM
)";
  Scenario full = load_scenario_text(yaml, "s.yaml", ".", {"workload.context_policy.impl=full"});
  EXPECT_THAT(full.resolved_yaml, HasSubstr("impl: full"));
  EXPECT_THAT(full.resolved_yaml, Not(HasSubstr("turns: 4")));
  for (const auto& sets : std::vector<std::vector<std::string>>{
           {"workload.context_policy.impl=summarize", "workload.context_policy.keep_turns=3"},
           {"workload.context_policy.keep_turns=3", "workload.context_policy.impl=summarize"}}) {
    Scenario s = load_scenario_text(yaml, "s.yaml", ".", sets);
    EXPECT_THAT(s.resolved_yaml, HasSubstr("impl: summarize"));
    EXPECT_THAT(s.resolved_yaml, HasSubstr("keep_turns: 3"));
  }
  // The same implementation again keeps the section as it is.
  Scenario same = load_scenario_text(yaml, "s.yaml", ".", {"workload.context_policy.impl=window"});
  EXPECT_THAT(same.resolved_yaml, HasSubstr("turns: 4"));
  // A parameter the new implementation does not take is still an error when --set gives it.
  auto e =
      load_error(yaml, {"workload.context_policy.turns=6", "workload.context_policy.impl=full"});
  EXPECT_EQ(e.key(), "workload.context_policy.turns");
  EXPECT_THAT(e.problem(), HasSubstr("unknown key"));
}

TEST(Params, BadOverrideSyntax) {
  EXPECT_THROW(load_scenario_text(kMinimal, "s.yaml", ".", {"novalue"}), InputError);
  auto e = load_error(kMinimal, {"pools[3].replicas=2"});
  EXPECT_THAT(e.problem(), HasSubstr("no such list element"));
}

TEST(Params, ModelThatDoesNotFitNamesThePool) {
  const auto e = load_error(kMinimal, {"pools[0].model=Llama-3-70B", "pools[0].gpu=RTX-4090"});
  EXPECT_EQ(e.key(), "pools[0].gpu");
  EXPECT_THAT(e.problem(), HasSubstr("does not fit"));
}

TEST(Params, FormatDoubleIsShortest) {
  EXPECT_EQ(config::format_double(0.1), "0.1");
  EXPECT_EQ(config::format_double(2048), "2048");
  EXPECT_EQ(config::format_double(1e-6), "1e-06");
}

TEST(Params, ReferenceListsEveryImplementation) {
  const std::string md = scenario_reference_markdown();
  for (const char* s :
       {"pools[].engine.max_num_seqs", "workload.arrival", "impl: gamma", "impl: lognormal",
        "impl: roofline", "impl: linear", "impl: trace", "DeepSeek-V3", "H200-SXM"})
    EXPECT_THAT(md, HasSubstr(s));
}

}  // namespace
}  // namespace kvfleet::sim
