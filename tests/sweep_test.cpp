// Sweeps: grid expansion, bad input before any point runs, results identical whatever the
// thread count, failed points recorded while the sweep goes on, HDF5 round trip and resume,
// shards + merge and MPI ranks equal to one process.
#include "sim/sweep/sweep.h"

#include "sim/sweep/capacity.h"
#include "sim/sweep/sizing.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <mutex>
#include <set>
#include <thread>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "sim/core/error.h"
#include "sim/metrics/summary.h"
#include "sim/simulation/simulation.h"
#include "sim/sweep/point_runner.h"
#include "sim/testing/run.h"

namespace kvfleet::sim {
namespace {

const std::string kDir = KVFLEET_SOURCE_DIR "/scenarios/sweeps";

// A small sweep: 2 × 2 grid × 2 replicates of the default replica with 300 requests.
const char* kSmall = R"(base: ../default.yaml
set: [workload.num_requests=300]
axes:
  - {key: workload.arrival.rate_per_s, values: [20, 40]}
  - {key: "pools[0].engine.max_num_seqs", range: {start: 32, stop: 64, step: 32}}
replicates: 2
metrics: [requests_per_s, time_to_first_token_p99_s, inter_token_latency_p50_s]
)";

SweepSpec small() { return load_sweep_text(kSmall, "small.yaml", kDir); }

SweepResults run(const SweepSpec& s, int threads, int shard = 0, int shards = 1) {
  SweepResults r = prepare_sweep(s);
  SweepOptions o;
  o.threads = threads;
  o.shard = shard;
  o.shards = shards;
  run_sweep(s, r, o);
  return r;
}

void expect_same(const SweepResults& a, const SweepResults& b) {
  ASSERT_EQ(a.points.size(), b.points.size());
  for (std::size_t i = 0; i < a.points.size(); ++i) {
    EXPECT_EQ(a.points[i].done, b.points[i].done) << i;
    EXPECT_EQ(a.points[i].ok, b.points[i].ok) << i;
    EXPECT_EQ(a.points[i].seed, b.points[i].seed) << i;
    ASSERT_EQ(a.points[i].metrics.size(), b.points[i].metrics.size());
    for (std::size_t m = 0; m < a.points[i].metrics.size(); ++m) {
      const double x = a.points[i].metrics[m], y = b.points[i].metrics[m];
      EXPECT_TRUE(x == y || (std::isnan(x) && std::isnan(y))) << "point " << i << " metric " << m;
    }
    ASSERT_EQ(a.points[i].curves.size(), b.points[i].curves.size());
    for (std::size_t c = 0; c < a.points[i].curves.size(); ++c) {
      const double x = a.points[i].curves[c], y = b.points[i].curves[c];
      EXPECT_TRUE(x == y || (std::isnan(x) && std::isnan(y))) << "point " << i << " curve " << c;
    }
  }
}

TEST(Sweep, GridOrderSeedsAndRanges) {
  const SweepSpec s = small();
  EXPECT_EQ(s.num_points(), 8u);
  // First axis slowest, replicates fastest.
  EXPECT_EQ(s.axis_values(0), (std::vector<std::string>{"20", "32"}));
  EXPECT_EQ(s.axis_values(1), (std::vector<std::string>{"20", "32"}));
  EXPECT_EQ(s.axis_values(2), (std::vector<std::string>{"20", "64"}));
  EXPECT_EQ(s.axis_values(7), (std::vector<std::string>{"40", "64"}));
  auto o = s.overrides(3, 10);
  EXPECT_EQ(o.back(), "seed=11");
  const SweepSpec lg = load_sweep_text(
      "axes: [{key: workload.arrival.rate_per_s, log_range: {start: 1, stop: 100, num: 3}}]", "x",
      kDir);
  EXPECT_EQ(lg.axes[0].values, (std::vector<std::string>{"1", "10", "100"}));
  const SweepSpec lhs = load_sweep_text(
      "sample: {method: latin_hypercube, n: 10, seed: 3, keys: [{key: workload.arrival.rate_per_s,"
      " min: 0, max: 10}]}",
      "x", kDir);
  ASSERT_EQ(lhs.num_points(), 10u);
  // Latin hypercube: one value in each tenth of the range.
  std::vector<int> strata(10, 0);
  for (const auto& v : lhs.axes[0].values) ++strata[std::min(9, static_cast<int>(std::stod(v)))];
  for (int c : strata) EXPECT_EQ(c, 1);
  // Drawn from kvfleet's own stream (RngStream), not <random>: these values are the same with
  // every standard library, so a sampled sweep is reproducible anywhere.
  std::string first3;
  for (int i = 0; i < 3; ++i) first3 += lhs.axes[0].values[i] + " ";
  EXPECT_EQ(first3, "6.283919985507236 0.34407011472653093 4.3105323065669925 ");
}

TEST(Sweep, BadInputIsNamedBeforeAnyPointRuns) {
  auto message = [](const std::string& yaml, bool validate) {
    try {
      SweepSpec s = load_sweep_text(yaml, "bad.yaml", kDir);
      if (validate) validate_sweep(s);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message("axes: [{key: workload.no_such_key, values: [1]}]", true).find("no_such_key"),
            std::string::npos);
  EXPECT_NE(
      message("axes: [{key: workload.arrival.rate_per_s, range: {start: 5, stop: 1, step: 1}}]",
              false)
          .find("empty range"),
      std::string::npos);
  EXPECT_NE(message("axes: [{key: workload.arrival.rate_per_s, values: []}]", false).find("empty"),
            std::string::npos);
  EXPECT_NE(
      message("axes: [{key: workload.arrival.rate_per_s, values: [1]}]\nmetrics: [nope]", false)
          .find("unknown metric 'nope'"),
      std::string::npos);
  EXPECT_NE(message("axis: []", false).find("unknown key"), std::string::npos);
  // A bad value of a real key is found too.
  EXPECT_NE(message("axes: [{key: \"pools[0].engine.max_num_seqs\", values: [64, -3]}]", true)
                .find("max_num_seqs"),
            std::string::npos);
}

// Cases: named sets of overrides, an axis like any other (equal-cost comparisons).
TEST(Sweep, CasesApplyTheirOverridesAndAreCheckedByName) {
  const SweepSpec s = load_sweep_text(R"(set: [workload.num_requests=200]
axes:
  - key: config
    cases:
      - {name: one, set: ["pools[0].replicas=1"]}
      - {name: two-tp2, set: ["pools[0].replicas=2", "pools[0].tensor_parallel=2"]}
  - {key: workload.arrival.rate_per_s, values: [10, 20]}
)",
                                      "cases.yaml", kDir);
  ASSERT_EQ(s.num_points(), 4u);
  EXPECT_EQ(s.axis_values(2), (std::vector<std::string>{"two-tp2", "10"}));
  EXPECT_EQ(s.overrides(2, 5),
            (std::vector<std::string>{"pools[0].replicas=2", "pools[0].tensor_parallel=2",
                                      "workload.arrival.rate_per_s=10", "seed=5"}));
  validate_sweep(s);
  const SweepResults r = run(s, 2);
  ASSERT_EQ(r.completed(), 4u);
  EXPECT_EQ(r.failed(), 0u);
  auto message = [](const std::string& yaml) {
    try {
      validate_sweep(load_sweep_text(yaml, "bad.yaml", kDir));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message("axes: [{key: c, cases: [{name: a, set: [\"pools[0].replicas=0\"]}]}]")
                .find("replicas"),
            std::string::npos);
  EXPECT_NE(message("axes: [{key: c, cases: [{name: a, set: [x=1]}, {name: a, set: [x=2]}]}]")
                .find("names two cases"),
            std::string::npos);
  EXPECT_NE(message("axes: [{key: c, cases: [{name: a, set: [nonsense]}]}]").find("key=value"),
            std::string::npos);
}

TEST(Sweep, ResultsDoNotDependOnTheThreadCount) {
  const SweepSpec s = small();
  const SweepResults one = run(s, 1);
  const SweepResults three = run(s, 3);
  EXPECT_EQ(one.completed(), 8u);
  EXPECT_EQ(one.failed(), 0u);
  expect_same(one, three);
  // Replicates differ (distinct seeds); curves are non-decreasing percentiles.
  EXPECT_NE(one.points[0].metrics[1], one.points[1].metrics[1]);
  const auto& c = one.points[0].curves;
  ASSERT_EQ(c.size(), 3u * kCurvePercentiles);
  for (int i = 1; i < kCurvePercentiles; ++i) EXPECT_LE(c[i - 1], c[i]);
}

TEST(Sweep, AFailedPointIsRecordedAndTheOthersRun) {
  // Each value loads alone; the contiguous layout with prefix caching does not.
  const SweepSpec s = load_sweep_text(R"(base: ../default.yaml
set: [workload.num_requests=100, "pools[0].engine.enable_prefix_caching=false"]
axes:
  - {key: "pools[0].engine.kv_layout", values: [paged, contiguous]}
  - {key: "pools[0].engine.enable_prefix_caching", values: [false, true]}
)",
                                      "fail.yaml", kDir);
  validate_sweep(s);
  const SweepResults r = run(s, 2);
  EXPECT_EQ(r.completed(), 4u);
  EXPECT_EQ(r.failed(), 1u);
  EXPECT_FALSE(r.points[3].ok);
  EXPECT_NE(r.points[3].error.find("contiguous layout has no prefix cache"), std::string::npos)
      << r.points[3].error;
  EXPECT_TRUE(std::isnan(r.points[3].metrics[0]));
}

TEST(Sweep, FileRoundTripResumeShardsAndMerge) {
  const SweepSpec s = small();
  const SweepResults full = run(s, 2);
  const std::string dir = ::testing::TempDir();
  write_sweep_h5(dir + "/full.h5", full);
  const SweepResults back = read_sweep_h5(dir + "/full.h5");
  EXPECT_EQ(back.metric_names, full.metric_names);
  const SweepResults merged_back = merge_sweeps({back});
  expect_same(full, merged_back);

  // An interrupted sweep: only some points done. --resume runs the rest, to the same results.
  SweepResults partial = prepare_sweep(s);
  for (std::size_t i : {0u, 3u, 5u}) partial.points[i] = full.points[i];
  write_sweep_h5(dir + "/partial.h5", partial);
  const SweepResults previous = read_sweep_h5(dir + "/partial.h5");
  SweepResults resumed = prepare_sweep(s, &previous);
  EXPECT_EQ(resumed.completed(), 3u);
  std::size_t ran = 0;
  SweepOptions o;
  o.on_progress = [&](const SweepResults&, std::size_t done, std::size_t todo) {
    ran = todo;
    (void)done;
  };
  run_sweep(s, resumed, o);
  EXPECT_EQ(ran, 5u);
  expect_same(full, resumed);
  // A different sweep file cannot resume these results.
  const SweepSpec other = load_sweep_text(std::string(kSmall) + "curves: false\n", "o", kDir);
  EXPECT_THROW(prepare_sweep(other, &previous), InputError);
  // One with a comment and a description added resumes them, point for point.
  const SweepSpec commented = load_sweep_text(
      "# the same sweep, explained\ndescription: why\n" + std::string(kSmall), "c", kDir);
  EXPECT_EQ(prepare_sweep(commented, &previous).completed(), 3u);
  // One with a value added to an axis and a third replicate keeps the three points (matched by
  // axis values and seed) and runs the rest, to what a fresh run of it gives.
  std::string grown_text = kSmall;
  grown_text.replace(grown_text.find("[20, 40]"), 8, "[20, 30, 40]");
  grown_text.replace(grown_text.find("replicates: 2"), 13, "replicates: 3");
  const SweepSpec grown_spec = load_sweep_text(grown_text, "g", kDir);
  SweepResults grown = prepare_sweep(grown_spec, &previous);
  EXPECT_EQ(grown.completed(), 3u);
  run_sweep(grown_spec, grown, SweepOptions{});
  expect_same(run(grown_spec, 2), grown);
  // One that would leave finished points out of the file (a value removed) is refused: resuming
  // would rewrite the file without them.
  std::string shrunk_text = kSmall;
  shrunk_text.replace(shrunk_text.find("[20, 40]"), 8, "[40]");
  const SweepSpec shrunk = load_sweep_text(shrunk_text, "s", kDir);
  try {
    prepare_sweep(shrunk, &previous);
    ADD_FAILURE() << "a resume that drops finished points was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("finished points of the results file are not in this"),
              std::string::npos)
        << e.what();
  }

