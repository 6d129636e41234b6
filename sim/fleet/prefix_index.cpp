#include "sim/fleet/prefix_index.h"

#include <algorithm>
#include <bit>

namespace kvfleet::sim {

void PoolPrefixIndex::ensure_replicas(std::size_t n) {
  if (lru_.size() < n) lru_.resize(n);
  const std::size_t words = (n + 63) / 64;
  if (words <= words_) return;
  // More replicas than the holder sets have bits for: widen every set.
  const std::size_t entries = entries_.size();
  std::vector<std::uint64_t> wider(entries * (words - 1), 0);
  if (words_ > 1)  // words 1.. exist only beyond 64 replicas
    for (std::size_t e = 0; e < entries; ++e)
      std::copy_n(masks_.data() + e * (words_ - 1), words_ - 1, wider.data() + e * (words - 1));
  masks_.swap(wider);
  words_ = words;
}

void PoolPrefixIndex::match(std::span<const std::uint64_t> hashes, std::size_t replicas,
                            std::vector<std::size_t>& matched) const {
  matched.assign(replicas, 0);
  found_.clear();
  if (replicas == 0) return;
  const std::size_t words = (replicas + 63) / 64;
  alive_.assign(words, ~0ull);
  if (replicas % 64) alive_[words - 1] = (1ull << (replicas % 64)) - 1;
  const std::size_t own = std::min(words, words_);  // replicas beyond words_ hold nothing
  for (std::size_t w = own; w < words; ++w) alive_[w] = 0;
  std::size_t j = 0;
  for (; j < hashes.size(); ++j) {
    if (j + 4 < hashes.size()) entry_of_.prefetch(hashes[j + 4]);
    auto it = entry_of_.find(hashes[j]);
    if (it == entry_of_.end()) break;
    const std::uint32_t e = *it;
    found_.push_back(e);
    bool any = false;
    for (std::size_t w = 0; w < own; ++w) {
      const std::uint64_t m = word(e, w);
      std::uint64_t gone = alive_[w] & ~m;
      alive_[w] &= m;
      any |= alive_[w] != 0;
      while (gone) {
        matched[w * 64 + static_cast<std::size_t>(std::countr_zero(gone))] = j;
        gone &= gone - 1;
      }
    }
    if (!any) return;
  }
  for (std::size_t w = 0; w < own; ++w)
    for (std::uint64_t a = alive_[w]; a; a &= a - 1)
      matched[w * 64 + static_cast<std::size_t>(std::countr_zero(a))] = j;
}

std::uint32_t PoolPrefixIndex::node_of(std::uint32_t entry, std::size_t replica) const {
  const Entry& e = entries_[entry];
  return e.holders == 1 ? e.node : lru_[replica].shared.at(e.hash);
}

std::size_t PoolPrefixIndex::only_holder(std::uint32_t entry) const {
  std::size_t w = 0;
  while (word(entry, w) == 0) ++w;
  return w * 64 + static_cast<std::size_t>(std::countr_zero(word(entry, w)));
}

void PoolPrefixIndex::unlink(Lru& l, std::uint32_t n) {
  Node& k = nodes_[n];
  if (k.prev != kNil)
    nodes_[k.prev].next = k.next;
  else
    l.head = k.next;
  if (k.next != kNil)
    nodes_[k.next].prev = k.prev;
  else
    l.tail = k.prev;
  k.prev = k.next = kNil;
}

void PoolPrefixIndex::push_back(Lru& l, std::uint32_t n) {
  Node& k = nodes_[n];
  k.prev = l.tail;
  k.next = kNil;
  if (l.tail != kNil)
    nodes_[l.tail].next = n;
  else
    l.head = n;
  l.tail = n;
}

void PoolPrefixIndex::evict_front(std::size_t replica) {
  Lru& l = lru_[replica];
  const std::uint32_t n = l.head;
  unlink(l, n);
  --l.size;
  free_nodes_.push_back(n);
  const std::uint32_t e = nodes_[n].entry;
  Entry& entry = entries_[e];
  word(e, replica / 64) &= ~(1ull << (replica % 64));
  if (--entry.holders == 0) {
    entry_of_.erase(entry.hash);
    free_entries_.push_back(e);
    return;
  }
  l.shared.erase(entry.hash);
  if (entry.holders == 1) {  // the last holder's node moves into the entry
    auto& other = lru_[only_holder(e)].shared;
    auto it = other.find(entry.hash);
    entry.node = it->second;
    other.erase(it);
  }
}

void PoolPrefixIndex::insert(std::size_t replica, std::uint64_t h) {
  Lru& l = lru_[replica];
  if (static_cast<std::int64_t>(l.size) >= capacity_) evict_front(replica);
  std::uint32_t n;
  if (!free_nodes_.empty()) {
    n = free_nodes_.back();
    free_nodes_.pop_back();
  } else {
    n = static_cast<std::uint32_t>(nodes_.size());
    nodes_.emplace_back();
  }
  std::uint32_t e;
  if (auto it = entry_of_.find(h); it == entry_of_.end()) {
    if (!free_entries_.empty()) {
      e = free_entries_.back();
      free_entries_.pop_back();
    } else {
      e = static_cast<std::uint32_t>(entries_.size());
      entries_.emplace_back();
      masks_.resize(masks_.size() + words_ - 1, 0);
    }
    entries_[e] = Entry{h, 0, 1, n};
    entry_of_.insert(e);
  } else {
    e = *it;
    Entry& entry = entries_[e];
    if (entry.holders == 1) {  // its node moves to its replica's map of shared hashes
      lru_[only_holder(e)].shared.emplace(h, entry.node);
      entry.node = kNil;
    }
    ++entry.holders;
    l.shared.emplace(h, n);
  }
  word(e, replica / 64) |= 1ull << (replica % 64);
  nodes_[n].entry = e;
  push_back(l, n);
  ++l.size;
}

void PoolPrefixIndex::record(std::size_t replica, std::span<const std::uint64_t> hashes) {
  ensure_replicas(replica + 1);
  Lru& l = lru_[replica];
  for (std::size_t k = hashes.size(); k-- > 0;) {
    const std::uint64_t h = hashes[k];
    // Past what match found, each hash is looked up: start loading its slot early.
    if (k >= found_.size() + 4) entry_of_.prefetch(hashes[k - 4]);
    std::uint32_t e = kNil;
    // The entry match found, unless an eviction since has freed it.
    if (k < found_.size() && entries_[found_[k]].hash == h && entries_[found_[k]].holders > 0) {
      e = found_[k];
      if (k >= 4) __builtin_prefetch(&entries_[found_[k - 4]]);
    } else if (auto it = entry_of_.find(h); it != entry_of_.end()) {
      e = *it;
    }
    if (e != kNil && holds(e, replica)) {
      const std::uint32_t n = node_of(e, replica);
      if (l.tail != n) {
        unlink(l, n);
        push_back(l, n);
      }
      continue;
    }
    insert(replica, h);
  }
}

}  // namespace kvfleet::sim
