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
  // One decode sequence of context 25 (24 cached tokens and its new one; the profile's decode
  // context counts the cached ones): qkv(1) × 2 layers + lm_head(1); attention midway between
  // contexts 16 and 32, × 2 layers; two layernorms per layer.
  StepCost c = m->cost(decode_batch(1, 25));
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
  // One bucket for two decodes at skew rate (0.4, 0.7], longest context in (16, 64]: alpha 0.5.
  p.skew.push_back({0, 1, 2, 0.4, 0.7, 16, 64, -1, 0, 0.5, 4});
  p.set("skew_alpha_default", "0.1");
  auto m = f.make(p);
  EXPECT_TRUE(m->wants_decode_contexts());
  // Cached contexts 16 and 32 (contexts 17 and 33 with the new tokens): mean 24, skew rate
  // (24 - 16) / (32 - 16) = 0.5, longest 32. All at the mean costs 3e-5 per layer for the two,
  // all at the longest 4e-5: 3e-5 + 0.5 × (4e-5 − 3e-5), as the profile's fit defines alpha.
  const std::int32_t ctx[] = {17, 33};
  Batch b = decode_batch(2, 50);
  b.decode_contexts = ctx;
  EXPECT_NEAR(m->cost(b).decode_attn_s, 2 * (3e-5 + 0.5 * 1e-5), 1e-15);
  // Even contexts: no correction.
  const std::int32_t even[] = {25, 25};
  b.decode_contexts = even;
  EXPECT_NEAR(m->cost(b).decode_attn_s, 2 * 3e-5, 1e-15);
  // Outside every bucket (cached 16, 16, 16, 32: rate 0.25): the default alpha.
  const std::int32_t four[] = {17, 17, 17, 33};
  Batch b4 = decode_batch(4, 84);
  b4.decode_contexts = four;
  Batch even4 = decode_batch(4, 84);
  Batch long4 = decode_batch(4, 132);
  const double at_mean = m->cost(even4).decode_attn_s, at_long = m->cost(long4).decode_attn_s;
  EXPECT_NEAR(m->cost(b4).decode_attn_s, at_mean + 0.1 * (at_long - at_mean), 1e-15);
  // A prefill chunk the fit did not measure (it measured chunk 0 only) takes the default too.
  PrefillChunk ch{24, 0};
  Batch mixed = b;
  mixed.decode_contexts = ctx;
  mixed.num_seqs = 3;
  mixed.num_prefill_tokens = 24;
  mixed.prefill_attention_pairs = 24.0 * 25 / 2;
  mixed.prefill = std::span<const PrefillChunk>(&ch, 1);
  Batch mixed_even = mixed;
  mixed_even.decode_contexts = even;
  Batch mixed_long = mixed;
  mixed_long.decode_context_tokens = 66;
  mixed_long.decode_contexts = {};
  const StepCost cm = m->cost(mixed), ce = m->cost(mixed_even), cl = m->cost(mixed_long);
  EXPECT_NEAR(
      cm.decode_attn_s - ce.decode_attn_s,
      0.1 * ((cl.prefill_attn_s + cl.decode_attn_s) - (ce.prefill_attn_s + ce.decode_attn_s)),
      1e-15);
  // A default alpha that is no number is refused with the profile.
  Profile bad = p;
  bad.set("skew_alpha_default", "abc");
  EXPECT_THROW(check_profile(bad, "bad.h5"), InputError);
  // Without a skew table contexts are priced at their mean.
  EXPECT_FALSE(f.make(synthetic(false))->wants_decode_contexts());
}

// A profile need not hold every combination of its axes' values (LLMServingSim's sweeps the
// prefix and context axes per chunk and decode count): the grid interpolates within what each
// (chunk, decodes) pair measured, not on axes shared by all (where a combination never measured
// used to make the attention of the step no time at all).
TEST(ProfileCost, ASparseGridIsInterpolatedWithinEachMeasuredPair) {
  Fixture f;
  Profile p = synthetic(false);
  // Mixed points whose decode contexts differ by chunk: (16, n 1) at contexts 16 and 64, (32, n 1)
  // at 32 and 128.
  for (auto [c, k, t] :
       {std::tuple{16, 16, 2e-5}, {16, 64, 5e-5}, {32, 32, 6e-5}, {32, 128, 1.2e-4}})
    p.attention.push_back({double(c), 0, 1, double(k), t, 0});
  auto m = f.make(p);
  PrefillChunk ch{24, 0};
  Batch b = decode_batch(1, 41);  // 40 cached
  b.num_seqs = 2;
  b.num_prefill_tokens = 24;
  b.prefill_attention_pairs = 24.0 * 25 / 2;
  b.prefill = std::span<const PrefillChunk>(&ch, 1);
  const StepCost c = m->cost(b);
  // (16, 1) at 40: 2e-5 + 24/48 × 3e-5 = 3.5e-5; (32, 1) at 40: 6e-5 + 8/96 × 6e-5 = 6.5e-5;
  // chunk 24 halfway: 5e-5 per layer.
  EXPECT_NEAR(c.prefill_attn_s + c.decode_attn_s, 2 * 5e-5, 1e-15);
}

TEST(ProfileCost, TheHeadRunsForEverySequenceOfTheStep) {
  Fixture f;
  auto m = f.make(synthetic(false));
  // Two decodes and a partial prefill chunk that samples nothing: lm_head at 3 sequences, as vLLM
  // computes logits for each scheduled sequence.
  PrefillChunk ch{16, 0};
  Batch b = decode_batch(2, 34);
  b.num_seqs = 3;
  b.num_prefill_tokens = 16;
  b.prefill_attention_pairs = 16.0 * 17 / 2;
  b.prefill = std::span<const PrefillChunk>(&ch, 1);
  Batch two = b;
  two.num_seqs = 2;
  EXPECT_NEAR(m->cost(b).gemm_s - m->cost(two).gemm_s, 1e-3 / 9, 1e-15);
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
