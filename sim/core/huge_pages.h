#pragma once
// Memory for large arrays that the simulator reads at random (a replica's KV block records): on
// Linux it comes from a process-wide pool that can move onto transparent huge pages (2 MiB), so
// that a random read does not also miss the TLB. On a fleet-hour this took a seventh of the run
// time (docs/performance.md). The pool hands out slices of 64 MiB chunks, so replicas share huge
// pages and memory use stays what the arrays need (one partly used huge page per chunk at most);
// a slice given back returns its pages to the kernel and is reused by the next request of its
// size (a replica that restarts), and a chunk whose slices are all back is reused or unmapped.
// Huge pages cost more to fault in than they save in a short run (a fresh virtual machine backs
// them slowly), so the pool starts on ordinary pages and moves to huge pages when promote() is
// called: a simulation does it once it has run long enough to have paid for it (Simulation::run).
// Arrays under kMinBytes, other systems and AddressSanitizer or MemorySanitizer builds (whose
// checks need the ordinary heap) get ordinary memory; where the kernel declines huge pages, the
// pool's pages are ordinary ones. Contents and results never depend on it.
#include <cstddef>
#include <new>

#if defined(__linux__) && !defined(__SANITIZE_ADDRESS__)
#if defined(__has_feature)
#if !__has_feature(address_sanitizer) && !__has_feature(memory_sanitizer)
#define KVFLEET_HUGE_PAGES 1
#endif
#else
#define KVFLEET_HUGE_PAGES 1
#endif
#endif

namespace kvfleet::sim {

namespace huge_pages {
inline constexpr std::size_t kPage = std::size_t{2} << 20;
inline constexpr std::size_t kChunk = std::size_t{64} << 20;
inline constexpr std::size_t kAlign = 64;
inline constexpr std::size_t kMinBytes = std::size_t{256} << 10;
// Whether the pool is built in (Linux, no sanitizers).
bool available();
// A slice of at least `bytes` (aligned to kAlign) from the pool; throws std::bad_alloc.
void* allocate(std::size_t bytes);
// Gives a slice back; a chunk whose slices are all back is reused, or unmapped if another chunk
// takes new slices.
void deallocate(void* p, std::size_t bytes) noexcept;
// Chunks mapped now (for tests).
std::size_t chunks();
// Asks for huge pages for the pool's memory, now (MADV_COLLAPSE where the kernel has it) and for
// chunks mapped later. Idempotent; contents are kept.
void promote();
bool promoted();
// Bytes handed out and not given back.
std::size_t bytes_in_use();
}  // namespace huge_pages

template <class T>
struct HugePageAllocator {
  using value_type = T;
  static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__ && alignof(T) <= huge_pages::kAlign,
                "HugePageAllocator: over-aligned types are not supported");

  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) {}

  // Whether an array of n elements comes from the pool.
  static bool pooled(std::size_t n) {
    return huge_pages::available() && n * sizeof(T) >= huge_pages::kMinBytes;
  }
  T* allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    if (pooled(n)) return static_cast<T*>(huge_pages::allocate(n * sizeof(T)));
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (pooled(n))
      huge_pages::deallocate(p, n * sizeof(T));
    else
      ::operator delete(p);
  }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }
};

}  // namespace kvfleet::sim
