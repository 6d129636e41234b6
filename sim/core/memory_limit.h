#pragma once
// How much more memory this process may take: the least of what the machine has available
// (MemAvailable plus free swap), the address-space and data limits (ulimit -v, ulimit -d) less
// what the process already maps, and its cgroup's memory.max less its memory.current (a
// container, a Slurm job). Used to refuse, before anything is allocated, a scenario whose
// structures would not fit (simulation/scenario.cpp).
#include <string>

namespace kvfleet::sim {

struct MemoryLimit {
  double bytes = 0;  // infinity when nothing could be read
  std::string what;  // which limit it is, in words ("ulimit -v", "the cgroup's memory.max", ...)
};

MemoryLimit available_memory();

// "1.5 GB", "640 MB": bytes in decimal units, for messages.
std::string format_bytes(double bytes);

}  // namespace kvfleet::sim
