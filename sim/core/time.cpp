#include "sim/core/time.h"

#include <cstdio>
#include <string>

#include "sim/core/error.h"

namespace kvfleet::sim {

void clock_range_error(double s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g", s);
  throw InputError("simulated time", "",
                   std::string("a time of ") + buf +
                       " s lies outside the clock's range of 4e9 s (126 years of nanoseconds in "
                       "64 bits): an arrival rate, a duration, a trace timestamp or a GPU or "
                       "profile number is out of proportion");
}

}  // namespace kvfleet::sim
