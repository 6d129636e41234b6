// The CUDA kernels against the CPU references on fresh random data, for every dtype, head dim,
// block size and group size: ragged contexts, shuffled and shared block ids, NaN in every slot
// no sequence owns, outputs poisoned with NaN before each run and checked fully written.
// Tolerances (normwise: max |gpu − ref| / max |ref|): fp16 2e-3, bf16 1e-2, fp8 KV 1e-2 against
// the reference on the same fp8 bytes (its outputs are bf16); the fp8-versus-unquantised error
// (< 5e-2) is checked on the CPU in reference_test.cpp. KV write is checked bit for bit.
// Every case skips when no CUDA device is present.
#include <cuda_runtime.h>
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

#define CUDA_OK(expr)                                                      \
  do {                                                                     \
    cudaError_t e_ = (expr);                                               \
    ASSERT_EQ(e_, cudaSuccess) << #expr << ": " << cudaGetErrorString(e_); \
  } while (0)

// A device copy of a host vector, freed on scope exit.
struct Dev {
  void* p = nullptr;
  std::size_t bytes = 0;
  ~Dev() {
    if (p) cudaFree(p);
  }
};
template <typename T>
void upload(Dev* d, const std::vector<T>& v) {
  d->bytes = std::max<std::size_t>(1, v.size() * sizeof(T));
  ASSERT_EQ(cudaMalloc(&d->p, d->bytes), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d->p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
}

double tolerance(KvDtype d) { return d == KvDtype::kF16 ? 2e-3 : 1e-2; }

// Downloads an activation-dtype output and converts it to doubles; fails on NaN (unwritten).
void download_act(const Dev& d, std::size_t n, ActDtype act, std::vector<double>* out) {
  std::vector<std::uint16_t> bits(n);
  ASSERT_EQ(cudaMemcpy(bits.data(), d.p, n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  out->resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    (*out)[i] = ref::load_act(bits.data(), i, act);
    ASSERT_FALSE(std::isnan((*out)[i])) << "output element " << i << " not written (or NaN)";
  }
}

struct Shape {
  KvDtype dtype;
  int head_dim;
  int block_size;
  int group;
};
std::string shape_name(const ::testing::TestParamInfo<Shape>& i) {
  return std::string(to_string(i.param.dtype)) + "_d" + std::to_string(i.param.head_dim) + "_b" +
         std::to_string(i.param.block_size) + "_g" + std::to_string(i.param.group);
}

class GpuKernels : public ::testing::TestWithParam<Shape> {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU kernel tests skipped";
  }
};

// Everything a decode or prefill case needs on the device.
struct DeviceCase {
  Dev q, k, v, table, ctx, indptr, out, ws;
  void load(const HostCase& c) {
    upload(&q, c.q);
    upload(&k, c.k_cache);
    upload(&v, c.v_cache);
    upload(&table, c.block_table);
    upload(&ctx, c.context_lens);
    upload(&indptr, c.q_indptr);
    std::size_t n = c.q.size();
    ASSERT_EQ(cudaMalloc(&out.p, n * 2), cudaSuccess);
    ws.bytes = decode_workspace_bytes(kMaxSplits, c.num_seqs(), c.num_q_heads, c.spec.head_dim);
    ASSERT_EQ(cudaMalloc(&ws.p, std::max<std::size_t>(ws.bytes, 1)), cudaSuccess);
  }
  void poison_out(std::size_t n) { ASSERT_EQ(cudaMemset(out.p, 0xFF, n * 2), cudaSuccess); }
  PagedKv kv(const HostCase& c) const {
    PagedKv kv = c.paged_kv();
    kv.k_cache = k.p;
    kv.v_cache = v.p;
    kv.block_table = static_cast<const std::int32_t*>(table.p);
    return kv;
  }
};

TEST_P(GpuKernels, PagedDecodeMatchesReference) {
  const Shape p = GetParam();
  CaseSpec spec{p.dtype, p.head_dim, p.block_size, 2, p.group, {1, 3 * p.block_size + 5, 700}, {}};
  spec.seed = 100 + p.head_dim * 7 + p.block_size * 3 + p.group;
  HostCase c = make_case(spec);
  std::vector<double> want(c.q.size());
  ref::paged_decode(c.decode_args(nullptr), want.data());
  DeviceCase d;
  d.load(c);
  for (int splits : {1, 3, 0}) {
    DecodeArgs a = c.decode_args(d.out.p);
    a.q = d.q.p;
    a.context_lens = static_cast<const std::int32_t*>(d.ctx.p);
    a.kv = d.kv(c);
    a.num_splits = splits;
    a.num_sms = 132;
    a.workspace = d.ws.p;
    a.workspace_bytes = d.ws.bytes;
    d.poison_out(c.q.size());
    Status s = paged_decode(a, nullptr);
    ASSERT_TRUE(s.ok) << s.message;
    CUDA_OK(cudaDeviceSynchronize());
    std::vector<double> got;
    download_act(d.out, c.q.size(), act_dtype(p.dtype), &got);
    EXPECT_LT(rel_error(got, want), tolerance(p.dtype)) << "splits " << splits;
  }
}

TEST_P(GpuKernels, ContiguousDecodeMatchesReference) {
  const Shape p = GetParam();
  CaseSpec spec{p.dtype, p.head_dim, p.block_size, 2, p.group, {5, 2 * p.block_size + 1, 600}, {}};
  spec.seed = 200 + p.head_dim + p.group;
  HostCase c = make_case(spec);
  std::vector<std::uint8_t> k, v;
  int max_ctx = 0;
  c.contiguous(&k, &v, &max_ctx);
  std::vector<double> want(c.q.size());
  ref::paged_decode(c.decode_args(nullptr), want.data());
  DeviceCase d;
  d.load(c);
  Dev dk, dv;
  upload(&dk, k);
  upload(&dv, v);
  ContiguousDecodeArgs a;
  a.q = d.q.p;
  a.out = d.out.p;
  a.k = dk.p;
  a.v = dv.p;
  a.context_lens = static_cast<const std::int32_t*>(d.ctx.p);
  a.num_seqs = c.num_seqs();
  a.num_q_heads = c.num_q_heads;
  a.num_kv_heads = 2;
  a.head_dim = p.head_dim;
  a.max_context = max_ctx;
  a.sm_scale = 1.0f / std::sqrt(static_cast<float>(p.head_dim));
  a.dtype = p.dtype;
  a.k_scale = c.k_scale;
  a.v_scale = c.v_scale;
  a.num_splits = 2;
  a.workspace = d.ws.p;
  a.workspace_bytes = d.ws.bytes;
  d.poison_out(c.q.size());
  Status s = contiguous_decode(a, nullptr);
  ASSERT_TRUE(s.ok) << s.message;
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<double> got;
  download_act(d.out, c.q.size(), act_dtype(p.dtype), &got);
  EXPECT_LT(rel_error(got, want), tolerance(p.dtype));
}

TEST_P(GpuKernels, PagedPrefillMatchesReference) {
  const Shape p = GetParam();
  // A whole prompt, a chunk after a ragged prefix, a one-token chunk, a long chunk.
  CaseSpec spec{p.dtype, p.head_dim, p.block_size, 2, p.group, {23, 59, 70, 300}, {23, 19, 1, 130}};
  spec.seed = 300 + p.head_dim + p.block_size + p.group;
  HostCase c = make_case(spec);
  std::vector<double> want(c.q.size());
  ref::paged_prefill(c.prefill_args(nullptr), want.data());
  DeviceCase d;
  d.load(c);
  PrefillArgs a = c.prefill_args(d.out.p);
  a.q = d.q.p;
  a.q_indptr = static_cast<const std::int32_t*>(d.indptr.p);
  a.context_lens = static_cast<const std::int32_t*>(d.ctx.p);
  a.kv = d.kv(c);
  d.poison_out(c.q.size());
  Status s = paged_prefill(a, nullptr);
  ASSERT_TRUE(s.ok) << s.message;
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<double> got;
  download_act(d.out, c.q.size(), act_dtype(p.dtype), &got);
  EXPECT_LT(rel_error(got, want), tolerance(p.dtype));
}

std::vector<Shape> all_shapes() {
  std::vector<Shape> v;
  for (KvDtype d : {KvDtype::kF16, KvDtype::kBF16, KvDtype::kFP8E4M3}) {
    for (int hd : {64, 128, 256}) {
      for (int bs : {8, 16, 32, 64}) {
        for (int g = 1; g <= kMaxGroup; ++g) v.push_back({d, hd, bs, g});
      }
    }
  }
  return v;
}
INSTANTIATE_TEST_SUITE_P(AllShapes, GpuKernels, ::testing::ValuesIn(all_shapes()), shape_name);

class GpuKvWrite : public ::testing::TestWithParam<std::tuple<KvDtype, int>> {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU kernel tests skipped";
  }
};

