// Chunked-prefill kernels for fp8 KV: 3 head dims.
#include "kernels/cuda/instantiate.cuh"

namespace kvfleet::kernels::cuda {
const PrefillTable kPrefillFP8 = make_prefill_table<bf16, fp8>();
}  // namespace kvfleet::kernels::cuda
