#pragma once
// REFERENCE ONLY (tests): the block-level KV cache manager as it stood before issue 19 (commit
// 0319cb1), one hash-map entry and one linked-list node per block. The engine's KvCacheManager
// must behave exactly like it; tests/differential/kv_cache_diff_test.cpp runs both on randomized
// workloads. Do not change its behaviour: it is the definition the faster manager is checked
// against. Paged KV memory of one replica with prefix caching, as vLLM v1 manages it
// (vllm/v1/core/block_pool.py and kv_cache_manager.py):
//  - a pool of fixed-size blocks with reference counts; a sequence's block table lists its blocks
//    in token order;
//  - a full block gets a hash (chained over the content before it) and is entered in a
//    hash -> block index; only full blocks are cached;
//  - freed blocks join a free queue at its tail, a request's blocks in reverse order (its last
//    block is evicted first); allocation takes blocks from the head and evicts the hash of a
//    cached block it takes; a cached block that a new request hits leaves the queue (touch).
// Sequences are identified by a slot index.
#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <utility>

#include "sim/engine/kv_cache.h"

#include <cstdint>
#include <span>
#include <vector>

namespace kvfleet::sim::reference {

using kvfleet::sim::VictimChooser;

class BlockKvCacheManager {
 public:
  BlockKvCacheManager(std::int64_t num_blocks, int block_size, bool enable_caching);

  int block_size() const { return block_size_; }
  std::int64_t num_blocks() const { return num_blocks_; }
  // Blocks available to allocation: never used, or cached but held by no sequence.
  std::int64_t num_free_blocks() const { return num_free_; }
  std::int64_t num_used_blocks() const { return num_blocks_ - num_free_; }
  // Fraction of blocks held by sequences (vLLM's kv_cache_usage_perc, as a fraction).
  double usage() const {
    return num_blocks_ ? static_cast<double>(num_used_blocks()) / num_blocks_ : 0.0;
  }
  std::int64_t num_cached_blocks() const { return static_cast<std::int64_t>(index_.size()); }
  bool caching() const { return caching_; }

  std::int64_t blocks_for(std::int64_t tokens) const {
    return (tokens + block_size_ - 1) / block_size_;
  }

  // How many of `hashes` (a prompt's leading full-block hashes, in order) are cached, counting
  // from the first. Changes nothing.
  std::int64_t match_prefix(std::span<const std::uint64_t> hashes) const;

  // Gives `slot` (which holds no blocks) the first `hit_blocks` cached blocks of `hashes` and
  // room for `total_tokens` tokens. Returns false, changing nothing, when the free pool is too
  // small (cached blocks it would take out of the free queue count against the pool).
  bool allocate_with_prefix(std::uint32_t slot, std::span<const std::uint64_t> hashes,
                            std::int64_t hit_blocks, std::int64_t total_tokens);

  // Ensures `slot` has room for `total_tokens` tokens. Returns false, changing nothing, when the
  // free pool is too small.
  bool allocate(std::uint32_t slot, std::int64_t total_tokens) {
    Table& t = table(slot);
    if (total_tokens <= static_cast<std::int64_t>(t.blocks.size()) * block_size_) return true;
    const std::int64_t need = blocks_for(total_tokens) - static_cast<std::int64_t>(t.blocks.size());
    if (need > num_free_) return false;
    for (std::int64_t i = 0; i < need; ++i) t.blocks.push_back(take_free());
    return true;
  }

  // Enters the first `num_full` blocks of `slot` in the index under `hashes` (the slot's block
  // hashes, at least as many as will be entered). Blocks already entered are skipped.
  void cache_blocks(std::uint32_t slot, std::span<const std::uint64_t> hashes,
                    std::int64_t num_full);

  // Releases all blocks of `slot`; those no other sequence holds join the free queue. With
  // session mode on, cached ones join the free list of `session` instead.
  void free(std::uint32_t slot, std::uint64_t session = 0);

