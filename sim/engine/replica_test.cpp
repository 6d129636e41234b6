// Scheduler behaviour on small scenarios with exact step times (linear cost model).
#include "sim/engine/replica.h"

#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <functional>

#include "sim/cost/roofline.h"
#include "sim/engine/fair_share.h"
#include "sim/engine/retention.h"
#include "sim/testing/run.h"

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

// The engine's own timing: these tests read the engine's timestamps, so the API server in front
// of it is off (FrontendTimesAsAClientSeesThem turns it on).
std::string scenario(const std::string& trace_path, const std::string& engine,
                     const std::string& cost = "{impl: linear, fixed_s: 0.001}",
                     const std::string& frontend = "{enabled: false}") {
  return "workload: {impl: trace, format: vidur, path: " + trace_path +
         "}\npools:\n  - model: Llama-3.1-8B\n    gpu: H100-SXM\n    engine: " + engine +
         "\n    frontend: " + frontend + "\n    cost_model: " + cost +
         "\nsimulation: {check_invariants: true}\n";
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
  EXPECT_EQ(r.summary.total("num_preemptions"), b.num_preemptions);
  EXPECT_EQ(a.generated_tokens, 40);
  EXPECT_EQ(b.generated_tokens, 40);
  // Request 0 never waits for request 1: it finishes after its 40 steps.
  EXPECT_EQ(a.finish, from_seconds(0.040));
}

TEST(Replica, APreemptedRequestHitsItsOwnBlocksThatSurvived) {
  // As above, with unique prompts. vLLM caches every full block, so the victim's blocks that
  // the other request has not reused by the time it runs again are prefix hits for it alone:
  // with caching on it recomputes less than with caching off.
  const std::string t = trace("own", {{0, 16, 40}, {0.0001, 40, 40}});
  const auto on = run_yaml(scenario(t, "{num_gpu_blocks_override: 6}"));
  const auto off =
      run_yaml(scenario(t, "{num_gpu_blocks_override: 6, enable_prefix_caching: false}"));
  const auto& b_on = on.result.requests[1];
  const auto& b_off = off.result.requests[1];
  ASSERT_GE(b_on.num_preemptions, 1);
  ASSERT_GE(b_off.num_preemptions, 1);
  EXPECT_GT(b_off.recomputed_tokens, 0);
  EXPECT_LT(b_on.recomputed_tokens, b_off.recomputed_tokens);
  EXPECT_EQ(b_on.generated_tokens, 40);
  // Nobody else can hit unique blocks: the first admission of each request hits nothing.
  EXPECT_EQ(on.result.requests[0].cached_tokens, 0);
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

TEST(Replica, FrontendTimesAsAClientSeesThem) {
  // The same request through an API server: 2 ms + 10 us per prompt token before the engine
  // sees it, 100 us per output token after each step, 0.5 ms to close the stream. One sequence,
  // so the output processor takes 100 us after each 1.1 ms step and never falls behind.
  const std::string fe =
      "{request_s: 0.002, per_input_token_s: 0.00001, per_output_token_s: 0.0001, finish_s: "
      "0.0005}";
  const auto r = run_yaml(scenario(trace("fe", {{0, 32, 11}}), "{}",
                                   "{impl: linear, fixed_s: 0.001, per_seq_s: 0.0001}", fe));
  const auto& q = r.result.requests[0];
  const double in = 0.002 + 32 * 0.00001;
  EXPECT_EQ(q.first_token, from_seconds(in) + from_seconds(0.0011) + from_seconds(0.0001));
  EXPECT_EQ(q.finish, from_seconds(in) + 11 * from_seconds(0.0011) + from_seconds(0.0001) +
                          from_seconds(0.0005));
  EXPECT_NEAR(q.tpot_s(), 0.0011 + 0.0005 / 10, 1e-12);  // the final chunk counts in TPOT
  EXPECT_NEAR(q.frontend_s, in + 0.0001 + 0.0005, 1e-7);
  // The engine saw it `in` later than the client sent it.
  EXPECT_EQ(q.first_scheduled, from_seconds(in));
}

TEST(Replica, AnOutputProcessorSlowerThanTheStepsFallsBehind) {
  // 1 ms per output token against 1.1 ms steps of 4 sequences: each step hands over 4 ms of
  // detokenising, so each request's tokens reach the client ever later and TPOT is set by the
  // processor, 4 ms per token, not by the engine.
  const std::string fe =
      "{request_s: 0, per_input_token_s: 0, per_output_token_s: 0.001, finish_s: 0}";
  const auto r =
      run_yaml(scenario(trace("slow", {{0, 16, 20}, {0, 16, 20}, {0, 16, 20}, {0, 16, 20}}), "{}",
                        "{impl: linear, fixed_s: 0.001}", fe));
  for (const auto& q : r.result.requests) {
    EXPECT_EQ(q.outcome, Outcome::kOk);
    EXPECT_NEAR(q.tpot_s(), 0.004, 1e-9);
  }
  const auto off =
      run_yaml(scenario(trace("slow_off", {{0, 16, 20}, {0, 16, 20}, {0, 16, 20}, {0, 16, 20}}),
                        "{}", "{impl: linear, fixed_s: 0.001}"));
  EXPECT_NEAR(off.result.requests[0].tpot_s(), 0.001, 1e-9);
}

}  // namespace
}  // namespace kvfleet::sim

