#include "sim/core/huge_pages.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

#ifdef KVFLEET_HUGE_PAGES
#include <sys/mman.h>
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25  // Linux 6.1 (asm-generic/mman-common.h)
#endif
#endif

namespace kvfleet::sim::huge_pages {

#ifdef KVFLEET_HUGE_PAGES
namespace {

struct Chunk {
  char* base;
  std::size_t size;
  std::size_t used = 0;  // bytes handed out from the start (bump allocation)
  std::size_t live = 0;  // slices not given back
  // Slices given back while others live, by start and size: a later request of the same size
  // takes one (a restarted replica asks for what it gave back). Their pages go back to the
  // kernel meanwhile.
  std::vector<std::pair<char*, std::size_t>> holes;
};

struct Pool {
  std::mutex m;
  std::vector<Chunk> chunks;      // the last one takes new slices
  std::atomic<bool> huge{false};  // promote() was called
  std::atomic<std::size_t> in_use{0};
};

Pool& pool() {
  static Pool* p = new Pool;  // never destroyed: arrays in static objects may outlive exit
  return *p;
}

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }
constexpr std::size_t kSmallPage = 4096;

}  // namespace

bool available() { return true; }

void* allocate(std::size_t bytes) {
  bytes = round_up(bytes, kAlign);
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.m);
  for (auto it = p.chunks.rbegin(); it != p.chunks.rend(); ++it)
    for (std::size_t k = 0; k < it->holes.size(); ++k)
      if (it->holes[k].second == bytes) {
        char* out = it->holes[k].first;
        it->holes[k] = it->holes.back();
        it->holes.pop_back();
        ++it->live;
        p.in_use += bytes;
        return out;
      }
  if (p.chunks.empty() || p.chunks.back().used + bytes > p.chunks.back().size) {
    // A new chunk, 2 MiB-aligned: map one huge page more and trim the ends.
    const std::size_t size = round_up(std::max(bytes, kChunk), kPage);
    void* raw =
        mmap(nullptr, size + kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    char* start = static_cast<char*>(raw);
    char* base = reinterpret_cast<char*>(round_up(reinterpret_cast<std::size_t>(start), kPage));
    if (base > start) munmap(start, static_cast<std::size_t>(base - start));
    if (base + size < start + size + kPage)
      munmap(base + size, static_cast<std::size_t>(start + size + kPage - (base + size)));
    if (p.huge) madvise(base, size, MADV_HUGEPAGE);  // a hint: refused, pages stay ordinary
    // An empty chunk that no longer takes slices would only hold memory.
    if (!p.chunks.empty() && p.chunks.back().live == 0) {
      munmap(p.chunks.back().base, p.chunks.back().size);
      p.chunks.pop_back();
    }
    p.chunks.push_back(Chunk{base, size, 0, 0, {}});
  }
  Chunk& c = p.chunks.back();
  void* out = c.base + c.used;
  c.used += bytes;
  ++c.live;
  p.in_use += bytes;
  return out;
}

void deallocate(void* ptr, std::size_t bytes) noexcept {
  bytes = round_up(bytes, kAlign);
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.m);
  char* q = static_cast<char*>(ptr);
  for (std::size_t i = 0; i < p.chunks.size(); ++i) {
    Chunk& c = p.chunks[i];
    if (q < c.base || q >= c.base + c.size) continue;
    p.in_use -= bytes;
    if (--c.live == 0) {
      c.holes.clear();
      if (i + 1 == p.chunks.size()) {
        c.used = 0;  // the chunk taking slices starts over (its pages stay mapped, for reuse)
      } else {
        munmap(c.base, c.size);
        p.chunks.erase(p.chunks.begin() + static_cast<std::ptrdiff_t>(i));
      }
    } else if (q + bytes == c.base + c.used && i + 1 == p.chunks.size()) {
      c.used -= bytes;  // the last slice handed out: the bump pointer steps back
    } else {
      c.holes.emplace_back(q, bytes);
      char* from = reinterpret_cast<char*>(round_up(reinterpret_cast<std::size_t>(q), kSmallPage));
      char* to = reinterpret_cast<char*>(reinterpret_cast<std::size_t>(q + bytes) / kSmallPage *
                                         kSmallPage);
      if (to > from) madvise(from, static_cast<std::size_t>(to - from), MADV_DONTNEED);
    }
    return;
  }
}

void promote() {
  Pool& p = pool();
  if (p.huge.exchange(true)) return;
  struct Range {
    char* base;
    std::size_t size, used;
  };
  std::vector<Range> ranges;
  {
    std::lock_guard<std::mutex> lock(p.m);
    for (const Chunk& c : p.chunks) ranges.push_back({c.base, c.size, c.used});
  }
  // Outside the lock (collapsing takes a while): a chunk unmapped meanwhile only makes a call
  // fail, and advice to other memory changes no contents.
  for (const auto& [base, size, used] : ranges) {
    madvise(base, size, MADV_HUGEPAGE);
    // Pages already in use move onto huge pages now (Linux 6.1+; older kernels refuse, and
    // their background collapsing does it in time). Failure only leaves ordinary pages.
    if (used > 0) madvise(base, round_up(used, kPage), MADV_COLLAPSE);
  }
}

bool promoted() { return pool().huge; }

std::size_t bytes_in_use() { return pool().in_use; }

std::size_t chunks() {
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.m);
  return p.chunks.size();
}

#else

bool available() { return false; }
void* allocate(std::size_t bytes) { return ::operator new(bytes); }
void deallocate(void* p, std::size_t) noexcept { ::operator delete(p); }
std::size_t chunks() { return 0; }
void promote() {}
bool promoted() { return false; }
std::size_t bytes_in_use() { return 0; }

#endif

}  // namespace kvfleet::sim::huge_pages