  // Session mode (session-based retention): free blocks that cache nothing are used first, then
  // the cached blocks of the session `chooser` picks, in the order they were freed.
  void set_session_mode(VictimChooser* chooser);
  bool session_mode() const { return chooser_ != nullptr; }
  // Forget the victim chosen earlier (call once per scheduling step).
  void begin_step() { victim_list_ = kNil; }
  std::int64_t num_uncached_free_blocks() const { return lists_[0].count; }
  std::int64_t session_cached_blocks(std::uint64_t session) const;
  // Calls f(session, free cached blocks) for every session that has some.
  template <class F>
  void for_each_session_with_cached(F f) const {
    for (const auto& [session, list] : session_list_) f(session, lists_[list].count);
  }
  // Evicts up to `max_blocks` free cached blocks of `session` (proactive retention). Returns how
  // many it evicted.
  std::int64_t evict_session(std::uint64_t session, std::int64_t max_blocks);

  // Leading blocks of `slot` entered in the index.
  std::int64_t num_cached_in_table(std::uint32_t slot) const {
    return slot < tables_.size() ? tables_[slot].num_cached : 0;
  }
  std::int64_t blocks_held(std::uint32_t slot) const {
    return slot < tables_.size() ? static_cast<std::int64_t>(tables_[slot].blocks.size()) : 0;
  }
  std::span<const std::uint32_t> block_table(std::uint32_t slot) const {
    return slot < tables_.size() ? std::span<const std::uint32_t>(tables_[slot].blocks)
                                 : std::span<const std::uint32_t>();
  }

  // Blocks evicted from the cache so far (a cached block taken by allocation).
  std::int64_t evictions() const { return evictions_; }
  // With recording on, the hashes of evicted blocks collect here until taken (for KV tiers).
  void record_evictions(bool on) { record_ = on; }
  std::vector<std::uint64_t>& evicted() { return evicted_; }

  // Checks reference counts against block tables, the free queue against reference counts and
  // the index against block hashes. O(blocks).
  bool check_consistency() const;
  // For differential tests: what the index holds, (hash, block) in order; each block's hash.
  std::vector<std::pair<std::uint64_t, std::uint32_t>> index_entries() const {
    std::vector<std::pair<std::uint64_t, std::uint32_t>> v(index_.begin(), index_.end());
    std::sort(v.begin(), v.end());
    return v;
  }
  std::uint64_t block_hash(std::uint32_t b) const { return hash_[b]; }

 private:
  static constexpr std::uint32_t kNil = UINT32_MAX;
  // 16 bytes, so that the pool's hot records stay in cache; a block is in a free list exactly
  // when its reference count is 0. Its hash lives in hash_ (0: not cached).
  struct Block {
    std::uint32_t prev = kNil, next = kNil;  // free-list links
    std::int32_t ref = 0;
    std::uint32_t list = 0;  // which free list (0: the global queue, or uncached blocks)
  };
  struct List {
    std::uint32_t head = kNil, tail = kNil;
    std::int64_t count = 0;
    std::uint64_t session = 0;
  };
  struct Table {
    std::vector<std::uint32_t> blocks;
    std::int64_t num_cached = 0;  // leading blocks already entered in the index
  };

  Table& table(std::uint32_t slot) {
    if (slot >= tables_.size()) tables_.resize(slot + 1);
    return tables_[slot];
  }
  std::uint32_t take_free();  // pops the next free block, evicting its hash
  void push_free(std::uint32_t b, std::uint32_t list);
  void unlink_free(std::uint32_t b);
  void drop_hash(std::uint32_t b);  // removes b's hash from the index (an eviction)
  std::uint32_t list_of(std::uint64_t session);

  std::int64_t num_blocks_;
  int block_size_;
  bool caching_;
  std::vector<Block> blocks_;
  std::vector<std::uint64_t> hash_;  // by block
  std::vector<List> lists_;          // [0]: the global queue (lru) or the uncached free blocks
  absl::flat_hash_map<std::uint64_t, std::uint32_t> session_list_;
  std::vector<std::uint32_t> spare_lists_;
  VictimChooser* chooser_ = nullptr;
  std::uint32_t victim_list_ = kNil;
  std::uint64_t victim_session_ = 0;
  std::int64_t num_free_ = 0;
  std::int64_t num_free_cached_ = 0;  // free blocks that carry a hash
  std::int64_t evictions_ = 0;
  bool record_ = false;
  std::vector<std::uint64_t> evicted_;
  absl::flat_hash_map<std::uint64_t, std::uint32_t> index_;  // hash -> a block holding it
  std::vector<Table> tables_;
};

}  // namespace kvfleet::sim::reference
