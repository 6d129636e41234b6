// Probes: device facts, copy bandwidth and cuBLASLt GEMM timing (kernels/probes.h).
#include <cublasLt.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>
#include <vector>

#include "kernels/cuda/common.cuh"
#include "kernels/probes.h"

namespace kvfleet::kernels {
namespace {

#define KVF_CUBLAS_TRY(expr)                                                                      \
  do {                                                                                            \
    cublasStatus_t kvf_st_ = (expr);                                                              \
    if (kvf_st_ != CUBLAS_STATUS_SUCCESS) {                                                       \
      std::ostringstream kvf_os_;                                                                 \
      kvf_os_ << "cuBLASLt error " << cublasLtGetStatusName(kvf_st_) << " in " << #expr << " at " \
              << __FILE__ << ":" << __LINE__;                                                     \
      return Status::Error(kvf_os_.str());                                                        \
    }                                                                                             \
  } while (0)

// Owns device or pinned host memory and CUDA objects for the length of one probe.
struct DeviceBuffer {
  void* p = nullptr;
  ~DeviceBuffer() {
    if (p) cudaFree(p);
  }
};
struct HostBuffer {
  void* p = nullptr;
  ~HostBuffer() {
    if (p) cudaFreeHost(p);
  }
};
struct Events {
  cudaEvent_t start = nullptr, stop = nullptr;
  ~Events() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

__global__ void fill_random(std::uint8_t* p, std::size_t bytes, std::uint32_t seed, int elem,
                            int kind) {
  // Values in [-1, 1) for 2-byte floats (kind 0 fp16, 1 bf16) and fp8 (kind 2).
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
       i * elem < bytes; i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::uint32_t h = static_cast<std::uint32_t>(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    const float x = (h & 0xFFFFFF) / 8388608.0f - 1.0f;
    if (kind == 0) {
      reinterpret_cast<__half*>(p)[i] = __float2half_rn(x);
    } else if (kind == 1) {
      reinterpret_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(x);
    } else {
      p[i] = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
    }
  }
}

Status ok(cudaError_t e) {
  if (e != cudaSuccess) return cuda::cuda_error(e, "probe operation", __FILE__, __LINE__);
  return Status::Ok();
}
Status ok(Status s) { return s; }

// Median seconds of `iters` runs of op() (returning cudaError_t or Status) after `warmup` runs,
// each between two CUDA events on the default stream.
template <typename F>
Status time_median(int warmup, int iters, F op, double* median_s) {
  Events ev;
  KVF_CUDA_TRY(cudaEventCreate(&ev.start));
  KVF_CUDA_TRY(cudaEventCreate(&ev.stop));
  for (int i = 0; i < warmup; ++i) {
    if (Status s = ok(op()); !s) return s;
  }
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    KVF_CUDA_TRY(cudaEventRecord(ev.start));
    if (Status s = ok(op()); !s) return s;
    KVF_CUDA_TRY(cudaEventRecord(ev.stop));
    KVF_CUDA_TRY(cudaEventSynchronize(ev.stop));
    float ms = 0;
    KVF_CUDA_TRY(cudaEventElapsedTime(&ms, ev.start, ev.stop));
    t.push_back(ms * 1e-3);
  }
  *median_s = median(t);
  return Status::Ok();
}

}  // namespace

Status device_info(DeviceInfo* out) {
  DeviceInfo d;
  KVF_CUDA_TRY(cudaGetDevice(&d.device));
  cudaDeviceProp p{};
  KVF_CUDA_TRY(cudaGetDeviceProperties(&p, d.device));
  d.name = p.name;
  d.sm_count = p.multiProcessorCount;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.memory_bytes = p.totalGlobalMem;
  d.l2_bytes = p.l2CacheSize;
  KVF_CUDA_TRY(cudaDriverGetVersion(&d.driver_version));
  KVF_CUDA_TRY(cudaRuntimeGetVersion(&d.runtime_version));
  KVF_CUDA_TRY(cudaDeviceGetAttribute(&d.sm_clock_khz, cudaDevAttrClockRate, d.device));
  KVF_CUDA_TRY(cudaDeviceGetAttribute(&d.mem_clock_khz, cudaDevAttrMemoryClockRate, d.device));
  *out = d;
  return Status::Ok();
}

Status measure_copy_bandwidth(std::size_t bytes, int iters, CopyBandwidth* out) {
  if (bytes == 0 || iters <= 0) return Status::Error("copy bandwidth: bytes and iters must be > 0");
  DeviceBuffer a, b;
  HostBuffer h;
  KVF_CUDA_TRY(cudaMalloc(&a.p, bytes));
  KVF_CUDA_TRY(cudaMalloc(&b.p, bytes));
  KVF_CUDA_TRY(cudaMallocHost(&h.p, bytes));
  KVF_CUDA_TRY(cudaMemset(a.p, 1, bytes));
  CopyBandwidth r;
  r.bytes = bytes;
  // Each kind: destination, source, direction, bytes counted per copy, result.
  const struct {
    void* dst;
    const void* src;
    cudaMemcpyKind kind;
    double counted;
    double* gbps;
  } kinds[] = {{b.p, a.p, cudaMemcpyDeviceToDevice, 2.0 * bytes, &r.d2d_GBps},
               {a.p, h.p, cudaMemcpyHostToDevice, 1.0 * bytes, &r.h2d_GBps},
               {h.p, a.p, cudaMemcpyDeviceToHost, 1.0 * bytes, &r.d2h_GBps}};
  for (const auto& k : kinds) {
    double t = 0;
    Status s = time_median(
        1, iters, [&] { return cudaMemcpyAsync(k.dst, k.src, bytes, k.kind); }, &t);
    if (!s) return s;
    *k.gbps = k.counted / t / 1e9;
  }
  *out = r;
  return Status::Ok();
}

Status time_gemm(const GemmShape& g, int warmup, int iters, double* median_s) {
  if (g.m <= 0 || g.n <= 0 || g.k <= 0 || iters <= 0) {
    return Status::Error("GEMM timing: m, n, k and iters must be positive");
  }
  const bool f8 = g.dtype == GemmDtype::kFP8E4M3;
  if (f8 && (g.m % 16 || g.n % 16 || g.k % 16)) {
    return Status::Error("GEMM timing: fp8 needs m, n and k multiples of 16");
  }
  const cudaDataType_t in = g.dtype == GemmDtype::kF16    ? CUDA_R_16F
                            : g.dtype == GemmDtype::kBF16 ? CUDA_R_16BF
                                                          : CUDA_R_8F_E4M3;
  const cudaDataType_t outt = g.dtype == GemmDtype::kF16 ? CUDA_R_16F : CUDA_R_16BF;
  const std::size_t in_bytes = f8 ? 1 : 2;
  const std::size_t workspace_bytes = 64u << 20;
  DeviceBuffer A, B, D, W;
  KVF_CUDA_TRY(cudaMalloc(&A.p, in_bytes * g.m * g.k));
  KVF_CUDA_TRY(cudaMalloc(&B.p, in_bytes * g.k * g.n));
  KVF_CUDA_TRY(cudaMalloc(&D.p, 2u * g.m * g.n));
  KVF_CUDA_TRY(cudaMalloc(&W.p, workspace_bytes));
  const int kind = g.dtype == GemmDtype::kF16 ? 0 : g.dtype == GemmDtype::kBF16 ? 1 : 2;
  fill_random<<<1024, 256>>>(static_cast<std::uint8_t*>(A.p), in_bytes * g.m * g.k, 1, in_bytes,
                             kind);
  KVF_CUDA_TRY(cudaGetLastError());
  fill_random<<<1024, 256>>>(static_cast<std::uint8_t*>(B.p), in_bytes * g.k * g.n, 2, in_bytes,
                             kind);
  KVF_CUDA_TRY(cudaGetLastError());

  cublasLtHandle_t lt = nullptr;
  KVF_CUBLAS_TRY(cublasLtCreate(&lt));
  std::unique_ptr<cublasLtContext, decltype(&cublasLtDestroy)> lt_guard(lt, cublasLtDestroy);
  cublasLtMatmulDesc_t op = nullptr;
  KVF_CUBLAS_TRY(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  std::unique_ptr<cublasLtMatmulDescOpaque_t, decltype(&cublasLtMatmulDescDestroy)> op_guard(
      op, cublasLtMatmulDescDestroy);
  // Column-major D[m, n] = op(A)[m, k] · B[k, n] with A stored [k, m] and transposed ("TN", the
  // layout fp8 requires and the fast one for the others).
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  KVF_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  KVF_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  KVF_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&la, in, g.k, g.m, g.k));
  KVF_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&lb, in, g.k, g.n, g.k));
  KVF_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&ld, outt, g.m, g.n, g.m));
  std::unique_ptr<cublasLtMatrixLayoutOpaque_t, decltype(&cublasLtMatrixLayoutDestroy)> ga(
      la, cublasLtMatrixLayoutDestroy),
      gb(lb, cublasLtMatrixLayoutDestroy), gd(ld, cublasLtMatrixLayoutDestroy);
  cublasLtMatmulPreference_t pref = nullptr;
  KVF_CUBLAS_TRY(cublasLtMatmulPreferenceCreate(&pref));
  std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, decltype(&cublasLtMatmulPreferenceDestroy)> gp(
      pref, cublasLtMatmulPreferenceDestroy);
  KVF_CUBLAS_TRY(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes, sizeof(workspace_bytes)));
  cublasLtMatmulHeuristicResult_t heur{};
  int found = 0;
  KVF_CUBLAS_TRY(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, ld, ld, pref, 1, &heur, &found));
  if (found == 0) return Status::Error("GEMM timing: cuBLASLt has no algorithm for this shape");
  const float alpha = 1.0f, beta = 0.0f;
  auto run = [&]() -> Status {
    KVF_CUBLAS_TRY(cublasLtMatmul(lt, op, &alpha, A.p, la, B.p, lb, &beta, D.p, ld, D.p, ld,
                                  &heur.algo, W.p, workspace_bytes, nullptr));
    return Status::Ok();
  };
  return time_median(warmup, iters, run, median_s);
}