  // Shards 0/2 and 1/2, written and merged, equal the single run.
  write_sweep_h5(dir + "/s0.h5", run(s, 1, 0, 2));
  write_sweep_h5(dir + "/s1.h5", run(s, 1, 1, 2));
  const SweepResults merged =
      merge_sweeps({read_sweep_h5(dir + "/s0.h5"), read_sweep_h5(dir + "/s1.h5")});
  expect_same(full, merged);
  EXPECT_THROW(merge_sweeps({read_sweep_h5(dir + "/s0.h5"), read_sweep_h5(dir + "/s0.h5")}),
               InputError);
}

TEST(Sweep, PointsSurviveSerialisation) {
  const SweepResults r = run(small(), 2);
  const auto back = deserialize_points(serialize_points(r.points));
  ASSERT_EQ(back.size(), r.points.size());
  SweepResults copy = r;
  copy.points = back;
  expect_same(r, copy);
  EXPECT_EQ(back[2].wall_s, r.points[2].wall_s);
}

TEST(Capacity, SloParsing) {
  const auto s = parse_slo("ttft_p99=2s,tpot_p99=100ms,e2e_mean=1500us");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].metric, "time_to_first_token_p99_s");
  EXPECT_DOUBLE_EQ(s[0].limit_s, 2);
  EXPECT_EQ(s[1].metric, "inter_token_latency_p99_s");
  EXPECT_DOUBLE_EQ(s[1].limit_s, 0.1);
  EXPECT_DOUBLE_EQ(s[2].limit_s, 0.0015);
  for (const char* bad : {"ttft_p99=2", "ttft_p99", "ttft_p42=1s", "nope=1s", "ttft_p99=-1s", ""}) {
    EXPECT_THROW(parse_slo(bad), InputError) << bad;
  }
  // Shares of the requests: a percentage or a fraction.
  const auto r = parse_slo("ttft_p99=2s,reject_rate=1%,goodput=0.99");
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[1].kind, Slo::Kind::kRejectRate);
  EXPECT_DOUBLE_EQ(r[1].fraction, 0.01);
  EXPECT_EQ(r[1].describe(), "reject_rate <= 1%");
  EXPECT_EQ(r[2].kind, Slo::Kind::kGoodput);
  EXPECT_DOUBLE_EQ(r[2].fraction, 0.99);
  EXPECT_EQ(r[2].describe(), "goodput >= 99%");
  for (const char* bad : {"reject_rate=1s", "reject_rate=100%", "goodput=0%", "goodput=150%",
                          "reject_rate=-1%", "reject_rate=", "goodput=x"}) {
    EXPECT_THROW(parse_slo(bad), InputError) << bad;
  }
  // holds(): rejected / arrived at most the limit; completed / arrived at least it.
  Summary sum;
  sum.requests = 200;
  sum.ok = 197;
  sum.rejected = 3;
  EXPECT_FALSE(r[1].holds(sum));  // 1.5% > 1%
  EXPECT_FALSE(r[2].holds(sum));  // 98.5% < 99%
  sum.ok = 199;
  sum.rejected = 1;
  EXPECT_TRUE(r[1].holds(sum));
  EXPECT_TRUE(r[2].holds(sum));
}

