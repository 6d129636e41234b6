#pragma once
// REFERENCE ONLY (tests): block hashing piece by piece, as BlockHasher::extend did before its
// whole-block fast path (issue 19, stop 33). Every block's hash mixes its parent's hash with the
// key of each piece of content it holds (piece_key as it stood then, spelt out); a piece of unique
// content (content 0, no salt) ends the chain. tests/differential/block_hash_diff_test.cpp requires
// BlockHasher to give exactly these hashes.
#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "sim/engine/block_hash.h"

namespace kvfleet::sim::reference {

struct PieceHashes {
  std::vector<std::uint64_t> hashes;  // of the full blocks up to `blocks`, until the chain ends
  bool alive = true;                  // false: a block holds unique content; no more hashes
};

// The first `blocks` full-block hashes (of those wholly within `available_tokens`) of a request
// whose tokens are `prompt` then output of `output_content`.
inline PieceHashes piece_hashes(std::span<const Segment> prompt, std::uint64_t output_content,
                                std::uint32_t tenant, int block_size, std::uint64_t salt,
                                std::int64_t blocks, std::int64_t available_tokens) {
  PieceHashes r;
  if (salt == 0 && (prompt.empty() || prompt.front().content == 0)) {
    r.alive = false;
    return r;
  }
  // Each token's (content, owner, offset in its content), the output's counted from 0.
  struct Token {
    std::uint64_t content;
    std::uint32_t owner;
    std::int64_t offset;
  };
  std::vector<Token> tokens;
  for (const Segment& s : prompt)
    for (std::int32_t i = 0; i < s.tokens; ++i) tokens.push_back({s.content, s.owner, i});
  const std::int64_t want = std::min(blocks, available_tokens / block_size) * block_size;
  for (std::int64_t i = 0; static_cast<std::int64_t>(tokens.size()) < want; ++i)
    tokens.push_back({output_content, tenant, i});
  std::uint64_t parent = 0x6B76666C656574ull;
  for (std::int64_t b = 0; (b + 1) * block_size <= want; ++b) {
    std::uint64_t h = parent;
    // Pieces: maximal runs of tokens of one content and owner at consecutive offsets.
    for (std::int64_t t = b * block_size; t < (b + 1) * block_size;) {
      const Token& first = tokens[static_cast<std::size_t>(t)];
      std::int64_t take = 1;
      while (t + take < (b + 1) * block_size) {
        const Token& next = tokens[static_cast<std::size_t>(t + take)];
        if (next.content != first.content || next.owner != first.owner ||
            next.offset != first.offset + take)
          break;
        ++take;
      }
      std::uint64_t content = first.content;
      if (content == 0) {
        if (salt == 0) {
          r.alive = false;
          return r;
        }
        content = salt;
      }
      // The piece's key, spelt out here rather than taken from block_hash.h's piece_key (whose
      // split into a content part and the rest is what the fast path under test reuses).
      std::uint64_t key = mix64(0x70696563656B6579ull, content);
      key = mix64(key, (static_cast<std::uint64_t>(first.owner) << 32) ^
                           static_cast<std::uint64_t>(first.offset));
      key = mix64(key, static_cast<std::uint64_t>(take));
      h = mix64(h, key);
      t += take;
    }
    if (h == 0) h = 1;
    r.hashes.push_back(h);
    parent = h;
  }
  return r;
}

}  // namespace kvfleet::sim::reference
