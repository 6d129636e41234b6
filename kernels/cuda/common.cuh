#pragma once
// Device helpers shared by the kernels: dtype conversions, vector loads, warp reductions, and
// the CUDA error check that turns a failed call into a Status naming the call, file and line.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/attention.h"

namespace kvfleet::kernels::cuda {

Status cuda_error(cudaError_t e, const char* expr, const char* file, int line);

#define KVF_CUDA_TRY(expr)                                                              \
  do {                                                                                  \
    cudaError_t kvf_err_ = (expr);                                                      \
    if (kvf_err_ != cudaSuccess) {                                                      \
      return ::kvfleet::kernels::cuda::cuda_error(kvf_err_, #expr, __FILE__, __LINE__); \
    }                                                                                   \
  } while (0)

using f16 = __half;
using bf16 = __nv_bfloat16;
using fp8 = __nv_fp8_e4m3;

template <typename E>
inline constexpr bool kIsFp8 = false;
template <>
inline constexpr bool kIsFp8<fp8> = true;

__device__ __forceinline__ float to_float(f16 x) { return __half2float(x); }
__device__ __forceinline__ float to_float(bf16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_float(fp8 x) { return static_cast<float>(x); }

template <typename T>
__device__ T from_float(float x);
template <>
__device__ __forceinline__ f16 from_float<f16>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ bf16 from_float<bf16>(float x) {
  return __float2bfloat16_rn(x);
}

// N consecutive elements, loaded in one aligned vector access.
template <typename E, int N>
struct alignas(sizeof(E) * N) Vec {
  E v[N];
};

// N elements at p (aligned to N elements) as floats; fp8 values are multiplied by `scale`.
template <int N, typename E>
__device__ __forceinline__ void load_floats(const E* p, float (&out)[N], float scale) {
  const Vec<E, N> x = *reinterpret_cast<const Vec<E, N>*>(p);
#pragma unroll
  for (int i = 0; i < N; ++i) {
    if constexpr (kIsFp8<E>) {
      out[i] = to_float(x.v[i]) * scale;
    } else {
      out[i] = to_float(x.v[i]);
    }
  }
}

__device__ __forceinline__ float warp_max(float x) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, off));
  return x;
}
__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) x += __shfl_xor_sync(0xffffffffu, x, off);
  return x;
}

inline constexpr float kLog2e = 1.4426950408889634f;

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "the kernels use cp.async, ldmatrix and bf16 mma: sm_80 or later"
#endif

// 16 bytes from global to shared memory without passing through registers (sm_80+); `valid`
// false zero-fills the destination and reads nothing.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool valid) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "r"(bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Two floats as a packed pair of 16-bit values (the first in the low half), rounded to nearest.
template <typename T>
__device__ unsigned pack2(float lo, float hi);
template <>
__device__ __forceinline__ unsigned pack2<f16>(float lo, float hi) {
  const __half2 v = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const unsigned*>(&v);
}
template <>
__device__ __forceinline__ unsigned pack2<bf16>(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const unsigned*>(&v);
}

// Two fp8 e4m3 values (the first in the low byte) as floats, exactly (through half2).
__device__ __forceinline__ float2 fp8x2_to_float2(unsigned pair) {
  const __half2 h = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(pair), __NV_E4M3);
  return __half22float2(h);
}

}  // namespace kvfleet::kernels::cuda
