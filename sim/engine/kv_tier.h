#pragma once
// One KV tier below GPU memory (CPU DRAM, local NVMe): an LRU store of cached blocks, identified
// by their hashes, with a capacity and read/write bandwidths per GPU. Writes are asynchronous but
// serialised at the write bandwidth: a block becomes readable once its write completes.
#include <absl/container/flat_hash_map.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/time.h"
#include "sim/engine/engine_config.h"

namespace kvfleet::sim {

class KvTier {
 public:
  KvTier(const KvTierConfig& c, double block_bytes);

  const std::string& name() const { return name_; }
  std::int64_t size() const { return static_cast<std::int64_t>(index_.size()); }
  double read_seconds(std::int64_t blocks) const { return blocks * block_bytes_ / read_Bps_; }

  // True when `hash` is stored and its write has completed by `now`.
  bool ready(std::uint64_t hash, SimTime now) const;
  // Marks `hash` most recently used and counts a read of one block.
  void read(std::uint64_t hash);
  // Stores `hash` (or refreshes it). Returns the hash this tier evicted to make room, if any.
  std::optional<std::uint64_t> write(std::uint64_t hash, SimTime now);

  double bytes_written() const { return bytes_written_; }
  double bytes_read() const { return bytes_read_; }
  std::int64_t evictions() const { return evictions_; }

 private:
  static constexpr std::uint32_t kNil = UINT32_MAX;
  struct Node {
    std::uint64_t hash;
    SimTime ready_at;
    std::uint32_t prev, next;  // LRU list: head = least recently used
  };
  void unlink(std::uint32_t n);
  void push_back(std::uint32_t n);

  std::string name_;
  double block_bytes_, read_Bps_, write_Bps_;
  std::int64_t capacity_;
  std::vector<Node> nodes_;
  std::vector<std::uint32_t> free_nodes_;
  absl::flat_hash_map<std::uint64_t, std::uint32_t> index_;
  std::uint32_t head_ = kNil, tail_ = kNil;
  SimTime write_busy_until_ = 0;
  double bytes_written_ = 0, bytes_read_ = 0;
  std::int64_t evictions_ = 0;
};

}  // namespace kvfleet::sim
