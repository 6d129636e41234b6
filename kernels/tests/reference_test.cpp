// The CPU references: conversions bit-exact with CUDA's rules, each reference against plain dense
// attention over gathered K and V, fp8 quantisation error, validation messages, and the split-KV
// choice. These run everywhere, GPU or not.
#include <gtest/gtest.h>

#include "kernels/attention.h"
#include "kernels/ref/numeric.h"
#include "kernels/ref/reference.h"
#include "kernels/tests/case.h"

namespace kvfleet::kernels {
namespace {

using testing::CaseSpec;
using testing::HostCase;
using testing::make_case;
using testing::rel_error;

TEST(Numeric, Fp8E4m3KnownValuesAndSaturation) {
  EXPECT_EQ(ref::float_to_fp8e4m3(1.0f), 0x38);
  EXPECT_EQ(ref::float_to_fp8e4m3(-1.5f), 0xBC);
  EXPECT_EQ(ref::float_to_fp8e4m3(448.0f), 0x7E);
  EXPECT_EQ(ref::float_to_fp8e4m3(1000.0f), 0x7E);    // saturates
  EXPECT_EQ(ref::float_to_fp8e4m3(-INFINITY), 0xFE);  // saturates, keeps the sign
  EXPECT_EQ(ref::float_to_fp8e4m3(NAN) & 0x7F, 0x7F);
  EXPECT_EQ(ref::float_to_fp8e4m3(0.001953125f), 0x01);   // 2^-9, the smallest subnormal
  EXPECT_EQ(ref::float_to_fp8e4m3(1.0625f), 0x38);        // tie between 1 and 1.125: even
  EXPECT_EQ(ref::float_to_fp8e4m3(1.1875f), 0x3A);        // tie between 1.125 and 1.25: even
  EXPECT_EQ(ref::float_to_fp8e4m3(0.0146484375f), 0x08);  // rounds up into the normal range
  EXPECT_FLOAT_EQ(ref::fp8e4m3_to_float(0x7E), 448.0f);
  EXPECT_TRUE(std::isnan(ref::fp8e4m3_to_float(0x7F)));
}

TEST(Numeric, EveryFp8AndFp16CodeRoundTrips) {
  for (int b = 0; b < 256; ++b) {
    if ((b & 0x7F) == 0x7F) continue;  // NaN
    float x = ref::fp8e4m3_to_float(static_cast<std::uint8_t>(b));
    EXPECT_EQ(ref::float_to_fp8e4m3(x), b) << "fp8 code " << b << " = " << x;
  }
  for (int b = 0; b < 65536; ++b) {
    int e = (b >> 10) & 0x1F;
    if (e == 31 && (b & 0x3FF)) continue;  // NaN
    float x = ref::f16_to_float(static_cast<std::uint16_t>(b));
    ASSERT_EQ(ref::float_to_f16(x), b) << "fp16 code " << b << " = " << x;
  }
}

TEST(Numeric, Fp16AndBf16Rounding) {
  EXPECT_EQ(ref::float_to_f16(1.0f), 0x3C00);
  EXPECT_EQ(ref::float_to_f16(65504.0f), 0x7BFF);
  EXPECT_EQ(ref::float_to_f16(65520.0f), 0x7C00);             // rounds to infinity
  EXPECT_EQ(ref::float_to_f16(1.0f + 0x1p-11f), 0x3C00);      // tie: even
  EXPECT_EQ(ref::float_to_f16(1.0f + 3 * 0x1p-11f), 0x3C02);  // tie: even (up)
  EXPECT_EQ(ref::float_to_f16(0x1p-24f), 0x0001);
  EXPECT_EQ(ref::float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(ref::float_to_bf16(1.0f + 0x1p-8f), 0x3F80);      // tie: even
  EXPECT_EQ(ref::float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3F82);  // tie: even (up)
  EXPECT_EQ(ref::bf16_to_float(0x3F80), 1.0f);
}

// Dense attention on gathered rows, the independent check of every reference.
std::vector<double> dense_decode(const HostCase& c) {
  const int D = c.spec.head_dim;
  const int G = c.spec.group;
  std::vector<double> out(static_cast<std::size_t>(c.num_seqs()) * c.num_q_heads * D);
  std::vector<double> q(D);
  for (int s = 0; s < c.num_seqs(); ++s) {
    for (int h = 0; h < c.spec.num_kv_heads; ++h) {
      auto k = ref::gather_kv(c.paged_kv(), c.spec.num_kv_heads, D, s, h, c.context_lens[s], false);
      auto v = ref::gather_kv(c.paged_kv(), c.spec.num_kv_heads, D, s, h, c.context_lens[s], true);
      for (int g = 0; g < G; ++g) {
        std::size_t row = (static_cast<std::size_t>(s) * c.num_q_heads + h * G + g) * D;
        for (int d = 0; d < D; ++d)
          q[d] = ref::load_act(c.q.data(), row + d, act_dtype(c.spec.dtype));
        ref::dense_attention(q.data(), k.data(), v.data(), c.context_lens[s], D,
                             static_cast<double>(1.0f / std::sqrt(static_cast<float>(D))),
                             out.data() + row);
      }
    }
  }
  return out;
}

struct Shape {
  KvDtype dtype;
  int head_dim;
  int block_size;
  int group;
};

class ReferenceShapes : public ::testing::TestWithParam<Shape> {};

TEST_P(ReferenceShapes, PagedDecodeMatchesDenseOnGatheredRows) {
  const Shape p = GetParam();
  CaseSpec spec{p.dtype, p.head_dim, p.block_size, 2, p.group, {1, p.block_size * 2 + 3, 300}, {}};
  spec.seed = 7 + p.head_dim + p.group;
  HostCase c = make_case(spec);
  std::vector<double> out(static_cast<std::size_t>(c.num_seqs()) * c.num_q_heads * p.head_dim);
  ref::paged_decode(c.decode_args(nullptr), out.data());
  auto dense = dense_decode(c);
  EXPECT_LT(rel_error(out, dense), 1e-12);
  for (double x : out) ASSERT_FALSE(std::isnan(x)) << "a poisoned slot was read";

  // The contiguous reference on the same stored bytes gives the same numbers.
  std::vector<std::uint8_t> k, v;
  int max_ctx = 0;
  c.contiguous(&k, &v, &max_ctx);
  ContiguousDecodeArgs ca = c.contiguous_args(k.data(), v.data(), max_ctx, nullptr);
  std::vector<double> cont(out.size());
  ref::contiguous_decode(ca, cont.data());
  EXPECT_LT(rel_error(cont, dense), 1e-12);
}

TEST_P(ReferenceShapes, PagedPrefillMatchesCausalDense) {
  const Shape p = GetParam();
  // Chunks: a whole prompt, a chunk after a ragged prefix, a one-token chunk.
  CaseSpec spec{p.dtype, p.head_dim, p.block_size, 1, p.group, {23, 19 + 40, 70}, {23, 19, 1}};
  spec.seed = 11 + p.block_size;
  HostCase c = make_case(spec);
  const int D = p.head_dim;
  std::vector<double> out(static_cast<std::size_t>(c.num_q_rows) * c.num_q_heads * D);
  ref::paged_prefill(c.prefill_args(nullptr), out.data());
  std::vector<double> q(D), want(D);
  double worst = 0;
  for (int s = 0; s < c.num_seqs(); ++s) {
    int q_len = spec.q_lens[s];
    auto k = ref::gather_kv(c.paged_kv(), 1, D, s, 0, c.context_lens[s], false);
    auto v = ref::gather_kv(c.paged_kv(), 1, D, s, 0, c.context_lens[s], true);
    for (int i = 0; i < q_len; ++i) {
      int pos = c.context_lens[s] - q_len + i;
      for (int g = 0; g < p.group; ++g) {
        std::size_t row = ((static_cast<std::size_t>(c.q_indptr[s]) + i) * c.num_q_heads + g) * D;
        for (int d = 0; d < D; ++d) q[d] = ref::load_act(c.q.data(), row + d, act_dtype(p.dtype));
        ref::dense_attention(q.data(), k.data(), v.data(), pos + 1, D,
                             static_cast<double>(1.0f / std::sqrt(float(D))), want.data());
        for (int d = 0; d < D; ++d) worst = std::max(worst, std::fabs(out[row + d] - want[d]));
      }
    }
  }
  EXPECT_LT(worst, 1e-12);
}

std::vector<Shape> reference_shapes() {
  std::vector<Shape> v;
  for (KvDtype d : {KvDtype::kF16, KvDtype::kBF16, KvDtype::kFP8E4M3}) {
    for (int hd : {64, 128, 256}) {
      for (int bs : {8, 16, 32, 64})
        v.push_back({d, hd, bs, bs == 8 ? 1 : bs == 16 ? 4 : bs == 32 ? 3 : 8});
    }
  }
  return v;
}
INSTANTIATE_TEST_SUITE_P(AllDtypesHeadDimsBlockSizes, ReferenceShapes,
                         ::testing::ValuesIn(reference_shapes()),
                         [](const ::testing::TestParamInfo<Shape>& i) {
                           return std::string(to_string(i.param.dtype)) + "_d" +
                                  std::to_string(i.param.head_dim) + "_b" +
                                  std::to_string(i.param.block_size) + "_g" +
                                  std::to_string(i.param.group);
                         });

TEST(Reference, KvWriteFillsSlotsSkipsPaddingAndQuantises) {
  for (KvDtype d : {KvDtype::kBF16, KvDtype::kFP8E4M3}) {
    const int heads = 2, D = 64, bs = 16, blocks = 4, tokens = 5;
    const std::size_t row = heads * D;
    std::vector<std::uint16_t> k(tokens * row), v(tokens * row);
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(-3, 3);
    for (auto& x : k) x = ref::float_to_bf16(u(rng));
    for (auto& x : v) x = ref::float_to_bf16(u(rng));
    std::vector<std::int64_t> slots = {17, -1, 0, 63, 40};
    std::vector<std::uint8_t> kc(blocks * bs * row * kv_bytes(d), 0xAB), vc(kc);
    KvWriteArgs a = kv_write_args(k.data(), v.data(), slots.data(), kc.data(), vc.data(), tokens,
                                  heads, D, blocks, bs, d, 3.0f / 448, 3.0f / 448);
    ASSERT_TRUE(validate(a).ok);
    ref::kv_write(a);
    const double step = d == KvDtype::kFP8E4M3 ? 0.0625 : 0;  // e4m3: 3 mantissa bits
    for (int t = 0; t < tokens; ++t) {
      if (slots[t] < 0) continue;
      for (std::size_t e = 0; e < row; ++e) {
        float want = ref::bf16_to_float(k[t * row + e]);
        float got = ref::load_kv(kc.data(), slots[t] * row + e, d) *
                    (d == KvDtype::kFP8E4M3 ? a.k_scale : 1.0f);
        ASSERT_LE(std::fabs(got - want),
                  step * std::fabs(want) + 1e-6 + (step ? a.k_scale * 0.001953125 : 0))
            << "token " << t << " element " << e;
      }
    }
    // Slot 1 .. 16 belong to nobody (token 1 was padding): untouched.
    EXPECT_EQ(kc[1 * row * kv_bytes(d)], 0xAB);
    // Slots past the cache are skipped and counted, never written.
    std::vector<std::int64_t> bad = {blocks * bs, -1, 1LL << 40, 5, 2};
    std::int32_t count = 0;
    a.slot_mapping = bad.data();
    a.bad_slots = &count;
    auto before = kc;
    ref::kv_write(a);
    EXPECT_EQ(count, 2);
    EXPECT_EQ(kc.size(), before.size());
  }
}

TEST(Reference, PrefillGridStaysWithinCudaLimits) {
  EXPECT_EQ(prefill_grid_z(100, 4), 25);
  EXPECT_EQ(prefill_grid_z(0, 4), 1);
  EXPECT_EQ(prefill_grid_z(4 * 65535, 4), 65535);
  EXPECT_EQ(prefill_grid_z(300000, 4), 65535);  // the kernel strides over the tiles past it
  EXPECT_EQ(prefill_grid_z(2000000000, 1), 65535);
}

TEST(Reference, Fp8AttentionStaysWithinFivePercentOfBf16) {
  for (int D : {64, 128, 256}) {
    CaseSpec spec{KvDtype::kFP8E4M3, D, 16, 2, 4, {77, 530}, {}};
    HostCase c = make_case(spec);
    std::vector<double> q8(static_cast<std::size_t>(c.num_seqs()) * c.num_q_heads * D);
    ref::paged_decode(c.decode_args(nullptr), q8.data());
    // The same attention over the unquantised values, held as fp32 "real" values through
    // dense attention.
    std::vector<double> exact(q8.size()), q(D);
    for (int s = 0; s < c.num_seqs(); ++s) {
      for (int h = 0; h < 2; ++h) {
        std::vector<double> k, v;
        for (int t = 0; t < c.context_lens[s]; ++t) {
          std::size_t slot =
              static_cast<std::size_t>(c.block_table[s * c.max_blocks + t / 16]) * 16 + t % 16;
          for (int d = 0; d < D; ++d) {
            k.push_back(c.k_real[(slot * 2 + h) * D + d]);
            v.push_back(c.v_real[(slot * 2 + h) * D + d]);
          }
        }
        for (int g = 0; g < 4; ++g) {
          std::size_t row = (static_cast<std::size_t>(s) * c.num_q_heads + h * 4 + g) * D;
          for (int d = 0; d < D; ++d) q[d] = ref::load_act(c.q.data(), row + d, ActDtype::kBF16);
          ref::dense_attention(q.data(), k.data(), v.data(), c.context_lens[s], D,
                               static_cast<double>(1.0f / std::sqrt(float(D))), exact.data() + row);
        }
      }
    }
    double err = rel_error(q8, exact);
    EXPECT_LT(err, 5e-2) << "head dim " << D;
    EXPECT_GT(err, 1e-4) << "fp8 should differ measurably from unquantised values";
  }
}

TEST(Validation, MessagesNameTheField) {
  CaseSpec spec{KvDtype::kBF16, 128, 16, 2, 4, {40}, {}};
  HostCase c = make_case(spec);
  double out = 0;
  DecodeArgs a = c.decode_args(&out);
  EXPECT_TRUE(validate(a).ok);
  a.head_dim = 96;
  EXPECT_NE(validate(a).message.find("head_dim 96"), std::string::npos) << validate(a).message;
  a = c.decode_args(&out);
  a.kv.block_size = 12;
  EXPECT_NE(validate(a).message.find("block_size 12"), std::string::npos);
  a = c.decode_args(&out);
  a.num_q_heads = 18;  // 9 per KV head
  EXPECT_NE(validate(a).message.find("group size"), std::string::npos);
  a.num_q_heads = 5;
  EXPECT_NE(validate(a).message.find("multiple of num_kv_heads"), std::string::npos);
  a = c.decode_args(&out);
  a.max_context_len = 10000;
  EXPECT_NE(validate(a).message.find("max_context_len"), std::string::npos);
  a = c.decode_args(&out);
  a.kv.dtype = KvDtype::kFP8E4M3;
  a.kv.k_scale = 0;
  EXPECT_NE(validate(a).message.find("k_scale"), std::string::npos);
  // Pointers the kernels read in 16-byte vectors must be aligned (a slice 2 bytes into a fused
  // QKV buffer would fault on the GPU): each is named.
  a = c.decode_args(&out);
  a.q = reinterpret_cast<const char*>(c.q.data()) + 2;
  EXPECT_NE(validate(a).message.find("q ("), std::string::npos) << validate(a).message;
  a = c.decode_args(&out);
  a.kv.v_cache = reinterpret_cast<const char*>(c.v_cache.data()) + 8;
  EXPECT_NE(validate(a).message.find("kv.v_cache"), std::string::npos) << validate(a).message;
  a = c.decode_args(&out);
  std::vector<float> ws(64);
  a.workspace = reinterpret_cast<char*>(ws.data()) + 4;
  EXPECT_NE(validate(a).message.find("workspace"), std::string::npos) << validate(a).message;
  PrefillArgs pa = c.prefill_args(&out);
  EXPECT_TRUE(validate(pa).ok);
  pa.kv.k_cache = reinterpret_cast<const char*>(c.k_cache.data()) + 4;
  EXPECT_NE(validate(pa).message.find("kv.k_cache"), std::string::npos) << validate(pa).message;
  KvDtype d;
  EXPECT_TRUE(parse_kv_dtype("fp8", &d));
  EXPECT_EQ(d, KvDtype::kFP8E4M3);
  EXPECT_FALSE(parse_kv_dtype("int4", &d));
}

TEST(SplitKv, AutomaticChoiceFillsTheGpuOnlyWhenIdle) {
  // Batch 64 × 8 KV heads already gives 512 CTAs for 132 SMs × 3 CTAs: no split.
  EXPECT_EQ(decode_splits(0, 64, 8, 4096, 132, 3), 1);
  // Batch 32 × 8 heads = 256 CTAs leave 396 slots a third idle: 3 splits (768 CTAs, 97% of two
  // waves) fill them where 2 would not (512 CTAs: 65%).
  EXPECT_EQ(decode_splits(0, 32, 8, 4096, 132, 3), 3);
  // Batch 1 × 8 heads × 32k (128 partitions) on 396 slots: 43 splits of 3 partitions (344 CTAs,
  // one wave, 87%) rather than 64 of 2 (512 CTAs: two waves, 65%); none is empty.
  EXPECT_EQ(decode_splits(0, 1, 8, 32768, 132, 3), 43);
  // With one CTA per SM, 16 splits of 8 partitions fill 128 of 132 slots; more gain < 5%.
  EXPECT_EQ(decode_splits(0, 1, 8, 32768, 132), 16);
  // Never more splits than partitions: 300 tokens are 2 partitions.
  EXPECT_EQ(decode_splits(0, 1, 1, 300, 132, 4), 2);
  EXPECT_EQ(decode_splits(7, 1, 1, 300, 132), 2);
  EXPECT_EQ(decode_splits(1, 1, 1, 32768, 132), 1);
  EXPECT_EQ(decode_splits(0, 5, 2, 700, 4), 1);  // 10 CTAs already fill 4 slots
  // Every automatic choice over a grid: within the cap, and no split left empty.
  for (int ctx : {1, 256, 257, 1000, 4096, 32768, 200000}) {
    for (int units : {1, 3, 8, 40, 200}) {
      const int n = decode_splits(0, units, 1, ctx, 132, 2);
      const int parts = (ctx + kDecodePartitionTokens - 1) / kDecodePartitionTokens;
      ASSERT_GE(n, 1);
      ASSERT_LE(n, std::min(parts, kMaxSplits));
      const int per = (parts + n - 1) / n;
      EXPECT_LT((n - 1) * per, parts) << "an empty split at ctx " << ctx << ", " << n;
    }
  }
  EXPECT_EQ(decode_workspace_bytes(1, 4, 32, 128), 0u);
  EXPECT_EQ(decode_workspace_bytes(3, 4, 32, 128), 4u * 32 * 3 * 130 * sizeof(float));
}

}  // namespace
}  // namespace kvfleet::kernels
