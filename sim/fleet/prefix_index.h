#pragma once
// What a prefix-aware router believes the replicas of a pool cache (the Gateway API Inference
// Extension's approximate prefix cache, SGLang's router tree): for each replica, an LRU set of
// the block hashes of the prompts it was sent, bounded per replica. One index serves the whole
// pool: every hash it holds knows which replicas hold it, so that scoring a prompt against all
// replicas is one walk of its hashes (one lookup per block), not one walk per replica.
// Behaves exactly as one independent LRU per replica (tests/reference/lru_prefix_index.h; the
// differential test is tests/differential/prefix_index_diff_test.cpp).
#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>
#include <absl/hash/hash.h>

#include <cstdint>
#include <span>
#include <vector>

namespace kvfleet::sim {

class PoolPrefixIndex {
 public:
  explicit PoolPrefixIndex(std::int64_t capacity_per_replica)
      : capacity_(capacity_per_replica), entry_of_(0, ByHash{&entries_}, SameHash{&entries_}) {}
  // The entry set refers to entries_ by address.
  PoolPrefixIndex(const PoolPrefixIndex&) = delete;
  PoolPrefixIndex& operator=(const PoolPrefixIndex&) = delete;

  // For each of the first `replicas` replicas, how many of `hashes` it holds counting from the
  // first, into `matched` (resized to `replicas`). Changes nothing.
  void match(std::span<const std::uint64_t> hashes, std::size_t replicas,
             std::vector<std::size_t>& matched) const;
  // Records that `replica` was sent `hashes`: each is touched in its LRU, last first (so that a
  // prompt's prefix is its most recently used part and suffixes are forgotten first, as vLLM
  // frees a request's blocks in reverse), evicting the least recently used beyond the capacity.
  void record(std::size_t replica, std::span<const std::uint64_t> hashes);
  // Hashes the replica's LRU holds.
  std::size_t size(std::size_t replica) const {
    return replica < lru_.size() ? lru_[replica].size : 0;
  }

 private:
  static constexpr std::uint32_t kNil = UINT32_MAX;
  struct Node {  // one (hash, replica) in the replica's LRU list
    std::uint32_t prev = kNil, next = kNil;
    std::uint32_t entry = kNil;  // the hash's holder set
  };
  struct Entry {  // a hash some replica holds
    std::uint64_t hash = 0;
    std::uint64_t mask0 = 0;    // holders among replicas 0-63 (others in masks_)
    std::uint32_t holders = 0;  // 0: a free entry
    std::uint32_t node = kNil;  // the only holder's node, when holders == 1
  };
  // The set of live entries, found by hash: it stores entry numbers only (the hash is in the
  // entry, which a lookup reads anyway for the holders).
  struct ByHash {
    using is_transparent = void;
    const std::vector<Entry>* entries;
    std::size_t operator()(std::uint64_t h) const { return absl::Hash<std::uint64_t>()(h); }
    std::size_t operator()(std::uint32_t e) const { return (*this)((*entries)[e].hash); }
  };
  struct SameHash {
    using is_transparent = void;
    const std::vector<Entry>* entries;
    std::uint64_t key(std::uint64_t h) const { return h; }
    std::uint64_t key(std::uint32_t e) const { return (*entries)[e].hash; }
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      return key(a) == key(b);
    }
  };
  struct Lru {
    std::uint32_t head = kNil, tail = kNil;  // least recent at the head
    std::size_t size = 0;
    // hash -> node, for hashes that other replicas hold too (a hash held by one replica finds its
    // node through its entry): most hashes live on one replica, so these maps stay small.
    absl::flat_hash_map<std::uint64_t, std::uint32_t> shared;
  };
  void ensure_replicas(std::size_t n);
  // Word w of an entry's holder bits.
  std::uint64_t& word(std::uint32_t entry, std::size_t w) {
    return w == 0 ? entries_[entry].mask0 : masks_[entry * (words_ - 1) + w - 1];
  }
  std::uint64_t word(std::uint32_t entry, std::size_t w) const {
    return w == 0 ? entries_[entry].mask0 : masks_[entry * (words_ - 1) + w - 1];
  }
  bool holds(std::uint32_t entry, std::size_t replica) const {
    return (word(entry, replica / 64) >> (replica % 64)) & 1;
  }
  std::uint32_t node_of(std::uint32_t entry, std::size_t replica) const;
  std::size_t only_holder(std::uint32_t entry) const;
  void unlink(Lru& l, std::uint32_t n);
  void push_back(Lru& l, std::uint32_t n);
  void evict_front(std::size_t replica);
  void insert(std::size_t replica, std::uint64_t h);

  std::int64_t capacity_;
  std::vector<Lru> lru_;
  std::vector<Node> nodes_;
  std::vector<std::uint32_t> free_nodes_;
  // Holder sets: an entry's bits (words_ 64-bit words) say which replicas hold its hash.
  std::vector<Entry> entries_;
  absl::flat_hash_set<std::uint32_t, ByHash, SameHash> entry_of_;
  std::vector<std::uint64_t> masks_;  // words 1.. of each entry's bits, words_ - 1 per entry
  std::vector<std::uint32_t> free_entries_;
  std::size_t words_ = 1;
  mutable std::vector<std::uint64_t> alive_;  // scratch of match
  // The entries match found for the last prompt, which record reuses while they stay valid.
  mutable std::vector<std::uint32_t> found_;
};

}  // namespace kvfleet::sim
