#pragma once
// Shared by the fuzz harnesses (tests/fuzz/*_fuzz.cpp). Each harness defines
// LLVMFuzzerTestOneInput; it is built twice: with libFuzzer (clang, -DKVFLEET_FUZZ=ON) to search,
// and with replay_main.cpp into a normal ctest that runs the seed corpus and every regression
// input found so far (tests/fuzz/regressions/<harness>/).
//
// The contract each harness checks: kvfleet returns, or throws its InputError (exit 2 at the
// command line). Any other exception escapes and aborts, a crash the fuzzer reports; so does a
// sanitizer finding or a broken invariant (FUZZ_CHECK).
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/error.h"

namespace kvfleet::fuzz {

// Aborts, naming the broken invariant.
#define FUZZ_CHECK(cond)                                                                       \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      std::fprintf(stderr, "fuzz: invariant broken: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                            \
    }                                                                                          \
  } while (0)

// Takes typed values from the front of the fuzz input; zeros once it is used up.
class Bytes {
 public:
  Bytes(const std::uint8_t* data, std::size_t size) : p_(data), n_(size) {}
  bool empty() const { return n_ == 0; }
  std::uint8_t byte() {
    if (n_ == 0) return 0;
    --n_;
    return *p_++;
  }
  std::uint32_t u32() {
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = (v << 8) | byte();
    return v;
  }
  // A number that is often interesting: a few special values, small integers, or raw bits.
  double number() {
    static const double kSpecial[] = {0,      -1,    1,  0.5,  1e9,  1e300, -1e300,
                                      1e-300, 1e308, 16, 2048, -0.0, 4e9,   1e12};
    const std::uint8_t k = byte();
    if (k < 64) return kSpecial[k % (sizeof kSpecial / sizeof kSpecial[0])];
    if (k < 128) return static_cast<double>(static_cast<std::int32_t>(u32()) % 100000);
    if (k < 160)
      return k % 2 ? std::numeric_limits<double>::quiet_NaN()
                   : std::numeric_limits<double>::infinity() * (k % 4 ? 1 : -1);
    std::uint64_t bits = (static_cast<std::uint64_t>(u32()) << 32) | u32();
    double d;
    std::memcpy(&d, &bits, sizeof d);
    return d;
  }
  // Up to `max` bytes as text.
  std::string text(std::size_t max) {
    const std::size_t len = std::min<std::size_t>(byte() % (max + 1), n_);
    std::string s(reinterpret_cast<const char*>(p_), len);
    p_ += len;
    n_ -= len;
    return s;
  }
  // One of `choices`, or (rarely) fuzz text.
  std::string pick(const std::vector<std::string>& choices) {
    const std::uint8_t k = byte();
    if (k >= 240 || choices.empty()) return text(16);
    return choices[k % choices.size()];
  }
  std::string rest() {
    std::string s(reinterpret_cast<const char*>(p_), n_);
    p_ += n_;
    n_ = 0;
    return s;
  }

 private:
  const std::uint8_t* p_;
  std::size_t n_;
};

// A folder of this process's own, emptied for each input.
// With KVFLEET_FUZZ_RSS_MB set (tools/fuzz.sh sets it below libFuzzer's -rss_limit_mb), an input
// after which the process holds more memory than that aborts at once, so that libFuzzer saves it
// as a crash: libFuzzer's own out-of-memory report profiles the whole heap first, which takes
// many minutes under AddressSanitizer. Call at the end of LLVMFuzzerTestOneInput.
inline void check_memory() {
  static const long limit_mb = [] {
    const char* v = std::getenv("KVFLEET_FUZZ_RSS_MB");
    return v ? std::atol(v) : 0L;
  }();
  if (limit_mb <= 0) return;
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  const long mb = resident * (::sysconf(_SC_PAGESIZE) / 1024) / 1024;
  if (mb > limit_mb) {
    std::fprintf(stderr, "fuzz: the process holds %ld MB after this input (limit %ld MB)\n", mb,
                 limit_mb);
    std::abort();
  }
}

inline const std::string& scratch() {
  static const std::string dir = [] {
    const auto d =
        std::filesystem::temp_directory_path() / ("kvfleet-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d.string();
  }();
  return dir;
}
inline void clear_scratch() {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(scratch(), ec))
    std::filesystem::remove_all(e.path(), ec);
}
inline std::string write_file(const std::string& name, std::string_view bytes) {
  const auto p = std::filesystem::path(scratch()) / name;
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return p.string();
}

// Splits `s` at every occurrence of `sep`.
inline std::vector<std::string> split(const std::string& s, std::string_view sep) {
  std::vector<std::string> parts;
  std::size_t at = 0;
  for (std::size_t next; (next = s.find(sep, at)) != std::string::npos; at = next + sep.size())
    parts.push_back(s.substr(at, next - at));
  parts.push_back(s.substr(at));
  return parts;
}

}  // namespace kvfleet::fuzz