TEST(Capacity, ARejectRateTargetLowersTheCapacityOfAScenarioThatRefusesTurns) {
  // context-policies.yaml with full history refuses the longest conversations' turns (context
  // overflow): a latency-only SLO ignores them; reject_rate=0% cannot hold at any load where
  // turns are refused.
  CapacityOptions o;
  o.load = "users";
  o.replicates = 1;
  o.tolerance = 0.2;
  o.sets = {"workload.context_policy.impl=full", "workload.num_sessions=60",
            "workload.max_context_tokens=2048"};
  const std::string path = KVFLEET_SOURCE_DIR "/scenarios/conversations/context-policies.yaml";
  const CapacityResult latency = find_capacity(path, parse_slo("e2e_p99=60s"), o);
  const CapacityResult strict = find_capacity(path, parse_slo("e2e_p99=60s,reject_rate=0%"), o);
  EXPECT_GT(latency.mean, 0);
  EXPECT_LT(strict.mean, latency.mean);
}

// Closed-loop users beyond the workload's conversations have nothing to send: the search stops at
// num_sessions and says so (it reported millions of users, every load past 60 passing as 60).
TEST(Capacity, UsersStopAtTheWorkloadsConversations) {
  CapacityOptions o;
  o.load = "users";
  o.replicates = 1;
  o.sets = {"workload.num_sessions=60", "workload.users=20"};
  double highest = 0;
  o.on_run = [&](std::int64_t, double x, bool) { highest = std::max(highest, x); };
  const std::string path = KVFLEET_SOURCE_DIR "/scenarios/conversations/context-policies.yaml";
  const CapacityResult c = find_capacity(path, parse_slo("ttft_p99=1000s"), o);
  EXPECT_EQ(c.mean, 60);
  EXPECT_EQ(highest, 60);
  EXPECT_NE(c.limited_by.find("workload.num_sessions"), std::string::npos) << c.limited_by;
  EXPECT_NE(c.limited_by.find("60 conversations"), std::string::npos) << c.limited_by;
  // Sizing for more users than conversations is refused by name.
  SizingOptions z;
  z.load = "users";
  z.target = 200;
  z.sets = o.sets;
  try {
    ScenarioSource src;
    src.path = path;
    find_replicas(src, parse_slo("ttft_p99=1000s"), z);
    FAIL() << "200 users on 60 conversations were sized";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--target"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("num_sessions"), std::string::npos) << e.what();
  }
}

