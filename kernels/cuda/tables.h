#pragma once
// The dispatch table's entries: one compiled kernel per supported (dtype, head dim, group width)
// for decode and per (dtype, head dim) for prefill; the block size is a runtime shift in both.
// Each dtype's translation unit (decode_<dtype>.cu, prefill_<dtype>.cu) defines its part, so nvcc
// compiles them in parallel; dispatch.cu looks entries up after validation.
#include "kernels/cuda/common.cuh"

namespace kvfleet::kernels::cuda {

using PagedDecodeFn = Status (*)(const DecodeArgs&, int splits, cudaStream_t);
using ContiguousDecodeFn = Status (*)(const ContiguousDecodeArgs&, int splits, cudaStream_t);
using CtasPerSmFn = int (*)();
using PrefillFn = Status (*)(const PrefillArgs&, cudaStream_t);

inline constexpr int kHeadDims[3] = {64, 128, 256};

inline int head_index(int d) { return d == 64 ? 0 : d == 128 ? 1 : 2; }
// decode_group_width() 1, 2, 4, 8 -> 0, 1, 2, 3.
inline int group_index(int group) { return __builtin_ctz(decode_group_width(group)); }

struct PagedDecodeEntry {
  PagedDecodeFn launch;
  CtasPerSmFn ctas_per_sm;  // the kernel's occupancy, for the automatic split choice
};
struct ContiguousDecodeEntry {
  ContiguousDecodeFn launch;
  CtasPerSmFn ctas_per_sm;
};
struct DecodeTable {
  PagedDecodeEntry paged[3][4];  // [head dim index][group width index]
  ContiguousDecodeEntry contiguous[3][4];
};
struct PrefillTable {
  PrefillFn paged_mma[3];  // [head dim index]: tensor cores
  PrefillFn paged[3];      // [head dim index]: CUDA cores (the reference path)
};

extern const DecodeTable kDecodeF16;
extern const DecodeTable kDecodeBF16;
extern const DecodeTable kDecodeFP8;
extern const PrefillTable kPrefillF16;
extern const PrefillTable kPrefillBF16;
extern const PrefillTable kPrefillFP8;

}  // namespace kvfleet::kernels::cuda
