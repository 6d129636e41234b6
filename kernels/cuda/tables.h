#pragma once
// The dispatch table's entries: one compiled kernel per supported (dtype, head dim, block size).
// Each dtype's translation unit (decode_<dtype>.cu, prefill_<dtype>.cu) defines its part, so nvcc
// compiles them in parallel; dispatch.cu looks entries up after validation.
#include "kernels/cuda/common.cuh"

namespace kvfleet::kernels::cuda {

using PagedDecodeFn = Status (*)(const DecodeArgs&, int splits, cudaStream_t);
using ContiguousDecodeFn = Status (*)(const ContiguousDecodeArgs&, int splits, cudaStream_t);
using PrefillFn = Status (*)(const PrefillArgs&, cudaStream_t);

inline constexpr int kHeadDims[3] = {64, 128, 256};
inline constexpr int kBlockSizes[4] = {8, 16, 32, 64};

struct DecodeTable {
  PagedDecodeFn paged[3][4];  // [head dim index][block size index]
  ContiguousDecodeFn contiguous[3];
};
struct PrefillTable {
  PrefillFn paged[3];  // [head dim index]; the block size is a runtime shift
};

extern const DecodeTable kDecodeF16;
extern const DecodeTable kDecodeBF16;
extern const DecodeTable kDecodeFP8;
extern const PrefillTable kPrefillF16;
extern const PrefillTable kPrefillBF16;
extern const PrefillTable kPrefillFP8;

}  // namespace kvfleet::kernels::cuda