// Sizing for output tokens per second: the target becomes the request arrival rate that offers
// it (the target over the workload's mean output tokens per completed request, measured on one
// run at the scenario's own settings), and the answer is the answer for that rate.
TEST(Sizing, AnOutputTokenTargetIsTheArrivalRateThatOffersIt) {
  SizingOptions o;
  o.load = "output_tokens_per_s";
  o.target = 30000;
  o.replicates = 1;
  o.sets = {"workload.num_requests=2000"};
  const auto slo = parse_slo("ttft_p99=2s,tpot_p99=100ms");
  ScenarioSource src;  // the built-in default: lognormal output, mean 338 tokens, max 4096
  const SizingResult z = find_replicas(src, slo, o);
  ASSERT_TRUE(z.not_met.empty()) << z.not_met;
  EXPECT_EQ(z.load_key, "workload.arrival.rate_per_s");
  const Summary run = *check_slo(src, o.sets, {}).summary;
  const double per_request = run.output_tokens_per_s * run.duration_s / run.ok;
  EXPECT_NEAR(z.output_tokens_per_request, per_request, 1e-9 * per_request);
  EXPECT_NEAR(per_request, 338, 0.08 * 338);  // per request, not per second
  EXPECT_EQ(z.measured_completed, run.ok);
  EXPECT_EQ(z.measured_arrived, 2000);
  EXPECT_DOUBLE_EQ(z.target_output_tokens_per_s, 30000);
  EXPECT_NEAR(z.target, 30000 / per_request, 1e-9 * z.target);
  // The same search as a target in requests/s at that rate.
  SizingOptions r = o;
  r.load = "arrival_rate";
  r.target = z.target;
  const SizingResult by_rate = find_replicas(src, slo, r);
  EXPECT_EQ(z.per_seed, by_rate.per_seed);
  EXPECT_EQ(z.replicas, by_rate.replicas);
  EXPECT_DOUBLE_EQ(z.output_tokens_per_s, by_rate.output_tokens_per_s);
  // A closed-loop workload has no request rate: refused by name, pointing at its own unit.
  ScenarioSource chat;
  chat.path = KVFLEET_SOURCE_DIR "/scenarios/conversations/context-policies.yaml";
  o.sets = {"workload.num_sessions=60", "workload.users=20"};
  try {
    find_replicas(chat, slo, o);
    FAIL() << "a tokens/s target was sized on a closed-loop workload";
  } catch (const InputError& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("output_tokens_per_s"), std::string::npos) << w;
    EXPECT_NE(w.find("--metric users"), std::string::npos) << w;
  }
}

