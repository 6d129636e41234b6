// The operator's view (issue 10): utilisation signals, the binding resource of a run, and alert
// rules scored by their lead times on a scenario built to overflow.
#include <gtest/gtest.h>

#include <cmath>

#include "sim/metrics/alerts.h"
#include "sim/testing/run.h"

namespace kvfleet {
namespace {

using testing::run_yaml;

std::string overflow_file() {
  return std::string(KVFLEET_SOURCE_DIR) + "/scenarios/operations/kv-overflow.yaml";
}

testing::Run run_file(const std::string& path, const std::vector<std::string>& sets = {}) {
  testing::Run r{sim::load_scenario_file(path, sets), {}, {}};
  sim::Simulation s(r.scenario);
  r.result = s.run();
  r.summary = sim::summarize(r.result);
  return r;
}

const sim::AlertFiring* first_firing(const sim::AlertReport& a, const std::string& rule) {
  for (const auto& f : a.firings)
    if (f.rule == rule) return &f;  // in time order within a rule
  return nullptr;
}

// Recomputes a replica rule "kv above x and higher than w seconds ago" from the time series.
double first_kv_climb(const sim::TimeSeries& ts, double x, double w) {
  for (std::size_t k = 0; k < ts.t_s.size(); ++k) {
    std::ptrdiff_t back = -1;
    for (std::size_t j = 0; j < k; ++j)
      if (ts.t_s[j] <= ts.t_s[k] - w + 1e-9) back = static_cast<std::ptrdiff_t>(j);
    if (back >= 0 && ts.kv_cache_usage[k] > x && ts.kv_cache_usage[k] > ts.kv_cache_usage[back])
      return ts.t_s[k];
  }
  return NAN;
}

TEST(Alerts, OnTheOverflowScenarioTheKvTrendRuleWarnsBeforeOutOfMemory) {
  const auto run = run_file(overflow_file());
  const sim::AlertReport& a = run.result.alerts;
  // The scenario overflows in all three ways.
  const sim::AlertEvent* oom = a.first("out_of_memory", "fleet");
  const sim::AlertEvent* wave = a.first("rejection_wave", "fleet");
  const sim::AlertEvent* slo = a.first("slo_breach", "fleet");
  ASSERT_NE(oom, nullptr);
  ASSERT_NE(wave, nullptr);
  ASSERT_NE(slo, nullptr);
  EXPECT_GT(run.summary.total("num_preemptions"), 0);
  EXPECT_GT(run.summary.rejected, 0);
  // The out-of-memory time is the first preemption, as the time series count them.
  const sim::TimeSeries* hot = nullptr;
  for (const auto& ts : run.result.timeseries)
    if (ts.replica == oom->detail.substr(oom->detail.rfind(' ') + 1)) hot = &ts;
  ASSERT_NE(hot, nullptr);
  std::size_t k = 0;
  while (hot->num_preemptions[k] == 0) ++k;
  EXPECT_GT(hot->t_s[k], oom->t_s);
  EXPECT_LE(hot->t_s[k] - run.scenario.config.simulation.timeseries_interval_s, oom->t_s);

  // kv-climbing fires ahead of its replica's first preemption, at the sample the rule's own
  // definition gives; the copied 90% rule barely ahead of it; compute-hot never fires.
  const sim::AlertFiring* climb = first_firing(a, "kv-climbing");
  ASSERT_NE(climb, nullptr);
  const sim::TimeSeries* own = nullptr;
  for (const auto& ts : run.result.timeseries)
    if (ts.replica == climb->scope) own = &ts;
  ASSERT_NE(own, nullptr);
  EXPECT_DOUBLE_EQ(climb->fire_s, first_kv_climb(*own, 0.6, 30));
  const sim::AlertEvent* own_oom = a.first("out_of_memory", climb->scope);
  ASSERT_NE(own_oom, nullptr);
  EXPECT_DOUBLE_EQ(climb->lead_oom_s, own_oom->t_s - climb->fire_s);
  EXPECT_GE(climb->lead_oom_s, 10);
  EXPECT_DOUBLE_EQ(climb->lead_rejection_wave_s, wave->t_s - climb->fire_s);
  EXPECT_DOUBLE_EQ(climb->lead_slo_breach_s, slo->t_s - climb->fire_s);
  // The copied rule (KV above 90% while the queue grows) warns a sample's worth at most.
  const sim::AlertFiring* late = first_firing(a, "kv-high-and-queueing");
  ASSERT_NE(late, nullptr);
  EXPECT_LT(late->lead_oom_s, run.scenario.config.simulation.timeseries_interval_s);
  EXPECT_GE(climb->lead_oom_s, 30);
  EXPECT_EQ(first_firing(a, "compute-hot"), nullptr);
  // The run is named memory-bound.
  EXPECT_EQ(sim::binding_resource(run.summary).resource, "memory-bound");
  EXPECT_GT(run.summary.wait_kv_fraction, run.summary.wait_token_budget_fraction);
}

// A hand-made run: one replica's signals and requests, to pin the rule semantics.
sim::RunResult synthetic_run() {
  sim::RunResult r;
  sim::TimeSeries ts;
  ts.replica = "r0";
  const double kv[] = {0.1, 0.5, 0.95, 0.95, 0.95, 0.2, 0.95, 0.95};
  const int waiting[] = {0, 0, 1, 2, 3, 0, 0, 5};
  for (int k = 0; k < 8; ++k) {
    ts.t_s.push_back(10.0 * k);
    ts.kv_cache_usage.push_back(kv[k]);
    ts.num_requests_waiting.push_back(waiting[k]);
    ts.num_requests_running.push_back(1);
    ts.num_preemptions.push_back(k >= 4 ? 2 : 0);
    ts.busy_fraction.push_back(1);
    ts.compute_utilization.push_back(0.3);
    ts.memory_bandwidth_utilization.push_back(0.6);
  }
  r.timeseries = {ts, ts};
  r.timeseries[1].replica = "r1";
  r.timeseries[1].kv_cache_usage.assign(8, 0.0);
  sim::ReplicaResult rr;
  rr.name = "r0";
  rr.stats.first_preemption_s = 33;
  r.replicas.push_back(rr);
  rr.name = "r1";
  rr.stats.first_preemption_s = -1;
  r.replicas.push_back(rr);
  // Rejections: 3 at 50-52 s by the gateway, and many "too long" ones that are no wave.
  for (int i = 0; i < 3; ++i) {
    sim::RequestRecord q;
    q.outcome = sim::Outcome::kRejected;
    q.reject_reason = sim::RejectReason::kQueueFull;
    q.finish = sim::from_seconds(50 + i);
    r.requests.push_back(q);
  }
  for (int i = 0; i < 10; ++i) {
    sim::RequestRecord q;
    q.outcome = sim::Outcome::kRejected;
    q.reject_reason = sim::RejectReason::kExceedsMaxModelLen;
    q.finish = sim::from_seconds(1 + 0.1 * i);
    r.requests.push_back(q);
  }
  // TTFT 0.1 s until 40 s, then 5 s.
  for (int i = 0; i < 70; ++i) {
    sim::RequestRecord q;
    q.outcome = sim::Outcome::kOk;
    q.arrival = sim::from_seconds(i);
    q.first_token = q.arrival + sim::from_seconds(i < 40 ? 0.1 : 5);
    q.finish = q.first_token + sim::from_seconds(1);
    q.generated_tokens = 11;
    r.requests.push_back(q);
  }
  return r;
}

sim::AlertRule rule(const std::string& name, std::vector<sim::AlertCondition> c, double for_s = 0,
                    const std::string& scope = "replica") {
  sim::AlertRule r;
  r.name = name;
  r.conditions = std::move(c);
  r.for_s = for_s;
  r.scope = scope;
  return r;
}

TEST(Alerts, RulesFireAndClearAsDefined) {
  sim::AlertsConfig cfg;
  cfg.rejection_wave_count = 3;
  cfg.rejection_wave_window_s = 5;
  cfg.slo_ttft_p99_s = 1;
  cfg.slo_window_s = 10;
  cfg.slo_min_requests = 5;
  cfg.rules.push_back(rule("kv", {{"kv_cache_usage", ">", 0.9}}));
  cfg.rules.push_back(rule("kv-for-20", {{"kv_cache_usage", ">", 0.9}}, 20));
  cfg.rules.push_back(rule("queue-rising", {{"num_requests_waiting", "rising", 0, 20}}));
  cfg.rules.push_back(rule("fleet-kv", {{"kv_cache_usage", ">=", 0.475}}, 0, "fleet"));
  cfg.rules.push_back(rule("never", {{"compute_utilization", ">", 0.5}}));
  const sim::AlertReport a = sim::evaluate_alerts(cfg, synthetic_run());

  auto firings = [&](const std::string& name) {
    std::vector<std::pair<std::string, double>> v;
    for (const auto& f : a.firings)
      if (f.rule == name) v.emplace_back(f.scope, f.fire_s);
    return v;
  };
  using V = std::vector<std::pair<std::string, double>>;
  EXPECT_EQ(firings("kv"), (V{{"r0", 20}, {"r0", 60}}));
  EXPECT_EQ(a.firings[0].clear_s, 50);
  EXPECT_TRUE(std::isnan(a.firings[1].clear_s));  // still firing at the end
  EXPECT_EQ(firings("kv-for-20"), (V{{"r0", 40}}));
  // Waiting 0,0,1,2,3,0,0,5: higher than 20 s earlier at 20, 30, 40 s and at 70 s.
  EXPECT_EQ(firings("queue-rising"), (V{{"r0", 20}, {"r1", 20}, {"r0", 70}, {"r1", 70}}));
  // The fleet's KV is the mean of 0.95 and 0: 0.475.
  EXPECT_EQ(firings("fleet-kv"), (V{{"fleet", 20}, {"fleet", 60}}));
  EXPECT_TRUE(firings("never").empty());

  // Events: r0's first preemption; the wave ignores the 10 'too long' rejections; the SLO breach
  // is the first sample whose trailing 10 s hold TTFTs over 1 s at p99 (first tokens at 45 s on).
  ASSERT_NE(a.first("out_of_memory", "r0"), nullptr);
  EXPECT_EQ(a.first("out_of_memory", "r1"), nullptr);
  EXPECT_EQ(a.first("out_of_memory", "fleet")->t_s, 33);
  ASSERT_NE(a.first("rejection_wave", "fleet"), nullptr);
  EXPECT_DOUBLE_EQ(a.first("rejection_wave", "fleet")->t_s, 52);
  ASSERT_NE(a.first("slo_breach", "fleet"), nullptr);
  EXPECT_DOUBLE_EQ(a.first("slo_breach", "fleet")->t_s, 50);
  // Leads: r0's kv firing at 20 s warns 13 s before its OOM; r1's rising-queue firing has no OOM.
  EXPECT_DOUBLE_EQ(a.firings[0].lead_oom_s, 13);
  EXPECT_DOUBLE_EQ(a.firings[0].lead_rejection_wave_s, 32);
  EXPECT_DOUBLE_EQ(a.firings[0].lead_slo_breach_s, 30);
  for (const auto& f : a.firings) {
    if (f.scope == "r1") {
      EXPECT_TRUE(std::isnan(f.lead_oom_s));
    }
  }
}

TEST(Alerts, ARuleWithoutConditionsIsRefusedByName) {
  try {
    testing::scenario_from(sim::builtin_default_scenario() +
                           "\nalerts:\n  rules:\n    - {name: empty, conditions: []}\n");
    FAIL() << "accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("conditions"), std::string::npos) << e.what();
  }
}

// The binding resource follows what held requests back.
TEST(Binding, NamesWhatHeldRequestsBack) {
  const std::string base = sim::builtin_default_scenario();
  const auto name = [&](std::vector<std::string> sets) {
    const auto r = run_yaml(base, sets);
    // Achieved never exceeds peak: every step takes at least its work at the peaks.
    EXPECT_LE(r.summary.compute_utilization, r.summary.busy_fraction + 1e-9);
    EXPECT_LE(r.summary.memory_bandwidth_utilization, r.summary.busy_fraction + 1e-9);
    EXPECT_GT(r.summary.compute_utilization, 0);
    return sim::binding_resource(r.summary).resource;
  };
  EXPECT_EQ(name({"pools[0].engine.max_num_seqs=8"}), "queue-bound");
  EXPECT_EQ(name({"pools[0].engine.num_gpu_blocks_override=2000"}), "memory-bound");
  EXPECT_EQ(name({"pools[0].engine.max_num_batched_tokens=64", "pools[0].engine.max_num_seqs=512"}),
            "compute-bound");
  EXPECT_EQ(name({"pools[0].replicas=4"}), "unsaturated");
}

TEST(Utilization, TimeSeriesIntervalsAddUpToTheRun) {
  const auto r = run_yaml(sim::builtin_default_scenario());
  const sim::TimeSeries& ts = r.result.timeseries.at(0);
  ASSERT_GT(ts.t_s.size(), 3u);
  double busy = 0, comp = 0;
  for (std::size_t k = 1; k < ts.t_s.size(); ++k) {
    const double dt = ts.t_s[k] - ts.t_s[k - 1];
    busy += ts.busy_fraction[k] * dt;
    comp += ts.compute_utilization[k] * dt;
    EXPECT_LE(ts.compute_utilization[k], 1.0);
  }
  const auto& st = r.result.replicas.at(0).stats;
  // Intervals count each step in the interval it starts in, clipped at 1: within one interval's
  // worth of the totals.
  const double interval = r.scenario.config.simulation.timeseries_interval_s;
  EXPECT_NEAR(busy, st.busy_s, interval);
  EXPECT_NEAR(comp, st.compute_s_at_peak, interval);
  EXPECT_GT(st.flops, 0);
  EXPECT_GT(st.hbm_bytes, 0);
}

}  // namespace
}  // namespace kvfleet

