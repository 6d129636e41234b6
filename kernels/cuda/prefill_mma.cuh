#pragma once
// Paged chunked-prefill attention on tensor cores (FlashAttention-2 style), causal, with
// grouped-query heads: the path paged_prefill() takes by default.
//
// One CTA of 4 warps serves one (KV head, sequence, tile of 64 query rows), a row being a (query
// token, query head of the group) pair, so that each K and V row is read once for the whole
// group. Each warp owns 16 rows. Keys are walked in tiles of 64 staged in shared memory (K and V
// by cp.async, V's copy overlapping the scores; fp8 converted to bf16 there, exactly, its scales
// folded into the softmax scale and the output). Per key tile a warp computes S = Q·Kᵀ with
// mma.m16n8k16 (bf16 or fp16 inputs, fp32 accumulators; operands by ldmatrix), masks it
// (causal by position, keys past the context), updates its rows' running max and sum (log2
// units, exp2f), rescales its output accumulators, and adds P·V with a second mma, P being the
// score accumulators rounded to the activation dtype in place (the accumulator layout of two
// 8-key tiles is the A operand layout of one 16-key step). The sum l is taken over the fp32
// weights, as FlashAttention does; the rounding of the weights to bf16/fp16 for P·V is the one
// error this path adds to the CUDA-core one (kernels/tests/tolerance.h bounds it).
//
// Fragment addressing (which row each lane hands ldmatrix, where each accumulator element
// sits) is in mma_layout.h, checked on the CPU against the PTX ISA's definitions.
#include <atomic>
#include <type_traits>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/mma_layout.h"
#include "kernels/cuda/prefill.cuh"

namespace kvfleet::kernels::cuda {

inline constexpr int kMmaThreads = 128;  // 4 warps
inline constexpr int kMmaRows = 64;      // query rows per CTA, 16 per warp
inline constexpr int kMmaKeys = 64;      // keys per shared-memory tile

// Elements per shared-memory row: 8 more than the head dim, so the 8 rows an ldmatrix reads
// start in different banks.
template <int D>
constexpr int mma_ld() {
  return D + 8;
}
// Q, K and V tiles in the activation dtype, then the key tile's row offsets.
template <int D>
constexpr std::size_t prefill_mma_smem_bytes() {
  return sizeof(std::uint16_t) * (kMmaRows + 2 * kMmaKeys) * mma_ld<D>() +
         sizeof(std::int64_t) * kMmaKeys;
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void* row) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const void* row) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}

