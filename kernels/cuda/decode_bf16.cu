// Decode kernels (paged and contiguous) for bf16 KV: 3 head dims × 4 block sizes + 3.
#include "kernels/cuda/instantiate.cuh"

namespace kvfleet::kernels::cuda {
const DecodeTable kDecodeBF16 = make_decode_table<bf16, bf16>();
}  // namespace kvfleet::kernels::cuda
