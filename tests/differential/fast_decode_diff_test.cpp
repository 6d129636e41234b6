// Fast decode (issue 38) against the engine it speeds up: every random scenario runs twice, with
// simulation.fast_decode on (decoding sequences coast between the steps where something happens
// to them) and off (every running sequence visited every step), and the two runs must agree:
// every engine step (start, duration, sequences, prefill tokens, decodes), the event count and end
// time, and every column of /requests, /replicas and the time series, integers, text and
// categories exactly, numbers within 1e-9 relative (a sequence's GPU-seconds are summed in another
// order). The scenarios mix what changes a decode's course: chunked prefill and its threshold,
// small token budgets, KV pressure with preemption (recompute, swap), prefix caching with shared
// prefixes and multi-turn chats, the contiguous layout, max_model_len, every scheduling policy,
// async scheduling, KV tiers, session retention, client timeouts that cancel, replica failures,
// the frontend, and runs cut short.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "sim/output/run_tables.h"
#include "sim/simulation/scenario.h"
#include "sim/simulation/simulation.h"

namespace kvfleet::sim {
namespace {

template <class T>
const T& pick(std::mt19937_64& rng, const std::vector<T>& v) {
  return v[std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng)];
}

std::string random_scenario(std::mt19937_64& rng) {
  auto coin = [&](double p) { return std::bernoulli_distribution(p)(rng); };
  auto num = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const bool chats = coin(0.5);
  std::string y = "seed: " + std::to_string(num(1, 1'000'000)) + "\nworkload:\n";
  if (chats) {
    y += "  impl: conversations\n  num_sessions: " + std::to_string(num(5, 60)) +
         "\n  session_arrival: {impl: poisson, rate_per_s: " + std::to_string(num(1, 20)) +
         "}\n  turns: {impl: lognormal, mean: 3, sigma: 0.8, max: 8}\n"
         "  user_tokens: {impl: lognormal, mean: " +
         std::to_string(num(20, 300)) +
         ", sigma: 1.0, max: 2048}\n"
         "  reply_tokens: {impl: lognormal, mean: " +
         std::to_string(num(5, 300)) +
         ", sigma: 0.8, max: 1024}\n  think_time_s: " + std::to_string(num(1, 8)) +
         "\n  system_prompt_tokens: " + std::to_string(pick(rng, std::vector<int>{0, 64, 300})) +
         "\n  context_policy: {impl: full}\n  max_context_tokens: 4096\n  overflow: truncate\n";
  } else {
    const int tenants = pick(rng, std::vector<int>{0, 0, 3});
    y += "  impl: synthetic\n  num_requests: " + std::to_string(num(20, 250)) +
         "\n  arrival: {impl: poisson, rate_per_s: " + std::to_string(num(5, 150)) +
         "}\n  input_tokens: {impl: lognormal, mean: " + std::to_string(num(10, 900)) +
         ", sigma: 1.0, max: 3000}\n  output_tokens: {impl: lognormal, mean: " +
         std::to_string(num(2, 400)) + ", sigma: 0.8, max: 1500}\n";
    if (tenants > 0)
      y += "  tenants: " + std::to_string(tenants) +
           "\n  shared_prefix_tokens: " + std::to_string(num(16, 200)) + "\n";
    if (coin(0.3)) y += "  priority_weights: [1, 2, 1]\n";
  }
  if (coin(0.25))
    y += "client: {timeout_s: " + std::to_string(num(1, 6)) + ", timeout_cancels: true}\n";
  const int replicas = pick(rng, std::vector<int>{1, 1, 2, 3});
  y += "router: {impl: " +
       pick(rng, std::vector<std::string>{"round_robin", "least_outstanding", "prefix_aware"}) +
       "}\n";
  const bool contiguous = coin(0.15);
  const bool caching = !contiguous && coin(0.8);
  y += "pools:\n  - name: p\n    replicas: " + std::to_string(replicas) +
       "\n    model: Llama-3-8B\n    gpu: H100-SXM\n    engine:\n      max_num_seqs: " +
       std::to_string(pick(rng, std::vector<int>{2, 8, 32, 256})) +
       "\n      max_num_batched_tokens: " +
       std::to_string(pick(rng, std::vector<int>{64, 512, 2048, 8192})) +
       "\n      enable_chunked_prefill: " + (coin(0.85) ? "true" : "false") +
       "\n      long_prefill_token_threshold: " +
       std::to_string(pick(rng, std::vector<int>{0, 0, 48})) +
       "\n      block_size: " + std::to_string(pick(rng, std::vector<int>{16, 16, 8, 32})) +
       "\n      num_gpu_blocks_override: " +
       std::to_string(pick(rng, std::vector<int>{0, 60, 150, 400, 1500})) +
       "\n      enable_prefix_caching: " + (caching ? "true" : "false") +
       "\n      preemption_mode: " + (coin(0.3) ? "swap" : "recompute") +
       "\n      swap_space_gib: " + (coin(0.5) ? "0.05" : "4") + "\n      scheduling_policy: " +
       pick(rng, std::vector<std::string>{"fcfs", "fcfs", "priority", "shortest_prompt_first",
                                          "fair_share"}) +
       "\n      async_scheduling: " + (coin(0.3) ? "true" : "false") + "\n";
  if (coin(0.3))
    y += "      max_model_len: " + std::to_string(pick(rng, std::vector<int>{700, 1500, 4000})) +
         "\n";
  if (contiguous)
    y += "      kv_layout: contiguous\n      contiguous_reservation: " +
         pick(rng, std::vector<std::string>{"max", "pow2", "oracle"}) + "\n";
  if (caching && coin(0.2))
    y += "      kv_tiers: [{name: cpu, capacity_gib: 1, read_GBps: 25, write_GBps: 25}]\n";
  if (caching && coin(0.2)) y += "      retention: {impl: session_aware}\n";
  if (coin(0.2)) y += "    frontend: {enabled: true}\n";
  if (coin(0.15))
    y += "    failures: {at: [{time_s: " + std::to_string(num(1, 10)) +
         ", replica: 0}], repair_s: 2}\n";
  y += "simulation:\n  timeseries_interval_s: 0.5\n";
  if (coin(0.2)) y += "  max_time_s: " + std::to_string(num(3, 30)) + "\n";
  if (coin(0.1)) y += "  check_invariants: true\n";
  return y;
}

RunResult run(const std::string& yaml, bool fast) {
  const Scenario sc =
      load_scenario_text(yaml, "<fast-decode>", ".",
                         {std::string("simulation.fast_decode=") + (fast ? "true" : "false")});
  Simulation s(sc);
  s.record_steps(1u << 22);
  return s.run();
}

bool close(double a, double b) {
  if (a == b || (std::isnan(a) && std::isnan(b))) return true;
  return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b));
}

