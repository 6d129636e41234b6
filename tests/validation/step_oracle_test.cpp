// The profile cost model checked step by step against LLMServingSim's composition of a step from
// the same profile bundle (docs/validation.md, "Step by step against LLMServingSim").
//
// tests/data/oracle/<run>.csv holds batches drawn from kvfleet's replay of a shared vLLM run
// (decode only, mixed, prefill heavy), each with the step time LLMServingSim's trace generator
// (casys-kaist/LLMServingSim, serving/core/trace_generator.py, at the commit the file names)
// composes for it from the run's own profile bundle: the sum of its per-layer lookups. Those
// times were produced outside the project by running that code; only its figures are kept here.
//
// The test prices every batch with kvfleet's profile cost model (the bundle imported as
// kvfleet-calibrate does) and requires each step within 1% of LLMServingSim's, once the
// documented differences of composition are set as LLMServingSim has them (`as_llmservingsim`);
// the differences themselves are measured on the replay and kept where they bring it closer to
// the measured run (docs/validation.md). Skips when ../shared/reference is absent.
//
// With KVFLEET_ORACLE_CAPTURE=DIR set, the test instead replays the runs and writes the batch
// files (without LLMServingSim's column) into DIR.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "calibration/import.h"
#include "sim/cost/profile_cost.h"
#include "sim/cost/profile_data.h"
#include "sim/replay/replay.h"
#include "sim/testing/run.h"

namespace kvfleet {
namespace {

namespace fs = std::filesystem;

struct OracleRun {
  const char* name;    // tests/data/oracle/<name>.csv
  const char* dir;     // the vLLM run under ../shared/reference
  const char* bundle;  // its LLMServingSim profile bundle
  const char* model;   // kvfleet presets
  const char* gpu;
  int tp;
  int dp = 1;
  bool ep = false;
};

const OracleRun kRuns[] = {
    {"rtx4090-llama-3.1-8b", "validation/vllm-0.19-rtx4090-llama-3.1-8b",
     "profiles/llmservingsim/RTX4090/meta-llama/Llama-3.1-8B/bf16", "Llama-3.1-8B", "RTX-4090", 1},
    {"rtxpro6000-qwen3-30b-a3b", "validation/vllm-0.19-rtxpro6000-qwen3-30b-a3b",
     "profiles/llmservingsim/RTXPRO6000/Qwen/Qwen3-30B-A3B-Instruct-2507/bf16", "Qwen3-30B-A3B",
     "RTX-PRO-6000", 1, 2, true},
};

// One batch of the oracle file.
struct OracleBatch {
  std::string kind;
  std::int32_t num_seqs = 0, num_sampled = 0;
  std::int64_t dp_padded_tokens = 0;
  std::int32_t dp_ranks = 1;
  std::vector<sim::PrefillChunk> chunks;
  std::vector<std::int32_t> decode_contexts;  // new token included
  double llmservingsim_us = NAN;
  double llmservingsim_moe_us = 0;  // of which MoE experts
};

std::string oracle_path(const OracleRun& r) {
  return std::string(KVFLEET_SOURCE_DIR) + "/tests/data/oracle/" + r.name + ".csv";
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep))
    if (!cur.empty()) out.push_back(cur);
  return out;
}

std::vector<OracleBatch> read_oracle(const std::string& path) {
  std::ifstream in(path);
  std::vector<OracleBatch> out;
  std::string line;
  bool header = true;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (header) {
      header = false;
      continue;
    }
    // kind,num_seqs,num_sampled,dp_padded_tokens,dp_ranks,chunks,decode_contexts,
    // llmservingsim_us,llmservingsim_moe_us (empty chunks or contexts: fields parsed by position).
    std::vector<std::string> cols;
    std::string cur;
    for (char ch : line) {
      if (ch == ',') {
        cols.push_back(cur);
        cur.clear();
      } else {
        cur += ch;
      }
    }
    cols.push_back(cur);
    EXPECT_EQ(cols.size(), 9u) << path << ": " << line;
    if (cols.size() != 9) continue;
    OracleBatch b;
    b.kind = cols[0];
    b.num_seqs = std::stoi(cols[1]);
    b.num_sampled = std::stoi(cols[2]);
    b.dp_padded_tokens = std::stoll(cols[3]);
    b.dp_ranks = std::stoi(cols[4]);
    for (const auto& c : split(cols[5], ' ')) {
      const auto tp = split(c, ':');
      b.chunks.push_back({std::stoi(tp.at(0)), std::stoi(tp.at(1))});
    }
    for (const auto& c : split(cols[6], ' ')) b.decode_contexts.push_back(std::stoi(c));
    if (!cols[7].empty()) b.llmservingsim_us = std::stod(cols[7]);
    if (!cols[8].empty()) b.llmservingsim_moe_us = std::stod(cols[8]);
    out.push_back(std::move(b));
  }
  return out;
}