// d += a·b for one m16n8k16 tile, fp32 accumulators.
template <typename T>
__device__ __forceinline__ void mma16816(float (&d)[4], const unsigned (&a)[4], unsigned b0,
                                         unsigned b1) {
  if constexpr (std::is_same_v<T, bf16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// One tile of query rows (tile · ⌊64 / group⌋ tokens onward) of sequence blockIdx.y.
template <typename T, typename KV, int D>
__device__ __forceinline__ void prefill_mma_tile(const PrefillKernelArgs<T>& a, T* q_s, T* k_s,
                                                 T* v_s, std::int64_t* row_s, int tile) {
  constexpr int LD = mma_ld<D>();
  constexpr int kPieces = D / 8;  // 16-byte pieces of a row in the activation dtype
  const int kvh = blockIdx.x;
  const int s = blockIdx.y;
  const int group = a.group;
  const int tokens = kMmaRows / group;  // query tokens per tile
  const int q_begin = a.q_indptr[s];
  const int q_len = a.q_indptr[s + 1] - q_begin;
  const int qt0 = tile * tokens;
  const int nq = min(tokens, q_len - qt0);
  const int rows = nq * group;  // valid rows; the rest are padding (zero queries, not written)
  const int ctx = a.context_lens[s];
  const int prefix = ctx - q_len;                // position of the chunk's first token
  const int kend = min(ctx, prefix + qt0 + nq);  // keys needed: 0 .. kend − 1
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int bmask = (1 << a.block_shift) - 1;
  // fp8: K enters the scores and V the output unscaled (exact in the activation dtype); their
  // scales multiply the scores and the output instead.
  const float s_scale = a.scale_log2 * (kIsFp8<KV> ? a.k_scale : 1.0f);
  const float v_scale = kIsFp8<KV> ? a.v_scale : 1.0f;

  // Q: row r is token qt0 + r / group, query head kvh · group + r % group.
  for (int i = threadIdx.x; i < kMmaRows * kPieces; i += kMmaThreads) {
    const int r = i / kPieces;
    const int c = (i % kPieces) * 8;
    const bool valid = r < rows;
    const T* src = a.q;
    if (valid) {
      const std::size_t token = static_cast<std::size_t>(q_begin) + qt0 + r / group;
      src = a.q + (token * a.num_q_heads + kvh * group + r % group) * D + c;
    }
    cp_async16(q_s + r * LD + c, src, valid);
  }
  cp_async_commit();

  // The element offsets of keys k0 .. k0 + 63 (KV head kvh, dim 0) in the caches, −1 past
  // kend: one block-table read per key, not one per 16-byte piece.
  auto offsets = [&](int k0) {
    if (threadIdx.x < kMmaKeys) {
      const int pos = k0 + threadIdx.x;
      std::int64_t off = -1;
      if (pos < kend) {
        const std::int32_t b =
            a.block_table[static_cast<std::size_t>(s) * a.max_blocks + (pos >> a.block_shift)];
        const std::int64_t slot = (static_cast<std::int64_t>(b) << a.block_shift) + (pos & bmask);
        off = (slot * a.num_kv_heads + kvh) * D;
      }
      row_s[threadIdx.x] = off;
    }
  };
  // Keys k0 .. k0 + 63 of one cache into dst [64][LD] (zeros past kend).
  auto stage = [&](const KV* cache, T* dst) {
    for (int i = threadIdx.x; i < kMmaKeys * kPieces; i += kMmaThreads) {
      const int j = i / kPieces;
      const int c = (i % kPieces) * 8;
      const std::int64_t row = row_s[j];
      const bool valid = row >= 0;
      const std::size_t off = valid ? static_cast<std::size_t>(row) + c : 0;
      if constexpr (kIsFp8<KV>) {
        // 8 fp8 values → 8 activation-dtype values, exactly (e4m3 fits bf16 and fp16).
        uint2 raw = make_uint2(0, 0);
        if (valid) raw = *reinterpret_cast<const uint2*>(cache + off);
        uint4 w;
        const float2 x0 = fp8x2_to_float2(raw.x);
        const float2 x1 = fp8x2_to_float2(raw.x >> 16);
        const float2 x2 = fp8x2_to_float2(raw.y);
        const float2 x3 = fp8x2_to_float2(raw.y >> 16);
        w.x = pack2<T>(x0.x, x0.y);
        w.y = pack2<T>(x1.x, x1.y);
        w.z = pack2<T>(x2.x, x2.y);
        w.w = pack2<T>(x3.x, x3.y);
        *reinterpret_cast<uint4*>(dst + j * LD + c) = w;
      } else {
        cp_async16(dst + j * LD + c, cache + off, valid);
      }
    }
  };

  // This lane's two rows (c0, c1: row lane/4; c2, c3: row lane/4 + 8 of the warp's 16).
  int row_pos[2];
  bool row_ok[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = warp * 16 + lane / 4 + 8 * h;
    row_ok[h] = r < rows;
    row_pos[h] = prefix + qt0 + r / group;
  }
  float o[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n) {
#pragma unroll
    for (int i = 0; i < 4; ++i) o[n][i] = 0;
  }
  float m[2] = {-INFINITY, -INFINITY};
  float l[2] = {0, 0};
  const KV* kc = static_cast<const KV*>(a.k);
  const KV* vc = static_cast<const KV*>(a.v);

  // A warp whose 16 rows are all padding (a short chunk) skips the arithmetic but keeps to the
  // barriers.
  const bool active = warp * 16 < rows;
  for (int k0 = 0; k0 < kend; k0 += kMmaKeys) {
    offsets(k0);
    __syncthreads();
    stage(kc, k_s);
    cp_async_commit();
    stage(vc, v_s);
    cp_async_commit();
    cp_async_wait<1>();  // Q and K are in; V may still be on its way
    __syncthreads();

    // S = Q·Kᵀ: 8 tiles of 16 rows × 8 keys.
    float sc[kMmaKeys / 8][4];
    if (active) {
#pragma unroll
      for (int j = 0; j < kMmaKeys / 8; ++j) {
#pragma unroll
        for (int i = 0; i < 4; ++i) sc[j][i] = 0;
      }
#pragma unroll
      for (int ks = 0; ks < D / 16; ++ks) {
        unsigned qa[4];
        const mma::Coord qc = mma::q_ldmatrix(lane, ks);
        ldmatrix_x4(qa, q_s + (warp * 16 + qc.row) * LD + qc.col);
#pragma unroll
        for (int kp = 0; kp < kMmaKeys / 16; ++kp) {
          unsigned kb[4];
          const mma::Coord kcrd = mma::k_ldmatrix(lane, kp, ks);
          ldmatrix_x4(kb, k_s + kcrd.row * LD + kcrd.col);
          mma16816<T>(sc[2 * kp], qa, kb[0], kb[1]);
          mma16816<T>(sc[2 * kp + 1], qa, kb[2], kb[3]);
        }
      }

      // Mask and scale; the rows' running max and sum; rescale the output.
      float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int j = 0; j < kMmaKeys / 8; ++j) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const mma::Coord e = mma::c_element(lane, i);
          const int h = i / 2;
          const int key = k0 + 8 * j + e.col;
          const bool ok = row_ok[h] && key < kend && key <= row_pos[h];
          sc[j][i] = ok ? sc[j][i] * s_scale : -INFINITY;
          mx[h] = fmaxf(mx[h], sc[j][i]);
        }
      }
      float alpha[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        // The four lanes of a quad hold the same two rows.
        mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
        mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
        const float m_new = fmaxf(m[h], mx[h]);
        alpha[h] = m_new == -INFINITY ? 1.0f : exp2f(m[h] - m_new);
        m[h] = m_new;
        l[h] *= alpha[h];
      }
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        o[n][0] *= alpha[0];
        o[n][1] *= alpha[0];
        o[n][2] *= alpha[1];
        o[n][3] *= alpha[1];
      }
#pragma unroll
      for (int j = 0; j < kMmaKeys / 8; ++j) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int h = i / 2;
          const float p = sc[j][i] == -INFINITY ? 0.0f : exp2f(sc[j][i] - m[h]);
          sc[j][i] = p;
          l[h] += p;  // this lane's share; the quad's shares meet at the end
        }
      }
    }

    cp_async_wait<0>();  // V is in
    __syncthreads();

    if (active) {
      // O += P·V: the score tiles 2·kk and 2·kk + 1 are the A operand of key step kk.
#pragma unroll
      for (int kk = 0; kk < kMmaKeys / 16; ++kk) {
        unsigned pa[4];
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const float* src = sc[2 * kk + mma::p_source_tile(r)];
          const int e0 = mma::p_source_element(r);
          pa[r] = pack2<T>(src[e0], src[e0 + 1]);
        }
#pragma unroll
        for (int dp = 0; dp < D / 16; ++dp) {
          unsigned vb[4];
          const mma::Coord vcrd = mma::v_ldmatrix_trans(lane, kk, dp);
          ldmatrix_x4_trans(vb, v_s + vcrd.row * LD + vcrd.col);
          mma16816<T>(o[2 * dp], pa, vb[0], vb[1]);
          mma16816<T>(o[2 * dp + 1], pa, vb[2], vb[3]);
        }
      }
    }
    __syncthreads();  // every warp is done with K and V before the next tile restages them
  }
  cp_async_wait<0>();

