#include "sim/core/huge_pages.h"

#include <algorithm>
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
  std::size_t used = 0;   // bytes handed out from the start (bump allocation)
  std::size_t live = 0;   // slices not given back
  std::size_t bytes = 0;  // their bytes
};

struct Pool {
  std::mutex m;
  std::vector<Chunk> chunks;  // the last one takes new slices
  bool huge = false;          // promote() was called
};

Pool& pool() {
  static Pool* p = new Pool;  // never destroyed: arrays in static objects may outlive exit
  return *p;
}

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

}  // namespace

bool available() { return true; }

void* allocate(std::size_t bytes) {
  bytes = round_up(bytes, kAlign);
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.m);
  if (p.chunks.empty() || p.chunks.back().used + bytes > p.chunks.back().size) {
    // A new chunk, 2 MiB-aligned: map one huge page more and trim the ends.
    const std::size_t size = round_up(std::max(bytes, kChunk), kPage);
    void* raw = mmap(nullptr, size + kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
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
    p.chunks.push_back({base, size});
  }
  Chunk& c = p.chunks.back();
  void* out = c.base + c.used;
  c.used += bytes;
  c.bytes += bytes;
  ++c.live;
  return out;
}

void deallocate(void* ptr, std::size_t bytes) noexcept {
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.m);
  char* q = static_cast<char*>(ptr);
  for (std::size_t i = 0; i < p.chunks.size(); ++i) {
    Chunk& c = p.chunks[i];
    if (q < c.base || q >= c.base + c.size) continue;
    c.bytes -= std::min(c.bytes, round_up(bytes, kAlign));
    if (--c.live == 0) {
      if (i + 1 == p.chunks.size()) {
        c.used = 0;  // the chunk taking slices starts over (its pages stay mapped, for reuse)
      } else {
        munmap(c.base, c.size);
        p.chunks.erase(p.chunks.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
    return;
  }
}

void promote() {
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.m);
  if (p.huge) return;
  p.huge = true;
  for (const Chunk& c : p.chunks) {
    madvise(c.base, c.size, MADV_HUGEPAGE);
    // Pages already in use move onto huge pages now (Linux 6.1+; older kernels refuse, and
    // their background collapsing does it in time). Failure only leaves ordinary pages.
    if (c.used > 0) madvise(c.base, round_up(c.used, kPage), MADV_COLLAPSE);
  }
}

bool promoted() {
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.m);
  return p.huge;
}

std::size_t bytes_in_use() {
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.m);
  std::size_t n = 0;
  for (const Chunk& c : p.chunks) n += c.bytes;
  return n;
}

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
