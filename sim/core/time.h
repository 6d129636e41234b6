#pragma once
// Simulated time: an integer count of nanoseconds since the start of the run (DESIGN.md, "Event
// core"). Integer time makes event order exact and runs reproducible across machines.
#include <cmath>
#include <cstdint>
#include <limits>

namespace kvfleet::sim {

using SimTime = std::int64_t;  // ns

inline constexpr SimTime kNsPerSecond = 1'000'000'000;
inline constexpr SimTime kTimeNever = std::numeric_limits<SimTime>::max();

// The clock's range. Events lie in [0, kMaxSimTime] and a duration made by from_seconds is at most
// as long, so `now + duration` never overflows; what would leave the range is an input error
// (a rate, duration, trace timestamp or GPU/profile number out of proportion), not a wrap-around.
inline constexpr double kMaxSimSeconds = 4e9;  // 126 years
inline constexpr SimTime kMaxSimTime = SimTime{4'000'000'000} * kNsPerSecond;

// Throws InputError: a time of `s` seconds lies outside the clock's range.
[[noreturn]] void clock_range_error(double s);

// Seconds (double) to SimTime, rounded to the nearest nanosecond; throws (clock_range_error) for
// NaN and for |s| > kMaxSimSeconds.
inline SimTime from_seconds(double s) {
  if (!(std::fabs(s) <= kMaxSimSeconds)) [[unlikely]]
    clock_range_error(s);
  return static_cast<SimTime>(std::llround(s * 1e9));
}
// SimTime to seconds: the double nearest to t / 10^9 (a division, not a product with 1e-9, which
// is off by one unit in the last place for many times), so that 23076237 ns prints as 0.023076237
// and not 0.023076237000000003 in CSV files and reports.
inline double to_seconds(SimTime t) { return static_cast<double>(t) / 1e9; }

}  // namespace kvfleet::sim
