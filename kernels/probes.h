#pragma once
// Device probes for calibration: what the GPU is, how fast it copies, how fast cuBLASLt runs a
// GEMM of a given shape. Unlike the launchers, probes allocate their own buffers (they measure,
// they are not called on a serving path) and synchronise. Without CUDA each returns an error.
#include <cstddef>
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

}  // namespace kvfleet::kernels