#pragma unroll
  for (int h = 0; h < 2; ++h) {
    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
  }
#pragma unroll
  for (int n = 0; n < D / 8; ++n) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const mma::Coord e = mma::c_element(lane, i);
      const int h = i / 2;
      const int r = warp * 16 + e.row;
      if (r < rows) {
        const std::size_t token = static_cast<std::size_t>(q_begin) + qt0 + r / group;
        const std::size_t idx =
            (token * a.num_q_heads + kvh * group + r % group) * D + 8 * n + e.col;
        a.out[idx] = from_float<T>(l[h] > 0 ? o[n][i] / l[h] * v_scale : 0.0f);
      }
    }
  }
}

template <typename T, typename KV, int D>
__global__ void __launch_bounds__(kMmaThreads) prefill_mma_kernel(PrefillKernelArgs<T> a) {
  extern __shared__ __align__(16) unsigned char mma_smem[];
  constexpr int LD = mma_ld<D>();
  T* q_s = reinterpret_cast<T*>(mma_smem);                             // [64][LD]
  T* k_s = q_s + kMmaRows * LD;                                        // [64][LD]
  T* v_s = k_s + kMmaKeys * LD;                                        // [64][LD]
  auto* row_s = reinterpret_cast<std::int64_t*>(v_s + kMmaKeys * LD);  // [64]
  const int s = blockIdx.y;
  const int q_len = a.q_indptr[s + 1] - a.q_indptr[s];
  const int tokens = kMmaRows / a.group;
  // Tiles past grid.z's limit are taken in strides of gridDim.z.
  for (int tile = blockIdx.z; tile * tokens < q_len; tile += gridDim.z) {
    prefill_mma_tile<T, KV, D>(a, q_s, k_s, v_s, row_s, tile);
    __syncthreads();  // the next tile restages Q
  }
}

template <typename T, typename KV, int D>
Status paged_prefill_mma_impl(const PrefillArgs& x, cudaStream_t stream) {
  if (x.num_seqs == 0 || x.max_q_len == 0) return Status::Ok();
  const PrefillKernelArgs<T> a = prefill_kernel_args<T>(x);
  const int tokens = kMmaRows / a.group;
  const dim3 grid(x.num_kv_heads, x.num_seqs, prefill_grid_z(x.max_q_len, tokens));
  constexpr std::size_t smem = prefill_mma_smem_bytes<D>();
  if constexpr (smem > 48 * 1024) {
    // The opt-in above 48 KB, once per device.
    static std::atomic<unsigned> set_on{0};  // bit d: done on device d
    int dev = 0;
    KVF_CUDA_TRY(cudaGetDevice(&dev));
    const unsigned bit = dev < 32 ? 1u << dev : 0u;
    if (bit == 0 || !(set_on.load(std::memory_order_relaxed) & bit)) {
      KVF_CUDA_TRY(cudaFuncSetAttribute(prefill_mma_kernel<T, KV, D>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(smem)));
      set_on.fetch_or(bit, std::memory_order_relaxed);
    }
  }
  prefill_mma_kernel<T, KV, D><<<grid, kMmaThreads, smem, stream>>>(a);
  KVF_CUDA_TRY(cudaGetLastError());
  return Status::Ok();
}

}  // namespace kvfleet::kernels::cuda
