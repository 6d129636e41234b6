#pragma once
// Paged KV memory of one replica: a pool of fixed-size blocks handed to sequences as their tokens
// arrive, returned when they finish or are preempted (vLLM v1 BlockPool / KVCacheManager,
// vllm/v1/core/block_pool.py and kv_cache_manager.py). Sequences are identified by a slot index;
// each slot owns a block table (block ids in token order).
#include <cassert>
#include <cstdint>
#include <vector>

namespace kvfleet::sim {

class KvBlockManager {
 public:
  KvBlockManager(std::int64_t num_blocks, int block_size);

  int block_size() const { return block_size_; }
  std::int64_t num_blocks() const { return num_blocks_; }
  std::int64_t num_free_blocks() const { return static_cast<std::int64_t>(free_.size()); }
  std::int64_t num_used_blocks() const { return num_blocks_ - num_free_blocks(); }
  // Fraction of blocks held by sequences (vLLM's kv_cache_usage_perc, as a fraction).
  double usage() const {
    return num_blocks_ ? static_cast<double>(num_used_blocks()) / num_blocks_ : 0.0;
  }

  // Blocks needed to hold `tokens` tokens.
  std::int64_t blocks_for(std::int64_t tokens) const {
    return (tokens + block_size_ - 1) / block_size_;
  }

  // Ensures slot `slot` has room for `total_tokens` tokens. Returns false, changing nothing,
  // when the free pool is too small.
  bool allocate(std::uint32_t slot, std::int64_t total_tokens) {
    auto& t = table(slot);
    // Common case (a decode inside its last block): no division.
    if (total_tokens <= static_cast<std::int64_t>(t.size()) * block_size_) return true;
    const std::int64_t need = blocks_for(total_tokens) - static_cast<std::int64_t>(t.size());
    if (need <= 0) return true;
    if (need > num_free_blocks()) return false;
    for (std::int64_t i = 0; i < need; ++i) {
      t.push_back(free_.back());
      free_.pop_back();
    }
    return true;
  }

  // Returns all blocks of `slot` to the pool, last block first.
  void free(std::uint32_t slot) {
    auto& t = table(slot);
    for (auto it = t.rbegin(); it != t.rend(); ++it) free_.push_back(*it);
    t.clear();
  }

  std::int64_t blocks_held(std::uint32_t slot) const {
    return slot < tables_.size() ? static_cast<std::int64_t>(tables_[slot].size()) : 0;
  }
  const std::vector<std::uint32_t>& block_table(std::uint32_t slot) { return table(slot); }

  // Checks that every block is either free or held by exactly one slot. O(blocks).
  bool check_conservation() const;

 private:
  std::vector<std::uint32_t>& table(std::uint32_t slot) {
    if (slot >= tables_.size()) tables_.resize(slot + 1);
    return tables_[slot];
  }

  std::int64_t num_blocks_;
  int block_size_;
  std::vector<std::uint32_t> free_;  // stack of free block ids
  std::vector<std::vector<std::uint32_t>> tables_;
};

}  // namespace kvfleet::sim
