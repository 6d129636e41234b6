#pragma once
// KV memory as systems before PagedAttention managed it (Orca, FasterTransformer): each admitted
// request reserves one contiguous region of token slots for its whole life. Two allocators:
//  - first_fit: the region is exactly the reservation, placed in the first hole large enough;
//  - buddy: regions are powers of two carved from power-of-two roots, split and merged with their
//    buddies, as PagedAttention's reimplementation of Orca assumed (Kwon et al., SOSP 2023, §6.1).
// Free memory fragments into holes (external fragmentation); what a request reserves beyond the
// tokens it holds is waste too (reservation, internal fragmentation). Sequences are identified by
// a slot index.
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "sim/core/ids.h"

namespace kvfleet::sim {

class ContiguousKv {
 public:
  ContiguousKv(std::int64_t capacity_tokens, bool buddy);

  std::int64_t capacity_tokens() const { return capacity_; }
  // Tokens given to requests (buddy: whole power-of-two regions).
  std::int64_t reserved_tokens() const { return reserved_; }
  std::int64_t largest_hole() const;
  // Whether a region of `tokens` can be reserved at all (in an empty space): the buddy
  // allocator gives power-of-two blocks no larger than its largest root, first fit any size up
  // to the capacity.
  bool can_ever_reserve(std::int64_t tokens) const;

  // Reserves room for `tokens` contiguous slots for `slot`. False, changing nothing, when no hole
  // is large enough.
  bool reserve(SlotId slot, std::int64_t tokens);
  // The region's size (buddy: rounded up to a power of two).
  std::int64_t reservation(SlotId slot) const {
    return slot.value() < regions_.size() ? regions_[slot.value()].second : 0;
  }
  void release(SlotId slot);

  bool check_consistency() const;

 private:
  bool reserve_first_fit(SlotId slot, std::int64_t tokens);
  bool reserve_buddy(SlotId slot, std::int64_t tokens);
  void release_buddy(std::int64_t off, std::int64_t len);
  void set_region(SlotId slot, std::int64_t off, std::int64_t len);

  std::int64_t capacity_;
  bool buddy_;
  std::int64_t reserved_ = 0;
  std::map<std::int64_t, std::int64_t> holes_;  // first fit: offset -> length
  // Buddy: free blocks by order (size 2^order), and the power-of-two roots (base -> order) that
  // tile the space; a block merges with its buddy only inside its root.
  std::vector<std::set<std::int64_t>> free_by_order_;
  std::map<std::int64_t, int> roots_;
  std::vector<std::pair<std::int64_t, std::int64_t>> regions_;  // by slot: (offset, length)
};

}  // namespace kvfleet::sim