// Sizing: the replicas found hold the SLO at the target load with every seed, and one fewer
// misses it with the seed that needed the most; the cost follows from the GPUs and the price.
TEST(Sizing, TheFewestReplicasThatHoldTheSloAtTheTarget) {
  SizingOptions o;
  o.target = 100;  // requests/s: about twice one H100's capacity in the default scenario
  o.replicates = 2;
  o.price_per_hour = 2.5;
  o.sets = {"workload.num_requests=3000"};
  const auto slo = parse_slo("ttft_p99=2s,tpot_p99=100ms");
  ScenarioSource src;  // the built-in default
  const SizingResult z = find_replicas(src, slo, o);
  ASSERT_TRUE(z.not_met.empty()) << z.not_met;
  ASSERT_GE(z.replicas, 2);
  EXPECT_EQ(z.gpus, z.replicas);
  EXPECT_DOUBLE_EQ(z.cost_per_month, z.replicas * 2.5 * 730);
  EXPECT_EQ(z.price_source, "--price-per-hour");
  EXPECT_GT(z.usd_per_million_output_tokens, 0);
  EXPECT_NE(z.limited_by.find("with " + std::to_string(z.replicas - 1) + " replicas"),
            std::string::npos)
      << z.limited_by;
  bool fewer_fails = false;
  for (std::size_t r = 0; r < z.seeds.size(); ++r) {
    auto sets = o.sets;
    sets.push_back("workload.arrival.rate_per_s=100");
    sets.push_back("seed=" + std::to_string(z.seeds[r]));
    auto at = [&](int n) {
      auto s2 = sets;
      s2.push_back("pools[0].replicas=" + std::to_string(n));
      return check_slo(src, s2, slo).ok;
    };
    EXPECT_TRUE(at(z.replicas)) << "seed " << z.seeds[r];
    EXPECT_EQ(at(z.per_seed[r]), true);
    EXPECT_FALSE(at(z.per_seed[r] - 1)) << "seed " << z.seeds[r];
    fewer_fails = fewer_fails || !at(z.replicas - 1);
  }
  EXPECT_TRUE(fewer_fails);
  // Without a price, the GPU preset's sourced list price; a GPU without one has no price.
  o.price_per_hour = -1;
  const SizingResult listed = find_replicas(src, slo, o);
  EXPECT_DOUBLE_EQ(listed.price_per_hour, gpu_list_price("H100-SXM")->usd_per_hour);
  EXPECT_NE(listed.price_source.find("list price of the H100-SXM preset: RunPod"),
            std::string::npos)
      << listed.price_source;
  EXPECT_EQ(gpu_list_price("MI300X"), nullptr);
  for (const auto& p : gpu_list_prices()) {
    EXPECT_GT(p.usd_per_hour, 0) << p.gpu;
    EXPECT_NE(p.source.find("deploybase.ai/articles/"), std::string::npos) << p.gpu;
    bool preset = false;
    for (const auto& g : gpu_presets()) preset = preset || g.name == p.gpu;
    EXPECT_TRUE(preset) << p.gpu << ": priced but not a GPU preset";
  }
  o.price_per_hour = 2.5;
  // A target the pool cannot meet within the maximum says so.
  o.max_replicas = 1;
  const SizingResult none = find_replicas(src, slo, o);
  EXPECT_EQ(none.replicas, 0);
  EXPECT_NE(none.not_met.find("ttft_p99 measured"), std::string::npos) << none.not_met;
}

