#pragma once
// An allocator for large arrays that the simulator reads at random (a replica's KV block
// records): on Linux it asks the kernel for transparent huge pages (2 MiB, madvise), so that a
// random read does not also miss the TLB. On a fleet-hour this alone took a tenth of the run
// time (docs/performance.md). Only arrays of at least kMinBytes take it, rounded up to whole huge
// pages (so at most 1.5 MiB more memory per array); smaller ones, other systems and sanitizer
// builds (whose checks need the ordinary heap) get ordinary memory. Where the kernel declines,
// the memory is ordinary pages: contents and results never depend on it.
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

#ifdef KVFLEET_HUGE_PAGES
#include <sys/mman.h>
#endif

namespace kvfleet::sim {

template <class T>
struct HugePageAllocator {
  using value_type = T;
  static constexpr std::size_t kHugePage = std::size_t{2} << 20;
  static constexpr std::size_t kMinBytes = std::size_t{512} << 10;

  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) {}

  // Whether an array of n elements takes huge pages.
  static bool huge(std::size_t n) {
#ifdef KVFLEET_HUGE_PAGES
    return n * sizeof(T) >= kMinBytes;
#else
    (void)n;
    return false;
#endif
  }
  static std::size_t rounded(std::size_t n) {
    return (n * sizeof(T) + kHugePage - 1) / kHugePage * kHugePage;
  }

  T* allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
#ifdef KVFLEET_HUGE_PAGES
    if (huge(n)) {
      void* p =
          mmap(nullptr, rounded(n), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
      madvise(p, rounded(n), MADV_HUGEPAGE);  // a hint: refused, the pages stay ordinary
      return static_cast<T*>(p);
    }
#endif
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept {
#ifdef KVFLEET_HUGE_PAGES
    if (huge(n)) {
      munmap(p, rounded(n));
      return;
    }
#endif
    ::operator delete(p);
  }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }
};

}  // namespace kvfleet::sim
