// The expected errors every answer carries (sim/metrics/fidelity) are the validation report's:
// the entries of the runs under ../shared/reference are recomputed here from their replays, so
// that a change of the cost models that moves them fails until the table (and docs/validation.md)
// says so. Skips when ../shared/reference is absent.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "calibration/import.h"
#include "sim/cost/profile_data.h"
#include "sim/metrics/fidelity.h"
#include "sim/metrics/summary.h"
#include "sim/replay/replay.h"
#include "sim/testing/run.h"

namespace kvfleet {
namespace {

// Mean |relative error| of mean, p50, p90 and p99 of one latency.
double mae(const std::vector<double>& measured, const sim::LatencyStats& s) {
  const sim::LatencyStats m = sim::latency_stats(measured);
  return (std::fabs(s.mean / m.mean - 1) + std::fabs(s.p50 / m.p50 - 1) +
          std::fabs(s.p90 / m.p90 - 1) + std::fabs(s.p99 / m.p99 - 1)) /
         4;
}

TEST(Fidelity, TheTableIsWhatTheSharedRunsReplayTo) {
  struct Bundle {
    const char* run;
    const char* bundle;
    const char* gpu;  // its public fit, left out of the fitted cost model's replay
  };
  int checked = 0;
  for (const Bundle b :
       {Bundle{"vllm-0.19-rtx4090-llama-3.1-8b",
               "profiles/llmservingsim/RTX4090/meta-llama/Llama-3.1-8B/bf16", "RTX-4090"},
        Bundle{"vllm-0.19-rtxpro6000-qwen3-30b-a3b",
               "profiles/llmservingsim/RTXPRO6000/Qwen/Qwen3-30B-A3B-Instruct-2507/bf16",
               "RTX-PRO-6000"}}) {
    const std::string dir = testing::reference_file(std::string("validation/") + b.run);
    const std::string bundle = testing::reference_file(b.bundle);
    if (dir.empty() || bundle.empty())
      GTEST_SKIP() << "../shared/reference is absent: nothing to replay";
    const std::string profile = ::testing::TempDir() + "/fidelity_" + b.run + ".h5";
    sim::write_profile(profile, calibration::import_llmservingsim(bundle, 1));
    const sim::MeasuredLatencies m = sim::read_measured(dir + "/requests.jsonl");
    // The fitted cost model as a GPU without a profile gets it: the run's own GPU left out.
    for (const std::string cost : {"profile", "roofline", "fitted"}) {
      sim::ReplayOptions o{dir, cost == "profile" ? profile : "", "", ""};
      if (cost == "fitted") o.cost_model = cost, o.leave_out = {b.gpu};
      const sim::ReplayPlan plan = sim::plan_replay(o);
      const sim::Scenario sc = sim::load_scenario_text(plan.yaml, "<replay>", ".", {});
      sim::Simulation simulation(sc);
      const sim::Summary s = sim::summarize(simulation.run());
      const sim::ValidatedRun* row = nullptr;
      for (const auto& r : sim::validated_runs())
        if (r.run == std::string(b.run) && r.cost_model == cost) row = &r;
      ASSERT_NE(row, nullptr) << b.run << " " << cost << " is not in the table";
      EXPECT_TRUE(row->shared);
      EXPECT_EQ(row->moe, sc.pools[0].model.moe());
      // Within 0.1 percentage point of what the table says (it holds rounded figures).
      EXPECT_NEAR(mae(m.ttft, s.ttft), row->ttft, 1e-3) << b.run << " " << cost << " TTFT";
      EXPECT_NEAR(mae(m.tpot, s.tpot), row->tpot, 1e-3) << b.run << " " << cost << " TPOT";
      EXPECT_NEAR(mae(m.e2e, s.e2e), row->e2e, 1e-3) << b.run << " " << cost << " E2E";
      std::printf("%s %s: ttft %.5f tpot %.5f e2e %.5f\n", b.run, cost.c_str(), mae(m.ttft, s.ttft),
                  mae(m.tpot, s.tpot), mae(m.e2e, s.e2e));
      ++checked;
    }
  }
  EXPECT_EQ(checked, 6);
}

TEST(Fidelity, ExpectedErrorsAreTheMeanOfTheirRunsAndSayWhereTheyComeFrom) {
  const sim::ExpectedError e = sim::expected_error("roofline", false);
  int n = 0;
  double tpot = 0;
  for (const auto& r : sim::validated_runs())
    if (r.cost_model == std::string("roofline") && !r.moe) ++n, tpot += r.tpot;
  EXPECT_EQ(e.runs, n);
  EXPECT_NEAR(e.tpot, tpot / n, 1e-12);
  EXPECT_NE(e.describe().find("roofline cost model, dense models"), std::string::npos);
  const sim::ExpectedError none = sim::expected_error("linear", false);
  EXPECT_EQ(none.runs, 0);
  EXPECT_TRUE(std::isnan(none.tpot));
  EXPECT_NE(none.describe().find("no validated runs"), std::string::npos);
}

}  // namespace
}  // namespace kvfleet
