#pragma once
// What a prefix-aware router believes the replicas of a pool cache (the Gateway API Inference
// Extension's approximate prefix cache, SGLang's router tree): for each replica, an LRU set of
// the block hashes of the prompts it was sent, bounded per replica.
//
// Behaves exactly as one independent LRU set of hashes per replica (tests/reference/
// lru_prefix_index.h; the differential test is tests/differential/prefix_index_diff_test.cpp),
// but is kept in runs of blocks, not block by block:
// - Block hashes are chained (a hash stands for its block and all before it), so the prompts
//   form a tree. A prompt is recorded last block first, so each block of a replica's set is more
//   recent than every block below it on the same path, and the LRU evicts a path's deepest block
//   first: a replica's set is closed under prefixes (a subtree).
// - One radix tree for the pool, with compressed edges (arrays of hashes), each listing the
//   replicas that hold some of it and how many of its leading hashes each holds. Matching a
//   prompt against every replica is one walk down the tree: a lookup per edge and an array
//   compare inside it (chained hashes: where the last hashes agree, all before them do).
// - A replica's LRU order is a queue of runs, one per prompt it was sent, in order. A run owns
//   the depths of its prompt that no later prompt took over (a later prompt sharing its prefix
//   takes those), and is evicted from its deepest depth up. Touching a shared prefix, inserting a
//   new suffix and evicting many blocks cost per run and per edge, not per block.
// The one assumption beyond the reference's: distinct prefixes have distinct 64-bit hashes.
#include <absl/container/flat_hash_map.h>

#include <cstdint>
#include <span>
#include <vector>

namespace kvfleet::sim {

class PoolPrefixIndex {
 public:
  explicit PoolPrefixIndex(std::int64_t capacity_per_replica) : capacity_(capacity_per_replica) {}

  // For each of the first `replicas` replicas, how many of `hashes` (a prompt's chained block
  // hashes) it holds counting from the first, into `matched` (resized to `replicas`). Changes
  // nothing.
  void match(std::span<const std::uint64_t> hashes, std::size_t replicas,
             std::vector<std::size_t>& matched) const;
  // Records that `replica` was sent `hashes`: each is touched in its LRU, last first (so that a
  // prompt's prefix is its most recently used part and suffixes are forgotten first, as vLLM
  // frees a request's blocks in reverse), evicting the least recently used beyond the capacity.
  void record(std::size_t replica, std::span<const std::uint64_t> hashes);
  // Hashes the replica's LRU holds.
  std::size_t size(std::size_t replica) const {
    return replica < reps_.size() ? reps_[replica].size : 0;
  }
  // Checks the tree, the holders and the runs against each other (tests). O(everything).
  bool check_consistency() const;

 private:
  static constexpr std::uint32_t kNil = UINT32_MAX;
  // A replica's run owns the edge's offsets from `start` to the next piece's start (or to the
  // replica's held length).
  struct Piece {
    std::uint32_t start;
    std::uint32_t run;
  };
  struct Holder {
    std::uint32_t replica;
    std::uint32_t len;          // it holds the edge's first len hashes
    std::vector<Piece> pieces;  // by start; the first starts at 0
  };
  struct Edge {
    std::vector<std::uint64_t> h;  // empty: a free edge
    std::uint32_t parent = kNil;   // the edge it continues (kNil: it starts at the root)
    std::uint32_t parent_off = 0;  // it follows the parent's first parent_off hashes
    std::uint32_t depth = 0;       // depth of h[0] in every prompt through it
    std::vector<Holder> holders;
  };
  // One prompt sent to a replica: it owns depths [lo, hi) of its path. The deepest, hi - 1, is at
  // offset `off` of edge `edge` (the path is followed up from there through the parents).
  struct Run {
    std::uint32_t edge = kNil, off = 0;
    std::uint32_t lo = 0, hi = 0;
  };
  struct Rep {
    std::vector<std::uint32_t> queue;  // runs, least recent first, from `head`
    std::size_t head = 0;
    std::size_t size = 0;  // hashes held
    std::size_t dead = 0;  // runs in the queue that later prompts took over entirely
  };
  struct Step {  // an edge on a prompt's path and how many of its hashes the prompt shares
    std::uint32_t edge;
    std::uint32_t shared;
  };

  void ensure_replicas(std::size_t n) {
    if (reps_.size() < n) reps_.resize(n);
  }
  // The edges along `hashes` as far as the tree has them; returns the depth reached.
  std::size_t walk(std::span<const std::uint64_t> hashes, std::vector<Step>& path) const;
  Holder* holder(std::uint32_t edge, std::size_t replica);
  // Evicts up to n hashes, least recent first, from the replica's runs; counts in `on_path` those
  // on the first `shared` hashes of the edges of `path`. Returns how many it evicted.
  std::size_t evict(std::size_t replica, std::size_t n, const std::vector<Step>& path,
                    std::size_t& on_path);
  void remove_holder(std::uint32_t edge, std::size_t replica);
  // Drops the hashes past what any holder holds when they are most of the edge.
  void trim(std::uint32_t edge);
  // Drops the queue's dequeued entries and the runs that later prompts took over entirely (a
  // replica that never fills its LRU would otherwise keep one per prompt).
  void compact_queue(std::size_t replica);
  // record()'s parts: the new run `r` takes over offsets [0, c) of a holder at `depth`; the
  // prompt's hashes [reached, hi), new to the tree, become one edge held by the run.
  void take_over(Holder& h, std::uint32_t depth, std::uint32_t c, std::uint32_t r,
                 std::size_t replica);
  void add_tail(std::span<const std::uint64_t> hashes, std::size_t reached, std::size_t hi,
                std::uint32_t r, std::size_t replica);
  std::uint32_t new_edge();
  std::uint32_t new_run();

  std::int64_t capacity_;
  std::vector<Edge> edges_;
  std::vector<std::uint32_t> free_edges_;
  absl::flat_hash_map<std::uint64_t, std::uint32_t> head_;  // an edge's first hash -> the edge
  std::vector<Run> runs_;
  std::vector<std::uint32_t> free_runs_;
  std::vector<Rep> reps_;
  std::vector<Step> path_;  // scratch of record
  mutable std::vector<Step> match_path_;
  // walk() reads only the edges' hashes and depths and head_: its result stays valid until one
  // of those changes (a new edge, a freed or trimmed one), which bumps shape_. record() reuses
  // the walk of the match() before it, and its own first walk, while shape_ is unchanged.
  std::uint64_t shape_ = 0;
  mutable std::uint64_t match_shape_ = UINT64_MAX;
  mutable std::vector<std::uint64_t> match_hashes_;  // what match_path_ is the walk of
  std::vector<Piece> pieces_;
};

}  // namespace kvfleet::sim
