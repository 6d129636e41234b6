#include "sim/engine/kv_tier.h"

#include <algorithm>
#include <cmath>

namespace kvfleet::sim {

KvTier::KvTier(const KvTierConfig& c, double block_bytes)
    : name_(c.name),
      block_bytes_(block_bytes),
      read_Bps_(c.read_GBps * 1e9),
      write_Bps_(c.write_GBps * 1e9),
      capacity_(static_cast<std::int64_t>(
          std::floor(c.capacity_gib * 1024.0 * 1024.0 * 1024.0 / block_bytes))) {}

void KvTier::unlink(std::uint32_t n) {
  Node& k = nodes_[n];
  if (k.prev != kNil)
    nodes_[k.prev].next = k.next;
  else
    head_ = k.next;
  if (k.next != kNil)
    nodes_[k.next].prev = k.prev;
  else
    tail_ = k.prev;
}

void KvTier::push_back(std::uint32_t n) {
  Node& k = nodes_[n];
  k.prev = tail_;
  k.next = kNil;
  if (tail_ != kNil)
    nodes_[tail_].next = n;
  else
    head_ = n;
  tail_ = n;
}

bool KvTier::ready(std::uint64_t hash, SimTime now) const {
  auto it = index_.find(hash);
  return it != index_.end() && nodes_[it->second].ready_at <= now;
}

void KvTier::read(std::uint64_t hash) {
  auto it = index_.find(hash);
  if (it == index_.end()) return;
  unlink(it->second);
  push_back(it->second);
  bytes_read_ += block_bytes_;
}

std::optional<std::uint64_t> KvTier::write(std::uint64_t hash, SimTime now) {
  if (capacity_ <= 0) return hash;  // holds nothing: passes the block on
  auto it = index_.find(hash);
  if (it != index_.end()) {  // already here: refresh its place
    unlink(it->second);
    push_back(it->second);
    return std::nullopt;
  }
  std::optional<std::uint64_t> evicted;
  std::uint32_t n;
  if (size() >= capacity_) {
    n = head_;
    unlink(n);
    evicted = nodes_[n].hash;
    index_.erase(nodes_[n].hash);
    ++evictions_;
  } else if (!free_nodes_.empty()) {
    n = free_nodes_.back();
    free_nodes_.pop_back();
  } else {
    nodes_.push_back({});
    n = static_cast<std::uint32_t>(nodes_.size() - 1);
  }
  write_busy_until_ = std::max(write_busy_until_, now) + from_seconds(block_bytes_ / write_Bps_);
  nodes_[n] = Node{hash, write_busy_until_, kNil, kNil};
  push_back(n);
  index_[hash] = n;
  bytes_written_ += block_bytes_;
  return evicted;
}

}  // namespace kvfleet::sim
