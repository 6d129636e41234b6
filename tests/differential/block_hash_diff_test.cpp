// BlockHasher (with its whole-block fast path) against hashing piece by piece
// (tests/reference/piece_hasher.h): on random requests (segments shorter and longer than a block,
// empty ones, unique content, several owners, salts, every block size from 1 to 64, output of
// shared or unique content) extended in random increments as an engine extends them (asking for
// fewer blocks than exist, or more), and continued from a router's hashes, every hash and the
// chain's end must be the reference's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "sim/engine/block_hash.h"
#include "tests/reference/piece_hasher.h"

namespace kvfleet::sim {
namespace {

struct Case {
  std::vector<Segment> segments;
  std::int64_t input = 0;
  std::uint64_t output_content = 0;
  std::uint32_t tenant = 0;
  std::uint64_t salt = 0;
  int block_size = 16;
};

Case random_case(std::mt19937_64& rng) {
  Case c;
  c.block_size = std::uniform_int_distribution<int>(1, 64)(rng);
  if (rng() % 3 == 0) c.block_size = 16;
  const int n = std::uniform_int_distribution<int>(0, 8)(rng);
  for (int i = 0; i < n; ++i) {
    // Mostly long segments (several whole blocks), some short, some empty.
    std::int32_t t = 0;
    switch (rng() % 4) {
      case 0:
        t = std::uniform_int_distribution<std::int32_t>(0, 3)(rng);
        break;
      case 1:
        t = std::uniform_int_distribution<std::int32_t>(1, c.block_size + 2)(rng);
        break;
      default:
        t = std::uniform_int_distribution<std::int32_t>(1, 12 * c.block_size)(rng);
    }
    // Content 0 (unique) sometimes, repeated ids often (a content in two segments).
    const std::uint64_t content = rng() % 7 == 0 ? 0 : 1 + rng() % 4;
    c.segments.push_back({content, t, static_cast<std::uint32_t>(rng() % 3)});
    c.input += t;
  }
  c.output_content = rng() % 4 == 0 ? 0 : 100 + rng() % 3;
  c.tenant = static_cast<std::uint32_t>(rng() % 3);
  c.salt = rng() % 4 == 0 ? rng() | 1 : 0;
  return c;
}

TEST(BlockHashDifferential, IncrementalExtendEqualsPieceByPiece) {
  std::mt19937_64 rng(33);
  for (int trial = 0; trial < 20000; ++trial) {
    const Case c = random_case(rng);
    const std::int64_t total =
        c.input + std::uniform_int_distribution<std::int64_t>(0, 6 * c.block_size)(rng);
    const std::int64_t max_blocks = total / c.block_size;
    BlockHasher h;
    h.reset(c.segments, c.output_content, c.tenant, c.block_size, c.salt);
    std::vector<std::uint64_t> got;
    // As an engine extends: the tokens that exist grow by a prefill chunk or a decode token, and
    // a call may ask for fewer blocks than exist.
    std::int64_t available = 0, asked = 0;  // asked: the most blocks any call could hash
    bool alive = true;
    while (alive && available < total) {
      available = std::min(
          total, available + std::uniform_int_distribution<std::int64_t>(1, 3 * c.block_size)(rng));
      // Fewer blocks than exist, or more (the tokens that exist bound them then).
      std::int64_t blocks = available / c.block_size;
      if (rng() % 4 == 0) blocks = std::uniform_int_distribution<std::int64_t>(0, blocks)(rng);
      if (rng() % 4 == 0) blocks += std::uniform_int_distribution<std::int64_t>(1, 20)(rng);
      alive = h.extend(got, blocks, available);
      asked = std::max(asked, std::min(blocks, available / c.block_size));
      const auto want = reference::piece_hashes(c.segments, c.output_content, c.tenant,
                                                c.block_size, c.salt, asked, available);
      ASSERT_EQ(got, want.hashes) << "trial " << trial << " at " << available << " tokens";
      ASSERT_EQ(alive, want.alive) << "trial " << trial << " at " << available << " tokens";
    }
    ASSERT_LE(static_cast<std::int64_t>(got.size()), max_blocks);
  }
}

TEST(BlockHashDifferential, RoutersHashesThenTheEngineEqualsPieceByPiece) {
  std::mt19937_64 rng(34);
  for (int trial = 0; trial < 10000; ++trial) {
    Case c = random_case(rng);
    c.salt = 0;  // a router hashes without a salt
    RequestSpec req;
    req.segments = c.segments;
    req.input_tokens = static_cast<std::int32_t>(c.input);
    req.tenant = c.tenant;
    std::vector<std::uint64_t> routed;
    prompt_block_hashes(req, c.block_size, routed);
    const auto prompt_ref = reference::piece_hashes(c.segments, 0, c.tenant, c.block_size, 0,
                                                    c.input / c.block_size, c.input);
    ASSERT_EQ(routed, prompt_ref.hashes) << "trial " << trial;
    const std::int64_t total =
        c.input + std::uniform_int_distribution<std::int64_t>(0, 6 * c.block_size)(rng);
    BlockHasher h;
    h.reset(c.segments, c.output_content, c.tenant, c.block_size);
    h.skip(routed);
    // Sometimes asking for more blocks than the tokens fill: the tokens bound them.
    const std::int64_t ask = total / c.block_size + (rng() % 2 ? 7 : 0);
    const bool alive = h.extend(routed, ask, total);
    const auto want = reference::piece_hashes(c.segments, c.output_content, c.tenant, c.block_size,
                                              0, ask, total);
    ASSERT_EQ(routed, want.hashes) << "trial " << trial;
    ASSERT_EQ(alive, want.alive) << "trial " << trial;
  }
}

}  // namespace
}  // namespace kvfleet::sim
