// Little's law, request conservation and determinism on a loaded replica with preemptions.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>

#include "sim/engine/retention.h"
#include "sim/engine/scheduler.h"
#include "sim/fleet/router.h"
#include "sim/output/prometheus.h"
#include "sim/output/report.h"
#include "sim/output/results.h"
#include "sim/testing/run.h"

namespace kvfleet {
namespace {

// A KV-starved replica: long outputs on a small pool force preemptions; some requests exceed
// max_model_len and are rejected.
const char* kStressed = R"(seed: 3
workload:
  impl: synthetic
  num_requests: 3000
  arrival: {impl: gamma, rate_per_s: 12, cv: 2}
  input_tokens: {impl: lognormal, mean: 400, sigma: 1.0, max: 6000}
  output_tokens: {impl: lognormal, mean: 300, sigma: 0.9, max: 4000}
pools:
  - model: Llama-3-8B
    gpu: H100-SXM
    engine: {max_num_seqs: 128, max_num_batched_tokens: 2048, num_gpu_blocks_override: 1500,
             max_model_len: 3000}
simulation: {timeseries_interval_s: 0.01, check_invariants: true}
)";

TEST(Conservation, EveryRequestEndsInExactlyOneOutcome) {
  const auto r = testing::run_yaml(kStressed);
  const auto& s = r.summary;
  EXPECT_EQ(s.requests, 3000);
  EXPECT_EQ(s.ok + s.rejected + s.timed_out + s.cancelled + s.failed + s.unfinished, s.requests);
  EXPECT_EQ(s.unfinished, 0);
  for (const auto& q : r.result.requests) {
    ASSERT_NE(q.outcome, sim::Outcome::kPending) << "request " << q.id;
    if (q.outcome == sim::Outcome::kOk) {
      ASSERT_EQ(q.generated_tokens, q.output_tokens);
    }
  }
  // The scenario must exercise preemption and rejection, or it tests nothing.
  EXPECT_GT(s.total("num_preemptions"), 0);
  EXPECT_GT(s.rejected, 0);
  // Tokens: every emitted token belongs to a request.
  std::int64_t gen = 0;
  for (const auto& q : r.result.requests) gen += q.generated_tokens;
  EXPECT_EQ(gen, r.result.replicas[0].stats.generation_tokens);
}

// The same with shared system prompts over 40 tenants and two priorities: blocks are shared
// between running requests, cached, evicted and re-hit while requests are preempted.
TEST(Conservation, HoldsWithPrefixSharing) {
  const auto r =
      testing::run_yaml(kStressed, {"workload.tenants=40", "workload.shared_prefix_tokens=300",
                                    "workload.priority_weights=[1, 3]"});
  const auto& s = r.summary;
  EXPECT_EQ(s.ok + s.rejected, s.requests);
  EXPECT_GT(s.total("num_preemptions"), 0);
  EXPECT_GT(s.total("prefix_cache_hits"), 0);
  EXPECT_GT(s.total("cache_evictions"), 0);
  for (const auto& q : r.result.requests) {
    ASSERT_NE(q.outcome, sim::Outcome::kPending);
    ASSERT_LE(q.cached_tokens, q.input_tokens - 1);
  }
}

TEST(Conservation, HoldsWithPriorityAndSwap) {
  const auto r = testing::run_yaml(
      kStressed,
      {"workload.tenants=40", "workload.shared_prefix_tokens=300",
       "workload.priority_weights=[1, 2, 3]", "pools[0].engine.scheduling_policy=priority",
       "pools[0].engine.preemption_mode=swap", "pools[0].engine.swap_space_gib=0.5"});
  const auto& s = r.summary;
  EXPECT_EQ(s.ok + s.rejected, s.requests);
  EXPECT_GT(s.total("num_preemptions"), 0);
  EXPECT_GT(r.result.replicas[0].stats.num_swaps, 0);
  // With a small swap space some preemptions fall back to recompute.
  EXPECT_LT(r.result.replicas[0].stats.num_swaps, s.total("num_preemptions"));
  // Urgent requests wait less than the others.
  double q0 = 0, q2 = 0;
  int n0 = 0, n2 = 0;
  for (const auto& q : r.result.requests) {
    if (q.outcome != sim::Outcome::kOk) continue;
    if (q.priority == 0) q0 += q.queue_s(), ++n0;
    if (q.priority == 2) q2 += q.queue_s(), ++n2;
  }
  ASSERT_GT(n0, 0);
  ASSERT_GT(n2, 0);
  EXPECT_LT(q0 / n0, q2 / n2);
}

// Conversations on a small pool with a CPU tier, under every retention policy: blocks move
// between sessions' free lists, are evicted proactively and on demand, spill to the tier and load
// back, with the engine's invariants checked after every step.
const char* kChats = R"(seed: 9
workload:
  impl: conversations
  num_sessions: 150
  session_arrival: {impl: poisson, rate_per_s: 2}
  turns: {impl: lognormal, mean: 6, sigma: 0.7, max: 30}
  user_tokens: {impl: lognormal, mean: 100, sigma: 0.8, max: 1000}
  reply_tokens: {impl: lognormal, mean: 150, sigma: 0.7, max: 600}
  think_time_s: 5
  system_prompt_tokens: 200
  tenants: 3
  priority_weights: [1, 1]
pools:
  - model: Llama-3-8B
    gpu: H100-SXM
    engine:
      max_num_seqs: 64
      num_gpu_blocks_override: 1200
      kv_tiers: [{name: cpu, capacity_gib: 2, read_GBps: 20, write_GBps: 20}]
simulation: {check_invariants: true}
)";