namespace kvfleet::sim {
namespace {

// Drives one Replica directly, with requests whose content is given segment by segment.
class Harness {
 public:
  explicit Harness(std::int64_t blocks, bool caching = true,
                   std::function<void(ReplicaSetup&)> adjust = {}, double per_prefill_token_s = 0) {
    ReplicaSetup s;
    s.name = "r";
    s.engine.block_size = 16;
    s.engine.enable_prefix_caching = caching;
    s.memory.kv_bytes_per_token = 131072;
    s.host_link_Bps = 64e9;
    s.memory.num_blocks = blocks;
    s.max_model_len = 100000;
    s.check_invariants = true;
    if (adjust) adjust(s);
    LinearCostModel::Config c;
    c.fixed_s = 0.001;
    c.per_prefill_token_s = per_prefill_token_s;
    static const ModelSpec m = model_presets().front();
    static const GpuSpec g = gpu_presets().front();
    replica_ = std::make_unique<Replica>(
        s, std::make_unique<LinearCostModel>(c, CostContext{m, g, 1, 2.0, 2.0}), log_, q_, 0);
  }
  // Submits at time t (seconds) a request of `out` output tokens with prompt `segs`.
  std::uint32_t submit(double t, std::vector<Segment> segs, std::int32_t out,
                       std::uint32_t tenant = 1, std::uint64_t output_content = 0,
                       std::int32_t priority = 0, std::uint64_t session = 0) {
    q_.run(from_seconds(t));
    RequestSpec r;
    r.arrival = from_seconds(t);
    for (const auto& s : segs) r.input_tokens += s.tokens;
    r.output_tokens = out;
    r.segments = std::move(segs);
    r.tenant = tenant;
    r.output_content = output_content;
    r.priority = priority;
    r.session = session;
    RequestRecord rec;
    rec.id = log_.size();
    rec.arrival = r.arrival;
    rec.input_tokens = r.input_tokens;
    rec.output_tokens = out;
    rec.tenant = tenant;
    rec.priority = priority;
    rec.session = session;
    log_.push_back(rec);
    replica_->submit(RequestId{static_cast<std::uint32_t>(rec.id)}, std::move(r), r.arrival);
    return static_cast<std::uint32_t>(rec.id);
  }
  void run() { q_.run(); }
  const RequestRecord& rec(std::uint32_t i) const { return log_.at(i); }
  void run_until(double t) { q_.run(from_seconds(t)); }
  Replica& replica() { return *replica_; }

