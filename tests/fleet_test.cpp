// The fleet end to end: failures, deploys, autoscaling, gateway admission and client retries,
// with block conservation checked after every step.
#include <gtest/gtest.h>
#include <algorithm>

#include <map>

#include "sim/output/results.h"
#include "sim/testing/run.h"

namespace kvfleet {
namespace {

using sim::Outcome;

// Four small replicas under a bursty load with shared prefixes and two priorities.
const char* kFleet = R"(seed: 5
workload:
  impl: synthetic
  num_requests: 4000
  arrival: {impl: gamma, rate_per_s: 60, cv: 1.5}
  input_tokens: {impl: lognormal, mean: 600, sigma: 0.8, max: 6000}
  output_tokens: {impl: lognormal, mean: 150, sigma: 0.8, max: 1500}
  tenants: 8
  shared_prefix_tokens: 400
  priority_weights: [1, 2]
router: {impl: prefix_aware}
pools:
  - name: p
    replicas: 4
    model: Llama-3-8B
    gpu: H100-SXM
    price_per_hour: 2.5
    engine: {max_num_seqs: 64, num_gpu_blocks_override: 2000}
simulation: {check_invariants: true}
)";

// Checks the outcome invariants of a run with retries: every attempt ends in exactly one
// outcome; every logical request has attempts 0..k, all but the last retried after a retryable
// outcome, and exactly one final attempt. Returns the number of logical requests.
std::int64_t check_attempts(const sim::RunResult& r) {
  std::map<std::uint64_t, std::vector<const sim::RequestRecord*>> by_origin;
  for (const auto& q : r.requests) {
    EXPECT_NE(q.outcome, Outcome::kPending) << "request " << q.id;
    EXPECT_NE(q.outcome, Outcome::kUnfinished) << "request " << q.id;
    by_origin[q.origin].push_back(&q);
  }
  for (const auto& [origin, attempts] : by_origin) {
    int finals = 0;
    for (std::size_t k = 0; k < attempts.size(); ++k) {
      const auto& q = *attempts[k];
      EXPECT_EQ(q.attempt, static_cast<int>(k)) << "origin " << origin;
      if (q.retried) {
        const bool retryable = q.outcome == Outcome::kFailed || q.outcome == Outcome::kTimedOut ||
                               q.client_gone ||
                               (q.outcome == Outcome::kRejected && sim::retryable(q.reject_reason));
        EXPECT_TRUE(retryable) << "request " << q.id << " retried after "
                               << sim::outcome_name(q.outcome);
      } else {
        ++finals;
      }
    }
    EXPECT_EQ(finals, 1) << "origin " << origin;
    EXPECT_FALSE(attempts.back()->retried) << "origin " << origin;
  }
  return static_cast<std::int64_t>(by_origin.size());
}

TEST(Fleet, EveryRequestEndsInOneOutcomeThroughFailuresDeploysAndRetries) {
  const auto r = testing::run_yaml(
      kFleet, {"client.max_attempts=3", "client.timeout_s=20", "client.timeout_cancels=false",
               "pools[0].failures.at=[{time_s: 10, replica: 1}, {time_s: 25, replica: 1}]",
               "pools[0].failures.mtbf_s=120", "pools[0].failures.repair_s=5",
               "pools[0].startup_s=3", "pools[0].deploy={enabled: true, start_s: 30, drain: false}",
               "pools[0].admission={enabled: true, max_queue: 50, kv_demand_limit: 1.5}"});
  EXPECT_EQ(check_attempts(r.result), 4000);
  // The run must exercise what it claims to.
  EXPECT_GT(r.summary.failed, 0);
  std::int64_t retries = 0, failures = 0;
  for (const auto& q : r.result.requests) retries += q.attempt > 0;
  for (const auto& rep : r.result.replicas) failures += rep.failures;
  EXPECT_GE(failures, 2);
  EXPECT_GT(retries, 0);
  // Emitted tokens all belong to some attempt.
  std::int64_t gen = 0, emitted = 0;
  for (const auto& q : r.result.requests) gen += q.generated_tokens;
  for (const auto& rep : r.result.replicas) emitted += rep.stats.generation_tokens;
  EXPECT_EQ(gen, emitted);
}

// GPU-seconds: every step's time × GPUs is shared out to the requests in it, so the requests'
// shares add up to the replicas' busy time; wasted work is the share of requests that ended
// cancelled, timed out or failed.
TEST(Fleet, GpuSecondsAddUpAndWasteIsTheAbandonedShare) {
  const auto r =
      testing::run_yaml(kFleet, {"workload.arrival.rate_per_s=150", "client.timeout_s=5",
                                 "client.timeout_cancels=false", "pools[0].tensor_parallel=2"});
  double shares = 0, busy = 0, wasted = 0;
  for (const auto& q : r.result.requests) {
    shares += q.gpu_s;
    if (q.outcome == Outcome::kTimedOut) wasted += q.gpu_s;
  }
  for (const auto& rep : r.result.replicas) busy += rep.stats.busy_s * rep.gpus;
  EXPECT_NEAR(shares, busy, 1e-4 * busy);
  EXPECT_GT(wasted, 0);
  EXPECT_NEAR(r.summary.wasted_gpu_s, wasted, 1e-9 * busy);
  EXPECT_LT(r.summary.wasted_gpu_s, busy);
  // Cost: paid GPU-hours × price.
  EXPECT_NEAR(r.summary.cost, r.summary.gpu_hours * 2.5, 1e-9);
  EXPECT_NEAR(r.summary.gpu_hours, 4 * 2 * sim::to_seconds(r.result.end_time) / 3600, 1e-9);
}

// A random failure drawn for after the last request does not lengthen the run, nor the GPU time
// it bills: rarer failures never cost more (a run once billed 405,311 GPU-hours for 67 s of
// traffic with mtbf_s 1e9).
TEST(Fleet, FailuresDrawnAfterTheTrafficDoNotLengthenTheRun) {
  const auto none = testing::run_yaml(kFleet, {});
  for (const char* mtbf : {"pools[0].failures.mtbf_s=1e5", "pools[0].failures.mtbf_s=1e9"}) {
    const auto r = testing::run_yaml(kFleet, {mtbf});
    for (const auto& rep : r.result.replicas) EXPECT_EQ(rep.failures, 0) << mtbf;
    EXPECT_EQ(r.result.end_time, none.result.end_time) << mtbf;
    EXPECT_NEAR(r.summary.gpu_hours, none.summary.gpu_hours, 1e-12) << mtbf;
  }
  // Failures during the traffic still happen and still count.
  const auto often = testing::run_yaml(kFleet, {"pools[0].failures.mtbf_s=20"});
  std::int64_t failures = 0;
  for (const auto& rep : often.result.replicas) failures += rep.failures;
  EXPECT_GT(failures, 0);
  EXPECT_GE(often.result.end_time, sim::from_seconds(1));
}

// The client's timeout counts until the last token reaches it, through the frontend: a request
// the engine finished before the deadline but delivered after it timed out (the default
// scenario once reported one as ok with a 5.004 s E2E under a 5 s timeout).
TEST(Fleet, ATimeoutBeforeTheLastTokenArrivesIsATimeout) {
  for (const char* timeout : {"client.timeout_s=5", "client.timeout_s=3"}) {
    const auto r = testing::run_yaml(sim::builtin_default_scenario(), {timeout});
    const double limit = std::stod(std::string(timeout).substr(17));
    std::int64_t timed_out = 0;
    for (const auto& q : r.result.requests) {
      if (q.outcome == Outcome::kOk)
        EXPECT_LE(sim::to_seconds(q.finish - q.arrival), limit) << timeout << " request " << q.id;
      timed_out += q.outcome == Outcome::kTimedOut;
    }
    EXPECT_GT(timed_out, 0) << timeout;
    EXPECT_EQ(check_attempts(r.result), r.summary.requests) << timeout;
  }
}

// The most requests in flight at once (sent, not yet finished), from the request rows.
int most_in_flight(const sim::RunResult& r) {
  std::vector<std::pair<decltype(r.requests[0].arrival), int>> ev;
  for (const auto& q : r.requests) ev.push_back({q.arrival, +1}), ev.push_back({q.finish, -1});
  std::sort(ev.begin(), ev.end());  // a finish before a send at the same instant
  int now = 0, most = 0;
  for (const auto& e : ev) most = std::max(most, now += e.second);
  return most;
}

// The requests sent in load stage `stage`.
sim::RunResult stage_of(const sim::RunResult& r, int stage) {
  sim::RunResult part;
  for (const auto& q : r.requests)
    if (q.stage == stage) part.requests.push_back(q);
  return part;
}

TEST(Fleet, AClientConcurrencyCapHoldsRequestsUntilASlotFrees) {
  // vllm bench --max-concurrency: a request waits at the client, unsent, while the cap is
  // reached; its latencies start when it is sent.
  const auto free_run = testing::run_yaml(kFleet, {"workload.num_requests=400"});
  ASSERT_GT(most_in_flight(free_run.result), 3);
  const auto capped =
      testing::run_yaml(kFleet, {"workload.num_requests=400", "client.max_concurrency=3"});
  EXPECT_EQ(most_in_flight(capped.result), 3);
  std::int64_t ok = 0;
  for (const auto& q : capped.result.requests) ok += q.outcome == Outcome::kOk;
  EXPECT_EQ(ok, 400);
  // Held back, the same requests take longer overall but queue less at the engine.
  EXPECT_GT(capped.result.requests.back().finish, free_run.result.requests.back().finish);
}

TEST(Fleet, EachLoadStageHoldsItsOwnConcurrency) {
  // inference-perf's concurrent load: each stage's requests all due at once, at most its
  // concurrency_level in flight; the stages drain one after the other.
  const char* yaml = R"(seed: 3
workload:
  impl: synthetic
  input_tokens: {impl: fixed, value: 300}
  output_tokens: {impl: fixed, value: 60}
  load:
    type: constant
    stages:
      - {rate_per_s: 40, duration_s: 1, max_concurrency: 2}
      - {rate_per_s: 60, duration_s: 1, max_concurrency: 7}
pools:
  - {name: p, model: Llama-3.1-8B, gpu: H100-SXM}
)";
  const auto r = testing::run_yaml(yaml, {});
  for (int stage : {0, 1}) {
    const sim::RunResult part = stage_of(r.result, stage);
    EXPECT_EQ(part.requests.size(), stage == 0 ? 40u : 60u);
    EXPECT_EQ(most_in_flight(part), stage == 0 ? 2 : 7) << "stage " << stage;
  }
  // Without the caps, the same stages send everything within their second.
  const auto free_run = testing::run_yaml(yaml, {"workload.load.stages[0].max_concurrency=0",
                                                 "workload.load.stages[1].max_concurrency=0"});
  EXPECT_GT(most_in_flight(free_run.result), 7);
}

