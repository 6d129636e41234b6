// The CUDA kernels against the CPU references on fresh random data, for every dtype, head dim,
// block size and group size: ragged contexts (0 and 1 token among them), shuffled block ids with
// a prefix block shared by most sequences, two to eight KV heads, NaN in every slot no sequence
// owns, outputs poisoned with NaN before each run and checked fully written.
//
// Outputs are compared per (row, head), element by element, with the reference rounded to the
// output dtype (tolerance.h): at most one step of the output dtype plus a bounded fp32 error.
// tolerance_test.cpp proves on the CPU that this comparison passes a correct fp32 kernel and
// rejects the small bugs a normwise comparison let through. fp8 KV is compared with the reference
// on the same fp8 bytes; the fp8-versus-unquantised error is checked on the CPU in
// reference_test.cpp. KV write is checked bit for bit. Every case skips when no CUDA device is
// present.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "kernels/attention.h"
#include "kernels/ref/numeric.h"
#include "kernels/ref/reference.h"
#include "kernels/tests/case.h"
#include "kernels/tests/tolerance.h"

namespace kvfleet::kernels {
namespace {

using testing::CaseSpec;
using testing::compare_rows;
using testing::HostCase;
using testing::make_case;

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

// Two to eight KV heads: small groups get more KV heads, so every case has 8 to 16 query heads.
int kv_heads_for(int group) { return group == 1 ? 8 : group == 2 ? 4 : 2; }

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

// Waits for the launch, downloads its output and holds it to the reference (tolerance.h).
void expect_matches(const Dev& out, const HostCase& c, const std::vector<double>& want,
                    const std::vector<int>& keys, const std::string& what,
                    const std::vector<double>* spread = nullptr) {
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<double> got;
  download_act(out, c.q.size(), act_dtype(c.spec.dtype), &got);
  const auto cmp = compare_rows(got, want, c.num_q_heads, c.spec.head_dim, act_dtype(c.spec.dtype),
                                keys, spread);
  EXPECT_TRUE(cmp.ok()) << what << cmp.describe();
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
  // Sequence 0 spans three blocks and more; sequences 3 and 4 share its first block. Contexts 0
  // and 1, and 700 tokens (three partitions: two boundaries).
  CaseSpec spec{p.dtype,
                p.head_dim,
                p.block_size,
                kv_heads_for(p.group),
                p.group,
                {3 * p.block_size + 5, 0, 1, 700, 2 * p.block_size},
                {}};
  spec.seed = 100 + p.head_dim * 7 + p.block_size * 3 + p.group;
  HostCase c = make_case(spec);
  ASSERT_EQ(c.block_table[3 * c.max_blocks], c.block_table[0]) << "the prefix block is shared";
  std::vector<double> want(c.q.size());
  ref::paged_decode(c.decode_args(nullptr), want.data());
  DeviceCase d;
  d.load(c);
  // Explicit split counts, then the automatic choice on two SM counts (one that splits and one
  // that does not); the count used is the host's decode_splits().
  struct Run {
    int splits;
    int sms;
  };
  for (Run r : {Run{1, 132}, Run{2, 132}, Run{3, 132}, Run{5, 132}, Run{0, 132}, Run{0, 4}}) {
    DecodeArgs a = c.decode_args(d.out.p);
    a.q = d.q.p;
    a.context_lens = static_cast<const std::int32_t*>(d.ctx.p);
    a.kv = d.kv(c);
    a.num_splits = r.splits;
    a.num_sms = r.sms;
    a.workspace = d.ws.p;
    a.workspace_bytes = d.ws.bytes;
    d.poison_out(c.q.size());
    Status s = paged_decode(a, nullptr);
    ASSERT_TRUE(s.ok) << s.message;
    expect_matches(
        d.out, c, want, testing::decode_keys(c.context_lens),
        "splits " + std::to_string(r.splits) + " on " + std::to_string(r.sms) + " SMs: ");
  }
}

TEST_P(GpuKernels, ContiguousDecodeMatchesReference) {
  const Shape p = GetParam();
  CaseSpec spec{p.dtype,
                p.head_dim,
                p.block_size,
                kv_heads_for(p.group),
                p.group,
                {5, 0, 2 * p.block_size + 1, 600},
                {}};
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
  for (int splits : {1, 2, 3, 0}) {
    ContiguousDecodeArgs a = c.contiguous_args(dk.p, dv.p, max_ctx, d.out.p);
    a.q = d.q.p;
    a.context_lens = static_cast<const std::int32_t*>(d.ctx.p);
    a.num_splits = splits;
    a.num_sms = 132;
    a.workspace = d.ws.p;
    a.workspace_bytes = d.ws.bytes;
    d.poison_out(c.q.size());
    Status s = contiguous_decode(a, nullptr);
    ASSERT_TRUE(s.ok) << s.message;
    expect_matches(d.out, c, want, testing::decode_keys(c.context_lens),
                   "splits " + std::to_string(splits) + ": ");
  }
}

TEST_P(GpuKernels, PagedPrefillMatchesReference) {
  const Shape p = GetParam();
  // A whole prompt, a chunk after a ragged prefix, a one-token chunk, a long chunk, and a
  // sequence with no new tokens this step.
  CaseSpec spec{p.dtype,
                p.head_dim,
                p.block_size,
                kv_heads_for(p.group),
                p.group,
                {23, 59, 70, 300, 40},
                {23, 19, 1, 130, 0}};
  spec.seed = 300 + p.head_dim + p.block_size + p.group;
  HostCase c = make_case(spec);
  std::vector<double> want(c.q.size()), spread(c.q.size());
  ref::paged_prefill(c.prefill_args(nullptr), want.data(), spread.data());
  DeviceCase d;
  d.load(c);
  // Both paths: tensor cores (the default; its weights are rounded to the activation dtype for
  // the weighted sum, which the limit allows for) and the CUDA-core reference path.
  for (PrefillPath path : {PrefillPath::kTensorCores, PrefillPath::kCudaCores}) {
    PrefillArgs a = c.prefill_args(d.out.p);
    a.q = d.q.p;
    a.q_indptr = static_cast<const std::int32_t*>(d.indptr.p);
    a.context_lens = static_cast<const std::int32_t*>(d.ctx.p);
    a.kv = d.kv(c);
    a.path = path;
    d.poison_out(c.q.size());
    Status s = paged_prefill(a, nullptr);
    ASSERT_TRUE(s.ok) << s.message;
    const bool tc = path == PrefillPath::kTensorCores;
    expect_matches(d.out, c, want, testing::prefill_keys(c.context_lens, c.q_indptr),
                   tc ? "tensor cores: " : "CUDA cores: ", tc ? &spread : nullptr);
  }
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
  slots[7] = blocks * bs;  // one past the cache: skipped and counted
  slots[30] = 1LL << 40;   // far past it
  const std::vector<std::int32_t> zero = {0};
  std::vector<std::uint8_t> kc(blocks * bs * row * kv_bytes(dtype), 0x5A), vc(kc);
  Dev dk, dv, ds, dkc, dvc, dbad;
  upload(&dbad, zero);
  upload(&dk, k);
  upload(&dv, v);
  upload(&ds, slots);
  upload(&dkc, kc);
  upload(&dvc, vc);
  const float ks = 4.0f / 448, vs = 3.0f / 448;
  KvWriteArgs a = kv_write_args(dk.p, dv.p, static_cast<const std::int64_t*>(ds.p), dkc.p, dvc.p,
                                tokens, heads, D, blocks, bs, dtype, ks, vs);
  a.bad_slots = static_cast<std::int32_t*>(dbad.p);
  Status s = kv_write(a, nullptr);
  ASSERT_TRUE(s.ok) << s.message;
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<std::uint8_t> gk(kc.size()), gv(vc.size());
  CUDA_OK(cudaMemcpy(gk.data(), dkc.p, gk.size(), cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(gv.data(), dvc.p, gv.size(), cudaMemcpyDeviceToHost));
  std::int32_t gpu_bad = -1, ref_bad = 0;
  CUDA_OK(cudaMemcpy(&gpu_bad, dbad.p, sizeof gpu_bad, cudaMemcpyDeviceToHost));
  KvWriteArgs r = kv_write_args(k.data(), v.data(), slots.data(), kc.data(), vc.data(), tokens,
                                heads, D, blocks, bs, dtype, ks, vs);
  r.bad_slots = &ref_bad;
  ref::kv_write(r);
  EXPECT_EQ(gk, kc);
  EXPECT_EQ(gv, vc);
  EXPECT_EQ(ref_bad, 2);
  EXPECT_EQ(gpu_bad, 2) << "tokens with slots past the cache are counted once each";
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
  // A query slice 2 bytes into a buffer (as into a fused QKV tensor) is refused, not launched.
  a = c.decode_args(&out);
  a.q = reinterpret_cast<const char*>(c.q.data()) + 2;
  s = paged_decode(a, nullptr);
  EXPECT_NE(s.message.find("q ("), std::string::npos) << s.message;
  EXPECT_NE(s.message.find("aligned to 16 bytes"), std::string::npos) << s.message;
}

}  // namespace
}  // namespace kvfleet::kernels
