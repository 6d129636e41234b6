#include "sim/engine/kv_cache.h"

#include <algorithm>
#include <stdexcept>

namespace kvfleet::sim {

KvCacheManager::KvCacheManager(std::int64_t num_blocks, int block_size, bool enable_caching)
    : num_blocks_(num_blocks),
      block_size_(block_size),
      caching_(enable_caching),
      loose_limit_(static_cast<std::size_t>(num_blocks) + 1024) {
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
  list.base = 0;
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
  list.base = 0;
  list.head = 0;
}

// Drops the entries of blocks that left the list. Amortized: it runs when the dead entries
// outnumber the live ones. Those before the head go first, by moving the array down (no block is
// read); only if the dead entries left in the middle are still many are the live ones renumbered,
// which reads each one's block.
void KvCacheManager::compact(std::uint32_t l) {
  List& list = lists_[l];
  const auto live_count = static_cast<std::size_t>(list.count);
  if (list.head > 0 && list.base + list.q.size() < rebase_limit_) {
    list.q.erase(list.q.begin(), list.q.begin() + static_cast<std::ptrdiff_t>(list.head));
    list.base += static_cast<std::uint32_t>(list.head);
    list.head = 0;
    if (list.q.size() <= live_count + live_count / 2 + 64) return;
  }
  std::size_t j = 0;
  for (std::size_t i = list.head; i < list.q.size(); ++i) {
    const std::uint32_t b = list.q[i];
    if (blocks_[b].pos != list.base + i || blocks_[b].list != l) continue;
    list.q[j] = b;
    blocks_[b].pos = static_cast<std::uint32_t>(j);
    ++j;
  }
  list.q.resize(j);
  list.base = 0;
  list.head = 0;
}

void KvCacheManager::unindex(std::uint32_t b) {
  Block& k = blocks_[b];
  k.indexed = 0;  // a table entry goes stale (find checks the block; pruned in bulk)
  --num_indexed_;
  // Heads after it (its link, moved to the table below, or branches) become loose.
  if (k.link != kNil || k.branch) note_loose(k.hash);
  k.branch = 0;
  if (k.pred != kNil) {
    blocks_[k.pred].link = kNil;
    k.pred = kNil;
  } else {
    --num_heads_;
  }
  if (k.link != kNil) {
    // The block found through this one heads its chain now: into the table. (Usually it went
    // first: vLLM frees a request's blocks last first.)
    const std::uint32_t c = k.link;
    k.link = kNil;
    blocks_[c].pred = kNil;
    ++num_heads_;
    table_insert(blocks_[c].hash, c);
  }
}

void KvCacheManager::drop_hash(std::uint32_t b) {
  Block& k = blocks_[b];
  if (k.indexed) {  // the index's block for its hash: the hash leaves the index
    unindex(b);
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
  // Nothing is cached without shared content: skip the hash then.
  if (num_indexed_ != 0 && blocks_[b].hash != 0) drop_hash(b);
  blocks_[b].ref = 1;
  return b;
}

std::int64_t KvCacheManager::evict_session(std::uint64_t session, std::int64_t max_blocks) {
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
  std::size_t n = 0;
  for (std::uint32_t b = kNil; n < hashes.size(); ++n) {
    if ((b = find(hashes[n], b)) == kNil) break;
    prefetch_ahead(b);
  }
  return static_cast<std::int64_t>(n);
}

bool KvCacheManager::allocate_with_prefix(SlotId slot, std::span<const std::uint64_t> hashes,
                                          std::int64_t hit_blocks, std::int64_t total_tokens) {
  Table& t = table(slot);
  const std::int64_t need = blocks_for(total_tokens) - hit_blocks;
  // Hit blocks that sit in the free queue leave it when touched.
  std::int64_t evictable_hits = 0;
  hits_.clear();
  for (std::int64_t i = 0; i < hit_blocks; ++i) {
    const std::uint32_t b = find(hashes[i], hits_.empty() ? kNil : hits_.back());
    if (b == kNil) throw std::out_of_range("allocate_with_prefix: a hit block is not cached");
    prefetch_ahead(b);
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
  t.last = hits_.empty() ? kNil : hits_.back();
  for (std::int64_t i = 0; i < need; ++i) t.blocks.push_back(take_free());
  return true;
}

void KvCacheManager::cache_blocks(SlotId slot, std::span<const std::uint64_t> hashes,
                                  std::int64_t num_full) {
  if (!caching_) return;
  Table& t = table(slot);
  const std::int64_t upto =
      std::min<std::int64_t>({num_full, static_cast<std::int64_t>(hashes.size()),
                              static_cast<std::int64_t>(t.blocks.size())});
  if (upto <= t.num_cached) return;
  // The index's block for the hash before the first to enter: the one noted when it was entered,
  // if that still holds it (a held block stays indexed; an equal block it deferred to may have
  // been evicted since), else found again along the prompt.
  std::uint32_t prev = kNil;
  if (t.num_cached > 0) {
    const std::uint64_t h = hashes[static_cast<std::size_t>(t.num_cached - 1)];
    prev = t.last;
    if (prev == kNil || !blocks_[prev].indexed || blocks_[prev].hash != h) {
      prev = kNil;
      for (std::int64_t i = 0; i < t.num_cached; ++i) prev = find(hashes[i], prev);
    }
  }
  for (std::int64_t i = t.num_cached; i < upto; ++i) {
    prev = enter(t.blocks[i], hashes[i], prev, i > 0 ? hashes[i - 1] : 0);
    if (i >= 8) blocks_[t.blocks[i - 8]].ahead = prev;  // walks through here load it early
  }
  t.num_cached = upto;
  t.last = prev;
}

void KvCacheManager::note_loose(std::uint64_t parent) {
  if (always_probe_) return;
  if (loose_.size() >= loose_limit_) {
    always_probe_ = true;  // bounded memory; lookups stay exact by reading the table
    loose_.clear();
    return;
  }
  loose_.insert(parent);
}

std::uint32_t KvCacheManager::enter(std::uint32_t b, std::uint64_t h, std::uint32_t prev,
                                    std::uint64_t parent) {
  // b is past the table's entered blocks: the table alone holds it since it was taken from the
  // free pool, which took it out of the index, so it is not indexed.
  Block& k = blocks_[b];
  k.hash = h;
  // As vLLM, an equal block already in the index stays the one that lookups return.
  const std::uint32_t held = find(h, prev);
  if (held != kNil) return held;
  k.indexed = 1;
  ++num_indexed_;
  // Loose heads that follow `h` are found through the table from now on.
  if (!loose_.empty() && loose_.erase(h) != 0) k.branch = 1;
  if (prev != kNil && blocks_[prev].link == kNil) {
    blocks_[prev].link = b;  // found through the block before it: no table entry
    k.pred = prev;
  } else {
    ++num_heads_;
    table_insert(h, b);
    if (prev != kNil)
      blocks_[prev].branch = 1;  // a head after an indexed block
    else if (parent != 0)
      note_loose(parent);  // after a hash not indexed now
  }
  return b;
}

// Entries of evicted blocks are dropped in bulk when the table would otherwise grow for them: the
// table is rebuilt from the blocks (a sequential scan), amortized over the evictions that made
// the stale entries.
void KvCacheManager::prune_index() {
  index_.clear();
  for (std::size_t b = 0; b < blocks_.size(); ++b)
    if (blocks_[b].indexed && blocks_[b].pred == kNil)
      index_.insert(blocks_[b].hash, static_cast<std::uint32_t>(b));
}

void KvCacheManager::table_insert(std::uint64_t h, std::uint32_t b) {
  if (index_.size() + 1 > index_.capacity() &&
      index_.size() > static_cast<std::size_t>(num_heads_ + num_heads_ / 4) + 64)
    prune_index();
  // An entry under `h` now is stale (no indexed block holds h): it is taken over.
  if (index_.insert(h, b) != b) index_.assign(h, b);
}

void KvCacheManager::free(SlotId slot, std::uint64_t session) {
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
  t.last = kNil;
}

std::vector<std::pair<std::uint64_t, std::uint32_t>> KvCacheManager::index_entries() const {
  std::vector<std::pair<std::uint64_t, std::uint32_t>> v;
  for (std::size_t b = 0; b < blocks_.size(); ++b)
    if (blocks_[b].indexed) v.emplace_back(blocks_[b].hash, static_cast<std::uint32_t>(b));
  std::sort(v.begin(), v.end());
  return v;
}

bool KvCacheManager::check_consistency() const {
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
      if (blocks_[b].pos != list.base + i || blocks_[b].list != l) continue;  // a dead entry
      if (blocks_[b].ref != 0) return false;
      if (l != 0 && blocks_[b].hash == 0) return false;  // session lists hold cached blocks only
      cached_free += blocks_[b].hash != 0;
      ++n;
    }
    if (n != list.count) return false;
    free_count += n;
  }
  if (free_count != num_free_ || cached_free != num_free_cached_) return false;
  std::int64_t zero = 0, indexed = 0, heads = 0;
  for (std::int64_t b = 0; b < num_blocks_; ++b) {
    const Block& k = blocks_[b];
    if (refs[b] != k.ref) return false;
    zero += k.ref == 0;
    if ((k.ref == 0) != (k.pos != kNil)) return false;  // free exactly when in a list
    if (!k.indexed) {
      // Links and branches belong to indexed blocks only.
      if (k.pred != kNil || k.link != kNil || k.branch) return false;
      continue;
    }
    ++indexed;
    if (k.hash == 0) return false;
    // Found through its predecessor's link, or through the table.
    if (k.pred != kNil) {
      if (k.pred >= num_blocks_ || !blocks_[k.pred].indexed ||
          blocks_[k.pred].link != static_cast<std::uint32_t>(b))
        return false;
    } else {
      ++heads;
      if (index_.find(k.hash) != static_cast<std::uint32_t>(b)) return false;
    }
    if (k.link != kNil &&
        (k.link >= num_blocks_ || blocks_[k.link].pred != static_cast<std::uint32_t>(b)))
      return false;
  }
  if (heads != num_heads_) return false;
  // At most one indexed block per hash.
  const auto entries = index_entries();
  for (std::size_t i = 1; i < entries.size(); ++i)
    if (entries[i].first == entries[i - 1].first) return false;
  // A loose hash is not indexed (the block that indexes it takes `branch` and it leaves).
  for (const auto& [h, b] : entries)
    if (loose_.contains(h)) return false;
  // Every entry names a block (an indexed one, or a stale entry of an evicted one).
  bool entries_ok = true;
  index_.for_each(
      [&](std::uint64_t, std::uint32_t b) { entries_ok = entries_ok && b < num_blocks_; });
  return entries_ok && zero == num_free_ && indexed == num_indexed_;
}

}  // namespace kvfleet::sim