namespace kvfleet {
namespace {

// One replica of Llama-3-8B on H100s, decode-heavy: `n` requests of 16 prompt and 200 output
// tokens, all at time 0.
std::string pipeline_yaml(int n) {
  return R"(workload:
  impl: synthetic
  num_requests: )" +
         std::to_string(n) + R"(
  arrival: {impl: constant, rate_per_s: 100000}
  input_tokens: {impl: fixed, value: 16}
  output_tokens: {impl: fixed, value: 200}
pools:
  - {name: p, model: Llama-3-8B, gpu: H100-SXM, price_per_hour: 2}
)";
}

TEST(Pipeline, StagesHoldTheirShareOfWeightsAndKv) {
  const auto one = testing::scenario_from(pipeline_yaml(1));
  const auto four = testing::scenario_from(pipeline_yaml(1), {"pools[0].pipeline_parallel=4"});
  const sim::MemoryBudget& a = one.pools[0].memory;
  const sim::MemoryBudget& b = four.pools[0].memory;
  const sim::ModelSpec& m = one.pools[0].model;
  const double embed = static_cast<double>(m.vocab_size) * m.hidden_size;
  EXPECT_DOUBLE_EQ(b.weights_bytes, ((m.num_params - 2 * embed) / 4 + embed) * 2.0);
  EXPECT_EQ(b.stage_layers, 8);
  EXPECT_DOUBLE_EQ(b.kv_bytes_per_token, a.kv_bytes_per_token / 4);
  EXPECT_GT(b.num_blocks, 4 * a.num_blocks);  // a quarter of the KV per token, more room
  try {
    testing::scenario_from(pipeline_yaml(1), {"pools[0].pipeline_parallel=33"});
    FAIL() << "accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("pipeline_parallel"), std::string::npos) << e.what();
  }
}

