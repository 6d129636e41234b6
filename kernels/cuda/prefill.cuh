#pragma once
// Paged chunked-prefill attention, causal, with grouped-query heads.
//
// One CTA of 128 threads serves one (KV head, sequence, tile of query tokens). The tile holds
// 32 / group query tokens × group heads = up to 32 query rows that share the KV head, so each
// K and V row is read once per tile. Keys are walked in tiles of 32 tokens staged in shared
// memory (fp8 dequantised there): scores (each thread one key for 8 rows), an online softmax per
// row (a warp per row, a lane per key), then weights × V into per-thread accumulators (a thread
// owns a quarter of one row's dims). Keys past a row's position are masked, never read past the
// last needed token. Scores and sums are fp32 on CUDA cores (no tensor cores: a correctness-first
// kernel; docs/kernels.md says what that means for prefill timings).
#include "kernels/cuda/common.cuh"

namespace kvfleet::kernels::cuda {

inline constexpr int kPrefillThreads = 128;
inline constexpr int kPrefillRows = 32;  // query rows (tokens × heads) per CTA
inline constexpr int kPrefillKeys = 32;  // key tokens per shared-memory tile
inline constexpr int kScoreStride = kPrefillKeys + 1;

template <int D>
constexpr std::size_t prefill_smem_bytes() {
  return sizeof(float) * (kPrefillRows * D + kPrefillKeys * (D + 1) + kPrefillRows * kScoreStride +
                          3 * kPrefillRows);
}

template <typename T>
struct PrefillKernelArgs {
  const T* q;  // [num_q_tokens, num_q_heads, D]
  T* out;      // [num_q_tokens, num_q_heads, D]
  const void* k;
  const void* v;
  const std::int32_t* q_indptr;      // [num_seqs + 1]
  const std::int32_t* context_lens;  // [num_seqs]
  const std::int32_t* block_table;   // [num_seqs, max_blocks]
  int max_blocks;
  int block_shift;  // log2(block_size)
  int num_q_heads;
  int num_kv_heads;
  int group;
  float scale_log2;
  float k_scale;
  float v_scale;
};

// Stages keys k0 .. k0+31 (those below kend) of one KV head into dst [32][D + 1]; the rest are 0.
template <typename KV, int D, typename T>
__device__ __forceinline__ void stage_tile(const PrefillKernelArgs<T>& a, const KV* cache,
                                           float scale, int s, int kvh, int k0, int kend,
                                           float* dst) {
  constexpr int VPR = D / 8;  // 8-element vectors per row
  for (int i = threadIdx.x; i < kPrefillKeys * VPR; i += kPrefillThreads) {
    const int j = i / VPR;
    const int c = (i % VPR) * 8;
    const int pos = k0 + j;
    float f[8];
    if (pos < kend) {
      const unsigned up = static_cast<unsigned>(pos);
      const std::int32_t b =
          a.block_table[static_cast<std::size_t>(s) * a.max_blocks + (up >> a.block_shift)];
      const std::size_t slot =
          (static_cast<std::size_t>(b) << a.block_shift) + (up & ((1u << a.block_shift) - 1));
      load_floats<8>(cache + (slot * a.num_kv_heads + kvh) * D + c, f, scale);
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e) f[e] = 0;
    }
#pragma unroll
    for (int e = 0; e < 8; ++e) dst[j * (D + 1) + c + e] = f[e];
  }
}

// One tile of query tokens (blockIdx.z walks tiles with a stride of gridDim.z, so chunks longer
// than 65,535 tiles still run).
template <typename T, typename KV, int D>
__device__ __forceinline__ void prefill_tile(const PrefillKernelArgs<T>& a, float* smem, int tile);

template <typename T, typename KV, int D>
__global__ void __launch_bounds__(kPrefillThreads) prefill_kernel(PrefillKernelArgs<T> a) {
  extern __shared__ float smem[];
  const int s = blockIdx.y;
  const int q_len = a.q_indptr[s + 1] - a.q_indptr[s];
  const int bq = kPrefillRows / a.group;
  for (int tile = blockIdx.z; tile * bq < q_len; tile += gridDim.z) {
    prefill_tile<T, KV, D>(a, smem, tile);
    __syncthreads();  // the next tile restages q_s
  }
}

