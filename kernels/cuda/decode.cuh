#pragma once
// Paged (and contiguous) decode attention with grouped-query heads and split-KV, built to keep
// the memory system busy.
//
// One CTA of 4 warps serves one (KV head, sequence, split): the `group` query heads that share
// the KV head read each K and V row once. Each warp works on its own: it walks the CTA's tokens
// in chunks (warp w takes chunks w, w + 4, ...), copying each chunk's K and V rows (4 KB) into
// its own shared-memory buffer with cp.async while it computes the previous chunk (double
// buffering), so the loads in flight do not cost registers and K and V arrive together (V is
// never waited for after the softmax). A lane owns 8 elements of the head dim (16-byte K and V
// reads from shared memory for fp16/bf16, 8-byte for fp8), D/8 lanes per token, 32/(D/8) tokens
// per step; it keeps the scaled queries of the group's heads and an fp32 accumulator for them in
// registers, and a running max (log2 units) and sum per head (online softmax per warp: no block
// barrier per partition). The block table is staged in shared memory a window of 256 entries at
// a time, so an address is one shared load, never a dependent global one. At the end the warps
// meet in shared memory; with split-KV each CTA writes its normalised partial output, its max and
// its sum, and split_reduce_kernel combines them.
//
// The group size is a template parameter (1, 2, 4 or 8: a group of 3 runs the 4-wide kernel with
// the fourth head masked), so a model with 4 query heads per KV head holds 4 accumulators, not 8.
// fp8 K and V are converted two at a time (fp8x2 → half2 → float2); the K scale is folded into
// the queries and the V scale into the final normalisation. fp32 throughout.
#include <atomic>
#include <type_traits>

#include "kernels/cuda/common.cuh"

namespace kvfleet::kernels::cuda {

inline constexpr int kDecodeThreads = 128;
inline constexpr int kDecodeWarps = kDecodeThreads / 32;
inline constexpr int kDecodeStageBytes = 4096;  // K and V of one chunk, per warp and buffer
inline constexpr int kDecodeTableWindow = 256;  // block-table entries staged at a time
// A split's first token is a multiple of the partition, so a window starts on a block boundary
// for every supported block size (8 to 64) and its entries fit the staged table.
static_assert(kDecodePartitionTokens % 64 == 0, "partitions must be whole blocks");

// The compile-time shape of one decode kernel.
template <typename KV, int D, int G>
struct DecodeShape {
  static constexpr int kElems = 8;                    // head-dim elements per lane
  static constexpr int kLanes = D / kElems;           // lanes per token
  static constexpr int kTokensPerStep = 32 / kLanes;  // tokens per warp step
  static constexpr int kChunk = kDecodeStageBytes / (2 * D * sizeof(KV));  // tokens per chunk
  static constexpr int kSteps = kChunk / kTokensPerStep;                   // steps per chunk
  static constexpr int kSubMax = G >= 8 ? 2 : 4;  // logits held in registers: kSub × G
  static constexpr int kSub = kSteps < kSubMax ? kSteps : kSubMax;  // steps per softmax update
  static constexpr int kPieces = kChunk * D * sizeof(KV) / 16;      // 16-byte copies, K alone
  static_assert(kSteps % kSub == 0 && kPieces % 32 == 0, "chunk shape");
  static constexpr std::size_t kCombineBytes = sizeof(float) * kDecodeWarps * G * D;
  static constexpr std::size_t kBufferBytes = 2 * kDecodeWarps * kDecodeStageBytes;
  static_assert(kCombineBytes <= kBufferBytes, "the warps meet in the chunk buffers");
};

template <typename T>
struct DecodeKernelArgs {
  const T* q;                        // [num_seqs, num_q_heads, D]
  T* out;                            // [num_seqs, num_q_heads, D]
  const void* k;                     // K cache (paged) or contiguous K
  const void* v;                     // V cache (paged) or contiguous V
  const std::int32_t* context_lens;  // [num_seqs]
  const std::int32_t* block_table;   // [num_seqs, max_blocks] (paged)
  int max_blocks;
  int block_shift;  // log2(block size) (paged)
  int max_context;  // contiguous: tokens per sequence row
  int row_stride;   // num_kv_heads × D
  int num_q_heads;
  int group;
  float q_scale;  // sm_scale × log2(e), × k_scale for fp8
  float v_scale;  // fp8: applied to the output; 1 otherwise
  int num_splits;
  float* part_out;  // [num_seqs, num_q_heads, num_splits, D] when num_splits > 1
  float* part_ml;   // [num_seqs, num_q_heads, num_splits, 2]: max (log2 units), sum
};

// 8 consecutive cache elements from shared memory as floats (fp8 unscaled: the scales are folded).
template <typename KV>
__device__ __forceinline__ void smem_floats8(const KV* p, float (&f)[8]) {
  if constexpr (kIsFp8<KV>) {
    const uint2 raw = *reinterpret_cast<const uint2*>(p);
    const unsigned w[2] = {raw.x, raw.y};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 x = fp8x2_to_float2(w[i / 2] >> (16 * (i % 2)));
      f[2 * i] = x.x;
      f[2 * i + 1] = x.y;
    }
  } else {
    const uint4 raw = *reinterpret_cast<const uint4*>(p);
    const unsigned w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float2 x;
      if constexpr (std::is_same_v<KV, bf16>) {
        x = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&w[i]));
      } else {
        x = __half22float2(*reinterpret_cast<const __half2*>(&w[i]));
      }
      f[2 * i] = x.x;
      f[2 * i + 1] = x.y;
    }
  }
}