// The batch as kvfleet's engine describes it (`as_llmservingsim` false) or as LLMServingSim's
// trace generator does: several prefill chunks as one chunk of their total tokens over the sum of
// their prefixes (kvfleet takes the prefix that gives the same (query, key) pairs instead).
sim::Batch to_batch(const OracleBatch& o, bool as_llmservingsim,
                    std::vector<sim::PrefillChunk>& merged) {
  if (as_llmservingsim && o.chunks.size() > 1) {
    sim::PrefillChunk m{0, 0};
    for (const auto& c : o.chunks) {
      m.tokens += c.tokens;
      m.prefix += c.prefix;
    }
    merged = {m};
  } else {
    merged = o.chunks;
  }
  sim::Batch b;
  b.num_seqs = o.num_seqs;
  b.num_sampled = o.num_sampled;
  for (const auto& c : merged) {
    b.num_prefill_tokens += c.tokens;
    b.prefill_context_tokens += c.prefix + c.tokens;
    const double t = c.tokens, p = c.prefix;
    b.prefill_attention_pairs += t * p + t * (t + 1) / 2;
  }
  b.num_decode_seqs = static_cast<std::int32_t>(o.decode_contexts.size());
  for (auto k : o.decode_contexts) b.decode_context_tokens += k;
  b.prefill = merged;
  b.decode_contexts = o.decode_contexts;
  b.dp_padded_tokens = o.dp_padded_tokens;
  b.dp_ranks = o.dp_ranks;
  return b;
}

// `dir` and `bundle` under ../shared/reference, or given whole (KVFLEET_ORACLE_RUN).
void capture(const OracleRun& r, const std::string& out_dir, bool absolute = false) {
  const std::string dir = absolute ? r.dir : testing::reference_file(r.dir);
  const std::string bundle = absolute ? r.bundle : testing::reference_file(r.bundle);
  const std::string profile = ::testing::TempDir() + "/oracle_" + r.name + ".h5";
  sim::write_profile(profile, calibration::import_llmservingsim(bundle, r.tp));
  const sim::ReplayPlan plan = sim::plan_replay({dir, profile, "", ""});
  const sim::Scenario sc = sim::load_scenario_text(plan.yaml, "<replay>", ".", {});
  sim::Simulation simulation(sc);
  simulation.record_batches(1'000'000);
  const sim::RunResult res = simulation.run();
  // Twenty batches of each kind, spread evenly over the run's steps of that kind (rank 0).
  const auto& all = res.batches.at(0);
  auto kind = [](const sim::BatchTrace& t) {
    std::int64_t chunk = 0;
    for (const auto& c : t.chunks) chunk += c.tokens;
    if (t.chunks.empty()) return std::string("decode");
    if (chunk >= 1024 || t.decode_contexts.size() <= 4) return std::string("prefill_heavy");
    return std::string("mixed");
  };
  std::ofstream out(out_dir + "/" + r.name + ".csv");
  out << "# Batches of kvfleet's replay of ../shared/reference/" << r.dir << " (profile "
      << r.bundle << "), engine rank 0; decode contexts include the new token.\n"
      << "kind,num_seqs,num_sampled,dp_padded_tokens,dp_ranks,chunks,decode_contexts,"
         "llmservingsim_us,llmservingsim_moe_us\n";
  for (const std::string k : {"decode", "mixed", "prefill_heavy"}) {
    std::vector<const sim::BatchTrace*> of;
    for (const auto& t : all)
      if (t.num_seqs > 0 && kind(t) == k) of.push_back(&t);
    const std::size_t want = std::min<std::size_t>(20, of.size());
    for (std::size_t i = 0; i < want; ++i) {
      const sim::BatchTrace& t = *of[i * of.size() / want];
      out << k << ',' << t.num_seqs << ',' << t.num_sampled << ',' << t.dp_padded_tokens << ','
          << t.dp_ranks << ',';
      for (std::size_t c = 0; c < t.chunks.size(); ++c)
        out << (c ? " " : "") << t.chunks[c].tokens << ':' << t.chunks[c].prefix;
      out << ',';
      for (std::size_t c = 0; c < t.decode_contexts.size(); ++c)
        out << (c ? " " : "") << t.decode_contexts[c];
      out << ",,\n";
    }
  }
}

// KVFLEET_ORACLE_CAPTURE=DIR writes the batch files of the runs above into DIR; with
// KVFLEET_ORACLE_RUN=name|run_dir|bundle_dir|tp as well, the batches of that run (any vLLM run in
// LLMServingSim's layout with its bundle) instead.
TEST(StepOracle, CaptureBatchesWhenAsked) {
  const char* dir = std::getenv("KVFLEET_ORACLE_CAPTURE");
  if (dir == nullptr) GTEST_SKIP() << "KVFLEET_ORACLE_CAPTURE not set: nothing to capture";
  if (const char* one = std::getenv("KVFLEET_ORACLE_RUN")) {
    const auto f = split(one, '|');
    ASSERT_EQ(f.size(), 4u) << "KVFLEET_ORACLE_RUN=name|run_dir|bundle_dir|tp";
    capture({f[0].c_str(), f[1].c_str(), f[2].c_str(), "", "", std::stoi(f[3])}, dir, true);
    return;
  }
  for (const OracleRun& r : kRuns) {
    if (testing::reference_file(r.dir).empty()) GTEST_SKIP() << "../shared/reference is absent";
    capture(r, dir);
  }
}

