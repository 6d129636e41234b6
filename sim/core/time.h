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

// Seconds (double) to SimTime, rounded to the nearest nanosecond.
inline SimTime from_seconds(double s) { return static_cast<SimTime>(std::llround(s * 1e9)); }
inline double to_seconds(SimTime t) { return static_cast<double>(t) * 1e-9; }

}  // namespace kvfleet::sim
