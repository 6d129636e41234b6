// The profile cost model on a small synthetic profile: curve interpolation and extrapolation,
// layer and step scopes, the attention grid (additive and mixed), CUDA-graph padding, and the
// profile file's errors.
#include "sim/cost/profile_cost.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "sim/core/error.h"
#include "sim/testing/run.h"

namespace kvfleet::sim {
namespace {

Profile synthetic(bool mixed) {
  Profile p;
  p.set("format", "kvfleet-profile");
  p.set("tensor_parallel", "1");
  p.curves.push_back({"qkv_proj", "layer", "tokens", 1, {1, 100}, {1e-4, 2e-4}, {0, 0}});
  p.curves.push_back({"layernorm", "layer", "tokens", 2, {1, 100}, {1e-6, 1e-6}, {0, 0}});
  p.curves.push_back({"lm_head", "step", "sequences", 1, {1, 10}, {1e-3, 2e-3}, {0, 0}});
  for (auto [n, k, t] : {std::tuple{1, 16, 1e-5}, {1, 32, 2e-5}, {2, 16, 2e-5}, {2, 32, 4e-5}})
    p.attention.push_back({0, 0, double(n), double(k), t, 0});
  for (auto [c, pre, t] : {std::tuple{16, 0, 1e-5}, {32, 0, 3e-5}, {16, 16, 2e-5}, {32, 16, 4e-5}})
    p.attention.push_back({double(c), double(pre), 0, 0, t, 0});
  if (mixed) {
    for (auto [c, pre] : {std::pair{16, 0}, {32, 0}, {16, 16}, {32, 16}})
      for (auto [n, k] : {std::pair{1, 16}, {1, 32}, {2, 16}, {2, 32}})
        p.attention.push_back({double(c), double(pre), double(n), double(k), 1e-3, 0});
  }
  return p;
}

struct Fixture {
  ModelSpec model;
  GpuSpec gpu;
  std::string path;
  std::unique_ptr<ProfileCostModel> make(const Profile& p, bool pad = false) {
    model.num_layers = 2;
    model.hidden_size = 4096;
    // One file per test: ctest runs this binary's tests as parallel processes.
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path = ::testing::TempDir() + "/synthetic_profile_" + info->name() + ".h5";
    write_profile(path, p);
    ProfileCostModel::Config cfg;
    cfg.path = path;
    cfg.pad_to_cuda_graph_sizes = pad;
    CostContext ctx{model, gpu, 1, 2, 2};
    return std::make_unique<ProfileCostModel>(cfg, ctx);
  }
};

Batch decode_batch(int n, std::int64_t context_total) {
  Batch b;
  b.num_seqs = b.num_decode_seqs = b.num_sampled = n;
  b.decode_context_tokens = context_total;
  return b;
}

TEST(ProfileCost, CurvesScaleByLayersAndInterpolate) {
  Fixture f;
  auto m = f.make(synthetic(false));
  // One decode sequence at context 24: qkv(1) × 2 layers + lm_head(1); attention midway between
  // contexts 16 and 32, × 2 layers; two layernorms per layer.
  StepCost c = m->cost(decode_batch(1, 24));
  EXPECT_NEAR(c.gemm_s, 2 * 1e-4 + 1e-3, 1e-15);
  EXPECT_NEAR(c.decode_attn_s, 2 * 1.5e-5, 1e-15);
  EXPECT_NEAR(c.overhead_s, 2 * 2 * 1e-6, 1e-15);
  EXPECT_EQ(c.prefill_attn_s, 0);
  // Past the last point, curves extend linearly: qkv at 199 tokens = 3e-4.
  // lm_head at 199 sequences = 1e-3 + 198 × 1e-3 / 9.
  EXPECT_NEAR(m->cost(decode_batch(199, 199 * 16)).gemm_s, 2 * 3e-4 + 1e-3 + 198 * 1e-3 / 9, 1e-12);
}

TEST(ProfileCost, PrefillChunksUseTheEquivalentPrefix) {
  Fixture f;
  auto m = f.make(synthetic(false));
  // A 24-token chunk over 8 cached tokens: pairs = 24·8 + 24·25/2 = 492, equivalent prefix 8.
  PrefillChunk ch{24, 8};
  Batch b;
  b.num_seqs = 1;
  b.num_prefill_tokens = 24;
  b.prefill_attention_pairs = 24.0 * 8 + 24.0 * 25 / 2;
  b.prefill = std::span<const PrefillChunk>(&ch, 1);
  // Bilinear between chunks 16/32 and prefixes 0/16: (1e-5+3e-5+2e-5+4e-5)/4 = 2.5e-5 per layer.
  EXPECT_NEAR(m->cost(b).prefill_attn_s, 2 * 2.5e-5, 1e-15);
  EXPECT_EQ(m->cost(b).decode_attn_s, 0);
}

TEST(ProfileCost, MixedGridGivesOneTimeSplitByTheParts) {
  Fixture f;
  auto m = f.make(synthetic(true));
  Batch b = decode_batch(1, 16);
  b.num_seqs = 2;
  b.num_prefill_tokens = 16;
  b.prefill_attention_pairs = 16.0 * 17 / 2;
  StepCost c = m->cost(b);
  // The grid says 1e-3 per layer for the mixed batch; pure parts 1e-5 (prefill) and 1e-5
  // (decode) split it evenly.
  EXPECT_NEAR(c.prefill_attn_s + c.decode_attn_s, 2 * 1e-3, 1e-12);
  EXPECT_NEAR(c.prefill_attn_s, c.decode_attn_s, 1e-12);
}

TEST(ProfileCost, UnevenDecodeContextsUseTheSkewCorrection) {
  Fixture f;
  Profile p = synthetic(false);
  // One bucket for two decodes with half of them long, longest context in (16, 64]: alpha 0.5.
  p.skew.push_back({0, 1, 2, 0.4, 0.7, 16, 64, -1, 0, 0.5, 4});
  p.set("skew_alpha_default", "0.1");
  auto m = f.make(p);
  EXPECT_TRUE(m->wants_decode_contexts());
  // Contexts 16 and 32: mean 24 (attention 1.5e-5 per layer for... two sequences: 3e-5), the
  // long one at 32 (4e-5 for two at 32): 3e-5 + 0.5 × (4e-5 − 3e-5) per layer.
  const std::int32_t ctx[] = {16, 32};
  Batch b = decode_batch(2, 48);
  b.decode_contexts = ctx;
  EXPECT_NEAR(m->cost(b).decode_attn_s, 2 * (3e-5 + 0.5 * 1e-5), 1e-15);
  // Even contexts: no correction.
  const std::int32_t even[] = {24, 24};
  b.decode_contexts = even;
  EXPECT_NEAR(m->cost(b).decode_attn_s, 2 * 3e-5, 1e-15);
  // Outside every bucket (one long among four): the default alpha.
  const std::int32_t four[] = {16, 16, 16, 32};
  Batch b4 = decode_batch(4, 80);
  b4.decode_contexts = four;
  Batch even4 = decode_batch(4, 80);
  Batch long4 = decode_batch(4, 128);
  const double at_mean = m->cost(even4).decode_attn_s, at_long = m->cost(long4).decode_attn_s;
  EXPECT_NEAR(m->cost(b4).decode_attn_s, at_mean + 0.1 * (at_long - at_mean), 1e-15);
  // A default alpha that is no number is refused with the profile.
  Profile bad = p;
  bad.set("skew_alpha_default", "abc");
  EXPECT_THROW(check_profile(bad, "bad.h5"), InputError);
  // Without a skew table contexts are priced at their mean.
  EXPECT_FALSE(f.make(synthetic(false))->wants_decode_contexts());
}

TEST(ProfileCost, CudaGraphPadding) {
  EXPECT_EQ(ProfileCostModel::cuda_graph_size(1), 1);
  EXPECT_EQ(ProfileCostModel::cuda_graph_size(3), 4);
  EXPECT_EQ(ProfileCostModel::cuda_graph_size(9), 16);
  EXPECT_EQ(ProfileCostModel::cuda_graph_size(100), 104);
  EXPECT_EQ(ProfileCostModel::cuda_graph_size(257), 272);
  EXPECT_EQ(ProfileCostModel::cuda_graph_size(600), 600);
  Fixture f;
  auto m = f.make(synthetic(false), true);
  // 3 sequences are timed as 4 tokens in token-wise curves, not in lm_head (3 sequences).
  StepCost c = m->cost(decode_batch(3, 48));
  const double qkv4 = 1e-4 + 3 * (1e-4 / 99);
  const double lm3 = 1e-3 + 2 * (1e-3 / 9);
  EXPECT_NEAR(c.gemm_s, 2 * qkv4 + lm3, 1e-12);
  // An engine's own capture sizes replace the built-in rule: 3 tokens run as 5.
  Fixture g;
  g.model.num_layers = 2;
  ProfileCostModel::Config cfg;
  g.path = ::testing::TempDir() + "/synthetic_profile_capture_sizes.h5";
  write_profile(g.path, synthetic(false));
  cfg.path = g.path;
  cfg.cuda_graph_sizes = {1, 5, 10};
  g.model.hidden_size = 4096;
  const ProfileCostModel own(cfg, CostContext{g.model, g.gpu, 1, 2, 2});
  EXPECT_EQ(own.padded(3), 5);
  EXPECT_EQ(own.padded(10), 10);
  EXPECT_EQ(own.padded(11), 11);  // above the largest: not padded
}

TEST(ProfileData, ErrorsNameTheFileAndTheProblem) {
  const std::string missing = ::testing::TempDir() + "/no_such_profile.h5";
  try {
    read_profile(missing);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("not found"), std::string::npos) << e.what();
  }
  // A fifo is refused before HDF5 opens it (which would block).
  const std::string fifo = ::testing::TempDir() + "/profile_fifo.h5";
  std::filesystem::remove(fifo);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  try {
    read_profile(fifo);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
  }
  std::filesystem::remove(fifo);
  Profile p = synthetic(false);
  p.set("format", "something-else");
  const std::string path = ::testing::TempDir() + "/wrong_format.h5";
  write_profile(path, p);
  try {
    read_profile(path);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("meta.format"), std::string::npos) << e.what();
  }
  Profile bad = synthetic(false);
  bad.curves[0].x = {100, 1};
  try {
    check_profile(bad, "here");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("ascending"), std::string::npos) << e.what();
  }
}

