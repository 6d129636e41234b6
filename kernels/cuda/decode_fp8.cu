// Decode kernels (paged and contiguous) for fp8 KV: 3 head dims × 4 block sizes + 3.
#include "kernels/cuda/instantiate.cuh"

namespace kvfleet::kernels::cuda {
const DecodeTable kDecodeFP8 = make_decode_table<bf16, fp8>();
}  // namespace kvfleet::kernels::cuda