namespace {

// Device memory holding random values of a KV dtype (or activations), freed on scope exit.
Status random_device(std::size_t bytes, int kind, std::uint32_t seed, DeviceBuffer* b) {
  KVF_CUDA_TRY(cudaMalloc(&b->p, std::max<std::size_t>(bytes, 16)));
  const int elem = kind == 2 ? 1 : 2;
  fill_random<<<1024, 256>>>(static_cast<std::uint8_t*>(b->p), bytes, seed, elem, kind);
  KVF_CUDA_TRY(cudaGetLastError());
  return Status::Ok();
}
int kind_of(KvDtype d) { return d == KvDtype::kF16 ? 0 : d == KvDtype::kBF16 ? 1 : 2; }
int act_kind(KvDtype d) { return d == KvDtype::kF16 ? 0 : 1; }

int l2_copies(std::size_t bytes) {
  int dev = 0, l2 = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev) != cudaSuccess) {
    l2 = 64 << 20;
  }
  return static_cast<int>(std::clamp(std::ceil(3.0 * l2 / std::max<double>(bytes, 1)), 1.0, 8.0));
}

// KV pools (copies for rotation) with shuffled block tables for `seqs` sequences of `tokens`.
struct Pools {
  std::vector<DeviceBuffer> k, v, table;
  DeviceBuffer lens;
  int max_blocks = 0, num_blocks = 0;
};
Status make_pools(const AttentionShape& s, int seqs, int tokens, Pools* p) {
  p->max_blocks = std::max(1, (tokens + s.block_size - 1) / s.block_size);
  p->num_blocks = seqs * p->max_blocks;
  const std::size_t each = static_cast<std::size_t>(p->num_blocks) * s.block_size * s.kv_heads *
                           s.head_dim * kv_bytes(s.dtype);
  const int copies = l2_copies(2 * each);
  p->k.resize(copies);
  p->v.resize(copies);
  p->table.resize(copies);
  std::mt19937 rng(tokens + seqs);
  for (int c = 0; c < copies; ++c) {
    if (Status st = random_device(each, kind_of(s.dtype), 2 * c + 1, &p->k[c]); !st) return st;
    if (Status st = random_device(each, kind_of(s.dtype), 2 * c + 2, &p->v[c]); !st) return st;
    std::vector<std::int32_t> ids(p->num_blocks);
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng);
    KVF_CUDA_TRY(cudaMalloc(&p->table[c].p, ids.size() * 4));
    KVF_CUDA_TRY(cudaMemcpy(p->table[c].p, ids.data(), ids.size() * 4, cudaMemcpyHostToDevice));
  }
  std::vector<std::int32_t> lens(seqs, tokens);
  KVF_CUDA_TRY(cudaMalloc(&p->lens.p, lens.size() * 4));
  KVF_CUDA_TRY(cudaMemcpy(p->lens.p, lens.data(), lens.size() * 4, cudaMemcpyHostToDevice));
  return Status::Ok();
}
void use(const Pools& p, int i, const AttentionShape& s, PagedKv* kv) {
  const int c = i % static_cast<int>(p.k.size());
  kv->k_cache = p.k[c].p;
  kv->v_cache = p.v[c].p;
  kv->block_table = static_cast<const std::int32_t*>(p.table[c].p);
  kv->num_blocks = p.num_blocks;
  kv->block_size = s.block_size;
  kv->max_blocks_per_seq = p.max_blocks;
  kv->dtype = s.dtype;
  kv->k_scale = kv->v_scale = 0.01f;
}

}  // namespace

