#pragma once
// How a kernel's output is held to its reference: per (row, head), element by element, against
// the reference rounded to the output dtype.
//
// A correct kernel computes in fp32 and rounds once to the output dtype (fp16 or bf16). Its fp32
// value differs from the exact (double) reference by the fp32 error δ, so its output differs from
// the reference rounded the same way by at most one step of the output dtype at that value (when
// the two fall on either side of a rounding boundary) plus δ:
//
//     |got − round(want)| ≤ ulp(round(want)) + ε_acc · max_d |want_d|      for every dim d,
//
// where ulp(x) is the spacing of the output dtype above |x| (bf16: 2^(e−7), fp16: 2^(e−10) for
// 2^e ≤ |x| < 2^(e+1); subnormal spacing below the normal range) and ε_acc bounds the fp32 error
// relative to the row's largest output: 32 · √(head_dim + keys) · 2^−24, the probabilistic bound
// for sums of n = head_dim + keys terms (error ~ λ√n·u, Higham and Mary 2019) with a factor of 8
// for λ and 4 for the chained steps (dot product, exp2, weighted sum, division). For the tests'
// contexts (≤ 700 keys, head dim ≤ 256) ε_acc ≤ 6e-5, well under one bf16 or fp16 step, so the
// limit is essentially "one step of the output dtype at each element".
//
// A tensor-core kernel (the default prefill path) also rounds the softmax weights w_t to the
// activation dtype before the weighted sum (as FlashAttention does; the sum l stays fp32), which
// changes output d by Σ_t w_t·δ_t·v_td with |δ_t| ≤ u (bf16: u = 2^−8, fp16: 2^−11). Taken as
// independent roundings, that has a standard deviation of at most u/√3 · √(Σ_t (w_t·v_td)²), the
// reference's "spread" of the element; the limit then adds 4·u·spread_d: about seven standard
// deviations, and (by Cauchy–Schwarz, |Σ w·δ·v| ≤ u·√n·spread) the worst case outright for rows
// of up to 16 keys. For a row of n similar keys the spread is about |v|/√n, so the term shrinks
// with the context as the rounding errors average out.
//
// The score of a case is the worst ratio |got − round(want)| / limit over all elements; ≤ 1
// passes. Measured per element and per (row, head) this way, the bugs that a normwise metric over
// the whole case let through (a token dropped at a partition boundary, a 1% softmax-scale error, a
// dropped GQA head) score well above 1: tolerance_test.cpp injects them into a CPU emulation of
// the kernels and checks that this comparison rejects each one while passing the correct kernel.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/attention.h"
#include "kernels/ref/numeric.h"

namespace kvfleet::kernels::testing {

// The spacing of output-dtype numbers just above |x| (x already in that dtype).
inline double act_ulp(double x, ActDtype act) {
  const int mant = act == ActDtype::kF16 ? 10 : 7;
  const int emin = act == ActDtype::kF16 ? -14 : -126;
  const double a = std::fabs(x);
  const int e = a > 0 ? std::max(std::ilogb(a), emin) : emin;
  return std::ldexp(1.0, e - mant);
}

// x rounded to the output dtype (through fp32, as the kernels do), back as a double.
inline double round_act(double x, ActDtype act) {
  const std::uint16_t b = ref::to_act(static_cast<float>(x), act);
  return ref::load_act(&b, 0, act);
}

// The unit roundoff of the output dtype (half its relative step): what rounding one value costs.
inline double act_unit_roundoff(ActDtype act) { return act == ActDtype::kF16 ? 0x1p-11 : 0x1p-8; }

// The fp32 error allowance relative to the row's largest output, for a row over `keys` keys.
inline double accumulation_eps(int head_dim, int keys) {
  return 32.0 * std::sqrt(static_cast<double>(head_dim + std::max(keys, 0))) * 0x1p-24;
}

struct Comparison {
  double score = 0;  // worst |got − round(want)| / limit; ≤ 1 passes
  std::size_t row = 0;
  int head = 0;
  int dim = 0;
  double got = 0;
  double want = 0;
  double row_rel = 0;  // the worst (row, head)'s max |got − round(want)| / max |want|
  bool nan = false;    // a NaN where the reference has none (or the reverse)
  bool ok() const { return !nan && score <= 1.0; }
  std::string describe() const {
    std::ostringstream os;
    if (nan) {
      os << "NaN mismatch at row " << row << " head " << head << " dim " << dim;
    } else {
      os << "worst at row " << row << " head " << head << " dim " << dim << ": got " << got
         << ", reference " << want << " (score " << score << " of the limit; that row and head's "
         << "error is " << row_rel << " of its largest output)";
    }
    return os.str();
  }
};

// got, want: [rows, heads, head_dim]; keys[r]: how many keys row r attends to. spread (same
// shape, from the reference) when the kernel rounds its softmax weights to the output dtype.
inline Comparison compare_rows(const std::vector<double>& got, const std::vector<double>& want,
                               int heads, int head_dim, ActDtype act, const std::vector<int>& keys,
                               const std::vector<double>* spread = nullptr) {
  const double weights_u = spread == nullptr ? 0.0 : act_unit_roundoff(act);
  Comparison c;
  const std::size_t rows = keys.size();
  for (std::size_t r = 0; r < rows; ++r) {
    for (int h = 0; h < heads; ++h) {
      const std::size_t base = (r * heads + h) * head_dim;
      double mx = 0;
      for (int d = 0; d < head_dim; ++d) mx = std::max(mx, std::fabs(want[base + d]));
      const double slack = accumulation_eps(head_dim, keys[r]) * mx;
      double worst_abs = 0;
      for (int d = 0; d < head_dim; ++d) {
        const double g = got[base + d];
        const double w = want[base + d];
        if (std::isnan(g) != std::isnan(w)) {
          c.nan = true;
          c.row = r;
          c.head = h;
          c.dim = d;
          return c;
        }
        const double wr = round_act(w, act);
        const double err = std::fabs(g - wr);
        worst_abs = std::max(worst_abs, err);
        const double rounding = spread == nullptr ? 0.0 : 4.0 * weights_u * (*spread)[base + d];
        const double s = err / (act_ulp(wr, act) + slack + rounding);
        if (s > c.score) {
          c.score = s;
          c.row = r;
          c.head = h;
          c.dim = d;
          c.got = g;
          c.want = w;
          c.row_rel = -1;  // filled below for the worst (row, head)
        }
      }
      if (c.row == r && c.head == h && c.row_rel < 0) c.row_rel = mx > 0 ? worst_abs / mx : 0;
    }
  }
  return c;
}

// The keys each output row attends to: decode rows attend to their sequence's context; a
// prefill chunk's token i attends to positions 0 .. context − q_len + i.
inline std::vector<int> decode_keys(const std::vector<std::int32_t>& context_lens) {
  return {context_lens.begin(), context_lens.end()};
}
inline std::vector<int> prefill_keys(const std::vector<std::int32_t>& context_lens,
                                     const std::vector<std::int32_t>& q_indptr) {
  std::vector<int> keys;
  for (std::size_t s = 0; s < context_lens.size(); ++s) {
    const int q_len = q_indptr[s + 1] - q_indptr[s];
    for (int i = 0; i < q_len; ++i) keys.push_back(context_lens[s] - q_len + i + 1);
  }
  return keys;
}

}  // namespace kvfleet::kernels::testing
