#include "sim/engine/contiguous_kv.h"

#include <algorithm>

namespace kvfleet::sim {

ContiguousKv::ContiguousKv(std::int64_t capacity_tokens) : capacity_(capacity_tokens) {
  holes_[0] = capacity_tokens;
}

std::int64_t ContiguousKv::largest_hole() const {
  std::int64_t m = 0;
  for (const auto& [off, len] : holes_) m = std::max(m, len);
  return m;
}

bool ContiguousKv::reserve(std::uint32_t slot, std::int64_t tokens) {
  for (auto it = holes_.begin(); it != holes_.end(); ++it) {
    if (it->second < tokens) continue;
    const std::int64_t off = it->first, len = it->second;
    holes_.erase(it);
    if (len > tokens) holes_[off + tokens] = len - tokens;
    if (slot >= regions_.size()) regions_.resize(slot + 1, {0, 0});
    regions_[slot] = {off, tokens};
    reserved_ += tokens;
    return true;
  }
  return false;
}

void ContiguousKv::release(std::uint32_t slot) {
  if (slot >= regions_.size() || regions_[slot].second == 0) return;
  auto [off, len] = regions_[slot];
  regions_[slot] = {0, 0};
  reserved_ -= len;
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
  std::int64_t free = 0, end = -1;
  for (const auto& [off, len] : holes_) {
    if (len <= 0 || off <= end) return false;  // overlapping or unmerged
    end = off + len;
    free += len;
  }
  return end <= capacity_ && free + reserved_ == capacity_;
}

}  // namespace kvfleet::sim