Status time_decode(const AttentionShape& s, int iters, double* median_s) {
  Pools pools;
  if (Status st = make_pools(s, s.batch, s.context, &pools); !st) return st;
  DeviceBuffer q, out, ws;
  const std::size_t qbytes = static_cast<std::size_t>(s.batch) * s.q_heads * s.head_dim * 2;
  if (Status st = random_device(qbytes, act_kind(s.dtype), 7, &q); !st) return st;
  KVF_CUDA_TRY(cudaMalloc(&out.p, qbytes));
  int dev = 0, sms = 0;
  KVF_CUDA_TRY(cudaGetDevice(&dev));
  KVF_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  DecodeArgs a = decode_args(s, q.p, out.p, static_cast<const std::int32_t*>(pools.lens.p));
  a.num_splits = 0;
  a.num_sms = sms;
  use(pools, 0, s, &a.kv);
  int splits = 1;
  if (Status st = paged_decode_splits(a, &splits); !st) return st;
  const std::size_t ws_bytes = decode_workspace_bytes(splits, s.batch, s.q_heads, s.head_dim);
  KVF_CUDA_TRY(cudaMalloc(&ws.p, std::max<std::size_t>(ws_bytes, 16)));
  a.num_splits = splits;
  a.workspace = ws.p;
  a.workspace_bytes = ws_bytes;
  int i = 0;
  return time_median(
      3, iters,
      [&] {
        use(pools, i++, s, &a.kv);
        return paged_decode(a, nullptr);
      },
      median_s);
}

