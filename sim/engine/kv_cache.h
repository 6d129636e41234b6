#pragma once
// Paged KV memory of one replica with prefix caching, as vLLM v1 manages it
// (vllm/v1/core/block_pool.py and kv_cache_manager.py):
//  - a pool of fixed-size blocks with reference counts; a sequence's block table lists its blocks
//    in token order;
//  - a full block gets a hash (chained over the content before it) and is entered in a
//    hash -> block index; only full blocks are cached;
//  - freed blocks join a free queue at its tail, a request's blocks in reverse order (its last
//    block is evicted first); allocation takes blocks from the head and evicts the hash of a
//    cached block it takes; a cached block that a new request hits leaves the queue (touch).
// Sequences are identified by a slot index.
// The behaviour is exactly that of the block-by-block manager kept in
// tests/reference/block_kv_cache.* (tests/differential/kv_cache_diff_test.cpp); the representation
// is built for speed on large fleets, where a random memory access is a cache miss:
//  - free lists are arrays with lazy removal (no pointer chasing, prefetchable);
//  - the index is kept along chains, not hash by hash. Block hashes are chained (a hash stands for
//    its block and all before it), so an indexed block cached right after the indexed block of
//    the hash before it is found through that block (its `link`), next to it in memory; only the
//    heads of such chains (a prompt's first block, the first block after a shared prefix, a block
//    whose predecessor was evicted first) are entered in a hash table (core/hash_index.h), which
//    stays small. A lookup walks a prompt: the link of the block found for the previous hash,
//    else the table. Caching a step's blocks sets links, not table entries. A block notes when
//    a head may follow it (`branch`), so that entering or finding a block after one without
//    reads no table (whose lookup is a cache miss and almost always comes back empty);
//  - a block's hash, counts, list position and links share one 32-byte record.
// Exact under the assumption the rest of the simulator makes: distinct prefixes have distinct
// 64-bit hashes.
#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "sim/core/hash_index.h"
#include "sim/core/huge_pages.h"
#include "sim/core/ids.h"

namespace kvfleet::sim {

// Picks the session whose free cached blocks go next (session-based retention policies).
class VictimChooser {
 public:
  virtual ~VictimChooser() = default;
  // A session key for which sessions_with_cached() reports blocks.
  virtual std::uint64_t choose_victim() = 0;
};

class KvCacheManager {
 public:
  KvCacheManager(std::int64_t num_blocks, int block_size, bool enable_caching);

  int block_size() const { return block_size_; }
  std::int64_t num_blocks() const { return num_blocks_; }
  // Blocks available to allocation: never used, or cached but held by no sequence.
  std::int64_t num_free_blocks() const { return num_free_; }
  std::int64_t num_used_blocks() const { return num_blocks_ - num_free_; }
  // Fraction of blocks held by sequences (vLLM's kv_cache_usage_perc, as a fraction).
  double usage() const {
    return num_blocks_ ? static_cast<double>(num_used_blocks()) / num_blocks_ : 0.0;
  }
  std::int64_t num_cached_blocks() const { return num_indexed_; }
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
  bool allocate_with_prefix(SlotId slot, std::span<const std::uint64_t> hashes,
                            std::int64_t hit_blocks, std::int64_t total_tokens);

  // Ensures `slot` has room for `total_tokens` tokens. Returns false, changing nothing, when the
  // free pool is too small.
  bool allocate(SlotId slot, std::int64_t total_tokens) {
    Table& t = table(slot);
    if (total_tokens <= static_cast<std::int64_t>(t.blocks.size()) * block_size_) return true;
    const std::int64_t need = blocks_for(total_tokens) - static_cast<std::int64_t>(t.blocks.size());
    if (need > num_free_) return false;
    for (std::int64_t i = 0; i < need; ++i) t.blocks.push_back(take_free());
    return true;
  }

  // Enters the first `num_full` blocks of `slot` in the index under `hashes` (the slot's block
  // hashes, at least as many as will be entered). Blocks already entered are skipped. A block
  // whose hash is indexed already (an equal block computed elsewhere) keeps its hash without
  // becoming the one lookups find, as in vLLM.
  void cache_blocks(SlotId slot, std::span<const std::uint64_t> hashes, std::int64_t num_full);

  // Releases all blocks of `slot`; those no other sequence holds join the free queue. With
  // session mode on, cached ones join the free list of `session` instead.
  void free(SlotId slot, std::uint64_t session = 0);

