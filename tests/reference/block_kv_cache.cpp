#include "tests/reference/block_kv_cache.h"

#include <algorithm>
#include <stdexcept>

namespace kvfleet::sim::reference {

BlockKvCacheManager::BlockKvCacheManager(std::int64_t num_blocks, int block_size,
                                         bool enable_caching)
    : num_blocks_(num_blocks), block_size_(block_size), caching_(enable_caching) {
  if (num_blocks <= 0 || num_blocks >= kNil) throw std::invalid_argument("bad block count");
  blocks_.resize(num_blocks);
  hash_.assign(num_blocks, 0);
  lists_.resize(1);
  for (std::int64_t i = 0; i < num_blocks; ++i) push_free(static_cast<std::uint32_t>(i), 0);
}

void BlockKvCacheManager::set_session_mode(VictimChooser* chooser) { chooser_ = chooser; }

std::uint32_t BlockKvCacheManager::list_of(std::uint64_t session) {
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
  lists_[l] = List{kNil, kNil, 0, session};
  session_list_.emplace(session, l);
  return l;
}

std::int64_t BlockKvCacheManager::session_cached_blocks(std::uint64_t session) const {
  auto it = session_list_.find(session);
  return it == session_list_.end() ? 0 : lists_[it->second].count;
}

void BlockKvCacheManager::push_free(std::uint32_t b, std::uint32_t list) {
  Block& k = blocks_[b];
  List& l = lists_[list];
  k.list = list;
  k.prev = l.tail;
  k.next = kNil;
  if (l.tail != kNil)
    blocks_[l.tail].next = b;
  else
    l.head = b;
  l.tail = b;
  ++l.count;
  ++num_free_;
  num_free_cached_ += hash_[b] != 0;
}

void BlockKvCacheManager::unlink_free(std::uint32_t b) {
  Block& k = blocks_[b];
  List& l = lists_[k.list];
  if (k.prev != kNil)
    blocks_[k.prev].next = k.next;
  else
    l.head = k.next;
  if (k.next != kNil)
    blocks_[k.next].prev = k.prev;
  else
    l.tail = k.prev;
  k.prev = k.next = kNil;
  --l.count;
  --num_free_;
  num_free_cached_ -= hash_[b] != 0;
  if (k.list != 0 && l.count == 0) {  // a session's list emptied: recycle it
    session_list_.erase(l.session);
    spare_lists_.push_back(k.list);
  }
  k.list = 0;
}

void BlockKvCacheManager::drop_hash(std::uint32_t b) {
  auto it = index_.find(hash_[b]);
  if (it != index_.end() && it->second == b) {
    index_.erase(it);
    if (record_) evicted_.push_back(hash_[b]);
  }
  hash_[b] = 0;
  ++evictions_;
}

std::uint32_t BlockKvCacheManager::take_free() {
  // The queue's order only decides which cached block is evicted; with no cached block free,
  // which block is taken cannot change any result, so take the most recently freed (in cache).
  std::uint32_t b = num_free_cached_ == 0 ? lists_[0].tail : lists_[0].head;
  if (chooser_ && lists_[0].count == 0) {
    // Session mode with no uncached free block: evict from the victim session.
    if (victim_list_ == kNil || lists_[victim_list_].count == 0 ||
        lists_[victim_list_].session != victim_session_)
      victim_list_ = session_list_.at(victim_session_ = chooser_->choose_victim());
    b = lists_[victim_list_].head;
  }
  unlink_free(b);
  // Nothing is cached without shared content: skip the hash array then.
  if (!index_.empty() && hash_[b] != 0) drop_hash(b);
  blocks_[b].ref = 1;
  return b;
}

std::int64_t BlockKvCacheManager::evict_session(std::uint64_t session, std::int64_t max_blocks) {
  std::int64_t n = 0;
  auto it = session_list_.find(session);
  if (it == session_list_.end()) return 0;
  const std::uint32_t list = it->second;
  while (n < max_blocks && lists_[list].count > 0 && lists_[list].session == session) {
    const std::uint32_t b = lists_[list].head;
    unlink_free(b);
    drop_hash(b);
    push_free(b, 0);
    ++n;
  }
  return n;
}

std::int64_t BlockKvCacheManager::match_prefix(std::span<const std::uint64_t> hashes) const {
  if (!caching_) return 0;
  std::int64_t n = 0;
  for (std::uint64_t h : hashes) {
    if (index_.find(h) == index_.end()) break;
    ++n;
  }
  return n;
}

bool BlockKvCacheManager::allocate_with_prefix(std::uint32_t slot,
                                               std::span<const std::uint64_t> hashes,
                                               std::int64_t hit_blocks, std::int64_t total_tokens) {
  Table& t = table(slot);
  const std::int64_t need = blocks_for(total_tokens) - hit_blocks;
  // Hit blocks that sit in the free queue leave it when touched.
  std::int64_t evictable_hits = 0;
  for (std::int64_t i = 0; i < hit_blocks; ++i)
    evictable_hits += blocks_[index_.at(hashes[i])].ref == 0;
  if (need > num_free_ - evictable_hits) return false;
  for (std::int64_t i = 0; i < hit_blocks; ++i) {
    const std::uint32_t b = index_.at(hashes[i]);
    Block& k = blocks_[b];
    if (k.ref == 0) unlink_free(b);
    ++k.ref;
    t.blocks.push_back(b);
  }
  t.num_cached = hit_blocks;
  for (std::int64_t i = 0; i < need; ++i) t.blocks.push_back(take_free());
  return true;
}

void BlockKvCacheManager::cache_blocks(std::uint32_t slot, std::span<const std::uint64_t> hashes,
                                       std::int64_t num_full) {
  if (!caching_) return;
  Table& t = table(slot);
  const std::int64_t upto =
      std::min<std::int64_t>({num_full, static_cast<std::int64_t>(hashes.size()),
                              static_cast<std::int64_t>(t.blocks.size())});
  for (std::int64_t i = t.num_cached; i < upto; ++i) {
    hash_[t.blocks[i]] = hashes[i];
    // As vLLM, an equal block already in the index stays the one that lookups return.
    index_.try_emplace(hashes[i], t.blocks[i]);
  }
  t.num_cached = std::max(t.num_cached, upto);
}

void BlockKvCacheManager::free(std::uint32_t slot, std::uint64_t session) {
  Table& t = table(slot);
  for (auto it = t.blocks.rbegin(); it != t.blocks.rend(); ++it) {
    Block& k = blocks_[*it];
    if (--k.ref == 0) push_free(*it, chooser_ && hash_[*it] != 0 ? list_of(session) : 0);
  }
  t.blocks.clear();
  t.num_cached = 0;
}

bool BlockKvCacheManager::check_consistency() const {
  std::vector<std::int32_t> refs(num_blocks_, 0);
  for (const auto& t : tables_)
    for (auto b : t.blocks) {
      if (b >= num_blocks_) return false;
      ++refs[b];
    }
  std::int64_t free_count = 0, cached_free = 0;
  for (std::size_t l = 0; l < lists_.size(); ++l) {
    std::int64_t n = 0;
    for (std::uint32_t b = lists_[l].head; b != kNil; b = blocks_[b].next) {
      if (blocks_[b].ref != 0 || blocks_[b].list != l) return false;
      if (l != 0 && hash_[b] == 0) return false;  // session lists hold cached blocks only
      cached_free += hash_[b] != 0;
      ++n;
    }
    if (n != lists_[l].count) return false;
    free_count += n;
  }
  if (free_count != num_free_ || cached_free != num_free_cached_) return false;
  std::int64_t zero = 0;
  for (std::int64_t b = 0; b < num_blocks_; ++b) {
    if (refs[b] != blocks_[b].ref) return false;
    zero += blocks_[b].ref == 0;
  }
  if (zero != num_free_) return false;
  for (const auto& [h, b] : index_)
    if (hash_[b] != h) return false;
  return true;
}

}  // namespace kvfleet::sim::reference