TEST(Fleet, MultiTurnSharedPrefixStagesHoldTheirOwnConcurrency) {
  // Rounds wait for their session's previous round; the cap that holds a round is its own
  // stage's, not that of the request generated after it.
  const char* yaml = R"(seed: 3
workload:
  impl: shared_prefix
  num_groups: 3
  num_prompts_per_group: 4
  multi_turn: true
  system_prompt_len: {impl: fixed, value: 200}
  question_len: {impl: fixed, value: 50}
  output_len: {impl: fixed, value: 40}
  load:
    type: constant
    stages:
      - {rate_per_s: 60, duration_s: 1, max_concurrency: 2}
      - {rate_per_s: 60, duration_s: 1, max_concurrency: 9}
      - {rate_per_s: 60, duration_s: 1, max_concurrency: 3}
pools:
  - {name: p, model: Llama-3.1-8B, gpu: H100-SXM}
)";
  const auto r = testing::run_yaml(yaml, {});
  for (int stage : {0, 1, 2}) {
    const sim::RunResult part = stage_of(r.result, stage);
    EXPECT_EQ(part.requests.size(), 60u);
    EXPECT_EQ(most_in_flight(part), stage == 0 ? 2 : stage == 1 ? 9 : 3) << "stage " << stage;
  }
  EXPECT_LE(most_in_flight(r.result), 9);
}