// timeout_rate counts the requests the client gave up on (client.timeout_s): a latency-only
// capacity ignores them.
TEST(Capacity, ATimeoutRateTargetCountsTheRequestsTheClientGaveUpOn) {
  const auto slo = parse_slo("timeout_rate=1%");
  ASSERT_EQ(slo.size(), 1u);
  EXPECT_EQ(slo[0].describe(), "timeout_rate <= 1%");
  Summary s;
  s.requests = 100;
  s.ok = 95;
  s.timed_out = 5;
  EXPECT_FALSE(slo[0].holds(s));
  EXPECT_EQ(slo[0].measured(s), "5%");
  s.timed_out = 1;
  EXPECT_TRUE(slo[0].holds(s));
  EXPECT_THROW(parse_slo("timeout_rate=100%"), InputError);
  // A share in exponent notation is a number like any other (1e-300% was refused).
  EXPECT_DOUBLE_EQ(parse_slo("timeout_rate=1e-3")[0].fraction, 1e-3);
  EXPECT_DOUBLE_EQ(parse_slo("reject_rate=1e-300%")[0].fraction, 1e-302);
  EXPECT_THROW(parse_slo("timeout_rate=1e9%"), InputError);
  // refused_rate: rejected and timed out together (the GUI's "Refused at most").
  const auto refused = parse_slo("refused_rate=1%");
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].describe(), "refused_rate <= 1%");
  s.timed_out = 1;
  s.rejected = 1;
  EXPECT_FALSE(refused[0].holds(s));
  EXPECT_EQ(refused[0].measured(s), "2%");
  s.rejected = 0;
  EXPECT_TRUE(refused[0].holds(s));
  EXPECT_THROW(parse_slo("timeout_rate=nan"), InputError);
  // A target twice, or an empty one, is refused (the last once won silently).
  EXPECT_THROW(parse_slo("ttft_p99=2s,ttft_p99=1s"), InputError);
  EXPECT_THROW(parse_slo("ttft_p99=2s,"), InputError);
  EXPECT_THROW(parse_slo("ttft_p99=2s,,tpot_p99=1s"), InputError);
}