template <typename T, typename KV, int D, int G, bool kPaged>
__global__ void __launch_bounds__(kDecodeThreads, G <= 4 ? 4 : 2)
    decode_kernel(DecodeKernelArgs<T> a) {
  using S = DecodeShape<KV, D, G>;
  constexpr int E = S::kElems;
  constexpr int L = S::kLanes;
  constexpr int TPS = S::kTokensPerStep;
  constexpr int C = S::kChunk;
  constexpr int SUB = S::kSub;
  constexpr int P = kDecodePartitionTokens;
  __shared__ __align__(16) unsigned char buffers[S::kBufferBytes];  // [warp][2][K chunk, V chunk]
  __shared__ std::int32_t table_s[kDecodeTableWindow];
  __shared__ float m_s[kDecodeWarps][G], l_s[kDecodeWarps][G];

  const int kvh = blockIdx.x;
  const int s = blockIdx.y;
  const int split = blockIdx.z;
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int ctx = a.context_lens[s];
  const int parts = (ctx + P - 1) / P;
  const int per = (parts + a.num_splits - 1) / a.num_splits;
  const int t_begin = min(ctx, split * per * P);
  const int t_end = min(ctx, t_begin + per * P);
  const int kd = (lane % L) * E;  // this lane's head-dim elements
  const int tok = lane / L;       // this lane's token within a step
  const int bmask = (1 << a.block_shift) - 1;

  float q[G][E];
#pragma unroll
  for (int g = 0; g < G; ++g) {
    if (g < a.group) {
      const T* qp =
          a.q + (static_cast<std::size_t>(s) * a.num_q_heads + kvh * a.group + g) * D + kd;
      load_floats<E>(qp, q[g], 1.0f);
#pragma unroll
      for (int e = 0; e < E; ++e) q[g][e] *= a.q_scale;
    } else {
#pragma unroll
      for (int e = 0; e < E; ++e) q[g][e] = 0;
    }
  }
  float acc[G][E], m[G], l[G];
#pragma unroll
  for (int g = 0; g < G; ++g) {
    m[g] = -INFINITY;
    l[g] = 0;
#pragma unroll
    for (int e = 0; e < E; ++e) acc[g][e] = 0;
  }

  const KV* kc = static_cast<const KV*>(a.k);
  const KV* vc = static_cast<const KV*>(a.v);
  KV* my_buf = reinterpret_cast<KV*>(buffers + warp * 2 * kDecodeStageBytes);
  const int window_tokens = kPaged ? (kDecodeTableWindow << a.block_shift) : (t_end - t_begin);

  for (int w0 = t_begin; w0 < t_end; w0 += window_tokens) {
    const int w1 = min(t_end, w0 + window_tokens);
    if constexpr (kPaged) {
      __syncthreads();  // every warp is done with the previous window's entries
      const int first = w0 >> a.block_shift;
      const int n = ((w1 - 1) >> a.block_shift) - first + 1;
      for (int i = threadIdx.x; i < n; i += kDecodeThreads) {
        table_s[i] = a.block_table[static_cast<std::size_t>(s) * a.max_blocks + first + i];
      }
      __syncthreads();
    }
    // The element offset of token t's row (KV head kvh, dim 0) in the caches.
    auto row_offset = [&](int t) -> std::size_t {
      std::size_t row;
      if constexpr (kPaged) {
        const std::int32_t b = table_s[(t - w0) >> a.block_shift];
        row = (static_cast<std::size_t>(b) << a.block_shift) + (t & bmask);
      } else {
        row = static_cast<std::size_t>(s) * a.max_context + t;
      }
      return row * a.row_stride + static_cast<std::size_t>(kvh) * D;
    };
    // Issues the copies of chunk c (tokens w0 + c·C ..) into buffer `buf`.
    auto issue = [&](int c, int buf) {
      KV* kb = my_buf + buf * (kDecodeStageBytes / sizeof(KV));
      KV* vb = kb + C * D;
      constexpr int kPerRow = D * sizeof(KV) / 16;
#pragma unroll
      for (int i = lane; i < S::kPieces; i += 32) {
        const int tl = i / kPerRow;
        const int col = (i % kPerRow) * (16 / sizeof(KV));
        const int t = w0 + c * C + tl;
        const bool valid = t < w1;
        const std::size_t off = valid ? row_offset(t) + col : 0;
        cp_async16(kb + tl * D + col, kc + off, valid);
        cp_async16(vb + tl * D + col, vc + off, valid);
      }
      cp_async_commit();
    };

    const int chunks = (w1 - w0 + C - 1) / C;
    int buf = 0;
    if (warp < chunks) issue(warp, 0);
    for (int c = warp; c < chunks; c += kDecodeWarps) {
      if (c + kDecodeWarps < chunks) {
        issue(c + kDecodeWarps, buf ^ 1);
        cp_async_wait<1>();
      } else {
        cp_async_wait<0>();
      }
      __syncwarp();  // the copies of every lane are visible to all
      const KV* kb = my_buf + buf * (kDecodeStageBytes / sizeof(KV));
      const KV* vb = kb + C * D;
      const int t0 = w0 + c * C;
      // Not unrolled: each pass holds kSub × G logits, and unrolling the passes of an fp8 chunk
      // at group width 8 made the compiler keep them all (and spill).
#pragma unroll 1
      for (int u0 = 0; u0 < S::kSteps; u0 += SUB) {
        float lg[SUB][G];
#pragma unroll
        for (int j = 0; j < SUB; ++j) {
          const int tl = (u0 + j) * TPS + tok;
          float kf[E];
          smem_floats8(kb + tl * D + kd, kf);
#pragma unroll
          for (int g = 0; g < G; ++g) {
            float d = 0;
#pragma unroll
            for (int e = 0; e < E; ++e) d = fmaf(q[g][e], kf[e], d);
#pragma unroll
            for (int off = L / 2; off > 0; off >>= 1) d += __shfl_xor_sync(0xffffffffu, d, off);
            lg[j][g] = t0 + tl < w1 ? d : -INFINITY;
          }
        }
#pragma unroll
        for (int g = 0; g < G; ++g) {
          float cm = lg[0][g];
#pragma unroll
          for (int j = 1; j < SUB; ++j) cm = fmaxf(cm, lg[j][g]);
#pragma unroll
          for (int off = L; off < 32; off <<= 1)
            cm = fmaxf(cm, __shfl_xor_sync(0xffffffffu, cm, off));
          const float m_new = fmaxf(m[g], cm);
          const float al = m_new == -INFINITY ? 1.0f : exp2f(m[g] - m_new);
          m[g] = m_new;
          l[g] *= al;
#pragma unroll
          for (int e = 0; e < E; ++e) acc[g][e] *= al;
        }
#pragma unroll
        for (int j = 0; j < SUB; ++j) {
          const int tl = (u0 + j) * TPS + tok;
          float vf[E];
          smem_floats8(vb + tl * D + kd, vf);
#pragma unroll
          for (int g = 0; g < G; ++g) {
            const float p = lg[j][g] == -INFINITY ? 0.0f : exp2f(lg[j][g] - m[g]);
            l[g] += p;
#pragma unroll
            for (int e = 0; e < E; ++e) acc[g][e] = fmaf(p, vf[e], acc[g][e]);
          }
        }
      }
      __syncwarp();  // every lane is done with this buffer before it is refilled
      buf ^= 1;
    }
  }

  // The token groups of each warp meet by shuffles (same max, so plain sums), then the warps in
  // shared memory, weighted by 2^(m_w − M).
#pragma unroll
  for (int g = 0; g < G; ++g) {
#pragma unroll
    for (int off = L; off < 32; off <<= 1) {
      l[g] += __shfl_xor_sync(0xffffffffu, l[g], off);
#pragma unroll
      for (int e = 0; e < E; ++e) acc[g][e] += __shfl_xor_sync(0xffffffffu, acc[g][e], off);
    }
  }
  __syncthreads();                                  // the chunk buffers become the meeting place
  float* comb = reinterpret_cast<float*>(buffers);  // [warp][G][D]
  if (lane < L) {
#pragma unroll
    for (int g = 0; g < G; ++g) {
#pragma unroll
      for (int e = 0; e < E; ++e) comb[(warp * G + g) * D + kd + e] = acc[g][e];
    }
  }
  if (lane == 0) {
#pragma unroll
    for (int g = 0; g < G; ++g) {
      m_s[warp][g] = m[g];
      l_s[warp][g] = l[g];
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < a.group * D; i += kDecodeThreads) {
    const int g = i / D;
    const int d = i % D;
    float mx = -INFINITY;
#pragma unroll
    for (int w = 0; w < kDecodeWarps; ++w) mx = fmaxf(mx, m_s[w][g]);
    float num = 0, den = 0;
    if (mx != -INFINITY) {
#pragma unroll
      for (int w = 0; w < kDecodeWarps; ++w) {
        const float f = m_s[w][g] == -INFINITY ? 0.0f : exp2f(m_s[w][g] - mx);
        num = fmaf(f, comb[(w * G + g) * D + d], num);
        den = fmaf(f, l_s[w][g], den);
      }
    }
    const float o = den > 0 ? num / den * a.v_scale : 0.0f;
    const std::size_t row = static_cast<std::size_t>(s) * a.num_q_heads + kvh * a.group + g;
    if (a.num_splits == 1) {
      a.out[row * D + d] = from_float<T>(o);
    } else {
      const std::size_t slot = row * a.num_splits + split;
      a.part_out[slot * D + d] = o;
      if (d == 0) {
        a.part_ml[slot * 2] = mx;
        a.part_ml[slot * 2 + 1] = den;
      }
    }
  }
}

// Combines the splits of one (sequence, query head) per CTA: weights l_i × 2^(m_i − max).
template <typename T>
__global__ void __launch_bounds__(128)
    split_reduce_kernel(const float* part_out, const float* part_ml, T* out, int splits, int D) {
  const std::size_t row = blockIdx.x;
  const float* ml = part_ml + row * splits * 2;
  float m = -INFINITY;
  for (int i = 0; i < splits; ++i) {
    if (ml[2 * i + 1] > 0) m = fmaxf(m, ml[2 * i]);
  }
  for (int d = threadIdx.x; d < D; d += blockDim.x) {
    float num = 0;
    float den = 0;
    for (int i = 0; i < splits; ++i) {
      const float l = ml[2 * i + 1];
      if (l > 0) {
        const float w = l * exp2f(ml[2 * i] - m);
        num = fmaf(w, part_out[(row * splits + i) * D + d], num);
        den += w;
      }
    }
    out[row * D + d] = from_float<T>(den > 0 ? num / den : 0.0f);
  }
}

// CTAs of this kernel that fit on one SM of the current device (registers, shared memory),
// asked once per device.
template <typename T, typename KV, int D, int G, bool kPaged>
int decode_ctas_per_sm() {
  static std::atomic<int> cache[16] = {};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    cudaGetLastError();
    dev = -1;
  }
  if (dev >= 0 && dev < 16) {
    if (const int n = cache[dev].load(std::memory_order_relaxed); n > 0) return n;
  }
  int ctas = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas, decode_kernel<T, KV, D, G, kPaged>,
                                                    kDecodeThreads, 0) != cudaSuccess) {
    cudaGetLastError();  // clear it; the split choice falls back to one CTA per SM
    return 1;
  }
  ctas = ctas > 0 ? ctas : 1;
  if (dev >= 0 && dev < 16) cache[dev].store(ctas, std::memory_order_relaxed);
  return ctas;
}

