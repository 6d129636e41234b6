#include "sim/engine/kv_block_manager.h"

#include <stdexcept>

namespace kvfleet::sim {

KvBlockManager::KvBlockManager(std::int64_t num_blocks, int block_size)
    : num_blocks_(num_blocks), block_size_(block_size) {
  if (num_blocks <= 0 || num_blocks > UINT32_MAX) throw std::invalid_argument("bad block count");
  free_.reserve(num_blocks);
  // Lowest ids on top of the stack, so the first allocation gets block 0.
  for (std::int64_t i = num_blocks - 1; i >= 0; --i) free_.push_back(static_cast<std::uint32_t>(i));
}

bool KvBlockManager::check_conservation() const {
  std::vector<std::uint8_t> seen(num_blocks_, 0);
  std::int64_t count = 0;
  auto mark = [&](std::uint32_t b) {
    if (b >= num_blocks_ || seen[b]) return false;
    seen[b] = 1;
    ++count;
    return true;
  };
  for (auto b : free_)
    if (!mark(b)) return false;
  for (const auto& t : tables_)
    for (auto b : t)
      if (!mark(b)) return false;
  return count == num_blocks_;
}

}  // namespace kvfleet::sim
