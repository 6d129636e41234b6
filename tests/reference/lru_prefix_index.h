#pragma once
// REFERENCE ONLY (tests): the router's approximate prefix index as it stood before issue 19
// (commit 0319cb1): one LRU set of block hashes per replica, matched replica by replica. The
// pool-wide index (sim/fleet/prefix_index.h) must answer exactly as these do;
// tests/differential/prefix_index_diff_test.cpp runs both on randomized request streams.
#include <absl/container/flat_hash_map.h>

#include <cstdint>
#include <iterator>
#include <list>
#include <span>
#include <vector>

namespace kvfleet::sim::reference {

// An LRU set of block hashes: what a router believes one replica caches.
struct LruIndex {
  std::list<std::uint64_t> order;  // most recent at the back
  absl::flat_hash_map<std::uint64_t, std::list<std::uint64_t>::iterator> where;
  bool contains(std::uint64_t h) const { return where.contains(h); }
  std::size_t size() const { return order.size(); }
  void touch(std::uint64_t h, std::int64_t capacity) {
    if (auto it = where.find(h); it != where.end()) {
      order.splice(order.end(), order, it->second);
      return;
    }
    if (static_cast<std::int64_t>(order.size()) >= capacity) {
      where.erase(order.front());
      order.pop_front();
    }
    order.push_back(h);
    where[h] = std::prev(order.end());
  }
  std::size_t match(std::span<const std::uint64_t> hashes) const {
    std::size_t n = 0;
    while (n < hashes.size() && contains(hashes[n])) ++n;
    return n;
  }
  // What the router recorded for a request sent to this replica: last block first.
  void record(std::span<const std::uint64_t> hashes, std::int64_t capacity) {
    for (auto it = hashes.rbegin(); it != hashes.rend(); ++it) touch(*it, capacity);
  }
};

}  // namespace kvfleet::sim::reference
