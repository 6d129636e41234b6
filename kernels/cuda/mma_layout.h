#pragma once
// Where each lane's tensor-core fragments live, for the tensor-core prefill kernel: the row
// addresses each lane gives `ldmatrix` and the (row, column) of each accumulator element of
// `mma.sync.aligned.m16n8k16` (PTX ISA, "Matrix fragments for mma.m16n8k16"). Plain host and
// device functions without CUDA headers, so that kernels/tests/mma_layout_test.cpp checks them on
// the CPU: it emulates ldmatrix and mma from the PTX ISA's definitions and multiplies tiles
// through these addresses, comparing with a direct product.
//
// Notation: a warp computes S = Q·Kᵀ for 16 query rows × 64 keys, then O += P·V for 16 rows ×
// head_dim; Q, K and V tiles are row-major in shared memory ([row][dim], [key][dim]).
#if defined(__CUDACC__)
#define KVF_HD __host__ __device__ __forceinline__
#else
#define KVF_HD inline
#endif

namespace kvfleet::kernels::mma {

struct Coord {
  int row;
  int col;
};

// ldmatrix.x4 for the A operand (Q, 16 rows × 16 dims of k-step ks): lane l points at row
// (l % 8) + 8·((l / 8) % 2) of the warp's tile, dims 16·ks + 8·(l / 16); the four registers are
// then a0a1, a2a3, a4a5, a6a7.
KVF_HD Coord q_ldmatrix(int lane, int ks) {
  return {(lane % 8) + 8 * ((lane / 8) % 2), 16 * ks + 8 * (lane / 16)};
}

// ldmatrix.x4 (not transposed) for the B operand of S = Q·Kᵀ: keys 16·kp .. 16·kp + 15 (two
// n-tiles of 8 keys), dims 16·ks .. 16·ks + 15. Matrix m = l / 8: key 16·kp + 8·(m / 2) + l % 8,
// dims 16·ks + 8·(m % 2); registers 0, 1 are n-tile 2·kp's b0b1, b2b3, registers 2, 3 n-tile
// 2·kp + 1's.
KVF_HD Coord k_ldmatrix(int lane, int kp, int ks) {
  const int m = lane / 8;
  return {16 * kp + 8 * (m / 2) + lane % 8, 16 * ks + 8 * (m % 2)};
}

// ldmatrix.x4.trans for the B operand of O = P·V: keys 16·kk .. 16·kk + 15 (one k-step), dims
// 16·dp .. 16·dp + 15 (two n-tiles of 8 dims). Matrix m = l / 8: key 16·kk + 8·(m % 2) + l % 8,
// dims 16·dp + 8·(m / 2); registers 0, 1 are n-tile 2·dp's b0b1, b2b3, registers 2, 3 n-tile
// 2·dp + 1's.
KVF_HD Coord v_ldmatrix_trans(int lane, int kk, int dp) {
  const int m = lane / 8;
  return {16 * kk + 8 * (m % 2) + lane % 8, 16 * dp + 8 * (m / 2)};
}

// The accumulator element c[i] (i = 0..3) of lane l in a 16 × 8 tile: row l / 4 + 8·(i / 2),
// column 2·(l % 4) + i % 2.
KVF_HD Coord c_element(int lane, int i) { return {lane / 4 + 8 * (i / 2), 2 * (lane % 4) + i % 2}; }

// The accumulators of n-tiles 2·kk and 2·kk + 1 (16 rows × 16 keys of P) become the A operand of
// the k-step kk of P·V as four registers of two values each: {c0, c1} of the first tile, {c2, c3}
// of the first, {c0, c1} of the second, {c2, c3} of the second. (A's a0a1 are row l/4, keys
// 2·(l%4) + {0, 1}: the first tile's c0, c1; and so on.)
KVF_HD int p_source_tile(int reg) { return reg / 2; }           // 0: tile 2·kk, 1: tile 2·kk + 1
KVF_HD int p_source_element(int reg) { return 2 * (reg % 2); }  // c0 (with c1) or c2 (with c3)

}  // namespace kvfleet::kernels::mma