 private:
  EventQueue q_;
  RequestLog log_;
  std::unique_ptr<Replica> replica_;
};

TEST(Replica, AsyncSchedulingAdmitsAnArrivalOneStepLater) {
  // Every step takes 1 ms. A long request keeps the engine busy; a second one arrives 0.5 ms
  // into step 1 (0 to 1 ms). Without async scheduling it joins step 2 (1 to 2 ms) and its first
  // token comes at 2 ms; with it, step 2 was planned when step 1 started, so it joins step 3.
  for (const bool async : {false, true}) {
    Harness h(1000, false, [&](ReplicaSetup& s) { s.engine.async_scheduling = async; });
    h.submit(0, {{1, 16}}, 50);
    const auto late = h.submit(0.0005, {{2, 16}}, 2);
    h.run();
    EXPECT_NEAR(to_seconds(h.rec(late).first_token), async ? 0.003 : 0.002, 1e-9) << async;
  }
  // An idle engine plans at once: no lag for a request that finds it idle.
  Harness idle(1000, false, [](ReplicaSetup& s) { s.engine.async_scheduling = true; });
  const auto first = idle.submit(0.01, {{3, 16}}, 2);
  idle.run();
  EXPECT_NEAR(to_seconds(idle.rec(first).first_token), 0.011, 1e-9);
}

TEST(PrefixCache, SharedSystemPromptIsReused) {
  Harness h(1000);
  const Segment sys{77, 100, 1};
  const auto a = h.submit(0, {sys, {0, 50, 1}}, 5);
  const auto b = h.submit(1, {sys, {0, 60, 1}}, 5);  // after a finished
  h.run();
  EXPECT_EQ(h.rec(a).cached_tokens, 0);
  EXPECT_EQ(h.rec(b).cached_tokens, 96);  // 6 full blocks of the 100-token system prompt
  EXPECT_EQ(h.replica().stats().prefix_cache_hits, 96);
  EXPECT_EQ(h.replica().stats().prefix_cache_queries, 150 + 160);
}

TEST(PrefixCache, ConcurrentRequestsShareBlocksWhileRunning) {
  Harness h(1000);
  const Segment doc{5, 320, 1};
  const auto a = h.submit(0, {doc, {0, 10, 1}}, 50);
  const auto b = h.submit(0.0105, {doc, {0, 10, 1}}, 50);  // a still decoding
  h.run();
  EXPECT_EQ(h.rec(b).cached_tokens, 320);
  EXPECT_EQ(h.rec(a).outcome, Outcome::kOk);
  EXPECT_EQ(h.rec(b).outcome, Outcome::kOk);
}

TEST(PrefixCache, AtMostPromptMinusOneTokensAreReused) {
  Harness h(1000);
  const auto a = h.submit(0, {{9, 32, 1}}, 3);
  const auto b = h.submit(1, {{9, 32, 1}}, 3);  // identical prompt, fully cached
  h.run();
  EXPECT_EQ(h.rec(a).cached_tokens, 0);
  EXPECT_EQ(h.rec(b).cached_tokens, 16);  // (32 - 1) / 16 = 1 block: the last token is computed
}

TEST(PrefixCache, PreviousTurnIncludingItsOutputIsReused) {
  Harness h(1000);
  // Turn 1: 64 prompt tokens; 40 output tokens of content 500. Turn 2 sends both back plus a new
  // message: 104 tokens of history; turn 1 computed KV for 103 of them, 6 full blocks = 96.
  const auto a = h.submit(0, {{42, 64, 1}}, 40, 1, 500);
  const auto b = h.submit(1, {{42, 64, 1}, {500, 40, 1}, {0, 10, 1}}, 5, 1);
  // Without an output content id, turn 1's output cannot be matched: only the prompt's 4 blocks.
  const auto c = h.submit(2, {{43, 64, 1}}, 40, 1, 0);
  const auto d = h.submit(3, {{43, 64, 1}, {501, 40, 1}, {0, 10, 1}}, 5, 1);
  h.run();
  EXPECT_EQ(h.rec(a).cached_tokens, 0);
  EXPECT_EQ(h.rec(b).cached_tokens, 96);
  EXPECT_EQ(h.rec(c).cached_tokens, 0);
  EXPECT_EQ(h.rec(d).cached_tokens, 64);
}

TEST(PrefixCache, TenantsNeverShareTheirPrivateContent) {
  Harness h(1000);
  // Two tenants send byte-identical private histories (same content ids, own owner).
  const auto a1 = h.submit(0, {{1234, 200, 1}}, 4, 1);
  const auto b1 = h.submit(1, {{1234, 200, 2}}, 4, 2);
  const auto a2 = h.submit(2, {{1234, 200, 1}, {0, 5, 1}}, 4, 1);
  const auto b2 = h.submit(3, {{1234, 200, 2}, {0, 5, 2}}, 4, 2);
  h.run();
  EXPECT_EQ(h.rec(a1).cached_tokens, 0);
  EXPECT_EQ(h.rec(b1).cached_tokens, 0);    // tenant 1's identical history does not match
  EXPECT_EQ(h.rec(a2).cached_tokens, 192);  // its own does
  EXPECT_EQ(h.rec(b2).cached_tokens, 192);
  const auto& t = h.replica().tenant_prefix_stats();
  EXPECT_EQ(t.at(1).second, 192);
  EXPECT_EQ(t.at(2).second, 192);
  EXPECT_EQ(t.at(1).first, 200 + 205);
}

TEST(PrefixCache, PublicContentIsSharedAcrossTenants) {
  Harness h(1000);
  h.submit(0, {{888, 64, 0}, {0, 10, 1}}, 2, 1);
  const auto b = h.submit(1, {{888, 64, 0}, {0, 10, 2}}, 2, 2);
  h.run();
  EXPECT_EQ(h.rec(b).cached_tokens, 64);
}

TEST(PrefixCache, DisabledCachingReusesNothing) {
  Harness h(1000, false);
  h.submit(0, {{77, 100, 1}}, 2);
  const auto b = h.submit(1, {{77, 100, 1}}, 2);
  h.run();
  EXPECT_EQ(h.rec(b).cached_tokens, 0);
}

}  // namespace
}  // namespace kvfleet::sim