TEST(Pipeline, OneSequenceWaitsOnEveryStageAndManyFillThePipeline) {
  const auto run = [](int n, int pp) {
    return testing::run_yaml(pipeline_yaml(n),
                             {"pools[0].pipeline_parallel=" + std::to_string(pp)});
  };
  // One sequence: a token passes all stages in turn; each stage reads about a quarter of the
  // weights, so the token takes about as long as on one GPU (a little longer: the last stage
  // also holds the lm_head and sets the pace), and while one stage works the other three wait:
  // three quarters of the stages' time, overhead aside, is bubble.
  const auto s1 = run(1, 1), s4 = run(1, 4);
  const double ratio = s4.summary.tpot.mean / s1.summary.tpot.mean;
  EXPECT_GT(ratio, 1.0);
  EXPECT_LT(ratio, 1.2);
  const auto& c4 = s4.result.replicas[0].stats.cost_sum;
  EXPECT_NEAR(c4.pipeline_bubble_s / (c4.total_s() - c4.overhead_s), 0.75, 0.01);
  // Four GPUs are paid for.
  EXPECT_EQ(s4.result.replicas[0].gpus, 4);
  EXPECT_DOUBLE_EQ(s4.summary.gpu_hours, s4.result.replicas[0].paid_s * 4 / 3600);
  // 256 equal sequences split into 4 equal micro-batches: almost no bubble, and each step reads
  // the weights and the KV once over four GPUs working at once.
  const auto m1 = run(256, 1), m4 = run(256, 4);
  const auto& d4 = m4.result.replicas[0].stats.cost_sum;
  EXPECT_LT(d4.pipeline_bubble_s / d4.total_s(), 0.05);
  EXPECT_LT(m4.summary.tpot.mean, m1.summary.tpot.mean);
  EXPECT_EQ(m4.summary.ok, 256);
}

}  // namespace
}  // namespace kvfleet