TEST(Fleet, AFailedReplicaLosesItsRequestsAndItsCache) {
  const auto r =
      testing::run_yaml(kFleet, {"pools[0].failures.at=[{time_s: 20, replica: 2}]",
                                 "pools[0].failures.repair_s=10", "pools[0].startup_s=5"});
  std::int64_t failed = 0;
  for (const auto& q : r.result.requests) {
    if (q.outcome != Outcome::kFailed) continue;
    ++failed;
    EXPECT_EQ(q.replica, 2);
    EXPECT_EQ(q.finish, sim::from_seconds(20));
  }
  EXPECT_GT(failed, 0);
  EXPECT_EQ(r.result.replicas[2].failures, 1);
  // Down for repair + startup: nothing reaches it from 20 s to 35 s.
  for (const auto& q : r.result.requests) {
    if (q.replica == 2) {
      EXPECT_FALSE(q.arrival > sim::from_seconds(20) && q.arrival < sim::from_seconds(35));
    }
  }
  // Without retries the client sees the failures.
  EXPECT_EQ(r.summary.failed, failed);
}

TEST(Fleet, DrainingDeployLosesNothingAndAbruptOneFailsRequests) {
  const std::vector<std::string> base = {"pools[0].startup_s=2",
                                         "pools[0].deploy={enabled: true, start_s: 5}"};
  auto drained = base;
  drained.push_back("pools[0].deploy.drain_timeout_s=600");
  const auto d = testing::run_yaml(kFleet, drained);
  auto abrupt = base;
  abrupt.push_back("pools[0].deploy.drain=false");
  const auto a = testing::run_yaml(kFleet, abrupt);
  for (const auto* run : {&d, &a}) {
    std::int64_t restarts = 0;
    for (const auto& rep : run->result.replicas) restarts += rep.restarts;
    EXPECT_EQ(restarts, 4);  // every replica replaced once
  }
  EXPECT_EQ(d.summary.failed, 0);
  EXPECT_GT(a.summary.failed, 0);
}

