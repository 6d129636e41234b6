// The calibration pipeline on the CPU backend (the same path as on a GPU): a small model's
// profile has every operation, refined grids, fits with held-out errors and metadata, and the
// profile cost model reads it.
#include "calibration/pipeline.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "calibration/roofline_profile.h"
#include "sim/cost/profile_cost.h"

namespace kvfleet::calibration {
namespace {

sim::ModelSpec tiny() {
  sim::ModelSpec m;
  m.name = "tiny";
  m.num_layers = 2;
  m.hidden_size = 256;
  m.num_attention_heads = 4;
  m.num_kv_heads = 2;
  m.head_dim = 64;
  m.intermediate_size = 512;
  m.vocab_size = 1000;
  return m;
}

TEST(Pipeline, CpuBackendProducesACompleteProfile) {
  auto backend = make_cpu_backend(2);
  int calls = 0, last_total = 0, last_done = 0;
  RunOptions opt;
  sim::Profile p = calibrate(tiny(), opt, *backend, [&](int done, int total, const std::string&) {
    ++calls;
    EXPECT_LE(done, total);
    last_done = done;
    last_total = total;
  });
  EXPECT_GT(calls, 10);
  EXPECT_EQ(last_done, last_total);
  for (const char* op :
       {"qkv_proj", "o_proj", "gate_up_proj", "down_proj", "lm_head", "kv_write"}) {
    const auto* c = p.curve(op);
    ASSERT_NE(c, nullptr) << op;
    EXPECT_GE(c->x.size(), 4u) << op;
    EXPECT_TRUE(std::is_sorted(c->x.begin(), c->x.end()));
    for (double t : c->time_s) EXPECT_GT(t, 0) << op;
  }
  EXPECT_EQ(p.curve("lm_head")->axis, "sequences");
  // Decode points (batch × context) and prefill points (chunk × prefix).
  int decode = 0, prefill = 0;
  for (const auto& a : p.attention) (a.n_decode > 0 ? decode : prefill)++;
  EXPECT_EQ(decode, 2 * 3);
  EXPECT_EQ(prefill, 2 * 2);
  // A fit per operation, with held-out points where there are enough.
  ASSERT_EQ(p.fits.size(), 8u);
  for (const auto& f : p.fits) EXPECT_GE(f.n_train, 2) << f.op;
  EXPECT_EQ(p.get("backend"), "cpu");
  EXPECT_EQ(p.get("measured"), "false");
  EXPECT_NE(p.get("date"), "");

  // Written, read back and used by the profile cost model.
  const std::string path = ::testing::TempDir() + "/tiny_cpu_profile.h5";
  sim::write_profile(path, p);
  sim::ProfileCostModel::Config cfg;
  cfg.path = path;
  sim::GpuSpec gpu;
  sim::ModelSpec m = tiny();
  sim::CostContext ctx{m, gpu, 1, 2, 2};
  sim::ProfileCostModel cost(cfg, ctx);
  sim::Batch b;
  b.num_seqs = b.num_decode_seqs = b.num_sampled = 4;
  b.decode_context_tokens = 4 * 256;
  const sim::StepCost c = cost.cost(b);
  EXPECT_GT(c.gemm_s, 0);
  EXPECT_GT(c.decode_attn_s, 0);
}

TEST(Pipeline, HeldOutErrorOfALinearCurveIsZero) {
  std::vector<double> x = {1, 2, 4, 8, 16, 32}, t;
  for (double v : x) t.push_back(1e-3 + 2e-5 * v);
  auto err = curve_holdout_errors(x, t, 4);
  ASSERT_FALSE(err.empty());
  for (double e : err) EXPECT_LT(e, 1e-12);
  // A bend between measured points shows as held-out error.
  t[1] *= 1.5;
  err = curve_holdout_errors(x, t, 4);
  EXPECT_GT(*std::max_element(err.begin(), err.end()), 0.1);
}

TEST(Pipeline, RejectsModelsItCannotMeasure) {
  auto backend = make_cpu_backend(1);
  sim::ModelSpec m = tiny();
  RunOptions opt;
  opt.tensor_parallel = 3;
  EXPECT_THROW(calibrate(m, opt, *backend), std::invalid_argument);
  m.head_dim = 96;
  opt.tensor_parallel = 1;
  try {
    calibrate(m, opt, *backend);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("head_dim 96"), std::string::npos) << e.what();
  }
}

TEST(ShippedProfiles, RooflineFilesAreLabelledAndCurrent) {
  const std::filesystem::path dir = std::string(KVFLEET_SOURCE_DIR) + "/calibration/profiles";
  int checked = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("roofline-", 0) != 0 || e.path().extension() != ".h5") continue;
    const sim::Profile p = sim::read_profile(e.path().string());
    EXPECT_EQ(p.get("measured"), "false") << name;
    EXPECT_EQ(p.get("source"), "roofline") << name;
    EXPECT_NE(p.get("note").find("NOT MEASURED"), std::string::npos) << name;
    const sim::ModelSpec* m = nullptr;
    const sim::GpuSpec* g = nullptr;
    for (const auto& x : sim::model_presets())
      if (x.name == p.get("model")) m = &x;
    for (const auto& x : sim::gpu_presets())
      if (x.name == p.get("gpu")) g = &x;
    ASSERT_TRUE(m && g) << name;
    const sim::Profile now = roofline_profile(*m, *g, std::stoi(p.get("tensor_parallel")));
    ASSERT_EQ(now.curves.size(), p.curves.size()) << name;
    for (std::size_t i = 0; i < now.curves.size(); ++i) {
      EXPECT_EQ(now.curves[i].time_s, p.curves[i].time_s)
          << name << ": " << now.curves[i].op
          << " is stale; regenerate (calibration/profiles/README.md)";
    }
    ASSERT_EQ(now.attention.size(), p.attention.size());
    for (std::size_t i = 0; i < now.attention.size(); ++i)
      EXPECT_EQ(now.attention[i].time_s, p.attention[i].time_s) << name;
    ++checked;
  }
  EXPECT_GE(checked, 5);
}

TEST(Roofline, ComparisonAgainstAMeasuredCurve) {
  const sim::ModelSpec m = tiny();
  const LinearShape qkv = linear_shapes(m, 1).front();
  ASSERT_EQ(qkv.op, "qkv_proj");
  EXPECT_EQ(qkv.n, (4 + 2 * 2) * 64);
  sim::GpuSpec g;
  g.bf16_flops = 1e15;
  g.memory_bandwidth_Bps = 3e12;
  sim::Profile p;
  // A "measured" qkv curve exactly twice the roofline: error −50% everywhere.
  sim::ProfileCurve c{"qkv_proj", "layer", "tokens", 1, {1, 64, 4096}, {}, {0, 0, 0}};
  for (double x : c.x)
    c.time_s.push_back(2 * sim::RooflineCostModel::gemm_s({}, g, x, qkv.n, qkv.k, 2));
  p.curves.push_back(c);
  auto rows = compare_with_roofline(p, m, g, 1);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_NEAR(rows[0].median_error, -0.5, 1e-12);
  EXPECT_NEAR(rows[0].p95_ape, 0.5, 1e-12);
  EXPECT_EQ(rows[0].points, 3);
}

}  // namespace
}  // namespace kvfleet::calibration
