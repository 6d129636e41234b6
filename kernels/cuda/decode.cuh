#pragma once
// Paged (and contiguous) decode attention with grouped-query heads and split-KV.
//
// One CTA of 128 threads serves one (KV head, sequence, split): the `group` query heads that
// share the KV head read each K and V row once. The context is walked in partitions of
// kDecodePartitionTokens tokens; for each partition
//   1. K pass: lanes split the head dim into 8-element vectors, D/8 lanes per token, so a warp
//      scores 32/(D/8) tokens at a time; partial dot products meet by xor-shuffles; the logits
//      (already in log2 units) go to shared memory [group][partition];
//   2. one warp per query head takes the partition's max, rescales the running max and sum
//      (online softmax across partitions) and turns logits into weights in place;
//   3. V pass: each warp takes every 4th token, each lane D/32 dims of the row, and accumulates
//      weights × V for all heads in registers, after rescaling them by the new max.
// At the end the warps' accumulators meet in shared memory. Without split-KV the CTA writes the
// normalised output; with it, it writes its normalised partial output, its max and its sum, and
// split_reduce_kernel combines the splits. fp32 throughout, fp8 dequantised on load.
#include "kernels/cuda/common.cuh"

namespace kvfleet::kernels::cuda {

inline constexpr int kDecodeThreads = 128;
inline constexpr int kDecodeWarps = kDecodeThreads / 32;

template <typename T, typename Rows>
struct DecodeKernelArgs {
  const T* q;                        // [num_seqs, num_q_heads, D]
  T* out;                            // [num_seqs, num_q_heads, D]
  const void* k;                     // K cache, addressed by rows
  const void* v;                     // V cache, addressed by rows
  const std::int32_t* context_lens;  // [num_seqs]
  Rows rows;
  int num_q_heads;
  int group;
  float scale_log2;  // sm_scale × log2(e)
  float k_scale;
  float v_scale;
  int num_splits;
  float* part_out;  // [num_seqs, num_q_heads, num_splits, D] when num_splits > 1
  float* part_ml;   // [num_seqs, num_q_heads, num_splits, 2]: max (log2 units), sum
};

template <typename T, typename KV, int D, typename Rows>
__global__ void __launch_bounds__(kDecodeThreads) decode_kernel(DecodeKernelArgs<T, Rows> a) {
  constexpr int P = kDecodePartitionTokens;
  constexpr int G = kMaxGroup;
  constexpr int VEC = 8;       // K elements per lane
  constexpr int L = D / VEC;   // lanes per token in the K pass: 8, 16 or 32
  constexpr int TPW = 32 / L;  // tokens per warp step in the K pass
  constexpr int DPL = D / 32;  // V dims per lane
  static_assert(P >= D, "the logits buffer doubles as the output buffer");
  __shared__ float buf[G * P];  // logits/weights [group][P]; at the end sums [group][D]
  __shared__ float m_run[G], l_run[G], alpha[G];

  const KV* kc = static_cast<const KV*>(a.k);
  const KV* vc = static_cast<const KV*>(a.v);
  const int kvh = blockIdx.x;
  const int s = blockIdx.y;
  const int split = blockIdx.z;
  const int group = a.group;
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int ctx = a.context_lens[s];
  const int parts = (ctx + P - 1) / P;
  const int per = (parts + a.num_splits - 1) / a.num_splits;
  const int p0 = split * per;
  const int p1 = min(parts, p0 + per);

  const int kd = (lane % L) * VEC;  // this lane's K dims
  float qr[G][VEC];
#pragma unroll
  for (int g = 0; g < G; ++g) {
    if (g < group) {
      const T* qp = a.q + (static_cast<std::size_t>(s) * a.num_q_heads + kvh * group + g) * D + kd;
      load_floats<VEC>(qp, qr[g], 1.0f);
#pragma unroll
      for (int i = 0; i < VEC; ++i) qr[g][i] *= a.scale_log2;
    } else {
#pragma unroll
      for (int i = 0; i < VEC; ++i) qr[g][i] = 0;
    }
  }
  if (threadIdx.x < G) {
    m_run[threadIdx.x] = -INFINITY;
    l_run[threadIdx.x] = 0;
  }
  float acc[G][DPL];
#pragma unroll
  for (int g = 0; g < G; ++g) {
#pragma unroll
    for (int j = 0; j < DPL; ++j) acc[g][j] = 0;
  }
  __syncthreads();

  for (int part = p0; part < p1; ++part) {
    const int t0 = part * P;
    const int plen = min(P, ctx - t0);
    // 1. K pass: logits in log2 units.
#pragma unroll 2
    for (int base = warp * TPW; base < plen; base += kDecodeWarps * TPW) {
      const int tl = base + lane / L;
      float dot[G];
#pragma unroll
      for (int g = 0; g < G; ++g) dot[g] = 0;
      if (tl < plen) {
        float kf[VEC];
        load_floats<VEC>(kc + a.rows.offset(s, t0 + tl, kvh, D) + kd, kf, a.k_scale);
#pragma unroll
        for (int g = 0; g < G; ++g) {
          if (g < group) {
#pragma unroll
            for (int i = 0; i < VEC; ++i) dot[g] = fmaf(qr[g][i], kf[i], dot[g]);
          }
        }
      }
#pragma unroll
      for (int g = 0; g < G; ++g) {
        if (g < group) {
#pragma unroll
          for (int off = L / 2; off > 0; off >>= 1) {
            dot[g] += __shfl_xor_sync(0xffffffffu, dot[g], off);
          }
        }
      }
      if (tl < plen && lane % L == 0) {
#pragma unroll
        for (int g = 0; g < G; ++g) {
          if (g < group) buf[g * P + tl] = dot[g];
        }
      }
    }
    __syncthreads();
    // 2. Online softmax: one warp per query head.
    for (int g = warp; g < group; g += kDecodeWarps) {
      float mx = -INFINITY;
      for (int t = lane; t < plen; t += 32) mx = fmaxf(mx, buf[g * P + t]);
      mx = warp_max(mx);
      const float m_old = m_run[g];
      const float m_new = fmaxf(m_old, mx);
      float sum = 0;
      for (int t = lane; t < plen; t += 32) {
        const float p = exp2f(buf[g * P + t] - m_new);
        buf[g * P + t] = p;
        sum += p;
      }
      sum = warp_sum(sum);
      if (lane == 0) {
        const float al = exp2f(m_old - m_new);  // 0 on the first partition (m_old = −inf)
        alpha[g] = al;
        l_run[g] = l_run[g] * al + sum;
        m_run[g] = m_new;
      }
    }
    __syncthreads();
    // 3. V pass.
#pragma unroll
    for (int g = 0; g < G; ++g) {
      if (g < group) {
        const float al = alpha[g];
#pragma unroll
        for (int j = 0; j < DPL; ++j) acc[g][j] *= al;
      }
    }
#pragma unroll 4
    for (int t = warp; t < plen; t += kDecodeWarps) {
      float vf[DPL];
      load_floats<DPL>(vc + a.rows.offset(s, t0 + t, kvh, D) + lane * DPL, vf, a.v_scale);
#pragma unroll
      for (int g = 0; g < G; ++g) {
        if (g < group) {
          const float p = buf[g * P + t];
#pragma unroll
          for (int j = 0; j < DPL; ++j) acc[g][j] = fmaf(p, vf[j], acc[g][j]);
        }
      }
    }
    __syncthreads();  // the next partition overwrites buf
  }

  // The warps' accumulators meet in buf [group][D].
  for (int i = threadIdx.x; i < group * D; i += kDecodeThreads) buf[i] = 0;
  __syncthreads();
#pragma unroll
  for (int g = 0; g < G; ++g) {
    if (g < group) {
#pragma unroll
      for (int j = 0; j < DPL; ++j) atomicAdd(&buf[g * D + lane * DPL + j], acc[g][j]);
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < group * D; i += kDecodeThreads) {
    const int g = i / D;
    const int d = i % D;
    const std::size_t row = static_cast<std::size_t>(s) * a.num_q_heads + kvh * group + g;
    const float l = l_run[g];
    const float o = l > 0 ? buf[i] / l : 0.0f;
    if (a.num_splits == 1) {
      a.out[row * D + d] = from_float<T>(o);
    } else {
      const std::size_t slot = row * a.num_splits + split;
      a.part_out[slot * D + d] = o;
      if (d == 0) {
        a.part_ml[slot * 2] = m_run[g];
        a.part_ml[slot * 2 + 1] = l;
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

template <typename T, typename KV, int D, typename Rows>
Status launch_decode(DecodeKernelArgs<T, Rows> a, int num_seqs, int num_kv_heads, void* workspace,
                     cudaStream_t stream) {
  if (num_seqs == 0) return Status::Ok();
  if (a.num_splits > 1) {
    a.part_out = static_cast<float*>(workspace);
    a.part_ml = a.part_out + static_cast<std::size_t>(num_seqs) * a.num_q_heads * a.num_splits * D;
  }
  const dim3 grid(num_kv_heads, num_seqs, a.num_splits);
  decode_kernel<T, KV, D, Rows><<<grid, kDecodeThreads, 0, stream>>>(a);
  KVF_CUDA_TRY(cudaGetLastError());
  if (a.num_splits > 1) {
    split_reduce_kernel<T><<<num_seqs * a.num_q_heads, 128, 0, stream>>>(a.part_out, a.part_ml,
                                                                         a.out, a.num_splits, D);
    KVF_CUDA_TRY(cudaGetLastError());
  }
  return Status::Ok();
}

template <typename T, typename KV, int D, int BS>
Status paged_decode_impl(const DecodeArgs& x, int splits, cudaStream_t stream) {
  DecodeKernelArgs<T, PagedRows<BS>> a{};
  a.q = static_cast<const T*>(x.q);
  a.out = static_cast<T*>(x.out);
  a.k = x.kv.k_cache;
  a.v = x.kv.v_cache;
  a.context_lens = x.context_lens;
  a.rows = PagedRows<BS>{x.kv.block_table, x.kv.max_blocks_per_seq, x.num_kv_heads * D};
  a.num_q_heads = x.num_q_heads;
  a.group = x.num_q_heads / x.num_kv_heads;
  a.scale_log2 = x.sm_scale * kLog2e;
  a.k_scale = x.kv.k_scale;
  a.v_scale = x.kv.v_scale;
  a.num_splits = splits;
  return launch_decode<T, KV, D>(a, x.num_seqs, x.num_kv_heads, x.workspace, stream);
}

template <typename T, typename KV, int D>
Status contiguous_decode_impl(const ContiguousDecodeArgs& x, int splits, cudaStream_t stream) {
  DecodeKernelArgs<T, ContiguousRows> a{};
  a.q = static_cast<const T*>(x.q);
  a.out = static_cast<T*>(x.out);
  a.k = x.k;
  a.v = x.v;
  a.context_lens = x.context_lens;
  a.rows = ContiguousRows{x.max_context, x.num_kv_heads * D};
  a.num_q_heads = x.num_q_heads;
  a.group = x.num_q_heads / x.num_kv_heads;
  a.scale_log2 = x.sm_scale * kLog2e;
  a.k_scale = x.k_scale;
  a.v_scale = x.v_scale;
  a.num_splits = splits;
  return launch_decode<T, KV, D>(a, x.num_seqs, x.num_kv_heads, x.workspace, stream);
}

}  // namespace kvfleet::kernels::cuda