// Every column of two tables of the same declaration; the first difference, or "".
std::string differ(const Table& a, const Table& b, const std::string& what) {
  if (a.rows() != b.rows())
    return what + ": " + std::to_string(a.rows()) + " rows against " + std::to_string(b.rows());
  for (std::size_t c = 0; c < a.columns.size(); ++c) {
    const Column& x = a.columns[c];
    const Column& y = b.columns[c];
    const std::string at = what + "." + x.name + " row ";
    if (const auto* xf = std::get_if<std::vector<double>>(&x.data)) {
      const auto& yf = std::get<std::vector<double>>(y.data);
      for (std::size_t r = 0; r < xf->size(); ++r)
        if (!close((*xf)[r], yf[r]))
          return at + std::to_string(r) + ": " + std::to_string((*xf)[r]) + " against " +
                 std::to_string(yf[r]);
    } else if (x.data != y.data) {
      return what + "." + x.name + " differs";
    }
  }
  return "";
}

std::string compare(const RunResult& fast, const RunResult& slow) {
  if (fast.events != slow.events)
    return "events: " + std::to_string(fast.events) + " against " + std::to_string(slow.events);
  if (fast.end_time != slow.end_time) return "end time";
  if (fast.steps.size() != slow.steps.size()) return "replicas";
  for (std::size_t r = 0; r < fast.steps.size(); ++r) {
    const auto& a = fast.steps[r];
    const auto& b = slow.steps[r];
    if (a.size() != b.size())
      return "replica " + std::to_string(r) + ": " + std::to_string(a.size()) + " steps against " +
             std::to_string(b.size());
    for (std::size_t i = 0; i < a.size(); ++i)
      if (a[i].start != b[i].start || a[i].dur_s != b[i].dur_s || a[i].seqs != b[i].seqs ||
          a[i].prefill_tokens != b[i].prefill_tokens || a[i].decode_seqs != b[i].decode_seqs)
        return "replica " + std::to_string(r) + " step " + std::to_string(i) + " differs";
  }
  std::string d = differ(requests_spec().make(fast), requests_spec().make(slow), "requests");
  if (d.empty()) d = differ(replicas_spec().make(fast), replicas_spec().make(slow), "replicas");
  if (d.empty() && fast.timeseries.size() != slow.timeseries.size()) d = "time series count";
  for (std::size_t i = 0; d.empty() && i < fast.timeseries.size(); ++i)
    d = differ(timeseries_spec().make(fast.timeseries[i]),
               timeseries_spec().make(slow.timeseries[i]), "timeseries " + std::to_string(i));
  return d;
}

