// The tensor-core prefill's fragment addressing (kernels/cuda/mma_layout.h), checked without a
// GPU: ldmatrix and mma.m16n8k16 are emulated from the PTX ISA's definitions (which thread gives
// which row address, which thread receives which elements, with and without .trans; where each
// A, B, C element sits in which lane's registers), and a warp's S = Q·Kᵀ over 64 keys and
// O = P·V over every head dim are computed through the kernel's address functions and compared
// with direct products. An error in an address, a register order or the P-to-A reuse shows as a
// wrong element.
#include <gtest/gtest.h>

#include <array>
#include <random>
#include <vector>

#include "kernels/cuda/mma_layout.h"

namespace kvfleet::kernels {
namespace {

using mma::Coord;

// A row-major matrix standing for a tile in shared memory.
struct Tile {
  int rows, cols;
  std::vector<double> v;
  Tile(int r, int c) : rows(r), cols(c), v(static_cast<std::size_t>(r) * c) {}
  double at(int r, int c) const {
    EXPECT_TRUE(r >= 0 && r < rows && c >= 0 && c < cols)
        << "read outside the tile: " << r << ", " << c;
    if (r < 0 || r >= rows || c < 0 || c >= cols) return 0;
    return v[static_cast<std::size_t>(r) * cols + c];
  }
};

using Regs = std::array<std::array<double, 2>, 4>;  // four 32-bit registers of two 16-bit values
using Warp = std::array<Regs, 32>;

// ldmatrix.sync.aligned.m8n8.x4[.trans].b16: lane 8·m + i gives the address of row i of matrix
// m (8 consecutive elements). Without .trans lane t receives, in register m, row t / 4 of matrix
// m, elements 2·(t % 4) and 2·(t % 4) + 1; with .trans, element t / 4 of rows 2·(t % 4) and
// 2·(t % 4) + 1.
Warp ldmatrix_x4(const Tile& s, const std::array<Coord, 32>& addr, bool trans) {
  Warp out{};
  for (int t = 0; t < 32; ++t) {
    for (int m = 0; m < 4; ++m) {
      for (int i = 0; i < 2; ++i) {
        if (!trans) {
          const Coord a = addr[8 * m + t / 4];
          out[t][m][i] = s.at(a.row, a.col + 2 * (t % 4) + i);
        } else {
          const Coord a = addr[8 * m + 2 * (t % 4) + i];
          out[t][m][i] = s.at(a.row, a.col + t / 4);
        }
      }
    }
  }
  return out;
}

// mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}: with g = t / 4, c = t % 4,
// A[g][2c+i] = a0/a1, A[g+8][2c+i] = a2/a3, A[g][2c+8+i] = a4/a5, A[g+8][2c+8+i] = a6/a7;
// B[2c+i][g] = b0/b1, B[2c+8+i][g] = b2/b3; C[g][2c+i] = c0/c1, C[g+8][2c+i] = c2/c3.
using Acc = std::array<std::array<double, 4>, 32>;
void mma(Acc* c, const Warp& a, const Warp& b, int b_first_reg) {
  double A[16][16], B[16][8], C[16][8];
  for (int t = 0; t < 32; ++t) {
    const int g = t / 4, q = t % 4;
    for (int i = 0; i < 2; ++i) {
      A[g][2 * q + i] = a[t][0][i];
      A[g + 8][2 * q + i] = a[t][1][i];
      A[g][2 * q + 8 + i] = a[t][2][i];
      A[g + 8][2 * q + 8 + i] = a[t][3][i];
      B[2 * q + i][g] = b[t][b_first_reg][i];
      B[2 * q + 8 + i][g] = b[t][b_first_reg + 1][i];
      C[g][2 * q + i] = (*c)[t][i];
      C[g + 8][2 * q + i] = (*c)[t][2 + i];
    }
  }
  for (int r = 0; r < 16; ++r) {
    for (int n = 0; n < 8; ++n) {
      for (int k = 0; k < 16; ++k) C[r][n] += A[r][k] * B[k][n];
    }
  }
  for (int t = 0; t < 32; ++t) {
    const int g = t / 4, q = t % 4;
    for (int i = 0; i < 2; ++i) {
      (*c)[t][i] = C[g][2 * q + i];
      (*c)[t][2 + i] = C[g + 8][2 * q + i];
    }
  }
}

class MmaLayout : public ::testing::TestWithParam<int> {};

TEST_P(MmaLayout, ScoresAndWeightedSumsThroughTheKernelsAddressesEqualDirectProducts) {
  const int D = GetParam();
  constexpr int kKeys = 64;
  std::mt19937 rng(D);
  std::uniform_int_distribution<int> u(-8, 8);  // small integers: every product exact
  Tile q(16, D), k(kKeys, D), v(kKeys, D);
  for (auto* t : {&q, &k, &v}) {
    for (double& x : t->v) x = u(rng);
  }
  // S = Q·Kᵀ: 8 n-tiles of 8 keys, loaded two at a time.
  std::vector<Acc> s(kKeys / 8, Acc{});
  for (int kp = 0; kp < kKeys / 16; ++kp) {
    for (int ks = 0; ks < D / 16; ++ks) {
      std::array<Coord, 32> qa, ka;
      for (int l = 0; l < 32; ++l) {
        qa[l] = mma::q_ldmatrix(l, ks);
        ka[l] = mma::k_ldmatrix(l, kp, ks);
      }
      const Warp a = ldmatrix_x4(q, qa, false);
      const Warp b = ldmatrix_x4(k, ka, false);
      mma(&s[2 * kp], a, b, 0);
      mma(&s[2 * kp + 1], a, b, 2);
    }
  }
  for (int j = 0; j < kKeys / 8; ++j) {
    for (int l = 0; l < 32; ++l) {
      for (int i = 0; i < 4; ++i) {
        const Coord e = mma::c_element(l, i);
        const int key = 8 * j + e.col;
        double want = 0;
        for (int d = 0; d < D; ++d) want += q.at(e.row, d) * k.at(key, d);
        ASSERT_EQ(s[j][l][i], want)
            << "S row " << e.row << " key " << key << " (lane " << l << ", c" << i << ")";
      }
    }
  }
  // O = P·V with P = S as the kernel reuses it: the accumulators of tiles 2·kk and 2·kk + 1 are
  // the A operand of k-step kk.
  std::vector<Acc> o(D / 8, Acc{});
  for (int kk = 0; kk < kKeys / 16; ++kk) {
    Warp pa{};
    for (int l = 0; l < 32; ++l) {
      for (int r = 0; r < 4; ++r) {
        const Acc& src = s[2 * kk + mma::p_source_tile(r)];
        pa[l][r] = {src[l][mma::p_source_element(r)], src[l][mma::p_source_element(r) + 1]};
      }
    }
    for (int dp = 0; dp < D / 16; ++dp) {
      std::array<Coord, 32> va;
      for (int l = 0; l < 32; ++l) va[l] = mma::v_ldmatrix_trans(l, kk, dp);
      const Warp b = ldmatrix_x4(v, va, true);
      mma(&o[2 * dp], pa, b, 0);
      mma(&o[2 * dp + 1], pa, b, 2);
    }
  }
  for (int n = 0; n < D / 8; ++n) {
    for (int l = 0; l < 32; ++l) {
      for (int i = 0; i < 4; ++i) {
        const Coord e = mma::c_element(l, i);
        const int dim = 8 * n + e.col;
        double want = 0;
        for (int key = 0; key < kKeys; ++key) {
          double sv = 0;
          for (int d = 0; d < D; ++d) sv += q.at(e.row, d) * k.at(key, d);
          want += sv * v.at(key, dim);
        }
        ASSERT_EQ(o[n][l][i], want) << "O row " << e.row << " dim " << dim;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(HeadDims, MmaLayout, ::testing::Values(64, 128, 256));

}  // namespace
}  // namespace kvfleet::kernels
