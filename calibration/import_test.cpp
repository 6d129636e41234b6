// Importers on the real profiles in ../shared/reference/profiles (skipped when absent), and their
// errors.
#include <gtest/gtest.h>

#include <filesystem>

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