int cases() {
  const char* n = std::getenv("KVFLEET_FAST_DECODE_CASES");
  return n != nullptr ? std::atoi(n) : 400;
}

TEST(FastDecode, SameStepsEventsAndOutputsAsVisitingEverySequence) {
  std::mt19937_64 rng(38);
  int coasted = 0;
  for (int i = 0; i < cases(); ++i) {
    const std::string yaml = random_scenario(rng);
    SCOPED_TRACE("case " + std::to_string(i) + ":\n" + yaml);
    RunResult fast, slow;
    try {
      fast = run(yaml, true);
      slow = run(yaml, false);
    } catch (const std::exception& e) {
      FAIL() << e.what();
    }
    const std::string d = compare(fast, slow);
    ASSERT_EQ(d, "");
    std::int64_t steps = 0, decodes = 0;
    for (const auto& s : fast.steps)
      for (const auto& t : s) ++steps, decodes += t.decode_seqs;
    coasted += decodes > 4 * steps;  // batches where most sequences were decoding
  }
  // The cases exercise the fast path: most have steps with several decodes at once.
  EXPECT_GT(coasted, cases() / 4);
}

// A scenario made to coast for long stretches (few, long replies on one replica, no caching) and
// one where sequences are woken every few steps (small blocks, prefix caching, preemption).
TEST(FastDecode, LongCoastsAndFrequentWakesAgree) {
  for (const std::string& yaml :
       {std::string("seed: 3\nworkload: {impl: synthetic, num_requests: 60, arrival: {impl: "
                    "poisson, rate_per_s: 20}, input_tokens: {impl: fixed, value: 50}, "
                    "output_tokens: {impl: fixed, value: 900}}\n"
                    "pools: [{model: Llama-3-8B, gpu: H100-SXM, engine: {enable_prefix_caching: "
                    "false, kv_layout: contiguous, contiguous_reservation: oracle}}]\n"),
        std::string("seed: 4\nworkload: {impl: synthetic, num_requests: 200, arrival: {impl: "
                    "poisson, rate_per_s: 80}, input_tokens: {impl: lognormal, mean: 200, "
                    "sigma: 1, max: 1000}, output_tokens: {impl: lognormal, mean: 200, sigma: "
                    "1, max: 1000}, tenants: 2, shared_prefix_tokens: 40}\n"
                    "pools: [{model: Llama-3-8B, gpu: H100-SXM, engine: {block_size: 8, "
                    "num_gpu_blocks_override: 300}}]\nsimulation: {check_invariants: true}\n")}) {
    SCOPED_TRACE(yaml);
    const RunResult fast = run(yaml, true);
    const RunResult slow = run(yaml, false);
    EXPECT_EQ(compare(fast, slow), "");
    EXPECT_GT(fast.requests.size(), 50u);
  }
}

}  // namespace
}  // namespace kvfleet::sim