// Aggressive clients whose timeout is shorter than the overloaded fleet's latency, and whose
// timeouts leave the work running: without a budget every request tries max_attempts times; a
// budget caps retries at reserve + ratio × first attempts.
TEST(Fleet, RetryBudgetCapsTotalAttempts) {
  const std::vector<std::string> storm = {
      "workload.arrival.rate_per_s=150", "workload.num_requests=3000",
      "client.max_attempts=5",           "client.timeout_s=4",
      "client.timeout_cancels=false",    "client.backoff_initial_s=0.2"};
  const auto free_for_all = testing::run_yaml(kFleet, storm);
  auto budgeted = storm;
  budgeted.push_back("client.retry_budget_ratio=0.1");
  budgeted.push_back("client.retry_budget_reserve=20");
  const auto capped = testing::run_yaml(kFleet, budgeted);
  EXPECT_EQ(check_attempts(free_for_all.result), 3000);
  EXPECT_EQ(check_attempts(capped.result), 3000);
  const auto attempts = [](const testing::Run& r) {
    return static_cast<std::int64_t>(r.result.requests.size());
  };
  EXPECT_LE(attempts(capped) - 3000, 20 + 0.1 * 3000);
  EXPECT_GT(attempts(free_for_all) - 3000, 2 * (20 + 0.1 * 3000));  // the storm is real
}

