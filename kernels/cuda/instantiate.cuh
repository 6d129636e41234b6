#pragma once
#include "kernels/cuda/decode.cuh"
#include "kernels/cuda/prefill.cuh"
#include "kernels/cuda/tables.h"

namespace kvfleet::kernels::cuda {

template <typename T, typename KV>
constexpr DecodeTable make_decode_table() {
  return DecodeTable{{{&paged_decode_impl<T, KV, 64, 8>, &paged_decode_impl<T, KV, 64, 16>,
                       &paged_decode_impl<T, KV, 64, 32>, &paged_decode_impl<T, KV, 64, 64>},
                      {&paged_decode_impl<T, KV, 128, 8>, &paged_decode_impl<T, KV, 128, 16>,
                       &paged_decode_impl<T, KV, 128, 32>, &paged_decode_impl<T, KV, 128, 64>},
                      {&paged_decode_impl<T, KV, 256, 8>, &paged_decode_impl<T, KV, 256, 16>,
                       &paged_decode_impl<T, KV, 256, 32>, &paged_decode_impl<T, KV, 256, 64>}},
                     {&contiguous_decode_impl<T, KV, 64>, &contiguous_decode_impl<T, KV, 128>,
                      &contiguous_decode_impl<T, KV, 256>}};
}

template <typename T, typename KV>
constexpr PrefillTable make_prefill_table() {
  return PrefillTable{{&paged_prefill_impl<T, KV, 64>, &paged_prefill_impl<T, KV, 128>,
                       &paged_prefill_impl<T, KV, 256>}};
}

}  // namespace kvfleet::kernels::cuda
