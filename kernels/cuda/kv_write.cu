// KV write (vLLM's reshape_and_cache): each thread moves 8 elements of one token's K and V row
// into the token's slot; fp8 caches store fp8(x / scale), rounded to nearest even and saturated.
#include "kernels/cuda/common.cuh"

namespace kvfleet::kernels::cuda {
namespace {

template <typename T, typename KV>
__global__ void __launch_bounds__(256)
    kv_write_kernel(const T* k, const T* v, const std::int64_t* slots, KV* kc, KV* vc,
                    int num_tokens, int row, float k_scale, float v_scale, std::int64_t capacity,
                    std::int32_t* bad_slots) {
  const int vecs = row / 8;
  const std::size_t n = static_cast<std::size_t>(num_tokens) * vecs;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::size_t token = i / vecs;
    const std::int64_t slot = slots[token];
    if (slot < 0) continue;
    if (slot >= capacity) {  // past the cache: skipped, counted once per token
      if (bad_slots != nullptr && i % vecs == 0) atomicAdd(bad_slots, 1);
      continue;
    }
    const std::size_t src = token * row + (i % vecs) * 8;
    const std::size_t dst = static_cast<std::size_t>(slot) * row + (i % vecs) * 8;
    if constexpr (kIsFp8<KV>) {
      const Vec<T, 8> kx = *reinterpret_cast<const Vec<T, 8>*>(k + src);
      const Vec<T, 8> vx = *reinterpret_cast<const Vec<T, 8>*>(v + src);
      Vec<__nv_fp8_storage_t, 8> ky;
      Vec<__nv_fp8_storage_t, 8> vy;
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        ky.v[e] = __nv_cvt_float_to_fp8(to_float(kx.v[e]) / k_scale, __NV_SATFINITE, __NV_E4M3);
        vy.v[e] = __nv_cvt_float_to_fp8(to_float(vx.v[e]) / v_scale, __NV_SATFINITE, __NV_E4M3);
      }
      *reinterpret_cast<Vec<__nv_fp8_storage_t, 8>*>(kc + dst) = ky;
      *reinterpret_cast<Vec<__nv_fp8_storage_t, 8>*>(vc + dst) = vy;
    } else {
      *reinterpret_cast<Vec<KV, 8>*>(kc + dst) = *reinterpret_cast<const Vec<T, 8>*>(k + src);
      *reinterpret_cast<Vec<KV, 8>*>(vc + dst) = *reinterpret_cast<const Vec<T, 8>*>(v + src);
    }
  }
}

template <typename T, typename KV>
Status launch_kv_write(const KvWriteArgs& a, cudaStream_t stream) {
  if (a.num_tokens == 0) return Status::Ok();
  const int row = a.num_kv_heads * a.head_dim;
  const long vecs = static_cast<long>(a.num_tokens) * (row / 8);
  const int blocks = static_cast<int>(std::min<long>((vecs + 255) / 256, 65535));
  kv_write_kernel<T, KV><<<blocks, 256, 0, stream>>>(
      static_cast<const T*>(a.k), static_cast<const T*>(a.v), a.slot_mapping,
      static_cast<KV*>(a.k_cache), static_cast<KV*>(a.v_cache), a.num_tokens, row, a.k_scale,
      a.v_scale, static_cast<std::int64_t>(a.num_blocks) * a.block_size, a.bad_slots);
  KVF_CUDA_TRY(cudaGetLastError());
  return Status::Ok();
}

}  // namespace

Status kv_write_dispatch(const KvWriteArgs& a, cudaStream_t stream) {
  switch (a.dtype) {
    case KvDtype::kF16:
      return launch_kv_write<f16, f16>(a, stream);
    case KvDtype::kBF16:
      return launch_kv_write<bf16, bf16>(a, stream);
    case KvDtype::kFP8E4M3:
      return launch_kv_write<bf16, fp8>(a, stream);
  }
  return Status::Error("kv write: unknown dtype");
}

}  // namespace kvfleet::kernels::cuda
