// Decode kernels (paged and contiguous) for f16 KV: 3 head dims × 4 block sizes + 3.
#include "kernels/cuda/instantiate.cuh"

namespace kvfleet::kernels::cuda {
const DecodeTable kDecodeF16 = make_decode_table<f16, f16>();
}  // namespace kvfleet::kernels::cuda