TEST(Fleet, GatewayShedsOnlyTheLowPriorityBandWhenSaturated) {
  const auto r = testing::run_yaml(
      kFleet, {"workload.arrival.rate_per_s=150",
               "pools[0].admission={enabled: true, queue_threshold: 4, shed_priority: 1, "
               "max_queue: 100000}"});
  std::int64_t shed = 0;
  for (const auto& q : r.result.requests) {
    if (q.reject_reason != sim::RejectReason::kShed) continue;
    ++shed;
    EXPECT_GE(q.priority, 1);
  }
  EXPECT_GT(shed, 0);
}

TEST(Fleet, LongPromptsGoToTheirOwnPool) {
  std::string yaml = kFleet;
  yaml.insert(yaml.find("simulation:"), R"(  - name: docs
    replicas: 1
    model: Llama-3-8B
    gpu: H100-SXM
gateway: {long_prompt_tokens: 2000, long_prompt_pool: docs}
)");
  const auto r = testing::run_yaml(yaml);
  std::int64_t to_docs = 0;
  for (const auto& q : r.result.requests) {
    EXPECT_EQ(q.pool, q.input_tokens >= 2000 ? 1 : 0) << "request " << q.id;
    to_docs += q.pool == 1;
  }
  EXPECT_GT(to_docs, 0);
  EXPECT_EQ(r.result.replicas.back().pool, "docs");
}

TEST(Fleet, AutoscalerFollowsTidalTraffic) {
  const auto r = testing::run_yaml(
      kFleet, {"workload.num_requests=0", "workload.duration_s=1200",
               "workload.arrival={impl: diurnal, rate_per_s: 40, amplitude: 0.9, period_s: 1200, "
               "phase_s: 900}",
               "pools[0].replicas=1",
               "pools[0].autoscale={enabled: true, min_replicas: 1, max_replicas: 6, target: 2, "
               "interval_s: 10, scale_down_cooldown_s: 60}",
               "pools[0].startup_s=20", "simulation.check_invariants=false"});
  const auto& pool = r.result.pools.at(0);
  EXPECT_GT(pool.scale_ups, 0);
  EXPECT_GT(pool.scale_downs, 0);
  EXPECT_GT(pool.peak_replicas, 2);
  EXPECT_LE(pool.peak_replicas, 6);
  check_attempts(r.result);
  // Paid time: at least one replica at all times, never all six.
  double paid = 0;
  for (const auto& rep : r.result.replicas) paid += rep.paid_s;
  const double end = sim::to_seconds(r.result.end_time);
  EXPECT_GE(paid, end - 1e-6);
  EXPECT_LT(paid, 6 * end);
}

// Disaggregated prefill and decode: long prompts prefill in one pool and decode in the other
// after their KV crossed the network; short ones go straight to decode.
TEST(Fleet, DisaggregationPrefillsInOnePoolAndDecodesInTheOther) {
  std::string yaml = kFleet;
  const auto at = yaml.find("pools:");
  yaml = yaml.substr(0, at) + R"(disaggregation: {enabled: true, network_GBps: 25, latency_s: 0.001,
                 direct_decode_tokens: 700}
pools:
  - name: prefill
    replicas: 2
    model: Llama-3-8B
    gpu: H100-SXM
  - name: decode
    replicas: 2
    model: Llama-3-8B
    gpu: H100-SXM