// Validated arguments and a resolved split count in, kernel (and split reduction) launched.
template <typename T, typename KV, int D, int G, bool kPaged>
Status launch_decode(DecodeKernelArgs<T> a, int num_seqs, int num_kv_heads, int splits,
                     void* workspace, cudaStream_t stream) {
  if (num_seqs == 0) return Status::Ok();
  a.num_splits = splits;
  if (splits > 1) {
    a.part_out = static_cast<float*>(workspace);
    a.part_ml = a.part_out + static_cast<std::size_t>(num_seqs) * a.num_q_heads * splits * D;
  }
  const dim3 grid(num_kv_heads, num_seqs, splits);
  decode_kernel<T, KV, D, G, kPaged><<<grid, kDecodeThreads, 0, stream>>>(a);
  KVF_CUDA_TRY(cudaGetLastError());
  if (splits > 1) {
    split_reduce_kernel<T>
        <<<num_seqs * a.num_q_heads, 128, 0, stream>>>(a.part_out, a.part_ml, a.out, splits, D);
    KVF_CUDA_TRY(cudaGetLastError());
  }
  return Status::Ok();
}

template <typename T, typename KV>
DecodeKernelArgs<T> decode_common(const void* q, void* out, const void* k, const void* v,
                                  const std::int32_t* context_lens, int num_q_heads,
                                  int num_kv_heads, int D, float sm_scale, float k_scale,
                                  float v_scale) {
  DecodeKernelArgs<T> a{};
  a.q = static_cast<const T*>(q);
  a.out = static_cast<T*>(out);
  a.k = k;
  a.v = v;
  a.context_lens = context_lens;
  a.row_stride = num_kv_heads * D;
  a.num_q_heads = num_q_heads;
  a.group = num_q_heads / num_kv_heads;
  a.q_scale = sm_scale * kLog2e * (kIsFp8<KV> ? k_scale : 1.0f);
  a.v_scale = kIsFp8<KV> ? v_scale : 1.0f;
  return a;
}