// An SLO that fails even unloaded: capacity 0 with the reason (which target, what it measured),
// not a clock overflow from halving the load toward nothing.
TEST(Capacity, AnSloThatHoldsAtNoLoadSaysWhy) {
  CapacityOptions o;
  o.load = "arrival_rate";
  o.replicates = 2;
  o.sets = {"workload.num_requests=200"};
  double lowest = 1e300;
  o.on_run = [&](std::int64_t, double x, bool) { lowest = std::min(lowest, x); };
  const CapacityResult c = find_capacity("", parse_slo("ttft_p99=1ms"), o);
  EXPECT_EQ(c.mean, 0);
  EXPECT_NE(c.not_met.find("ttft_p99 measured"), std::string::npos) << c.not_met;
  EXPECT_NE(c.not_met.find(" ms against ttft_p99 <= 0.001 s"), std::string::npos) << c.not_met;
  EXPECT_NE(c.not_met.find("workload.arrival.rate_per_s = "), std::string::npos) << c.not_met;
  // It stopped at 1/1024 of the scenario's load and ran no sensitivity searches.
  EXPECT_GE(lowest, c.start / 1024 * (1 - 1e-9));
  EXPECT_TRUE(std::isnan(c.slower_steps));
  // A reachable SLO leaves not_met empty.
  EXPECT_TRUE(find_capacity("", parse_slo("ttft_p99=3s"), o).not_met.empty());
}

TEST(Capacity, BracketsTheLoadWhereTheSloTurns) {
  CapacityOptions o;
  o.load = "arrival_rate";
  o.replicates = 2;
  o.tolerance = 0.05;
  o.sets = {"workload.num_requests=600"};
  std::vector<std::tuple<std::int64_t, double, bool>> runs;  // (seed, load, holds)
  o.on_run = [&](std::int64_t seed, double x, bool ok) { runs.emplace_back(seed, x, ok); };
  const CapacityResult strict = find_capacity("", parse_slo("ttft_p99=300ms"), o);
  const CapacityResult loose = find_capacity("", parse_slo("ttft_p99=3s"), o);
  EXPECT_EQ(strict.key, "workload.arrival.rate_per_s");
  ASSERT_EQ(strict.per_seed.size(), 2u);
  EXPECT_GT(strict.mean, 0);
  EXPECT_GT(loose.mean, strict.mean);
  EXPECT_LE(strict.ci95_low, strict.mean);
  EXPECT_GE(strict.ci95_high, strict.mean);
  // For each seed: the reported load held, and some load above it within the tolerance missed.
  for (int r = 0; r < 2; ++r) {
    bool held = false;
    double lowest_miss = 1e300;
    for (const auto& [seed, x, ok] : runs) {
      if (seed != strict.seeds[r]) continue;
      if (ok && x == strict.per_seed[r]) held = true;
      if (!ok && x > strict.per_seed[r]) lowest_miss = std::min(lowest_miss, x);
    }
    EXPECT_TRUE(held) << r;
    EXPECT_LE(lowest_miss, strict.per_seed[r] * (1 + o.tolerance) + 1e-9) << r;
  }
  EXPECT_NE(strict.workload_yaml.find("arrival"), std::string::npos);
}

#ifdef KVFLEET_MPIEXEC
TEST(Sweep, TwoMpiRanksEqualOneProcess) {
  const std::string bin = KVFLEET_BINARY_DIR "/bin/kvfleet";
  const std::string dir = ::testing::TempDir();
  const std::string sweep = dir + "/mpi_sweep.yaml";
  {
    std::ofstream o(sweep);
    std::string text = kSmall;
    text.replace(text.find("../default.yaml"), 15, KVFLEET_SOURCE_DIR "/scenarios/default.yaml");
    o << text;
  }
  const std::string env = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ";
  const std::string mpi = env + KVFLEET_MPIEXEC " -n 2 --oversubscribe " + bin + " sweep " + sweep +
                          " --threads 1 --out " + dir + "/mpi.h5 2> " + dir + "/mpi.err";
  const std::string one = bin + " sweep " + sweep + " --quiet --out " + dir + "/one.h5";
  ASSERT_EQ(std::system(one.c_str()), 0) << one;
  ASSERT_EQ(std::system(mpi.c_str()), 0) << mpi;
  expect_same(read_sweep_h5(dir + "/one.h5"), read_sweep_h5(dir + "/mpi.h5"));
  // Rank 0's progress counts both ranks' points (it once showed its own half: 4/4).
  std::ifstream err(dir + "/mpi.err");
  const std::string progress((std::istreambuf_iterator<char>(err)), {});
  EXPECT_NE(progress.find("] 8/8 points"), std::string::npos) << progress;
}
#endif

