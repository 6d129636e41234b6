#pragma once
// Seeded random streams. Every component draws from its own stream, derived from the scenario seed
// and the component's name, so adding a component never shifts another one's numbers
// (DESIGN.md, "Randomness"). The generator (xoshiro256**) and every distribution are implemented
// here rather than taken from <random>, whose distributions differ between standard libraries:
// the same seed gives the same bytes on every platform.
#include <cstdint>
#include <string_view>

namespace kvfleet::sim {

class RngStream {
 public:
  // A stream for component `name` under scenario seed `seed`.
  RngStream(std::uint64_t seed, std::string_view name);

  std::uint64_t next_u64();
  // Uniform in [0, 1) with 53 random bits.
  double uniform();
  // Uniform in (0, 1]: safe to take the logarithm of.
  double uniform_pos() { return 1.0 - uniform(); }
  // Uniform integer in [0, n), n > 0, without modulo bias.
  std::uint64_t below(std::uint64_t n);
  // Exponential with the given mean.
  double exponential(double mean);
  // Standard normal (Marsaglia polar method).
  double normal();
  // Gamma(shape k, scale theta) (Marsaglia-Tsang), k > 0.
  double gamma(double shape, double scale);

 private:
  std::uint64_t s_[4];
  double spare_normal_ = 0.0;
  bool has_spare_ = false;
};

// 64-bit FNV-1a of a string: stable across platforms and runs.
std::uint64_t stable_hash(std::string_view s);

}  // namespace kvfleet::sim
