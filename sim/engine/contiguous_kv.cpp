#include "sim/engine/contiguous_kv.h"

#include <algorithm>
#include <bit>
#include <iterator>

namespace kvfleet::sim {

ContiguousKv::ContiguousKv(std::int64_t capacity_tokens, bool buddy)
    : capacity_(capacity_tokens), buddy_(buddy) {
  if (!buddy_) {
    holes_[0] = capacity_tokens;
    return;
  }
  // Tile the space with the largest powers of two that fit, largest first.
  free_by_order_.resize(63);
  std::int64_t base = 0, left = capacity_tokens;
  while (left > 0) {
    const int order = 63 - std::countl_zero(static_cast<std::uint64_t>(left));
    roots_[base] = order;
    free_by_order_[order].insert(base);
    base += std::int64_t{1} << order;
    left -= std::int64_t{1} << order;
  }
}

std::int64_t ContiguousKv::largest_hole() const {
  std::int64_t m = 0;
  if (buddy_) {
    for (int k = static_cast<int>(free_by_order_.size()) - 1; k >= 0; --k)
      if (!free_by_order_[k].empty()) return std::int64_t{1} << k;
    return 0;
  }
  for (const auto& [off, len] : holes_) m = std::max(m, len);
  return m;
}

bool ContiguousKv::can_ever_reserve(std::int64_t tokens) const {
  if (!buddy_) return tokens <= capacity_;
  if (capacity_ <= 0) return false;
  const int largest = 63 - std::countl_zero(static_cast<std::uint64_t>(capacity_));
  const int want = tokens <= 1 ? 0 : 64 - std::countl_zero(static_cast<std::uint64_t>(tokens - 1));
  return want <= largest;
}

void ContiguousKv::set_region(SlotId slot, std::int64_t off, std::int64_t len) {
  if (slot.value() >= regions_.size()) regions_.resize(slot.value() + 1, {0, 0});
  regions_[slot.value()] = {off, len};
  reserved_ += len;
}

bool ContiguousKv::reserve(SlotId slot, std::int64_t tokens) {
  return buddy_ ? reserve_buddy(slot, tokens) : reserve_first_fit(slot, tokens);
}

bool ContiguousKv::reserve_first_fit(SlotId slot, std::int64_t tokens) {
  for (auto it = holes_.begin(); it != holes_.end(); ++it) {
    if (it->second < tokens) continue;
    const std::int64_t off = it->first, len = it->second;
    holes_.erase(it);
    if (len > tokens) holes_[off + tokens] = len - tokens;
    set_region(slot, off, tokens);
    return true;
  }
  return false;
}

bool ContiguousKv::reserve_buddy(SlotId slot, std::int64_t tokens) {
  const int want = tokens <= 1 ? 0 : 64 - std::countl_zero(static_cast<std::uint64_t>(tokens - 1));
  int k = want;
  while (k < static_cast<int>(free_by_order_.size()) && free_by_order_[k].empty()) ++k;
  if (k >= static_cast<int>(free_by_order_.size())) return false;
  const std::int64_t off = *free_by_order_[k].begin();  // lowest address first
  free_by_order_[k].erase(free_by_order_[k].begin());
  while (k > want) {  // split, keeping the lower half
    --k;
    free_by_order_[k].insert(off + (std::int64_t{1} << k));
  }
  set_region(slot, off, std::int64_t{1} << want);
  return true;
}

void ContiguousKv::release_buddy(std::int64_t off, std::int64_t len) {
  int k = std::countr_zero(static_cast<std::uint64_t>(len));
  auto root = std::prev(roots_.upper_bound(off));
  const std::int64_t base = root->first;
  while (k < root->second) {
    const std::int64_t buddy = base + ((off - base) ^ (std::int64_t{1} << k));
    auto it = free_by_order_[k].find(buddy);
    if (it == free_by_order_[k].end()) break;
    free_by_order_[k].erase(it);
    off = std::min(off, buddy);
    ++k;
  }
  free_by_order_[k].insert(off);
}

void ContiguousKv::release(SlotId slot) {
  if (slot.value() >= regions_.size() || regions_[slot.value()].second == 0) return;
  auto [off, len] = regions_[slot.value()];
  regions_[slot.value()] = {0, 0};
  reserved_ -= len;
  if (buddy_) {
    release_buddy(off, len);
    return;
  }
  auto next = holes_.lower_bound(off);
  if (next != holes_.end() && next->first == off + len) {
    len += next->second;
    next = holes_.erase(next);
  }
  if (next != holes_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == off) {
      prev->second += len;
      return;
    }
  }
  holes_[off] = len;
}

bool ContiguousKv::check_consistency() const {
  std::int64_t free = 0;
  if (buddy_) {
    for (std::size_t k = 0; k < free_by_order_.size(); ++k)
      free += static_cast<std::int64_t>(free_by_order_[k].size()) << k;
    return free + reserved_ == capacity_;
  }
  std::int64_t end = -1;
  for (const auto& [off, len] : holes_) {
    if (len <= 0 || off <= end) return false;  // overlapping or unmerged
    end = off + len;
    free += len;
  }
  return end <= capacity_ && free + reserved_ == capacity_;
}

}  // namespace kvfleet::sim