namespace kvfleet::sim {
namespace {

void priority_policy(ReplicaSetup& s) { s.engine.scheduling_policy = "priority"; }

TEST(Priority, WaitingRequestsAreAdmittedByPriorityThenArrival) {
  Harness h(1000, false, [](ReplicaSetup& s) {
    priority_policy(s);
    s.engine.max_num_seqs = 1;
  });
  const auto a = h.submit(0, {{0, 10, 1}}, 20, 1, 0, 5);  // runs first (alone)
  const auto b = h.submit(0.001, {{0, 10, 1}}, 5, 1, 0, 5);
  const auto c = h.submit(0.002, {{0, 10, 1}}, 5, 1, 0, 1);  // more urgent, arrives later
  h.run();
  EXPECT_LT(h.rec(c).first_scheduled, h.rec(b).first_scheduled);
  EXPECT_EQ(h.rec(a).num_preemptions, 0);
}

TEST(Priority, TheLeastUrgentRequestIsPreemptedEvenIfOlder) {
  // 6 blocks of 16: two requests of 16 + 60 tokens each need 4 blocks at the end; together they
  // run out. Under FCFS the newer one is preempted; under priority the less urgent (older) one.
  for (const bool prio : {false, true}) {
    Harness h(6, false, [&](ReplicaSetup& s) {
      if (prio) priority_policy(s);
    });
    const auto old_low = h.submit(0, {{0, 16, 1}}, 60, 1, 0, 9);
    const auto new_high = h.submit(0.0001, {{0, 16, 1}}, 60, 1, 0, 0);
    h.run();
    if (prio) {
      EXPECT_GE(h.rec(old_low).num_preemptions, 1);
      EXPECT_EQ(h.rec(new_high).num_preemptions, 0);
    } else {
      EXPECT_EQ(h.rec(old_low).num_preemptions, 0);
      EXPECT_GE(h.rec(new_high).num_preemptions, 1);
    }
    EXPECT_EQ(h.rec(old_low).outcome, Outcome::kOk);
    EXPECT_EQ(h.rec(new_high).outcome, Outcome::kOk);
  }
}

TEST(Swap, PreemptedKvComesBackWithoutRecomputation) {
  Harness h(6, false, [](ReplicaSetup& s) { s.engine.preemption_mode = "swap"; });
  h.submit(0, {{0, 16, 1}}, 60);
  const auto b = h.submit(0.0001, {{0, 16, 1}}, 60);
  h.run();
  const auto& st = h.replica().stats();
  EXPECT_GE(h.rec(b).num_preemptions, 1);
  EXPECT_EQ(h.rec(b).recomputed_tokens, 0);
  EXPECT_GT(st.num_swaps, 0);
  EXPECT_DOUBLE_EQ(st.swap_out_bytes, st.swap_in_bytes);
  // Each swap moves the victim's computed tokens × 128 KiB over a 64 GB/s link.
  EXPECT_GT(st.cost_sum.kv_transfer_s, 0);
  EXPECT_NEAR(st.cost_sum.kv_transfer_s, (st.swap_out_bytes + st.swap_in_bytes) / 64e9, 1e-12);
}

TEST(Swap, NoSwapSpaceMeansRecompute) {
  Harness h(6, false, [](ReplicaSetup& s) {
    s.engine.preemption_mode = "swap";
    s.engine.swap_space_gib = 0;
  });
  h.submit(0, {{0, 16, 1}}, 60);
  const auto b = h.submit(0.0001, {{0, 16, 1}}, 60);
  h.run();
  EXPECT_GE(h.rec(b).num_preemptions, 1);
  EXPECT_GT(h.rec(b).recomputed_tokens, 0);
  EXPECT_EQ(h.replica().stats().num_swaps, 0);
}

}  // namespace
}  // namespace kvfleet::sim

