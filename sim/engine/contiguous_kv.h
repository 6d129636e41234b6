#pragma once
// KV memory as systems before PagedAttention managed it (Orca, FasterTransformer): each admitted
// request reserves one contiguous region of token slots for its whole life, chosen first-fit in an
// address space of the pool's size. Free memory fragments into holes (external fragmentation);
// what a request reserves beyond the tokens it holds is waste too (reservation, internal
// fragmentation). Sequences are identified by a slot index.
#include <cstdint>
#include <map>
#include <vector>

namespace kvfleet::sim {

class ContiguousKv {
 public:
  explicit ContiguousKv(std::int64_t capacity_tokens);

  std::int64_t capacity_tokens() const { return capacity_; }
  std::int64_t reserved_tokens() const { return reserved_; }
  std::int64_t largest_hole() const;

  // Reserves `tokens` contiguous slots for `slot` (first fit). False, changing nothing, when no
  // hole is large enough.
  bool reserve(std::uint32_t slot, std::int64_t tokens);
  std::int64_t reservation(std::uint32_t slot) const {
    return slot < regions_.size() ? regions_[slot].second : 0;
  }
  void release(std::uint32_t slot);

  // Holes are disjoint, sorted, merged, and holes + reservations cover the space exactly.
  bool check_consistency() const;

 private:
  std::int64_t capacity_;
  std::int64_t reserved_ = 0;
  std::map<std::int64_t, std::int64_t> holes_;                  // offset -> length
  std::vector<std::pair<std::int64_t, std::int64_t>> regions_;  // by slot: (offset, length)
};

}  // namespace kvfleet::sim