  // Session mode (session-based retention): free blocks that cache nothing are used first, then
  // the cached blocks of the session `chooser` picks, in the order they were freed.
  void set_session_mode(VictimChooser* chooser);
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
  std::int64_t num_cached_in_table(SlotId slot) const {
    return slot.value() < tables_.size() ? tables_[slot.value()].num_cached : 0;
  }
  std::int64_t blocks_held(SlotId slot) const {
    return slot.value() < tables_.size()
               ? static_cast<std::int64_t>(tables_[slot.value()].blocks.size())
               : 0;
  }
  std::span<const std::uint32_t> block_table(SlotId slot) const {
    return slot.value() < tables_.size()
               ? std::span<const std::uint32_t>(tables_[slot.value()].blocks)
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
  std::vector<std::pair<std::uint64_t, std::uint32_t>> index_entries() const;
  std::uint64_t block_hash(std::uint32_t b) const { return blocks_[b].hash; }
  // For tests: how many loose hashes (see find) are kept before every lookup reads the table.
  void set_loose_limit(std::size_t n) { loose_limit_ = n; }
  // For tests: the list position past which a compaction renumbers every entry (see compact).
  void set_rebase_limit(std::uint32_t n) { rebase_limit_ = n; }

 private:
  static constexpr std::uint32_t kNil = UINT32_MAX;
  // 32 bytes: everything an allocation, a hit, a free or an eviction touches sits in one record.
  struct Block {
    std::uint64_t hash = 0;         // 0: not cached
    std::int32_t ref = 0;           // sequences holding it; 0: in a free list
    std::uint32_t list : 30 = 0;    // which free list (0: the global queue, or uncached blocks)
    std::uint32_t indexed : 1 = 0;  // 1: the index's block for `hash` (0: a duplicate, uncached)
    // Indexed blocks only: 1 when blocks that follow this one's hash may be table entries (see
    // find); 0 promises that the only indexed block after it is `link`.
    std::uint32_t branch : 1 = 0;
    std::uint32_t pos = kNil;  // index of its live entry in that list's queue (kNil: none)
    // Indexed blocks only: `pred` is the indexed block of the hash before this one when this one
    // is found through it (kNil: found through the table); `link` is the block found through
    // this one (kNil: none). link and pred point at each other.
    std::uint32_t pred = kNil;
    std::uint32_t link = kNil;
    // A hint, for loading ahead while walking a chain: the block eight hashes further along
    // the chain when this one was cached (it may have changed since; only its address is used).
    std::uint32_t ahead = kNil;
  };
  static_assert(sizeof(Block) == 32);
  // A free list in the order blocks joined it, kept as an array: blocks that leave from the
  // middle (a hit) or at either end are dropped lazily (an entry is live only while its block
  // points back at it), so the list's order is vLLM's doubly linked queue's, walking it is a
  // sequential scan the processor can prefetch, and a touch writes nothing but the block.
  struct List {
    std::vector<std::uint32_t> q;
    // A block's `pos` is base + its entry's index in q, so dropping the entries before the head
    // moves the array down without touching a block.
    std::uint32_t base = 0;
    std::size_t head = 0;  // entries before it are gone
    std::int64_t count = 0;
    std::uint64_t session = 0;
  };
  struct Table {
    std::vector<std::uint32_t> blocks;
    std::int64_t num_cached = 0;  // leading blocks already entered in the index
    // The index's block for the hash of block num_cached - 1 when it was entered (its own block,
    // or an equal one): where entering the next block starts (checked before use).
    std::uint32_t last = kNil;
  };

  Table& table(SlotId slot) {
    if (slot.value() >= tables_.size()) tables_.resize(slot.value() + 1);
    return tables_[slot.value()];
  }
  bool live(std::uint32_t l, std::size_t i) const {
    const List& list = lists_[l];
    const Block& k = blocks_[list.q[i]];
    return k.pos == list.base + i && k.list == l;
  }
  // Small and hot (every block allocated or freed): defined here so that they inline.
  std::uint32_t front(std::uint32_t l) {
    List& list = lists_[l];
    while (!live(l, list.head)) ++list.head;
    // The next blocks out are known: start loading their records.
    const std::size_t ahead = list.head + 8;
    if (ahead < list.q.size()) __builtin_prefetch(&blocks_[list.q[ahead]]);
    return list.q[list.head];
  }
  std::uint32_t back(std::uint32_t l) {
    List& list = lists_[l];
    while (!live(l, list.q.size() - 1)) list.q.pop_back();
    return list.q.back();
  }
  void compact(std::uint32_t l);
  void recycle(std::uint32_t l);

  // The index's block for `h`, the hash after that of `prev` (the index's block for the previous
  // hash of the same prompt, or kNil when that hash is not indexed or `h` comes first), or kNil.
  // Table entries of evicted blocks stay until pruned: an entry counts while its block is
  // indexed under that hash.
  // An indexed block after `prev` is its link or a table entry (a head), and a head whose
  // predecessor's hash is indexed was either entered after a block whose link was taken (which
  // then got `branch`), or is loose: its predecessor was not indexed when it became a head, and
  // that hash, in loose_, gives `branch` to the block that indexes it next. So without `branch`
  // on `prev` the table need not be read (a cache miss per block entered, almost always empty).
  std::uint32_t find(std::uint64_t h, std::uint32_t prev) const {
    if (prev != kNil) {
      const Block& p = blocks_[prev];
      if (p.link != kNil && blocks_[p.link].hash == h) return p.link;
      if (!p.branch && !always_probe_) return kNil;
    }
    const std::uint32_t b = index_.find(h);
    if (b == kNil) return kNil;
    const Block& k = blocks_[b];
    return k.indexed && k.hash == h ? b : kNil;
  }
  // Walking a chain at block b: start loading the block eight hashes on (dependent loads would
  // otherwise wait for each other).
  void prefetch_ahead(std::uint32_t b) const {
    const std::uint32_t a = blocks_[b].ahead;
    if (a != kNil) __builtin_prefetch(&blocks_[a]);
  }
  // Makes block b, which holds `h` and follows `prev` (as in find), the index's block for `h`
  // unless one is; returns the index's block for `h`.
  // `parent` is the hash before `h` (0: h comes first).
  std::uint32_t enter(std::uint32_t b, std::uint64_t h, std::uint32_t prev, std::uint64_t parent);
  // Hashes that heads may follow although their block (when indexed again) lacks `branch`.
  void note_loose(std::uint64_t parent);
  // Takes b out of the index (its hash leaves it); a block found through it moves to the table.
  void unindex(std::uint32_t b);
  void table_insert(std::uint64_t h, std::uint32_t b);
  void prune_index();
  std::uint32_t take_free();  // pops the next free block, evicting its hash
  inline void push_free(std::uint32_t b, std::uint32_t l) {
    List& list = lists_[l];
    // Dead entries (blocks that left, and those before the head) at most about as many as the
    // live ones: the array stays within a small multiple of the free blocks.
    if (list.q.size() > 2 * static_cast<std::size_t>(list.count) + 64) [[unlikely]]
      compact(l);
    Block& k = blocks_[b];
    k.list = l;
    k.pos = list.base + static_cast<std::uint32_t>(list.q.size());
    list.q.push_back(b);
    ++list.count;
    ++num_free_;
    num_free_cached_ += k.hash != 0;
  }
  void unlink_free(std::uint32_t b) {
    Block& k = blocks_[b];
    List& l = lists_[k.list];
    k.pos = kNil;
    --l.count;
    --num_free_;
    num_free_cached_ -= k.hash != 0;
    if (k.list != 0 && l.count == 0) [[unlikely]]
      recycle(k.list);  // a session's list emptied
    k.list = 0;
  }
  void drop_hash(std::uint32_t b);  // takes b's hash out of the index (an eviction)
  std::uint32_t list_of(std::uint64_t session);

  std::int64_t num_blocks_;
  int block_size_;
  bool caching_;
  std::vector<Block, HugePageAllocator<Block>> blocks_;
  std::vector<List> lists_;  // [0]: the global queue (lru) or the uncached free blocks
  absl::flat_hash_map<std::uint64_t, std::uint32_t> session_list_;
  std::vector<std::uint32_t> spare_lists_;
  VictimChooser* chooser_ = nullptr;
  std::uint32_t victim_list_ = kNil;
  std::uint64_t victim_session_ = 0;
  std::int64_t num_free_ = 0;
  std::int64_t num_free_cached_ = 0;  // free blocks that carry a hash
  std::int64_t num_indexed_ = 0;      // blocks indexed
  std::int64_t num_heads_ = 0;        // of them, found through the table (live table entries)
  std::int64_t evictions_ = 0;
  bool record_ = false;
  std::vector<std::uint64_t> evicted_;
  HashIndex index_;  // hash -> the block lookups return, for blocks not found through a link
  // Predecessor hashes of loose heads (see find), none of them indexed. Entries outlive their
  // heads; past a bound the set is dropped and every lookup reads the table (always_probe_).
  absl::flat_hash_set<std::uint64_t> loose_;
  std::size_t loose_limit_;
  bool always_probe_ = false;
  std::uint32_t rebase_limit_ = 1u << 31;  // positions stay far below kNil
  std::vector<std::uint32_t> hits_;        // scratch of allocate_with_prefix
  std::vector<Table> tables_;
};

}  // namespace kvfleet::sim