// Every retention policy the registry holds (a new one is covered without editing this test);
// some get settings that make them act within this short run.
TEST(Conservation, HoldsUnderEveryRetentionPolicyWithTiers) {
  const std::map<std::string, std::string> tuned = {{"watermark", ", watermark: 0.7"},
                                                    {"idle_ttl", ", ttl_s: 3"},
                                                    {"session_aware", ", idle_limit_s: 10"}};
  const auto names = sim::retention_registry().names();
  ASSERT_GE(names.size(), 5u);
  for (const std::string& name : names) {
    const auto t = tuned.find(name);
    const std::string policy = "{impl: " + name + (t == tuned.end() ? "" : t->second) + "}";
    const auto r = testing::run_yaml(kChats, {"pools[0].engine.retention=" + policy});
    const auto& s = r.summary;
    EXPECT_EQ(s.ok + s.rejected, s.requests) << policy;
    EXPECT_GT(s.total("prefix_cache_hits"), 0) << policy;
    EXPECT_GT(s.total("cache_evictions"), 0) << policy;
    EXPECT_GT(s.total("tier_hit_tokens"), 0) << policy;
    std::printf("%-45s requests %lld, prefix hit %.1f%%, tier loads %lld tokens, evictions %lld\n",
                policy.c_str(), static_cast<long long>(s.requests), 100 * s.prefix_cache_hit_rate(),
                static_cast<long long>(s.total("tier_hit_tokens")),
                static_cast<long long>(s.total("cache_evictions")));
  }
}

// Every scheduling policy the registry holds, under KV pressure with preemptions: each request
// ends once (a new policy is covered without editing this test).
TEST(Conservation, HoldsUnderEverySchedulingPolicy) {
  const auto names = sim::scheduling_registry().names();
  ASSERT_GE(names.size(), 4u);
  for (const std::string& name : names) {
    const auto r = testing::run_yaml(kChats, {"pools[0].engine.scheduling_policy=" + name,
                                              "pools[0].engine.num_gpu_blocks_override=300"});
    const auto& s = r.summary;
    EXPECT_EQ(s.ok + s.rejected, s.requests) << name;
    EXPECT_GT(s.ok, 0) << name;
    // A request's prompt tokens served from the cache or a tier are at most its prompt, however
    // often it was preempted and loaded back (loads after a preemption once counted again).
    std::int64_t preempted = 0;
    for (const auto& q : r.result.requests) {
      EXPECT_LE(static_cast<std::int64_t>(q.cached_tokens) + q.loaded_tokens, q.input_tokens)
          << name << " request " << q.id << " preempted " << q.num_preemptions;
      preempted += q.num_preemptions > 0;
    }
    EXPECT_GT(preempted, 0) << name;
  }
}

