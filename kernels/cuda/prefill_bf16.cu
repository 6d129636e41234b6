// Chunked-prefill kernels for bf16 KV: 3 head dims.
#include "kernels/cuda/instantiate.cuh"

namespace kvfleet::kernels::cuda {
const PrefillTable kPrefillBF16 = make_prefill_table<bf16, bf16>();
}  // namespace kvfleet::kernels::cuda