Status time_prefill(const AttentionShape& s, int iters, double* median_s) {
  const int ctx = s.prefix + s.chunk;
  Pools pools;
  if (Status st = make_pools(s, 1, ctx, &pools); !st) return st;
  DeviceBuffer q, out, indptr;
  const std::size_t qbytes = static_cast<std::size_t>(s.chunk) * s.q_heads * s.head_dim * 2;
  if (Status st = random_device(qbytes, act_kind(s.dtype), 7, &q); !st) return st;
  KVF_CUDA_TRY(cudaMalloc(&out.p, qbytes));
  const std::int32_t ip[2] = {0, s.chunk};
  KVF_CUDA_TRY(cudaMalloc(&indptr.p, sizeof ip));
  KVF_CUDA_TRY(cudaMemcpy(indptr.p, ip, sizeof ip, cudaMemcpyHostToDevice));
  PrefillArgs a = prefill_args(s, q.p, out.p, static_cast<const std::int32_t*>(indptr.p),
                               static_cast<const std::int32_t*>(pools.lens.p));
  int i = 0;
  return time_median(
      3, iters,
      [&] {
        use(pools, i++, s, &a.kv);
        return paged_prefill(a, nullptr);
      },
      median_s);
}

Status time_kv_write(int tokens, int kv_heads, int head_dim, KvDtype dtype, int iters,
                     double* median_s) {
  const int bs = 16;
  const int blocks = (tokens + bs - 1) / bs * 2;
  const std::size_t row = static_cast<std::size_t>(kv_heads) * head_dim;
  DeviceBuffer k, v, kc, vc, slots;
  if (Status st = random_device(tokens * row * 2, act_kind(dtype), 1, &k); !st) return st;
  if (Status st = random_device(tokens * row * 2, act_kind(dtype), 2, &v); !st) return st;
  KVF_CUDA_TRY(cudaMalloc(&kc.p, blocks * bs * row * kv_bytes(dtype)));
  KVF_CUDA_TRY(cudaMalloc(&vc.p, blocks * bs * row * kv_bytes(dtype)));
  std::vector<std::int64_t> perm(static_cast<std::size_t>(blocks) * bs);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(tokens));
  KVF_CUDA_TRY(cudaMalloc(&slots.p, tokens * 8));
  KVF_CUDA_TRY(cudaMemcpy(slots.p, perm.data(), tokens * 8, cudaMemcpyHostToDevice));
  KvWriteArgs a;
  a.k = k.p;
  a.v = v.p;
  a.slot_mapping = static_cast<const std::int64_t*>(slots.p);
  a.k_cache = kc.p;
  a.v_cache = vc.p;
  a.num_tokens = tokens;
  a.num_kv_heads = kv_heads;
  a.head_dim = head_dim;
  a.num_blocks = blocks;
  a.block_size = bs;
  a.dtype = dtype;
  a.k_scale = a.v_scale = 0.01f;
  return time_median(
      3, iters, [&] { return kv_write(a, nullptr); }, median_s);
}

}  // namespace kvfleet::kernels
