#pragma once
// A map from nonzero 64-bit block hashes to 32-bit values (a block, an entry), built for the
// prefix caches' hot paths, where every lookup is a cache miss: one array of 16-byte slots
// {hash, value}, open addressing with linear probing, so that a lookup or an insert reads one
// cache line (a general-purpose hash map reads its control bytes, then its slot). Entries are
// never erased one by one (the KV cache leaves evicted blocks' entries stale and rebuilds the
// index in bulk, with clear()). At most half full; it doubles when an insert would pass that.
// Iteration order is not exposed: nothing may depend on it. Unit test: core/hash_index_test.cpp.
#include <cstdint>
#include <vector>

namespace kvfleet::sim {

class HashIndex {
 public:
  static constexpr std::uint32_t kNone = UINT32_MAX;

  std::size_t size() const { return size_; }
  // Entries it holds before the next insert doubles it.
  std::size_t capacity() const { return slots_.size() / 2; }

  // The value stored under `h` (nonzero), or kNone.
  std::uint32_t find(std::uint64_t h) const {
    if (slots_.empty()) return kNone;
    for (std::size_t i = home(h);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.hash == h) return s.value;
      if (s.hash == 0) return kNone;
    }
  }
  // Starts loading the slot where a lookup of `h` begins.
  void prefetch(std::uint64_t h) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[home(h)]);
  }
  // Stores `v` under `h` (nonzero) unless `h` is present. Returns the value now stored under it:
  // `v` when it was inserted, the earlier value otherwise (which stays).
  std::uint32_t insert(std::uint64_t h, std::uint32_t v) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    std::size_t i = home(h);
    for (;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.hash == h) return s.value;
      if (s.hash == 0) break;
    }
    slots_[i] = Slot{h, v};
    ++size_;
    return v;
  }
  // Replaces the value under `h`, which must be present.
  void assign(std::uint64_t h, std::uint32_t v) {
    for (std::size_t i = home(h);; i = (i + 1) & mask_)
      if (slots_[i].hash == h) {
        slots_[i].value = v;
        return;
      }
  }
  void clear() {
    slots_.assign(slots_.size(), Slot{});
    size_ = 0;
  }
  // Calls f(hash, value) for every entry, in no meaningful order (for consistency checks).
  template <class F>
  void for_each(F f) const {
    for (const Slot& s : slots_)
      if (s.hash != 0) f(s.hash, s.value);
  }

 private:
  struct Slot {
    std::uint64_t hash = 0;  // 0: empty
    std::uint32_t value = 0;
    std::uint32_t unused = 0;
  };
  // Fibonacci hashing: the top bits of the product, so that keys that are not uniformly random
  // (small test values, structured hashes) still spread.
  std::size_t home(std::uint64_t h) const {
    return static_cast<std::size_t>((h * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    const std::size_t cap = old.empty() ? 64 : old.size() * 2;
    slots_.assign(cap, Slot{});
    mask_ = cap - 1;
    shift_ = 64 - static_cast<int>(__builtin_ctzll(cap));
    for (const Slot& s : old) {
      if (s.hash == 0) continue;
      std::size_t i = home(s.hash);
      while (slots_[i].hash != 0) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  int shift_ = 64;
  std::size_t size_ = 0;
};

}  // namespace kvfleet::sim