// A pool of four replicas under every router the registry holds: each request ends once,
// wherever it went.
TEST(Conservation, HoldsOnAFleetUnderEveryRouter) {
  const std::map<std::string, std::string> tuned = {{"consistent_hash", ", load_factor: 1.25"}};
  const auto names = sim::router_registry().names();
  ASSERT_GE(names.size(), 9u);
  for (const std::string& name : names) {
    const auto t = tuned.find(name);
    const std::string router = "{impl: " + name + (t == tuned.end() ? "" : t->second) + "}";
    const auto r = testing::run_yaml(
        kChats, {"router=" + router, "pools[0].replicas=4",
                 "pools[0].engine.num_gpu_blocks_override=400", "workload.num_sessions=100"});
    const auto& s = r.summary;
    EXPECT_EQ(s.ok + s.rejected, s.requests) << router;
    ASSERT_EQ(r.result.replicas.size(), 4u);
    std::int64_t served = 0;
    for (const auto& rep : r.result.replicas) served += rep.stats.generation_tokens > 0;
    EXPECT_EQ(served, 4) << router << ": every replica should get work";
  }
}

// Prefix-aware routing keeps a tenant's system prompt and a session's history where they are
// cached: a higher prefix-cache hit rate than spreading requests round robin.
TEST(Conservation, PrefixAwareRoutingHitsMoreThanRoundRobin) {
  const std::vector<std::string> fleet = {"pools[0].replicas=4",
                                          "pools[0].engine.num_gpu_blocks_override=1500",
                                          "workload.num_sessions=100"};
  auto with = fleet, rr = fleet;
  with.push_back("router={impl: prefix_aware}");
  rr.push_back("router={impl: round_robin}");
  const auto a = testing::run_yaml(kChats, with);
  const auto b = testing::run_yaml(kChats, rr);
  std::printf("4 replicas: prefix hit rate %.1f%% prefix_aware, %.1f%% round_robin\n",
              100 * a.summary.prefix_cache_hit_rate(), 100 * b.summary.prefix_cache_hit_rate());
  EXPECT_GT(a.summary.prefix_cache_hit_rate(), b.summary.prefix_cache_hit_rate() + 0.1);
}

TEST(Conservation, StoppingEarlyMarksRequestsUnfinished) {
  const auto r = testing::run_yaml(kStressed, {"simulation.max_time_s=60"});
  const auto& s = r.summary;
  EXPECT_GT(s.unfinished, 0);
  EXPECT_EQ(s.ok + s.rejected + s.unfinished, s.requests);
}

// Little's law on the sampled time series: time-average number in system (running + waiting)
// equals arrival rate × mean time in system.
TEST(LittlesLaw, HoldsOnTheTimeSeries) {
  const auto r = testing::run_yaml(kStressed);
  const auto& ts = r.result.timeseries.at(0);
  const double dt = 0.01;
  double area = 0;  // ∫ L dt, sampled
  for (std::size_t i = 0; i < ts.t_s.size(); ++i)
    area += (ts.num_requests_running[i] + ts.num_requests_waiting[i]) * dt;
  const double horizon = ts.t_s.back() + dt;
  double sojourn = 0;
  for (const auto& q : r.result.requests) sojourn += sim::to_seconds(q.finish - q.arrival);
  const double L = area / horizon;
  const double lambda = static_cast<double>(r.result.requests.size()) / horizon;
  const double W = sojourn / static_cast<double>(r.result.requests.size());
  std::printf("Little: L %.4f, lambda %.4f /s, W %.4f s, lambda*W %.4f (%+.4f%%)\n", L, lambda, W,
              lambda * W, 100 * (L / (lambda * W) - 1));
  ASSERT_GT(L, 5.0) << "the scenario should keep the replica busy";
  EXPECT_NEAR(L / (lambda * W), 1.0, 0.02) << "L " << L << ", λW " << lambda * W;
}

// Reads a dataset's raw bytes (in its file type) for byte comparison.
std::vector<unsigned char> raw_dataset(const std::string& file, const char* name) {
  hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  EXPECT_GE(f, 0);
  hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
  EXPECT_GE(d, 0);
  hid_t t = H5Dget_type(d);
  hid_t sp = H5Dget_space(d);
  const auto n = H5Sget_simple_extent_npoints(sp);
  std::vector<unsigned char> buf(static_cast<std::size_t>(n) * H5Tget_size(t));
  if (!buf.empty()) {
    EXPECT_GE(H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()), 0);
  }
  H5Sclose(sp);
  H5Tclose(t);
  H5Dclose(d);
  H5Fclose(f);
  return buf;
}

