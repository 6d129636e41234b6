#include "sim/engine/kv_cache.h"

#include <algorithm>
#include <stdexcept>

namespace kvfleet::sim {

KvCacheManager::KvCacheManager(std::int64_t num_blocks, int block_size, bool enable_caching)
    : num_blocks_(num_blocks), block_size_(block_size), caching_(enable_caching) {
  if (num_blocks <= 0 || num_blocks >= kNil) throw std::invalid_argument("bad block count");
  blocks_.resize(num_blocks);
  lists_.resize(1);
  lists_[0].q.reserve(static_cast<std::size_t>(num_blocks));
  for (std::int64_t i = 0; i < num_blocks; ++i) push_free(static_cast<std::uint32_t>(i), 0);
}

void KvCacheManager::set_session_mode(VictimChooser* chooser) { chooser_ = chooser; }

std::uint32_t KvCacheManager::list_of(std::uint64_t session) {
  auto it = session_list_.find(session);
  if (it != session_list_.end()) return it->second;
  std::uint32_t l;
  if (!spare_lists_.empty()) {
    l = spare_lists_.back();
    spare_lists_.pop_back();
  } else {
    lists_.emplace_back();
    l = static_cast<std::uint32_t>(lists_.size() - 1);
  }
  List& list = lists_[l];
  list.q.clear();
  list.head = 0;
  list.count = 0;
  list.session = session;
  session_list_.emplace(session, l);
  return l;
}

std::int64_t KvCacheManager::session_cached_blocks(std::uint64_t session) const {
  auto it = session_list_.find(session);
  return it == session_list_.end() ? 0 : lists_[it->second].count;
}

void KvCacheManager::recycle(std::uint32_t l) {
  List& list = lists_[l];
  session_list_.erase(list.session);
  spare_lists_.push_back(l);
  list.q.clear();
  list.head = 0;
}

// Drops the entries of blocks that left the list, renumbering the live ones. Amortized: it runs
// when the dead entries outnumber the live ones.
void KvCacheManager::compact(std::uint32_t l) {
  List& list = lists_[l];
  std::size_t j = 0;
  for (std::size_t i = list.head; i < list.q.size(); ++i) {
    const std::uint32_t b = list.q[i];
    if (blocks_[b].pos != i || blocks_[b].list != l) continue;
    list.q[j] = b;
    blocks_[b].pos = static_cast<std::uint32_t>(j);
    ++j;
  }
  list.q.resize(j);
  list.head = 0;
}

void KvCacheManager::drop_hash(std::uint32_t b) {
  Block& k = blocks_[b];
  if (k.indexed) {  // the index's block for its hash: the hash leaves the index
    k.indexed = 0;  // its entry goes stale (lookups check the block; pruned in bulk)
    --num_indexed_;
    // Blocks cached since with the same hash found this one in the index: they stay duplicates.
    for (Pending& p : pending_)
      if (p.hash == k.hash) p.duplicate = 1;
    if (record_) evicted_.push_back(k.hash);
  }
  k.hash = 0;
  ++evictions_;
}

std::uint32_t KvCacheManager::take_free() {
  // The queue's order only decides which cached block is evicted; with no cached block free,
  // which block is taken cannot change any result, so take the most recently freed (in cache).
  std::uint32_t b;
  if (chooser_ && lists_[0].count == 0) {
    // Session mode with no uncached free block: evict from the victim session.
    if (victim_list_ == kNil || lists_[victim_list_].count == 0 ||
        lists_[victim_list_].session != victim_session_)
      victim_list_ = session_list_.at(victim_session_ = chooser_->choose_victim());
    b = front(victim_list_);
  } else {
    b = num_free_cached_ == 0 ? back(0) : front(0);
  }
  unlink_free(b);
  // Nothing is cached without shared content: skip the hash then (whether the index is empty
  // counts the deferred entries).
  if (num_indexed_ == 0) sync();
  if (num_indexed_ != 0 && blocks_[b].hash != 0) drop_hash(b);
  blocks_[b].ref = 1;
  return b;
}

std::int64_t KvCacheManager::evict_session(std::uint64_t session, std::int64_t max_blocks) {
  sync();
  std::int64_t n = 0;
  auto it = session_list_.find(session);
  if (it == session_list_.end()) return 0;
  const std::uint32_t list = it->second;
  while (n < max_blocks && lists_[list].count > 0 && lists_[list].session == session) {
    const std::uint32_t b = front(list);
    unlink_free(b);
    drop_hash(b);
    push_free(b, 0);
    ++n;
  }
  return n;
}

std::int64_t KvCacheManager::match_prefix(std::span<const std::uint64_t> hashes) const {
  if (!caching_) return 0;
  sync();
  std::size_t n = 0;
  for (; n < hashes.size(); ++n) {
    prefetch_lookup(hashes, n);
    if (lookup(hashes[n]) == kNil) break;
  }
  return static_cast<std::int64_t>(n);
}

bool KvCacheManager::allocate_with_prefix(std::uint32_t slot, std::span<const std::uint64_t> hashes,
                                          std::int64_t hit_blocks, std::int64_t total_tokens) {
  sync();
  Table& t = table(slot);
  const std::int64_t need = blocks_for(total_tokens) - hit_blocks;
  // Hit blocks that sit in the free queue leave it when touched.
  std::int64_t evictable_hits = 0;
  hits_.clear();
  for (std::int64_t i = 0; i < hit_blocks; ++i) {
    prefetch_lookup(hashes.first(static_cast<std::size_t>(hit_blocks)),
                    static_cast<std::size_t>(i));
    const std::uint32_t b = lookup(hashes[i]);
    if (b == kNil) throw std::out_of_range("allocate_with_prefix: a hit block is not cached");
    hits_.push_back(b);
    evictable_hits += blocks_[b].ref == 0;
  }
  if (need > num_free_ - evictable_hits) return false;
  for (const std::uint32_t b : hits_) {
    Block& k = blocks_[b];
    if (k.ref == 0) unlink_free(b);
    ++k.ref;
    t.blocks.push_back(b);
  }
  t.num_cached = hit_blocks;
  for (std::int64_t i = 0; i < need; ++i) t.blocks.push_back(take_free());
  return true;
}

void KvCacheManager::cache_blocks(std::uint32_t slot, std::span<const std::uint64_t> hashes,
                                  std::int64_t num_full) {
  if (!caching_) return;
  Table& t = table(slot);
  const std::int64_t upto =
      std::min<std::int64_t>({num_full, static_cast<std::int64_t>(hashes.size()),
                              static_cast<std::int64_t>(t.blocks.size())});
  for (std::int64_t i = t.num_cached; i < upto; ++i) {
    const std::uint32_t b = t.blocks[i];
    const std::uint64_t h = hashes[i];
    // Start loading what the entry will touch; it is made later, with others (flush_pending).
    __builtin_prefetch(&blocks_[b]);
    index_.prefetch(h);
    pending_.push_back(Pending{h, b, 0});
  }
  t.num_cached = std::max(t.num_cached, upto);
  // Bounded, so that an eviction's scan of the pending entries stays short.
  if (pending_.size() >= 64) flush_pending();
}

// Entries of evicted blocks are dropped in bulk when the table would otherwise grow for them: the
// index is rebuilt from the blocks (a sequential scan), amortized over the evictions that made
// the stale entries.
void KvCacheManager::prune_index() {
  index_.clear();
  for (std::size_t b = 0; b < blocks_.size(); ++b)
    if (blocks_[b].indexed) index_.insert(blocks_[b].hash, static_cast<std::uint32_t>(b));
}

void KvCacheManager::flush_pending() {
  for (const Pending& p : pending_) {
    Block& k = blocks_[p.block];
    if (k.indexed) {
      if (k.hash == p.hash) continue;  // entered already
      k.indexed = 0;                   // indexed under another hash: that entry goes stale
      --num_indexed_;
    }
    k.hash = p.hash;
    if (p.duplicate) continue;
    // Stale entries are dropped rather than letting the table grow for them.
    if (index_.size() + 1 > index_.capacity() &&
        index_.size() > static_cast<std::size_t>(num_indexed_ + num_indexed_ / 4) + 64)
      prune_index();
    // As vLLM, an equal block already in the index stays the one that lookups return; an entry
    // of an evicted block is taken over.
    const std::uint32_t held = index_.insert(p.hash, p.block);
    if (held != p.block) {
      const Block& other = blocks_[held];
      if (other.indexed && other.hash == p.hash) continue;
      index_.assign(p.hash, p.block);
    }
    k.indexed = 1;
    ++num_indexed_;
  }
  pending_.clear();
}

void KvCacheManager::free(std::uint32_t slot, std::uint64_t session) {
  sync();  // a freed block's hash decides its list, and eviction reads its index entry
  Table& t = table(slot);
  const std::size_t n = t.blocks.size();
  for (std::size_t j = 0; j < n; ++j) {
    const std::size_t i = n - 1 - j;
    if (i >= 8) __builtin_prefetch(&blocks_[t.blocks[i - 8]]);
    const std::uint32_t b = t.blocks[i];
    Block& k = blocks_[b];
    if (--k.ref == 0) push_free(b, chooser_ && k.hash != 0 ? list_of(session) : 0);
  }
  t.blocks.clear();
  t.num_cached = 0;
}

bool KvCacheManager::check_consistency() const {
  sync();
  std::vector<std::int32_t> refs(num_blocks_, 0);
  for (const auto& t : tables_)
    for (auto b : t.blocks) {
      if (b >= num_blocks_) return false;
      ++refs[b];
    }
  std::int64_t free_count = 0, cached_free = 0;
  for (std::size_t l = 0; l < lists_.size(); ++l) {
    std::int64_t n = 0;
    const List& list = lists_[l];
    for (std::size_t i = list.head; i < list.q.size(); ++i) {
      const std::uint32_t b = list.q[i];
      if (b >= num_blocks_) return false;
      if (blocks_[b].pos != i || blocks_[b].list != l) continue;  // a dead entry
      if (blocks_[b].ref != 0) return false;
      if (l != 0 && blocks_[b].hash == 0) return false;  // session lists hold cached blocks only
      cached_free += blocks_[b].hash != 0;
      ++n;
    }
    if (n != list.count) return false;
    free_count += n;
  }
  if (free_count != num_free_ || cached_free != num_free_cached_) return false;
  std::int64_t zero = 0, indexed = 0;
  for (std::int64_t b = 0; b < num_blocks_; ++b) {
    const Block& k = blocks_[b];
    if (refs[b] != k.ref) return false;
    zero += k.ref == 0;
    if ((k.ref == 0) != (k.pos != kNil)) return false;  // free exactly when in a list
    if (k.indexed) {
      ++indexed;
      if (k.hash == 0 || index_.find(k.hash) != static_cast<std::uint32_t>(b)) return false;
    }
  }
  // Every entry names a block (an indexed one, or a stale entry of an evicted one).
  bool entries_ok = true;
  index_.for_each(
      [&](std::uint64_t, std::uint32_t b) { entries_ok = entries_ok && b < num_blocks_; });
  return entries_ok && zero == num_free_ && indexed == num_indexed_;
}

}  // namespace kvfleet::sim