// What once loaded (or crashed) and must be refused by name: an unknown schema version, no curves,
// an operation whose rows are split, times that would overflow step times, sizes beyond reason,
// and (for a whole run) a profile without attention.
TEST(ProfileData, RefusesVersionsEmptyTablesAndNumbersOutOfRange) {
  auto problem = [](const Profile& p) {
    try {
      check_profile(p, "p.h5");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  Profile v = synthetic(false);
  v.set("schema_version", "7");
  EXPECT_NE(problem(v).find("meta.schema_version: is '7'"), std::string::npos) << problem(v);
  Profile empty = synthetic(false);
  empty.curves.clear();
  EXPECT_NE(problem(empty).find("curves: is empty"), std::string::npos) << problem(empty);
  Profile split = synthetic(false);
  split.curves.push_back(split.curves[0]);
  EXPECT_NE(problem(split).find("split into separate runs"), std::string::npos);
  for (double t : {1e300, 1e4, -1.0}) {
    Profile slow = synthetic(false);
    slow.curves[0].time_s[1] = t;
    EXPECT_NE(problem(slow).find("not between 0 and 1000 s"), std::string::npos) << t;
    Profile att = synthetic(false);
    att.attention[0].time_s = t;
    EXPECT_NE(problem(att).find("attention row 0"), std::string::npos) << t;
  }
  Profile huge = synthetic(false);
  huge.curves[0].x[1] = 1e300;
  EXPECT_NE(problem(huge).find("not between 0 and 1e12"), std::string::npos) << problem(huge);
  // A profile without attention (as an imported Vidur profile) is refused for a run.
  Profile linear_only = synthetic(false);
  linear_only.attention.clear();
  const std::string path = ::testing::TempDir() + "/linear_only.h5";
  write_profile(path, linear_only);
  const std::string yaml =
      "workload: {impl: synthetic, num_requests: 10, input_tokens: {impl: fixed, value: 10},\n"
      "  output_tokens: {impl: fixed, value: 10}}\n"
      "pools:\n  - model: Llama-3.1-8B\n    gpu: H100-SXM\n"
      "    cost_model: {impl: profile, path: " +
      path + "}\n";
  try {
    load_scenario_text(yaml, "inline", ".", {});
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no attention points"), std::string::npos) << e.what();
  }
}

TEST(ProfileData, AScenarioWithAMissingProfileFailsAtLoad) {
  const std::string yaml =
      "workload: {impl: synthetic, num_requests: 10, input_tokens: {impl: fixed, value: 10},\n"
      "  output_tokens: {impl: fixed, value: 10}}\n"
      "pools:\n  - model: Llama-3.1-8B\n    gpu: H100-SXM\n"
      "    cost_model: {impl: profile, path: /nonexistent/profile.h5}\n";
  try {
    load_scenario_text(yaml, "inline", ".", {});
    FAIL();
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("path"), std::string::npos) << m;
    EXPECT_NE(m.find("not found"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace kvfleet::sim
