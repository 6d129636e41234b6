#pragma once
// kvfleet::kernels_ref: CPU references for every kernel, with double accumulation. They take the
// same argument structs as the CUDA launchers (kernels/attention.h) with host pointers, read the
// same stored bits, and write double outputs that tests compare with the GPU's. Each walks the
// block table itself; tests check it against dense_attention() over gather_kv()'s dense copy.
#include <cstdint>
#include <vector>

#include "kernels/attention.h"

namespace kvfleet::kernels::ref {

// out: [num_seqs, num_q_heads, head_dim]
void paged_decode(const DecodeArgs& a, double* out);
// out: [num_seqs, num_q_heads, head_dim]
void contiguous_decode(const ContiguousDecodeArgs& a, double* out);
// out: [num_q_tokens, num_q_heads, head_dim]. spread (optional, same shape): for each output
// element √(Σ_t (w_t · v_td)²) over its softmax weights w_t, the scale of the error that rounding
// the weights to a low-precision dtype before the weighted sum adds (tolerance.h).
void paged_prefill(const PrefillArgs& a, double* out, double* spread = nullptr);
// Writes the host caches a.k_cache and a.v_cache.
void kv_write(const KvWriteArgs& a);

// Dense attention of one query row over n keys: out = Σ_j softmax_j(scale · q·k_j) v_j.
// q: [head_dim], k, v: [n, head_dim], out: [head_dim]. n = 0 gives zeros.
void dense_attention(const double* q, const double* k, const double* v, int n, int head_dim,
                     double scale, double* out);

// The first n tokens of one sequence's K (value = false) or V (value = true) for one KV head,
// dequantised, as a dense [n, head_dim] array: the plain gather that the checks compare with.
std::vector<double> gather_kv(const PagedKv& kv, int num_kv_heads, int head_dim, int seq,
                              int kv_head, int n, bool value);

}  // namespace kvfleet::kernels::ref
