#pragma once
#include "kernels/cuda/decode.cuh"
#include "kernels/cuda/prefill.cuh"
#include "kernels/cuda/prefill_mma.cuh"
#include "kernels/cuda/tables.h"

namespace kvfleet::kernels::cuda {

template <typename T, typename KV, int D, int G>
constexpr PagedDecodeEntry paged_entry() {
  return {&paged_decode_impl<T, KV, D, G>, &decode_ctas_per_sm<T, KV, D, G, true>};
}
template <typename T, typename KV, int D, int G>
constexpr ContiguousDecodeEntry contiguous_entry() {
  return {&contiguous_decode_impl<T, KV, D, G>, &decode_ctas_per_sm<T, KV, D, G, false>};
}

template <typename T, typename KV, int D>
constexpr void fill_decode_row(DecodeTable* t, int hi) {
  t->paged[hi][0] = paged_entry<T, KV, D, 1>();
  t->paged[hi][1] = paged_entry<T, KV, D, 2>();
  t->paged[hi][2] = paged_entry<T, KV, D, 4>();
  t->paged[hi][3] = paged_entry<T, KV, D, 8>();
  t->contiguous[hi][0] = contiguous_entry<T, KV, D, 1>();
  t->contiguous[hi][1] = contiguous_entry<T, KV, D, 2>();
  t->contiguous[hi][2] = contiguous_entry<T, KV, D, 4>();
  t->contiguous[hi][3] = contiguous_entry<T, KV, D, 8>();
}

template <typename T, typename KV>
constexpr DecodeTable make_decode_table() {
  DecodeTable t{};
  fill_decode_row<T, KV, 64>(&t, 0);
  fill_decode_row<T, KV, 128>(&t, 1);
  fill_decode_row<T, KV, 256>(&t, 2);
  return t;
}

template <typename T, typename KV>
constexpr PrefillTable make_prefill_table() {
  return PrefillTable{{&paged_prefill_mma_impl<T, KV, 64>, &paged_prefill_mma_impl<T, KV, 128>,
                       &paged_prefill_mma_impl<T, KV, 256>},
                      {&paged_prefill_impl<T, KV, 64>, &paged_prefill_impl<T, KV, 128>,
                       &paged_prefill_impl<T, KV, 256>}};
}

}  // namespace kvfleet::kernels::cuda