TEST(Determinism, SameSeedGivesByteIdenticalResults) {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string a = (dir / "kvfleet_det_a.h5").string(),
                    b = (dir / "kvfleet_det_b.h5").string(),
                    c = (dir / "kvfleet_det_c.h5").string();
  for (const auto& [path, seed] :
       {std::pair{a, "seed=3"}, std::pair{b, "seed=3"}, std::pair{c, "seed=4"}}) {
    const auto r = testing::run_yaml(kStressed, {seed, "simulation.timeseries_interval_s=1",
                                                 "simulation.check_invariants=false"});
    sim::write_results_h5(path, r.scenario, r.result, r.summary,
                          sim::report_text(r.scenario, r.result, r.summary));
  }
  for (const char* ds : {"requests", "summary"}) {
    const auto ra = raw_dataset(a, ds), rb = raw_dataset(b, ds), rc = raw_dataset(c, ds);
    ASSERT_FALSE(ra.empty());
    EXPECT_EQ(ra, rb) << ds << " differs between two runs with the same seed";
    EXPECT_NE(ra, rc) << ds << " is the same under a different seed";
  }
  for (const auto& p : {a, b, c}) std::filesystem::remove(p);
}

// A counter declared with a total (EngineStats::declare, RequestRecord::declare_counters) reaches
// every surface from that one declaration: its /summary metric is the sum of its column in
// /replicas or /requests (fleet-wide and per pool), the report's Counters name it with its value,
// and OpenMetrics has kvfleet:<name>_total once per replica with the replica's own value.
TEST(Conservation, DeclaredCountersReachEverySurface) {
  const auto r =
      testing::run_yaml(kStressed, {"workload.tenants=40", "workload.shared_prefix_tokens=300",
                                    "pools[0].replicas=2", "workload.num_requests=1500"});
  const sim::Table reps = sim::replicas_table(r.result);
  const sim::Table reqs = sim::requests_table(r.result);
  const std::string report = sim::report_text(r.scenario, r.result, r.summary);
  const std::string om = "declared_counters_test.om";
  sim::write_openmetrics(om, r.scenario, r.result, 0);
  std::ifstream f(om);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::filesystem::remove(om);
  ASSERT_FALSE(sim::summary_totals().empty());
  int nonzero = 0;
  for (const auto& t : sim::summary_totals()) {
    const sim::Table& table = t.per_replica ? reps : reqs;
    const auto column =
        sim::column_numbers(table, t.name, "test", t.per_replica ? "replicas" : "requests");
    double sum = 0;
    for (double v : column) sum += v;
    EXPECT_EQ(r.summary.total(t.name), sum) << t.name;
    bool in_summary = false;
    for (const auto& [k, v] : r.summary.flatten())
      in_summary = in_summary || (k == t.name && v == sum);
    EXPECT_TRUE(in_summary) << t.name << " missing from /summary";
    if (sum == 0) continue;
    ++nonzero;
    EXPECT_NE(report.find("  " + t.name + " "), std::string::npos)
        << t.name << " not in the report";
    if (!t.per_replica) continue;
    for (std::size_t i = 0; i < r.result.replicas.size(); ++i) {
      const std::string line = "kvfleet:" + t.name + "_total{model_name=\"Llama-3-8B\",engine=\"" +
                               r.result.replicas[i].name + "\"} ";
      const auto at = text.find(line);
      ASSERT_NE(at, std::string::npos) << line;
      EXPECT_EQ(std::stod(text.substr(at + line.size())), column[i]) << line;
    }
  }
  EXPECT_GE(nonzero, 5);  // steps, preemptions, cache queries, hits, evictions, recomputation
  EXPECT_THROW(r.summary.total("no_such_counter"), std::logic_error);
  // A /summary metric the report's sections neither name nor show in words is listed under
  // "Other metrics" with its value: a workload's own counter stands for a newly declared metric.
  EXPECT_EQ(report.find("Other metrics"), std::string::npos);
  sim::Summary more = r.summary;
  more.workload_stats.push_back({"brand_new_metric", 7});
  const std::string with = sim::report_text(r.scenario, r.result, more);
  EXPECT_NE(with.find("\nOther metrics (/summary names):\n  brand_new_metric "), std::string::npos)
      << with;
  EXPECT_NE(with.find(" 7 \n"), std::string::npos);
}

}  // namespace
}  // namespace kvfleet