template <class T>
const T& preset(const std::vector<T>& all, const std::string& name) {
  for (const auto& x : all)
    if (x.name == name) return x;
  throw std::runtime_error("no preset " + name);
}

// Agreement of kvfleet's steps with LLMServingSim's on one run's batches.
struct Agreement {
  double worst = 0;          // largest relative difference of a step (MoE experts apart)
  double worst_experts = 0;  // of the experts alone, where both price every expert active
  int batches = 0;
};

// Prices every batch of `file` with the profile from `bundle` and prints the comparison. Both
// sides without collectives (ASTRA-Sim times LLMServingSim's). A MoE step is compared without its
// experts, which are compared apart: LLMServingSim's balanced gate activates min(T k / EP, E / EP)
// experts per rank where kvfleet takes the expected number of distinct experts, so the two agree
// only once every expert is active (T k / EP >= 4 E / EP, tokens per rank >= 64 here).
Agreement compare(const OracleRun& r, const std::string& file, const std::string& bundle) {
  const std::vector<OracleBatch> batches = read_oracle(file);
  EXPECT_GE(batches.size(), 30u) << file;
  const std::string profile = ::testing::TempDir() + "/oracle_price_" + r.name + ".h5";
  sim::write_profile(profile, calibration::import_llmservingsim(bundle, r.tp));
  const sim::ModelSpec& m = preset(sim::model_presets(), r.model);
  const sim::GpuSpec& g = preset(sim::gpu_presets(), r.gpu);
  const sim::CostContext ctx{m, g, r.tp, 2.0, 2.0, 0, 1, r.dp, r.ep};
  sim::ProfileCostModel::Config cfg;
  cfg.path = profile;
  const sim::ProfileCostModel model(cfg, ctx);
  std::printf("%s: kvfleet's step against LLMServingSim's composition (collectives apart)\n",
              r.name);
  std::printf("%-14s %5s %6s %11s %11s %8s %10s %10s %8s\n", "kind", "seqs", "tokens", "kvfleet_us",
              "lss_us", "diff", "experts", "lss_exp", "diff");
  Agreement a;
  for (const auto& o : batches) {
    std::vector<sim::PrefillChunk> merged;
    const sim::Batch b = to_batch(o, true, merged);
    const sim::StepCost c = model.cost(b);
    const double experts = model.moe_expert_s(b) * 1e6;
    const double ours = (c.total_s() - c.comm_s) * 1e6 - experts;
    const double theirs = o.llmservingsim_us - o.llmservingsim_moe_us;
    const double d = (ours - theirs) / theirs;
    a.worst = std::max(a.worst, std::fabs(d));
    ++a.batches;
    std::printf("%-14s %5d %6lld %11.1f %11.1f %+7.2f%%", o.kind.c_str(), o.num_seqs,
                static_cast<long long>(b.num_tokens()), ours, theirs, 100 * d);
    if (o.llmservingsim_moe_us > 0) {
      const double de = (experts - o.llmservingsim_moe_us) / o.llmservingsim_moe_us;
      const bool saturated = b.padded_tokens() >= 64;
      if (saturated) a.worst_experts = std::max(a.worst_experts, std::fabs(de));
      std::printf(" %10.1f %10.1f %+7.2f%%%s", experts, o.llmservingsim_moe_us, 100 * de,
                  saturated ? "" : " (experts not all active)");
    }
    std::printf("\n");
  }
  std::printf("%s: %d steps, largest difference %.2f%%, of the experts (all active) %.2f%%\n",
              r.name, a.batches, 100 * a.worst, 100 * a.worst_experts);
  return a;
}

TEST(StepOracle, ProfileStepsAgreeWithLlmServingSim) {
  if (const char* one = std::getenv("KVFLEET_ORACLE_CHECK")) {
    // file|bundle_dir|model|gpu|tp|dp|ep: another run's oracle file (docs/validation.md).
    const auto f = split(one, '|');
    ASSERT_EQ(f.size(), 7u) << "KVFLEET_ORACLE_CHECK=file|bundle|model|gpu|tp|dp|ep";
    compare({"check", "", "", f[2].c_str(), f[3].c_str(), std::stoi(f[4]), std::stoi(f[5]),
             f[6] == "1"},
            f[0], f[1]);
    return;
  }
  for (const OracleRun& r : kRuns) {
    const std::string bundle = testing::reference_file(r.bundle);
    if (bundle.empty()) GTEST_SKIP() << "../shared/reference is absent: no profile to price with";
    const Agreement a = compare(r, oracle_path(r), bundle);
    EXPECT_EQ(a.batches, 60) << r.name;
    EXPECT_LT(a.worst, 0.01) << r.name;
    EXPECT_LT(a.worst_experts, 0.03) << r.name;
  }
}

}  // namespace
}  // namespace kvfleet