namespace kvfleet::sim {
namespace {

// A 20-block GPU pool (320 tokens) with tiers below it; 128 KiB per token, so a 16-token block
// is 2 MiB (0.21 ms at 10 GB/s). Prefill costs 100 µs per token: 1.6 ms to recompute a block.
Harness tiered(std::vector<KvTierConfig> tiers, bool overlap = false) {
  return Harness(
      20, true,
      [&](ReplicaSetup& s) {
        s.engine.kv_tiers = tiers;
        s.engine.tier_load_overlap = overlap;
        s.memory.block_bytes = 16 * 131072.0;
      },
      1e-4);
}

// Request A caches a 256-token document (16 blocks); B's unique 300-token prompt takes 19 of the
// 20 blocks, evicting 15 of the document's (block 0 survives); C asks for the document again.
struct Story {
  std::uint32_t a, b, c;
};
Story document_evicted_then_asked_again(Harness& h) {
  Story st;
  st.a = h.submit(0, {{7, 256, 1}, {0, 4, 1}}, 2);
  st.b = h.submit(1, {{0, 300, 1}}, 2);
  st.c = h.submit(2, {{7, 256, 1}, {0, 4, 1}}, 2);
  h.run();
  return st;
}

constexpr double kBlockLoad10GBps = 16 * 131072.0 / 10e9;

TEST(KvTiers, EvictedBlocksAreLoadedBackFromTheCpuTier) {
  Harness h = tiered({{"cpu", 1.0, 10.0, 10.0}});
  const auto st = document_evicted_then_asked_again(h);
  EXPECT_EQ(h.rec(st.c).cached_tokens, 16);   // block 0, still on the GPU
  EXPECT_EQ(h.rec(st.c).loaded_tokens, 240);  // the other 15, from the tier
  const auto& stats = h.replica().stats();
  EXPECT_EQ(stats.tier_hit_tokens, 240);
  EXPECT_NEAR(stats.cost_sum.kv_transfer_s, 15 * kBlockLoad10GBps, 1e-9);  // not overlapped
  EXPECT_DOUBLE_EQ(h.replica().tiers()[0].bytes_written(), 15 * 16 * 131072.0);
  EXPECT_DOUBLE_EQ(h.replica().tiers()[0].bytes_read(), 15 * 16 * 131072.0);
}

TEST(KvTiers, WithoutTiersTheDocumentIsRecomputed) {
  Harness h = tiered({});
  const auto st = document_evicted_then_asked_again(h);
  EXPECT_EQ(h.rec(st.c).cached_tokens, 16);
  EXPECT_EQ(h.rec(st.c).loaded_tokens, 0);
}

TEST(KvTiers, ASlowTierLosesToRecomputation) {
  // 0.01 GB/s: 210 ms a block against 1.6 ms to recompute it.
  Harness h = tiered({{"nvme", 1.0, 0.01, 10.0}});
  const auto st = document_evicted_then_asked_again(h);
  EXPECT_EQ(h.rec(st.c).loaded_tokens, 0);
  EXPECT_EQ(h.replica().stats().tier_recomputed_tokens, 240);
}

TEST(KvTiers, FullTierPassesBlocksDown) {
  // The CPU tier holds 4 blocks (8 MiB): the first 11 evicted blocks pass on to NVMe.
  Harness h = tiered({{"cpu", 8.0 / 1024, 10.0, 10.0}, {"nvme", 1.0, 5.0, 5.0}});
  const auto st = document_evicted_then_asked_again(h);
  const auto& t = h.replica().tiers();
  EXPECT_EQ(t[0].size(), 4);
  EXPECT_EQ(t[1].size(), 11);
  EXPECT_EQ(t[0].evictions(), 11);
  EXPECT_EQ(h.rec(st.c).loaded_tokens, 240);  // 4 blocks from CPU, 11 from NVMe
  EXPECT_NEAR(h.replica().stats().cost_sum.kv_transfer_s,
              4 * kBlockLoad10GBps + 11 * 2 * kBlockLoad10GBps, 1e-9);
}

TEST(KvTiers, OverlappedLoadsHideBehindTheStep) {
  Harness h = tiered({{"cpu", 1.0, 10.0, 10.0}}, /*overlap=*/true);
  document_evicted_then_asked_again(h);
  // C's step computes 4 new tokens (1 ms + 4 × 100 µs); the 3.1 ms load exceeds it by the rest.
  EXPECT_NEAR(h.replica().stats().cost_sum.kv_transfer_s, 15 * kBlockLoad10GBps - 0.0014, 1e-9);
}

TEST(KvTiers, BlocksAreReadableOnlyAfterTheirWrite) {
  // Writing a block at 0.001 GB/s takes 2.1 s: when C arrives 1 s after the evictions, none of
  // the 15 writes has completed.
  Harness h = tiered({{"cpu", 1.0, 10.0, 0.001}});
  const auto st = document_evicted_then_asked_again(h);
  EXPECT_EQ(h.rec(st.c).loaded_tokens, 0);
}

}  // namespace
}  // namespace kvfleet::sim

