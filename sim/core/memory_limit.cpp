#include "sim/core/memory_limit.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

namespace kvfleet::sim {
namespace {

// A "Key:   N kB" line of /proc/meminfo, in bytes; -1 when absent.
double meminfo(const std::string& key) {
  std::ifstream in("/proc/meminfo");
  std::string name, unit;
  double value = 0;
  while (in >> name >> value) {
    std::getline(in, unit);
    if (name == key + ":") return value * 1024;
  }
  return -1;
}

// Field `k` of /proc/self/statm (0: the whole address space, 5: data and stack), in bytes.
double statm_bytes(int k) {
  std::ifstream in("/proc/self/statm");
  double pages = 0;
  for (int i = 0; i <= k; ++i)
    if (!(in >> pages)) return 0;
  return pages * static_cast<double>(::sysconf(_SC_PAGESIZE));
}

// The cgroup (v2) this process is in: memory.max - memory.current, or -1.
double cgroup_room() {
  std::ifstream cg("/proc/self/cgroup");
  std::string line, path;
  while (std::getline(cg, line))
    if (line.rfind("0::", 0) == 0) path = line.substr(3);
  if (path.empty()) return -1;
  const std::string dir = "/sys/fs/cgroup" + (path == "/" ? std::string() : path);
  std::ifstream max_in(dir + "/memory.max"), cur_in(dir + "/memory.current");
  std::string max_text;
  double current = 0;
  if (!(max_in >> max_text) || max_text == "max" || !(cur_in >> current)) return -1;
  try {
    return std::stod(max_text) - current;
  } catch (...) {
    return -1;
  }
}

}  // namespace

MemoryLimit available_memory() {
  MemoryLimit m{std::numeric_limits<double>::infinity(), "no limit could be read"};
  auto consider = [&](double bytes, const char* what) {
    if (bytes >= 0 && bytes < m.bytes) m = {bytes, what};
  };
  const double avail = meminfo("MemAvailable");
  if (avail >= 0)
    consider(avail + std::max(0.0, meminfo("SwapFree")), "the machine's available memory and swap");
  struct Rlimit {
    int resource, statm_field;
    const char* what;
  };
  for (const Rlimit& r : {Rlimit{RLIMIT_AS, 0, "the address-space limit (ulimit -v)"},
                          Rlimit{RLIMIT_DATA, 5, "the data-size limit (ulimit -d)"}}) {
    rlimit rl{};
    if (::getrlimit(r.resource, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
      consider(std::max(0.0, static_cast<double>(rl.rlim_cur) - statm_bytes(r.statm_field)),
               r.what);
  }
  consider(cgroup_room(), "the cgroup's memory.max (a container or a batch job's limit)");
  return m;
}

std::string format_bytes(double bytes) {
  char buf[32];
  if (bytes >= 1e9)
    std::snprintf(buf, sizeof buf, "%.1f GB", bytes / 1e9);
  else
    std::snprintf(buf, sizeof buf, "%.0f MB", bytes / 1e6);
  return buf;
}

}  // namespace kvfleet::sim