template <typename T, typename KV, int D, int G>
Status paged_decode_impl(const DecodeArgs& x, int splits, cudaStream_t stream) {
  auto a =
      decode_common<T, KV>(x.q, x.out, x.kv.k_cache, x.kv.v_cache, x.context_lens, x.num_q_heads,
                           x.num_kv_heads, D, x.sm_scale, x.kv.k_scale, x.kv.v_scale);
  a.block_table = x.kv.block_table;
  a.max_blocks = x.kv.max_blocks_per_seq;
  a.block_shift = __builtin_ctz(static_cast<unsigned>(x.kv.block_size));
  return launch_decode<T, KV, D, G, true>(a, x.num_seqs, x.num_kv_heads, splits, x.workspace,
                                          stream);
}

template <typename T, typename KV, int D, int G>
Status contiguous_decode_impl(const ContiguousDecodeArgs& x, int splits, cudaStream_t stream) {
  auto a = decode_common<T, KV>(x.q, x.out, x.k, x.v, x.context_lens, x.num_q_heads, x.num_kv_heads,
                                D, x.sm_scale, x.k_scale, x.v_scale);
  a.max_context = x.max_context;
  return launch_decode<T, KV, D, G, false>(a, x.num_seqs, x.num_kv_heads, splits, x.workspace,
                                           stream);
}

}  // namespace kvfleet::kernels::cuda