template <typename T, typename KV, int D>
__device__ __forceinline__ void prefill_tile(const PrefillKernelArgs<T>& a, float* smem, int tile) {
  float* q_s = smem;                               // [rows][D]
  float* kv_s = q_s + kPrefillRows * D;            // [keys][D + 1]
  float* s_s = kv_s + kPrefillKeys * (D + 1);      // [rows][keys + 1]
  float* m_s = s_s + kPrefillRows * kScoreStride;  // [rows]
  float* l_s = m_s + kPrefillRows;                 // [rows]
  float* al_s = l_s + kPrefillRows;                // [rows]
  constexpr int DPT = D / 4;                       // accumulator dims per thread

  const int kvh = blockIdx.x;
  const int s = blockIdx.y;
  const int group = a.group;
  const int bq = kPrefillRows / group;  // query tokens per CTA
  const int rows = bq * group;
  const int q_begin = a.q_indptr[s];
  const int q_len = a.q_indptr[s + 1] - q_begin;
  const int qt0 = tile * bq;
  const int ctx = a.context_lens[s];
  const int prefix = ctx - q_len;  // position of the chunk's first token
  const int nq = min(bq, q_len - qt0);
  const int kend = min(ctx, prefix + qt0 + nq);  // keys needed: 0 .. kend − 1
  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int lane = tid % 32;

  for (int i = tid; i < kPrefillRows * D; i += kPrefillThreads) {
    const int r = i / D;
    const int d = i % D;
    const int qt = r / group;
    float x = 0;
    if (r < rows && qt < nq) {
      const std::size_t token = static_cast<std::size_t>(q_begin) + qt0 + qt;
      x = to_float(a.q[(token * a.num_q_heads + kvh * group + r % group) * D + d]) * a.scale_log2;
    }
    q_s[i] = x;
  }
  if (tid < kPrefillRows) {
    m_s[tid] = -INFINITY;
    l_s[tid] = 0;
  }
  const int my_row = tid / 4;
  const int dlane = tid % 4;
  float acc[DPT];
#pragma unroll
  for (int i = 0; i < DPT; ++i) acc[i] = 0;
  const KV* kc = static_cast<const KV*>(a.k);
  const KV* vc = static_cast<const KV*>(a.v);
  __syncthreads();

  for (int k0 = 0; k0 < kend; k0 += kPrefillKeys) {
    stage_tile<KV, D>(a, kc, a.k_scale, s, kvh, k0, kend, kv_s);
    __syncthreads();
    {  // Scores: this thread's key j against rows warp + 4i.
      const int j = lane;
      float sc[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) sc[i] = 0;
      for (int d = 0; d < D; ++d) {
        const float kj = kv_s[j * (D + 1) + d];
#pragma unroll
        for (int i = 0; i < 8; ++i) sc[i] = fmaf(q_s[(warp + 4 * i) * D + d], kj, sc[i]);
      }
      const int kpos = k0 + j;
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const int r = warp + 4 * i;
        const int qt = r / group;
        const bool ok = r < rows && qt < nq && kpos < kend && kpos <= prefix + qt0 + qt;
        s_s[r * kScoreStride + j] = ok ? sc[i] : -INFINITY;
      }
    }
    __syncthreads();
    for (int r = warp; r < kPrefillRows; r += 4) {  // online softmax, a warp per row
      const float x = s_s[r * kScoreStride + lane];
      const float m_old = m_s[r];
      const float m_new = fmaxf(m_old, warp_max(x));
      const float p = m_new == -INFINITY ? 0.0f : exp2f(x - m_new);
      const float sum = warp_sum(p);
      s_s[r * kScoreStride + lane] = p;
      __syncwarp();  // every lane has read m_s[r] before lane 0 rewrites it (racecheck-clean)
      if (lane == 0) {
        const float al = m_new == -INFINITY ? 1.0f : exp2f(m_old - m_new);
        al_s[r] = al;
        l_s[r] = l_s[r] * al + sum;
        m_s[r] = m_new;
      }
    }
    __syncthreads();
    stage_tile<KV, D>(a, vc, a.v_scale, s, kvh, k0, kend, kv_s);
    __syncthreads();
    {
      const float al = al_s[my_row];
#pragma unroll
      for (int i = 0; i < DPT; ++i) acc[i] *= al;
      for (int j = 0; j < kPrefillKeys; ++j) {
        const float p = s_s[my_row * kScoreStride + j];
#pragma unroll
        for (int i = 0; i < DPT; ++i) acc[i] = fmaf(p, kv_s[j * (D + 1) + dlane + 4 * i], acc[i]);
      }
    }
    __syncthreads();  // the next tile overwrites kv_s and s_s
  }

  const int qt = my_row / group;
  if (my_row < rows && qt < nq) {
    const float l = l_s[my_row];
    const std::size_t token = static_cast<std::size_t>(q_begin) + qt0 + qt;
    T* o = a.out + (token * a.num_q_heads + kvh * group + my_row % group) * D;
#pragma unroll
    for (int i = 0; i < DPT; ++i) o[dlane + 4 * i] = from_float<T>(l > 0 ? acc[i] / l : 0.0f);
  }
}

// The kernel arguments of a validated PrefillArgs (both prefill paths take them).
template <typename T>
PrefillKernelArgs<T> prefill_kernel_args(const PrefillArgs& x) {
  PrefillKernelArgs<T> a{};
  a.q = static_cast<const T*>(x.q);
  a.out = static_cast<T*>(x.out);
  a.k = x.kv.k_cache;
  a.v = x.kv.v_cache;
  a.q_indptr = x.q_indptr;
  a.context_lens = x.context_lens;
  a.block_table = x.kv.block_table;
  a.max_blocks = x.kv.max_blocks_per_seq;
  a.block_shift = __builtin_ctz(static_cast<unsigned>(x.kv.block_size));
  a.num_q_heads = x.num_q_heads;
  a.num_kv_heads = x.num_kv_heads;
  a.group = x.num_q_heads / x.num_kv_heads;
  a.scale_log2 = x.sm_scale * kLog2e;
  a.k_scale = x.kv.k_scale;
  a.v_scale = x.kv.v_scale;
  return a;
}

template <typename T, typename KV, int D>
Status paged_prefill_impl(const PrefillArgs& x, cudaStream_t stream) {
  if (x.num_seqs == 0 || x.max_q_len == 0) return Status::Ok();
  const PrefillKernelArgs<T> a = prefill_kernel_args<T>(x);
  const int bq = kPrefillRows / a.group;
  const dim3 grid(x.num_kv_heads, x.num_seqs, prefill_grid_z(x.max_q_len, bq));
  constexpr std::size_t smem = prefill_smem_bytes<D>();
  if constexpr (smem > 48 * 1024) {
    KVF_CUDA_TRY(cudaFuncSetAttribute(prefill_kernel<T, KV, D>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(smem)));
  }
  prefill_kernel<T, KV, D><<<grid, kPrefillThreads, smem, stream>>>(a);
  KVF_CUDA_TRY(cudaGetLastError());
  return Status::Ok();
}

}  // namespace kvfleet::kernels::cuda