TEST_P(GpuKvWrite, BitExactWithReference) {
  const auto [dtype, D] = GetParam();
  const int heads = 4, bs = 16, blocks = 8, tokens = 37;
  const std::size_t row = static_cast<std::size_t>(heads) * D;
  const ActDtype act = act_dtype(dtype);
  std::mt19937 rng(D);
  std::uniform_real_distribution<float> u(-4, 4);
  std::vector<std::uint16_t> k(tokens * row), v(tokens * row);
  for (auto& x : k) x = ref::to_act(u(rng), act);
  for (auto& x : v) x = ref::to_act(u(rng), act);
  k[5] = ref::to_act(1000.0f, act);  // saturates in fp8
  std::vector<std::int64_t> slots(tokens);
  std::vector<std::int64_t> perm(blocks * bs);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  for (int t = 0; t < tokens; ++t) slots[t] = t % 9 == 4 ? -1 : perm[t];
  std::vector<std::uint8_t> kc(blocks * bs * row * kv_bytes(dtype), 0x5A), vc(kc);
  Dev dk, dv, ds, dkc, dvc;
  upload(&dk, k);
  upload(&dv, v);
  upload(&ds, slots);
  upload(&dkc, kc);
  upload(&dvc, vc);
  const float ks = 4.0f / 448, vs = 3.0f / 448;
  KvWriteArgs a = kv_write_args(dk.p, dv.p, static_cast<const std::int64_t*>(ds.p), dkc.p, dvc.p,
                                tokens, heads, D, blocks, bs, dtype, ks, vs);
  Status s = kv_write(a, nullptr);
  ASSERT_TRUE(s.ok) << s.message;
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<std::uint8_t> gk(kc.size()), gv(vc.size());
  CUDA_OK(cudaMemcpy(gk.data(), dkc.p, gk.size(), cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(gv.data(), dvc.p, gv.size(), cudaMemcpyDeviceToHost));
  ref::kv_write(kv_write_args(k.data(), v.data(), slots.data(), kc.data(), vc.data(), tokens, heads,
                              D, blocks, bs, dtype, ks, vs));
  EXPECT_EQ(gk, kc);
  EXPECT_EQ(gv, vc);
}
INSTANTIATE_TEST_SUITE_P(AllDtypes, GpuKvWrite,
                         ::testing::Combine(::testing::Values(KvDtype::kF16, KvDtype::kBF16,
                                                              KvDtype::kFP8E4M3),
                                            ::testing::Values(64, 128, 256)));

TEST(Launchers, RejectBadArgumentsBeforeTouchingTheGpu) {
  CaseSpec spec{KvDtype::kBF16, 128, 16, 2, 4, {40}, {}};
  HostCase c = make_case(spec);
  std::uint16_t out = 0;
  DecodeArgs a = c.decode_args(&out);
  a.head_dim = 80;
  Status s = paged_decode(a, nullptr);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.message.find("head_dim 80"), std::string::npos) << s.message;
  PrefillArgs pa = c.prefill_args(&out);
  pa.kv.block_size = 128;
  s = paged_prefill(pa, nullptr);
  EXPECT_NE(s.message.find("block_size 128"), std::string::npos) << s.message;
}

}  // namespace
}  // namespace kvfleet::kernels
