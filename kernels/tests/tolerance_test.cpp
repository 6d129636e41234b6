// The tolerance of the GPU tests, proven on the CPU: the comparison they use (tolerance.h) passes
// an fp32 emulation of the kernels (emulate.h) and rejects the same emulation with each bug a
// kernel really gets wrong injected: a token dropped at a partition boundary, a 1% softmax-scale
// error, a dropped GQA head, a wrong GQA mapping, split weights without the partial sums, and
// causal masks off by one in either direction. The cases are the GPU tests' own (the same
// CaseSpec builder, contexts and splits), over nine shapes covering every dtype, head dim, block
// size and several group sizes. The normwise metric the GPU tests used before is printed beside
// each bug's score to show what it let through.
#include <gtest/gtest.h>

#include <cstdio>

#include "kernels/attention.h"
#include "kernels/ref/reference.h"
#include "kernels/tests/case.h"
#include "kernels/tests/emulate.h"
#include "kernels/tests/tolerance.h"

namespace kvfleet::kernels {
namespace {

using testing::Bug;
using testing::CaseSpec;
using testing::HostCase;
using testing::make_case;

struct Shape {
  KvDtype dtype;
  int head_dim;
  int block_size;
  int group;
  int num_kv_heads;
};

std::string shape_name(const ::testing::TestParamInfo<Shape>& i) {
  return std::string(to_string(i.param.dtype)) + "_d" + std::to_string(i.param.head_dim) + "_b" +
         std::to_string(i.param.block_size) + "_g" + std::to_string(i.param.group) + "_h" +
         std::to_string(i.param.num_kv_heads);
}

// The normwise metric the GPU tests used before (max |a − b| / max |b| over the whole case) and
// its limits, to show what it let through.
double old_limit(KvDtype d) { return d == KvDtype::kF16 ? 2e-3 : 1e-2; }

class Tolerance : public ::testing::TestWithParam<Shape> {};

TEST_P(Tolerance, DecodeComparisonPassesTheKernelAndRejectsEachBug) {
  const Shape p = GetParam();
  // The GPU test's paged-decode case: a one-token context, a ragged one past three blocks, and
  // 700 tokens (three partitions, two boundaries).
  CaseSpec spec{
      p.dtype, p.head_dim, p.block_size, p.num_kv_heads, p.group, {1, 3 * p.block_size + 5, 700},
      {}};
  spec.seed = 100 + p.head_dim * 7 + p.block_size * 3 + p.group;
  HostCase c = make_case(spec);
  const ActDtype act = act_dtype(p.dtype);
  DecodeArgs a = c.decode_args(nullptr);
  std::vector<double> want(c.q.size());
  ref::paged_decode(a, want.data());
  const auto keys = testing::decode_keys(c.context_lens);
  for (int splits : {1, 3}) {
    const auto ok = testing::act_to_double(testing::emulate_decode(a, splits, Bug::kNone), act);
    const auto good = testing::compare_rows(ok, want, c.num_q_heads, p.head_dim, act, keys);
    std::printf("decode %-7s splits %d  correct kernel       score %8.2f\n",
                shape_name({p, 0}).c_str(), splits, good.score);
    EXPECT_TRUE(good.ok()) << "splits " << splits
                           << ": the correct kernel fails: " << good.describe();
    std::vector<Bug> bugs = {Bug::kPartitionBoundary, Bug::kSoftmaxScale};
    if (p.group > 1) bugs.insert(bugs.end(), {Bug::kGqaMapping, Bug::kDroppedGqaHead});
    if (splits > 1) bugs.push_back(Bug::kSplitWeights);
    for (Bug bug : bugs) {
      const auto bad = testing::act_to_double(testing::emulate_decode(a, splits, bug), act);
      const auto cmp = testing::compare_rows(bad, want, c.num_q_heads, p.head_dim, act, keys);
      const double old = testing::rel_error(bad, want);
      std::printf(
          "decode %-7s splits %d  %-20s score %8.2f  per-(row, head) %.2e  normwise %.2e%s\n",
          shape_name({p, 0}).c_str(), splits, testing::bug_name(bug), cmp.score, cmp.row_rel, old,
          old < old_limit(p.dtype) ? "  (passed the old limit)" : "");
      EXPECT_FALSE(cmp.ok()) << "splits " << splits << ": bug " << testing::bug_name(bug)
                             << " passes: " << cmp.describe();
    }
  }
}

TEST_P(Tolerance, PrefillComparisonPassesTheKernelAndRejectsEachBug) {
  const Shape p = GetParam();
  // The GPU test's prefill case: a whole prompt, a chunk after a ragged prefix, a one-token
  // chunk, a long chunk, and a sequence with no new tokens this step.
  CaseSpec spec{p.dtype,
                p.head_dim,
                p.block_size,
                p.num_kv_heads,
                p.group,
                {23, 59, 70, 300, 40},
                {23, 19, 1, 130, 0}};
  spec.seed = 300 + p.head_dim + p.block_size + p.group;
  HostCase c = make_case(spec);
  const ActDtype act = act_dtype(p.dtype);
  PrefillArgs a = c.prefill_args(nullptr);
  std::vector<double> want(c.q.size()), spread(c.q.size());
  ref::paged_prefill(a, want.data(), spread.data());
  const auto keys = testing::prefill_keys(c.context_lens, c.q_indptr);
  // The CUDA-core kernel (fp32 weights) against the plain limit; the tensor-core kernel
  // (weights rounded to the activation dtype) against the limit with the weights' term.
  for (bool tc : {false, true}) {
    const char* path = tc ? "tensor cores" : "CUDA cores  ";
    const std::vector<double>* sp = tc ? &spread : nullptr;
    const auto ok = testing::act_to_double(testing::emulate_prefill(a, Bug::kNone, tc), act);
    const auto good = testing::compare_rows(ok, want, c.num_q_heads, p.head_dim, act, keys, sp);
    std::printf("prefill %-7s %s correct kernel       score %8.2f\n", shape_name({p, 0}).c_str(),
                path, good.score);
    EXPECT_TRUE(good.ok()) << path << ": the correct kernel fails: " << good.describe();
    if (tc) {
      // Without the weights' term the tensor-core kernel's rounding would not always pass:
      // the term is needed, not decoration.
      const auto bare = testing::compare_rows(ok, want, c.num_q_heads, p.head_dim, act, keys);
      std::printf("prefill %-7s %s without the weights' term score %8.2f\n",
                  shape_name({p, 0}).c_str(), path, bare.score);
    }
    std::vector<Bug> bugs = {Bug::kSoftmaxScale, Bug::kCausalDiagonal, Bug::kCausalOneAhead};
    // With one query head per KV head both GQA bugs are the identity.
    if (p.group > 1) bugs.insert(bugs.end(), {Bug::kGqaMapping, Bug::kDroppedGqaHead});
    for (Bug bug : bugs) {
      const auto bad = testing::act_to_double(testing::emulate_prefill(a, bug, tc), act);
      const auto cmp = testing::compare_rows(bad, want, c.num_q_heads, p.head_dim, act, keys, sp);
      const double old = testing::rel_error(bad, want);
      std::printf("prefill %-7s %s %-20s score %8.2f  per-(row, head) %.2e  normwise %.2e%s\n",
                  shape_name({p, 0}).c_str(), path, testing::bug_name(bug), cmp.score, cmp.row_rel,
                  old, old < old_limit(p.dtype) ? "  (passed the old limit)" : "");
      EXPECT_FALSE(cmp.ok()) << path << ": bug " << testing::bug_name(bug)
                             << " passes: " << cmp.describe();
    }
  }
}

// Nine shapes: every dtype, head dim and block size, groups 1 to 8, two to eight KV heads.
INSTANTIATE_TEST_SUITE_P(
    NineShapes, Tolerance,
    ::testing::Values(Shape{KvDtype::kF16, 64, 8, 2, 2}, Shape{KvDtype::kF16, 128, 16, 4, 2},
                      Shape{KvDtype::kF16, 256, 32, 8, 2}, Shape{KvDtype::kBF16, 64, 16, 8, 4},
                      Shape{KvDtype::kBF16, 128, 32, 4, 2}, Shape{KvDtype::kBF16, 256, 64, 1, 8},
                      Shape{KvDtype::kFP8E4M3, 64, 32, 4, 2},
                      Shape{KvDtype::kFP8E4M3, 128, 64, 8, 2},
                      Shape{KvDtype::kFP8E4M3, 256, 8, 2, 4}),
    shape_name);

TEST(ToleranceMath, UlpAndRounding) {
  EXPECT_EQ(testing::act_ulp(1.0, ActDtype::kBF16), 0x1p-7);
  EXPECT_EQ(testing::act_ulp(1.5, ActDtype::kF16), 0x1p-10);
  EXPECT_EQ(testing::act_ulp(-0.25, ActDtype::kF16), 0x1p-12);
  EXPECT_EQ(testing::act_ulp(0.0, ActDtype::kF16), 0x1p-24);  // the subnormal step
  EXPECT_EQ(testing::round_act(1.0 + 0x1p-9, ActDtype::kBF16), 1.0);
  // One step of the output dtype passes, two fail.
  std::vector<double> want = {1.0, 0.5}, got = {1.0 + 0x1p-7, 0.5};
  EXPECT_TRUE(testing::compare_rows(got, want, 1, 2, ActDtype::kBF16, {10}).ok());
  got[0] = 1.0 + 0x1p-6;
  EXPECT_FALSE(testing::compare_rows(got, want, 1, 2, ActDtype::kBF16, {10}).ok());
  got[0] = NAN;
  EXPECT_TRUE(testing::compare_rows(got, want, 1, 2, ActDtype::kBF16, {10}).nan);
}

}  // namespace
}  // namespace kvfleet::kernels
