#pragma once
// Device probes for calibration: what the GPU is, how fast it copies, how fast cuBLASLt runs a
// GEMM of a given shape. Unlike the launchers, probes allocate their own buffers (they measure,
// they are not called on a serving path) and synchronise. Without CUDA each returns an error.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/attention.h"

namespace kvfleet::kernels {

struct DeviceInfo {
  std::string name;
  int device = 0;
  int sm_count = 0;
  int cc_major = 0;
  int cc_minor = 0;
  std::size_t memory_bytes = 0;
  int l2_bytes = 0;
  int driver_version = 0;  // e.g. 13000 for 13.0
  int runtime_version = 0;
  int sm_clock_khz = 0;  // current SM clock when asked (NVML-free: cudaDevAttrClockRate)
  int mem_clock_khz = 0;
};
Status device_info(DeviceInfo* out);

// Copy bandwidths in GB/s (1e9 bytes/s), each the median of `iters` timed copies of `bytes`
// after one warm-up, timed with CUDA events. Device-to-device counts bytes read plus written
// (2 × bytes per copy), the convention of memory-bandwidth specifications; host copies use
// pinned host memory and count the bytes moved once.
struct CopyBandwidth {
  double d2d_GBps = 0;
  double h2d_GBps = 0;
  double d2h_GBps = 0;
  std::size_t bytes = 0;
};
Status measure_copy_bandwidth(std::size_t bytes, int iters, CopyBandwidth* out);

// D[m, n] = A[m, k] · B[k, n] through cuBLASLt, fp32 accumulation. fp16 and bf16 produce their
// own type; fp8 e4m3 inputs produce bf16. Inputs are filled with random values (zeros run
// faster on some GPUs). Reports the median seconds of `iters` runs after `warmup` runs.
enum class GemmDtype { kF16, kBF16, kFP8E4M3 };
struct GemmShape {
  int m = 0;
  int n = 0;
  int k = 0;
  GemmDtype dtype = GemmDtype::kBF16;
};
Status time_gemm(const GemmShape& shape, int warmup, int iters, double* median_s);

// Kernel timings for calibration: each allocates its buffers (random values, shuffled block ids,
// enough copies of the KV pool to exceed the L2 cache three times, rotated between launches),
// warms up, and reports the median seconds of `iters` launches timed with CUDA events.
struct AttentionShape {
  int batch = 1;    // decode: sequences
  int context = 0;  // decode: cached tokens per sequence
  int chunk = 0;    // prefill: new tokens
  int prefix = 0;   // prefill: cached tokens before them
  int q_heads = 32;
  int kv_heads = 8;
  int head_dim = 128;
  int block_size = 16;
  KvDtype dtype = KvDtype::kBF16;
};
// Launch arguments for a shape (pointers host or device; the caller fills args.kv).
inline DecodeArgs decode_args(const AttentionShape& s, const void* q, void* out,
                              const std::int32_t* context_lens) {
  DecodeArgs a;
  a.q = q;
  a.out = out;
  a.context_lens = context_lens;
  a.num_seqs = s.batch;
  a.num_q_heads = s.q_heads;
  a.num_kv_heads = s.kv_heads;
  a.head_dim = s.head_dim;
  a.sm_scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  a.max_context_len = s.context;
  return a;
}
inline PrefillArgs prefill_args(const AttentionShape& s, const void* q, void* out,
                                const std::int32_t* q_indptr, const std::int32_t* context_lens) {
  PrefillArgs a;
  a.q = q;
  a.out = out;
  a.q_indptr = q_indptr;
  a.context_lens = context_lens;
  a.num_seqs = 1;
  a.num_q_tokens = s.chunk;
  a.num_q_heads = s.q_heads;
  a.num_kv_heads = s.kv_heads;
  a.head_dim = s.head_dim;
  a.sm_scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  a.max_q_len = s.chunk;
  return a;
}

Status time_decode(const AttentionShape& s, int iters, double* median_s);
Status time_prefill(const AttentionShape& s, int iters, double* median_s);
Status time_kv_write(int tokens, int kv_heads, int head_dim, KvDtype dtype, int iters,
                     double* median_s);

}  // namespace kvfleet::kernels