namespace kvfleet::sim {
namespace {

config::ImplSpec retention(const std::string& yaml) {
  const YAML::Node n = YAML::Load(yaml);
  config::ImplSpec s;
  s.impl = n["impl"].as<std::string>();
  s.params = retention_registry().find(s.impl)->resolve(n, "retention", config::Source{});
  return s;
}

Harness with_retention(std::int64_t blocks, const std::string& yaml, int max_seqs = 256) {
  return Harness(blocks, true, [&](ReplicaSetup& s) {
    s.engine.retention = retention(yaml);
    s.engine.max_num_seqs = max_seqs;
  });
}

// A session's 128-token document (8 full blocks) plus one unique token, two output tokens.
std::uint32_t doc(Harness& h, double t, std::uint64_t content, std::uint64_t session,
                  std::int32_t priority = 0, std::int32_t out = 2) {
  return h.submit(t, {{content, 128, 1}, {0, 1, 1}}, out, 1, 0, priority, session);
}

// Sessions 1 (urgent) and 2 (priority 5) cache a document each; a 160-token request then needs
// 10 blocks of a 20-block pool that holds only 4 free uncached ones.
TEST(Retention, PriorityEvictsTheLessUrgentSessionFirst) {
  for (const char* policy : {"{impl: lru}", "{impl: priority}"}) {
    Harness h = with_retention(20, policy);
    doc(h, 0, 11, 1, 0);
    doc(h, 0.1, 12, 2, 5);
    h.submit(0.2, {{0, 160, 1}}, 2, 1, 0, 0, 3);
    const auto a = doc(h, 0.3, 11, 1, 0);
    h.run();
    if (std::string(policy) == "{impl: priority}")
      EXPECT_EQ(h.rec(a).cached_tokens, 128) << policy;  // session 2 paid
    else
      EXPECT_LT(h.rec(a).cached_tokens, 128) << policy;  // vLLM's queue evicts the oldest
  }
}

// Session 1's next turn waits (max_num_seqs = 2 is taken by two long requests) while their growth
// forces evictions: session_aware spares the active session; lru does not.
TEST(Retention, SessionAwareKeepsTheActiveSessionsCache) {
  for (const char* policy : {"{impl: lru}", "{impl: session_aware, idle_limit_s: 1000}"}) {
    Harness h = with_retention(40, policy, 2);
    doc(h, 0, 11, 1);
    doc(h, 0.01, 12, 2);
    h.submit(0.1, {{0, 16, 1}}, 220, 1, 0, 0, 3);
    h.submit(0.1001, {{0, 16, 1}}, 220, 1, 0, 0, 4);
    const auto a2 = doc(h, 0.12, 11, 1);  // waits: session 1 is active
    const auto b2 = doc(h, 1.0, 12, 2);   // session 2 comes back after the pressure
    h.run();
    if (std::string(policy) == "{impl: lru}") {
      EXPECT_LT(h.rec(a2).cached_tokens, 128) << policy;
    } else {
      EXPECT_EQ(h.rec(a2).cached_tokens, 128) << policy;
      EXPECT_LT(h.rec(b2).cached_tokens, 128) << policy;
    }
  }
}

TEST(Retention, IdleTtlEvictsWithoutPressure) {
  for (const char* policy : {"{impl: lru}", "{impl: idle_ttl, ttl_s: 1}"}) {
    Harness h = with_retention(100, policy);
    doc(h, 0, 11, 1);
    h.submit(5, {{0, 8, 1}}, 2, 1, 0, 0, 2);  // a step 5 s later lets the policy act
    const auto a2 = doc(h, 6, 11, 1);
    h.run();
    EXPECT_EQ(h.rec(a2).cached_tokens, std::string(policy) == "{impl: lru}" ? 128 : 0) << policy;
  }
}

TEST(Retention, WatermarkCapsHeldPlusCachedBlocks) {
  // Three sessions cache 8 blocks each; the watermark allows 20 of 40 blocks held or cached.
  // While C runs it holds 9 blocks (8 cached, one not) beside 16 cached free ones: 25, so the least
  // recently active session (1) loses 5 of its 8 blocks.
  Harness h = with_retention(40, "{impl: watermark, watermark: 0.5}");
  doc(h, 0, 11, 1);
  doc(h, 0.1, 12, 2);
  doc(h, 0.2, 13, 3);
  h.run();
  EXPECT_LE(h.replica().kv().num_blocks() - h.replica().kv().num_uncached_free_blocks(), 20);
  const auto a2 = doc(h, 1, 11, 1);
  const auto c2 = doc(h, 1.1, 13, 3);
  h.run();
  EXPECT_EQ(h.rec(a2).cached_tokens, 48);  // 3 of its 8 blocks survive
  EXPECT_EQ(h.rec(c2).cached_tokens, 128);
}

TEST(Retention, PolicyKeys) {
  SessionState idle_old{0, from_seconds(10), 1, 8}, idle_new{0, from_seconds(90), 1, 30},
      active{1, from_seconds(5), 1, 50}, urgent{0, from_seconds(95), 0, 40};
  const SimTime now = from_seconds(100);
  auto key = [&](const std::string& y, const SessionState& s) {
    return retention_registry().make(retention(y))->key(s, now);
  };
  const std::string aware = "{impl: session_aware, idle_limit_s: 60, keep_priority: 0}";
  // Long idle first; then the largest cache; high priority next; active sessions last.
  EXPECT_LT(key(aware, idle_old), key(aware, idle_new));
  EXPECT_LT(key(aware, idle_new), key(aware, urgent));
  EXPECT_LT(key(aware, urgent), key(aware, active));
  EXPECT_LT(key("{impl: priority}", idle_new), key("{impl: priority}", urgent));
  EXPECT_FALSE(retention_registry().make(retention("{impl: lru}"))->by_session());
}

}  // namespace
}  // namespace kvfleet::sim

