// Chunked-prefill kernels for f16 KV: 3 head dims.
#include "kernels/cuda/instantiate.cuh"

namespace kvfleet::kernels::cuda {
const PrefillTable kPrefillF16 = make_prefill_table<f16, f16>();
}  // namespace kvfleet::kernels::cuda
