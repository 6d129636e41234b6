#include "sim/cost/moe.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace kvfleet::sim {

double expected_distinct_experts(double tokens, int num_experts, int experts_per_token, int local) {
  if (tokens <= 0 || num_experts <= 0) return 0;
  // A token leaves a given expert unused with probability 1 − k/E.
  const double miss = 1.0 - static_cast<double>(experts_per_token) / num_experts;
  return local * (1.0 - std::pow(std::max(0.0, miss), tokens));
}

double expected_max_of_normals(int n) {
  static const std::vector<double> table = [] {
    // E[max] = ∫ x · n φ(x) Φ(x)^(n−1) dx, by the trapezoid rule on [−10, 10].
    std::vector<double> t(257, 0.0);
    for (int m = 2; m < static_cast<int>(t.size()); ++m) {
      const double h = 1e-3;
      double s = 0;
      for (double x = -10; x <= 10; x += h) {
        const double phi = std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
        const double Phi = 0.5 * std::erfc(-x / std::sqrt(2.0));
        s += x * m * phi * std::pow(Phi, m - 1) * h;
      }
      t[m] = s;
    }
    return t;
  }();
  if (n <= 1) return 0;
  if (n < static_cast<int>(table.size())) return table[n];
  return std::sqrt(2 * std::log(static_cast<double>(n)));  // asymptote, beyond 256 GPUs
}

double moe_dispatch_combine_s(double tokens, int ranks, double bytes_per_token, double bw,
                              double lat) {
  if (ranks <= 1 || tokens <= 0) return 0;
  const double step = lat + (bw > 0 ? tokens * bytes_per_token / bw : 0.0);
  return 2.0 * (ranks - 1) * step;
}

MoeLoad moe_busiest_gpu(double tokens, int num_experts, int k, int gpus) {
  MoeLoad l;
  if (tokens <= 0 || num_experts <= 0 || k <= 0) return l;
  gpus = std::clamp(gpus, 1, num_experts);
  const double E = num_experts, L = static_cast<double>(num_experts) / gpus;
  l.experts = expected_distinct_experts(tokens, num_experts, k, 1) * L;
  const double mean = tokens * k / gpus;
  if (gpus == 1) {
    l.pairs = mean;
    return l;
  }
  // A token's pairs on one GPU are hypergeometric (k draws from E experts, L of them there); the
  // GPUs' loads sum to tokens × k, so they are negatively correlated (−1/(G−1)), which widens
  // the spread of their maximum by sqrt(G/(G−1)) over independent loads.
  const double p = L / E;
  const double var = tokens * k * p * (1 - p) * (E > 1 ? (E - k) / (E - 1) : 0.0);
  const double spread = std::sqrt(var * gpus / (gpus - 1.0)) * expected_max_of_normals(gpus);
  l.pairs = std::min(mean + spread, tokens * std::min<double>(k, L));
  return l;
}

}  // namespace kvfleet::sim
