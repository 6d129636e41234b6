// Importers on the real profiles in ../shared/reference/profiles (skipped when absent), and their
// errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "calibration/import.h"
#include "sim/core/error.h"

namespace kvfleet::calibration {
namespace {

const std::string kRef = KVFLEET_REFERENCE_DIR;
const std::string kLss = kRef + "/profiles/llmservingsim/RTX4090/meta-llama/Llama-3.1-8B/bf16";
const std::string kVidur =
    kRef + "/profiles/vidur/profiling/compute/a100/meta-llama/Meta-Llama-3-8B";

#define NEED(path)                                  \
  if (!std::filesystem::exists(path))               \
  GTEST_SKIP() << "reference data absent: " << path \
               << " (upstream: see ../shared/reference/README.md and docs/calibration.md)"

TEST(ImportLlmServingSim, RtxProfileBecomesCurvesAndGrid) {
  NEED(kLss);
  sim::Profile p = import_llmservingsim(kLss, 1);
  EXPECT_EQ(p.get("gpu"), "NVIDIA GeForce RTX 4090");
  EXPECT_EQ(p.get("source"), "llmservingsim");
  EXPECT_NE(p.get("provenance").find("5daddb21a545"), std::string::npos) << p.get("provenance");
  ASSERT_NE(p.curve("qkv_proj"), nullptr);
  EXPECT_EQ(p.curve("qkv_proj")->scope, "layer");
  EXPECT_EQ(p.curve("layernorm")->count, 2);
  EXPECT_EQ(p.curve("lm_head")->axis, "sequences");
  EXPECT_EQ(p.curve("embedding")->scope, "step");
  // qkv_proj at 2048 tokens: 631.069 µs in dense.csv.
  const auto* q = p.curve("qkv_proj");
  auto it = std::find(q->x.begin(), q->x.end(), 2048.0);
  ASSERT_NE(it, q->x.end());
  EXPECT_NEAR(q->time_s[it - q->x.begin()], 631.069e-6, 1e-12);
  EXPECT_EQ(p.attention.size(), 8643u);
  EXPECT_TRUE(p.skew.empty());  // its meta.yaml does not enable skew_fit

  // Written and read back unchanged.
  const std::string out = testing::TempDir() + "/lss.h5";
  sim::write_profile(out, p);
  sim::Profile r = sim::read_profile(out);
  EXPECT_EQ(r.meta, p.meta);
  ASSERT_EQ(r.curves.size(), p.curves.size());
  for (std::size_t i = 0; i < r.curves.size(); ++i) {
    EXPECT_EQ(r.curves[i].op, p.curves[i].op);
    EXPECT_EQ(r.curves[i].x, p.curves[i].x);
    EXPECT_EQ(r.curves[i].time_s, p.curves[i].time_s);
  }
  ASSERT_EQ(r.attention.size(), p.attention.size());
  EXPECT_EQ(r.attention.back().time_s, p.attention.back().time_s);
}

TEST(ImportLlmServingSim, MoeBundleImportsEveryFileAndTheModelsFacts) {
  const std::string qwen =
      kRef + "/profiles/llmservingsim/RTXPRO6000/Qwen/Qwen3-30B-A3B-Instruct-2507/bf16";
  NEED(qwen);
  std::vector<std::string> report;
  for (int tp : {1, 2}) {
    report.clear();
    sim::Profile p = import_llmservingsim(qwen, tp, &report);
    ASSERT_NE(p.curve("qk_norm"), nullptr);
    EXPECT_EQ(p.curve("qk_norm")->scope, "layer");
    ASSERT_NE(p.curve("sampler"), nullptr);
    EXPECT_EQ(p.curve("sampler")->axis, "sequences");
    // moe.csv's 50 points (tp2 has none: tp1's, as each GPU runs whole experts).
    ASSERT_EQ(p.moe.size(), 50u);
    EXPECT_EQ(p.moe.front().tokens, 1);
    EXPECT_EQ(p.moe.front().activated_experts, 8);
    EXPECT_NEAR(p.moe.front().time_s, 50.2297e-6, 1e-12);
    // The full model's facts: hf_overrides are per GPU at tp 2 (16 heads, 2 KV heads).
    EXPECT_EQ(p.get("architecture"), "qwen3_moe");
    EXPECT_EQ(p.get("model_num_attention_heads"), "32");
    EXPECT_EQ(p.get("model_num_kv_heads"), "4");
    EXPECT_EQ(p.get("model_vocab_size"), "151936");
    EXPECT_EQ(p.get("profiled_num_layers"), "1");
    EXPECT_EQ(p.get("model_moe"), "true");
    // meta.yaml enables skew_fit: its buckets, with the bins of bucket_axes.
    EXPECT_EQ(p.skew.size(), tp == 1 ? 3979u : 3964u);
    EXPECT_EQ(p.get("skew_alpha_default"), tp == 1 ? "0.0645" : "0.0748");
    EXPECT_EQ(p.skew.front().n_lo, 64);  // "n<=128": (64, 128]
    EXPECT_EQ(p.skew.front().n_hi, 128);
    EXPECT_NEAR(p.skew.front().alpha, tp == 1 ? 0.0707 : -0.002, 1e-12);
    bool said_moe = false;
    for (const auto& l : report)
      said_moe = said_moe || l.find("moe.csv -> MoE layer") == 0 ||
                 l.find("tp1/moe.csv -> MoE layer") == 0;
    EXPECT_TRUE(said_moe);
    // Written and read back with its MoE table.
    const std::string out = testing::TempDir() + "/lss_moe_tp" + std::to_string(tp) + ".h5";
    sim::write_profile(out, p);
    EXPECT_EQ(sim::read_profile(out).moe.size(), 50u);
  }
}

TEST(ImportLlmServingSim, AnUnknownOperationIsImportedByName) {
  NEED(kLss);
  // A copy of the RTX 4090 bundle whose dense.csv gains an operation kvfleet does not know.
  const std::filesystem::path dir =
      std::filesystem::path(testing::TempDir()) / "lss_unknown_op" / "bf16";
  std::filesystem::remove_all(dir.parent_path());
  std::filesystem::create_directories(dir);
  std::filesystem::copy(kLss, dir, std::filesystem::copy_options::recursive);
  {
    std::ofstream o(dir / "tp1" / "dense.csv", std::ios::app);
    o << "fancy_gate,1,2.5\nfancy_gate,2048,40\n";
  }
  std::vector<std::string> report;
  const sim::Profile p = import_llmservingsim(dir.string(), 1, &report);
  ASSERT_NE(p.curve("fancy_gate"), nullptr);
  EXPECT_EQ(p.curve("fancy_gate")->scope, "layer");
  EXPECT_NEAR(p.curve("fancy_gate")->time_s.back(), 40e-6, 1e-15);
  bool listed = false;
  for (const auto& l : report)
    listed = listed || (l.find("fancy_gate") != std::string::npos &&
                        l.find("unknown operation") != std::string::npos);
  EXPECT_TRUE(listed);
  std::filesystem::remove_all(dir.parent_path());
}

// A token count of nan (or inf) is refused naming the file, row and column; it once merged its
// row into another point of the curve.
TEST(ImportLlmServingSim, ANonFiniteTokenCountIsRefused) {
  NEED(kLss);
  const std::filesystem::path dir =
      std::filesystem::path(testing::TempDir()) / "lss_nan_tokens" / "bf16";
  std::filesystem::remove_all(dir.parent_path());
  std::filesystem::create_directories(dir);
  std::filesystem::copy(kLss, dir, std::filesystem::copy_options::recursive);
  {
    std::ofstream o(dir / "tp1" / "dense.csv", std::ios::app);
    o << "qkv_proj,nan,2.5\n";
  }
  try {
    import_llmservingsim(dir.string(), 1);
    ADD_FAILURE() << "accepted a nan token count";
  } catch (const sim::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("dense.csv: row"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("tokens: not a finite number"), std::string::npos)
        << e.what();
  }
  std::filesystem::remove_all(dir.parent_path());
}

TEST(ImportLlmServingSim, MissingTensorParallelFolderIsNamed) {
  NEED(kLss);
  try {
    import_llmservingsim(kLss, 2);
    FAIL() << "expected an error";
  } catch (const sim::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("tp2"), std::string::npos) << e.what();
  }
}

TEST(ImportVidur, GemmCurvesPerTensorParallelDegree) {
  NEED(kVidur);
  sim::Profile p = import_vidur(kVidur, 1);
  EXPECT_EQ(p.get("gpu"), "a100");
  EXPECT_EQ(p.get("model"), "meta-llama/Meta-Llama-3-8B");
  ASSERT_NE(p.curve("qkv_proj"), nullptr);
  ASSERT_NE(p.curve("down_proj"), nullptr);
  EXPECT_EQ(p.curve("residual_add")->count, 2);
  EXPECT_TRUE(std::is_sorted(p.curve("qkv_proj")->x.begin(), p.curve("qkv_proj")->x.end()));
  try {
    import_vidur(kVidur, 3);
    FAIL() << "expected an error";
  } catch (const sim::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no rows for tensor parallelism 3"), std::string::npos)
        << e.what();
  }
}

TEST(Import, WrongFoldersGetClearMessages) {
  try {
    import_llmservingsim(testing::TempDir(), 1);
    FAIL();
  } catch (const sim::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("meta.yaml"), std::string::npos);
  }
  try {
    import_vidur(testing::TempDir(), 1);
    FAIL();
  } catch (const sim::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("mlp.csv"), std::string::npos);
  }
}

}  // namespace
}  // namespace kvfleet::calibration
