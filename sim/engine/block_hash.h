#pragma once
// Chained block hashes over prompt segments (vLLM: vllm/v1/core/kv_cache_utils.py,
// hash_block_tokens): the hash of block i mixes the hash of block i − 1 with the pieces of content
// the block holds (content id, owner tenant, offset, length; piece_key). Results depend on hashes
// only through their equality (distinct contents are assumed to have distinct 64-bit hashes). Only
// full blocks are hashed. A block holding any unique content (content id 0) cannot match anything,
// and neither can any block after it, so hashing stops there: an exact shortcut that keeps private
// prompts free of cost.
#include <cstdint>
#include <span>
#include <vector>

#include "sim/request/request.h"

namespace kvfleet::sim {

inline std::uint64_t mix64(std::uint64_t h, std::uint64_t x) {
  h ^= x + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDull;
  h ^= h >> 33;
  h *= 0xC4CEB9FE1A85EC53ull;
  h ^= h >> 33;
  return h;
}

// A piece of a block's content (a content id, its owner, where it starts in that content, how
// many tokens) as one well-mixed 64-bit key. It does not depend on the chain, so a block's hash
// waits for one mixing step per piece, not three: keys of later pieces are computed meanwhile.
// Its first step depends on the content alone (a run of blocks in one segment takes it once).
inline std::uint64_t piece_key_content(std::uint64_t content) {
  return mix64(0x70696563656B6579ull, content);
}
inline std::uint64_t piece_key_rest(std::uint64_t k, std::uint64_t owner_offset,
                                    std::int64_t take) {
  return mix64(mix64(k, owner_offset), static_cast<std::uint64_t>(take));
}
inline std::uint64_t piece_key(std::uint64_t content, std::uint32_t owner, std::int64_t offset,
                               std::int64_t take) {
  return piece_key_rest(
      piece_key_content(content),
      (static_cast<std::uint64_t>(owner) << 32) ^ static_cast<std::uint64_t>(offset), take);
}

// Walks a request's tokens (prompt segments, then its output) block by block, hashing as it goes.
class BlockHasher {
 public:
  // `unique_salt` != 0 makes content 0 hashable as that salt: blocks of content unique to one
  // request, which only that request can ever match (its own blocks after a preemption).
  void reset(std::span<const Segment> prompt, std::uint64_t output_content, std::uint32_t tenant,
             int block_size, std::uint64_t unique_salt = 0);
  // Appends hashes to `out` until it holds `blocks` hashes or the content turns unique; returns
  // false once no further block can be hashed. `available_tokens` bounds what exists so far.
  bool extend(std::vector<std::uint64_t>& out, std::int64_t blocks, std::int64_t available_tokens);
  // Continues after `done`, the first full-block hashes of this same content computed elsewhere
  // (a router hashed the prompt): the state extend() would have after producing them.
  void skip(std::span<const std::uint64_t> done);

 private:
  // The fast path of extend: hashes the blocks ahead that lie wholly in the current piece of
  // content (each one piece), with that content's part of the key computed once. Returns false,
  // changing nothing, when the next block is not such a block; the general path takes it then.
  bool whole_blocks(std::vector<std::uint64_t>& out, std::int64_t blocks,
                    std::int64_t available_tokens);

  std::span<const Segment> prompt_;
  std::uint64_t output_content_ = 0;
  std::uint32_t tenant_ = 0;
  int block_size_ = 16;
  std::size_t seg_ = 0;       // current segment (== prompt_.size(): in the output)
  std::int64_t seg_off_ = 0;  // offset inside it
  std::int64_t out_off_ = 0;  // offset inside the output
  std::uint64_t parent_ = 0x6B76666C656574ull;  // root of the chain
  bool dead_ = false;
  std::uint64_t salt_ = 0;
};

// The full-block hashes of a request's prompt at `block_size` into `out` (empty when the prompt
// starts with unique content): what a router or a decider matches against prefix caches.
void prompt_block_hashes(const RequestSpec& req, int block_size, std::vector<std::uint64_t>& out);

}  // namespace kvfleet::sim