namespace kvfleet::sim {
namespace {

// A cancellation reaches the engine mid-step: the step finishes, the request leaves at the next
// step boundary with its KV freed, and the other request is untouched.
TEST(Cancel, TakesEffectAtTheNextStepBoundary) {
  Harness h(100);
  const auto a = h.submit(0, {{0, 32, 1}}, 50);
  const auto b = h.submit(0, {{0, 32, 1}}, 50);
  h.run_until(0.0105);  // 10 steps of 1 ms done, the 11th in flight
  h.replica().cancel(RequestId{b}, from_seconds(0.0105));
  EXPECT_EQ(h.replica().num_requests_running(), 2);  // not before the boundary
  h.run();
  EXPECT_EQ(h.rec(b).outcome, Outcome::kCancelled);
  EXPECT_EQ(h.rec(b).finish, from_seconds(0.011));
  // b joined one step after a (the harness starts a's step before b arrives): 10 tokens by 11 ms.
  EXPECT_EQ(h.rec(b).generated_tokens, 10);
  EXPECT_EQ(h.rec(a).outcome, Outcome::kOk);
  EXPECT_EQ(h.rec(a).generated_tokens, 50);
  EXPECT_EQ(h.replica().kv().num_used_blocks(), 0);
  EXPECT_EQ(h.replica().stats().cancelled, 1);
}

}  // namespace
}  // namespace kvfleet::sim