// Threads 0 means the cores this process may use: Slurm's share, else the affinity mask.
TEST(PointRunner, UsableCoresFollowSlurmAndTheAffinityMask) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
  const char* slurm = std::getenv("SLURM_CPUS_PER_TASK");
  const std::string kept = slurm ? slurm : "";
  unsetenv("SLURM_CPUS_PER_TASK");
  EXPECT_EQ(usable_cores(), CPU_COUNT(&saved));
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &saved)) {
      CPU_SET(c, &one);
      break;
    }
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  EXPECT_EQ(usable_cores(), 1);
  // How many threads a run starts: never more than the usable cores.
  std::set<std::thread::id> ids;
  std::mutex m;
  run_points(
      8,
      [&](std::size_t) {
        std::lock_guard lock(m);
        ids.insert(std::this_thread::get_id());
      },
      PointRunnerOptions{});
  EXPECT_EQ(ids.size(), 1u);
  setenv("SLURM_CPUS_PER_TASK", "3", 1);
  EXPECT_EQ(usable_cores(), 3);
  setenv("SLURM_CPUS_PER_TASK", "lots", 1);  // not a count: the mask decides
  EXPECT_EQ(usable_cores(), 1);
  ASSERT_EQ(sched_setaffinity(0, sizeof saved, &saved), 0);
  if (slurm)
    setenv("SLURM_CPUS_PER_TASK", kept.c_str(), 1);
  else
    unsetenv("SLURM_CPUS_PER_TASK");
}

TEST(PointRunner, RunsEveryJobOnceAndReportsTheEnd) {
  std::vector<std::atomic<int>> hits(37);
  std::size_t last_done = 0, last_total = 0;
  PointRunnerOptions o;
  o.threads = 4;
  o.on_progress = [&](std::size_t d, std::size_t t) { last_done = d, last_total = t; };
  run_points(
      hits.size(), [&](std::size_t i) { ++hits[i]; }, o);
  for (const auto& h : hits) EXPECT_EQ(h.load(), 1);
  EXPECT_EQ(last_done, 37u);
  EXPECT_EQ(last_total, 37u);
  run_points(
      0, [&](std::size_t) { FAIL(); }, o);  // no jobs: returns at once
}

TEST(PointRunner, ACancelSkipsJobsNotStarted) {
  CancelToken cancel;
  std::atomic<int> ran{0};
  PointRunnerOptions o;
  o.threads = 1;
  o.cancel = &cancel;
  run_points(
      100,
      [&](std::size_t i) {
        ++ran;
        if (i == 4) cancel.cancel();
      },
      o);
  EXPECT_EQ(ran.load(), 5);
}

TEST(PointRunner, AnEscapedErrorStopsTheOthersAndIsRethrown) {
  std::atomic<int> ran{0};
  PointRunnerOptions o;
  o.threads = 1;
  EXPECT_THROW(run_points(
                   50,
                   [&](std::size_t i) {
                     ++ran;
                     if (i == 2) throw std::runtime_error("boom");
                   },
                   o),
               std::runtime_error);
  EXPECT_EQ(ran.load(), 3);
  o.on_checkpoint = [] { throw InputError("checkpoint", "--out", "disk full"); };
  o.checkpoint_every_s = 0;
  EXPECT_THROW(
      run_points(
          4, [](std::size_t) { std::this_thread::sleep_for(std::chrono::milliseconds(60)); }, o),
      InputError);
}

TEST(PointRunner, ACancelledRunStopsBetweenEvents) {
  // A run whose token is cancelled stops at its next sample and says so; without it, it ends.
  Scenario s = load_scenario_file(KVFLEET_SOURCE_DIR "/scenarios/default.yaml",
                                  {"workload.num_requests=2000"});
  CancelToken cancel;
  cancel.cancel();
  Simulation sim(s);
  sim.set_cancel(&cancel);
  RunResult r = sim.run();
  EXPECT_TRUE(r.cancelled);
  Summary cut = summarize(r);
  Simulation again(s);
  RunResult full = again.run();
  EXPECT_FALSE(full.cancelled);
  Summary all = summarize(full);
  EXPECT_LT(cut.ok, all.ok);
  EXPECT_GT(all.ok, 1000);
}

}  // namespace
}  // namespace kvfleet::sim