simulation: {check_invariants: true}
)";
  const auto r = testing::run_yaml(yaml, {"workload.tenants=1"});
  EXPECT_EQ(check_attempts(r.result), 4000);
  // Per pool, a declared total is the sum of its column over the pool's replicas, or over the
  // requests the pool served: a disaggregated request counts in its decode pool and in the pool
  // of its prefill. The pools' replica totals add up to the fleet's.
  const sim::Table reps = sim::replicas_table(r.result), reqs = sim::requests_table(r.result);
  for (const auto& t : sim::summary_totals()) {
    const auto col = sim::column_numbers(t.per_replica ? reps : reqs, t.name, "test", t.name);
    double pools_sum = 0;
    for (int p = 0; p < 2; ++p) {
      double want = 0;
      if (t.per_replica) {
        for (std::size_t i = 0; i < r.result.replicas.size(); ++i)
          if (r.result.replicas[i].pool == r.result.pools[p].name) want += col[i];
      } else {
        for (std::size_t i = 0; i < r.result.requests.size(); ++i) {
          const auto& q = r.result.requests[i];
          if (q.pool == p || (q.prefill_replica >= 0 && q.prefill_replica / 2 == p)) want += col[i];
        }
      }
      EXPECT_EQ(sim::summarize(r.result, p).total(t.name), want) << t.name << " in pool " << p;
      pools_sum += want;
    }
    if (t.per_replica) EXPECT_EQ(r.summary.total(t.name), pools_sum) << t.name;
  }
  EXPECT_GT(sim::summarize(r.result, 0).total("steps"), 0);
  EXPECT_GT(sim::summarize(r.result, 1).total("steps"), 0);
  std::int64_t remote = 0, direct = 0, gen = 0, emitted = 0;
  const double kv_per_token = 131072;  // Llama-3-8B, bf16
  for (const auto& q : r.result.requests) {
    ASSERT_EQ(q.outcome, Outcome::kOk) << "request " << q.id;
    EXPECT_EQ(q.generated_tokens, q.output_tokens);
    EXPECT_GE(q.replica, 2);  // decode replicas are 2 and 3
    EXPECT_EQ(q.pool, 1);
    gen += q.generated_tokens;
    if (q.prefill_replica >= 0) {
      ++remote;
      EXPECT_LT(q.prefill_replica, 2);
      // At least latency + bytes / bandwidth; more when its links were busy.
      EXPECT_GE(q.kv_transfer_s, 0.001 + q.input_tokens * kv_per_token / 25e9 - 1e-6);
      EXPECT_GE(q.tpot_s() * (q.generated_tokens - 1), q.kv_transfer_s - 1e-6);
    } else {
      ++direct;
    }
  }
  for (const auto& rep : r.result.replicas) emitted += rep.stats.generation_tokens;
  EXPECT_EQ(gen, emitted);
  EXPECT_GT(remote, 0);
  EXPECT_GT(direct, 0);  // short prompts, or the shared prefix cached on a decode replica
  // One link, one transfer at a time: some transfers waited for their links.
  double waited = 0;
  for (const auto& q : r.result.requests)
    if (q.prefill_replica >= 0)
      waited = std::max(waited, q.kv_transfer_s - (0.001 + q.input_tokens * kv_per_token / 25e9));
  EXPECT_GT(waited, 1e-4);
  // Prefill replicas emit exactly one token per remote request, and decode the rest nowhere.
  EXPECT_EQ(
      r.result.replicas[0].stats.generation_tokens + r.result.replicas[1].stats.generation_tokens,
      remote);
  // Failures on both sides, with retries and timeouts: still one outcome per attempt.
  const auto f = testing::run_yaml(
      yaml, {"workload.tenants=1", "workload.num_requests=1500", "client.max_attempts=3",
             "client.timeout_s=8", "pools[0].failures.at=[{time_s: 5, replica: 0}]",
             "pools[1].failures.at=[{time_s: 8, replica: 1}]", "pools[1].failures.repair_s=1",
             "pools[0].failures.repair_s=1"});
  EXPECT_EQ(check_attempts(f.result), 1500);
  EXPECT_GT(f.summary.failed, 0);
}
TEST(Fleet, BadFleetSettingsNameTheKey) {
  EXPECT_THROW(testing::scenario_from(kFleet, {"pools[0].failures.at=[{time_s: 1, replica: 9}]"}),
               sim::InputError);
  EXPECT_THROW(testing::scenario_from(
                   kFleet, {"gateway.long_prompt_tokens=10", "gateway.long_prompt_pool=nowhere"}),
               sim::InputError);
  EXPECT_THROW(testing::scenario_from(kFleet, {"pools[0].autoscale={enabled: true, "
                                               "max_replicas: 2}"}),
               sim::InputError);
}

}  // namespace
}  // namespace kvfleet