namespace kvfleet::sim {
namespace {

// Per-tenant fair share: a tenant flooding the engine does not make a light tenant wait behind
// its queue, and a tenant back from idle does not shut the others out.
TEST(FairShare, ALightTenantIsNotQueuedBehindAFloodingOne) {
  auto order_of_first_tokens = [](const std::string& policy) {
    Harness h(4000, false, [&](ReplicaSetup& s) {
      s.engine.max_num_seqs = 1;
      s.engine.scheduling_policy = policy;
    });
    std::vector<std::uint32_t> heavy, light;
    for (int i = 0; i < 20; ++i) heavy.push_back(h.submit(0, {{0, 100, 1}}, 10, 1));
    for (int i = 0; i < 2; ++i) light.push_back(h.submit(0.0001, {{0, 100, 2}}, 10, 2));
    h.run();
    int heavy_before_light = 0;
    for (auto id : heavy)
      heavy_before_light += h.rec(id).first_scheduled < h.rec(light.back()).first_scheduled;
    for (auto id : heavy) EXPECT_EQ(h.rec(id).outcome, Outcome::kOk);
    for (auto id : light) EXPECT_EQ(h.rec(id).outcome, Outcome::kOk);
    return heavy_before_light;
  };
  EXPECT_EQ(order_of_first_tokens("fcfs"), 20);  // FCFS: behind the whole flood
  // Fair share: the light tenant's two requests go as soon as the heavy one has been served
  // more (after the request that was running, and one more at most).
  EXPECT_LE(order_of_first_tokens("fair_share"), 3);
}

TEST(FairShare, IdleTimeBanksNoCredit) {
  FairShare p{FairShare::Config{}};
  SchedView a, b;
  a.tenant = 1;
  b.tenant = 2;
  p.on_arrive(a);
  for (int i = 0; i < 1000; ++i) p.on_scheduled(a, 10);  // tenant 1 served 10,000 tokens
  p.on_arrive(a);                                        // and still has work
  EXPECT_EQ(p.key(a), 10000);
  // Tenant 2 arrives after being idle: it starts level with the least-served active tenant, not
  // at 0 (which would let it run 10,000 tokens before tenant 1 gets one).
  p.on_arrive(b);
  EXPECT_EQ(p.key(b), 10000);
  p.on_scheduled(b, 5);
  EXPECT_LT(p.key(a), p.key(b));  // now tenant 1 is behind: it goes next
  // The most-served tenant's newest running request is the victim.
  std::vector<SchedView> running = {b, a, b, a};
  EXPECT_EQ(p.victim(running), 2u);
  // The engine stopped: nothing is remembered.
  p.reset();
  p.on_arrive(b);
  EXPECT_EQ(p.key(b), 0);
}

}  // namespace
}  // namespace kvfleet::sim
