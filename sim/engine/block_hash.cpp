#include "sim/engine/block_hash.h"

#include <algorithm>

namespace kvfleet::sim {

void BlockHasher::reset(std::span<const Segment> prompt, std::uint64_t output_content,
                        std::uint32_t tenant, int block_size, std::uint64_t unique_salt) {
  prompt_ = prompt;
  output_content_ = output_content;
  tenant_ = tenant;
  block_size_ = block_size;
  seg_ = 0;
  seg_off_ = 0;
  out_off_ = 0;
  parent_ = 0x6B76666C656574ull;
  salt_ = unique_salt;
  dead_ = salt_ == 0 && (prompt.empty() || prompt.front().content == 0);
}

bool BlockHasher::extend(std::vector<std::uint64_t>& out, std::int64_t blocks,
                         std::int64_t available_tokens) {
  while (!dead_ && static_cast<std::int64_t>(out.size()) < blocks) {
    const std::int64_t end = static_cast<std::int64_t>(out.size() + 1) * block_size_;
    if (end > available_tokens) return true;  // not full yet; may extend later
    if (whole_blocks(out, blocks, available_tokens)) continue;
    std::uint64_t h = parent_;
    std::int64_t need = block_size_;
    while (need > 0) {
      std::uint64_t content;
      std::uint32_t owner;
      std::int64_t offset, take;
      if (seg_ < prompt_.size() && prompt_[seg_].tokens <= 0) {
        ++seg_;
        continue;
      }
      if (seg_ < prompt_.size()) {
        const Segment& s = prompt_[seg_];
        content = s.content;
        owner = s.owner;
        offset = seg_off_;
        take = std::min<std::int64_t>(need, s.tokens - seg_off_);
        seg_off_ += take;
        if (seg_off_ == s.tokens) ++seg_, seg_off_ = 0;
      } else {
        content = output_content_;
        owner = tenant_;
        offset = out_off_;
        take = need;
        out_off_ += take;
      }
      if (content == 0) {
        if (salt_ == 0) {
          dead_ = true;
          return false;
        }
        content = salt_;
      }
      h = mix64(h, piece_key(content, owner, offset, take));
      need -= take;
    }
    if (h == 0) h = 1;  // 0 means "no hash" in the block pool
    out.push_back(h);
    parent_ = h;
  }
  return !dead_;
}

bool BlockHasher::whole_blocks(std::vector<std::uint64_t>& out, std::int64_t blocks,
                               std::int64_t available_tokens) {
  // The next block lies wholly in one piece of content: in a prompt segment or in the output.
  std::uint64_t content;
  std::uint32_t owner;
  std::int64_t offset, room;
  if (seg_ < prompt_.size()) {
    const Segment& s = prompt_[seg_];
    room = s.tokens - seg_off_;
    if (room < block_size_) return false;
    content = s.content;
    owner = s.owner;
    offset = seg_off_;
  } else {
    content = output_content_;
    owner = tenant_;
    offset = out_off_;
    room = INT64_MAX;
  }
  if (content == 0) {
    if (salt_ == 0) return false;  // the general path ends the chain
    content = salt_;
  }
  const std::int64_t bs = block_size_;
  const std::int64_t done = static_cast<std::int64_t>(out.size());
  const std::int64_t n = std::min({room / bs, blocks - done, available_tokens / bs - done});
  if (n <= 0) return false;
  // piece_key(content, owner, offset, bs), its first step taken once for all n blocks.
  const std::uint64_t k0 = piece_key_content(content);
  const std::uint64_t high = static_cast<std::uint64_t>(owner) << 32;
  std::uint64_t h = parent_;
  for (std::int64_t i = 0; i < n; ++i, offset += bs) {
    h = mix64(h, piece_key_rest(k0, high ^ static_cast<std::uint64_t>(offset), bs));
    if (h == 0) h = 1;  // 0 means "no hash" in the block pool
    out.push_back(h);
  }
  parent_ = h;
  if (seg_ < prompt_.size()) {
    seg_off_ = offset;
    if (seg_off_ == prompt_[seg_].tokens) ++seg_, seg_off_ = 0;
  } else {
    out_off_ = offset;
  }
  return true;
}

void BlockHasher::skip(std::span<const std::uint64_t> done) {
  if (done.empty()) return;
  std::int64_t left = static_cast<std::int64_t>(done.size()) * block_size_;
  while (left > 0 && seg_ < prompt_.size()) {
    const Segment& s = prompt_[seg_];
    const std::int64_t take = std::min<std::int64_t>(left, std::max(0, s.tokens) - seg_off_);
    seg_off_ += take;
    left -= take;
    if (seg_off_ >= s.tokens) ++seg_, seg_off_ = 0;
  }
  out_off_ += left;  // blocks that reached into the output
  parent_ = done.back();
}

void prompt_block_hashes(const RequestSpec& req, int block_size, std::vector<std::uint64_t>& out) {
  out.clear();
  if (req.segments.empty() || req.segments.front().content == 0) return;
  BlockHasher h;
  h.reset(req.segments, 0, req.tenant, block_size);
  h.extend(out, req.input_tokens / block_size, req.input_tokens);
}

}  // namespace kvfleet::sim
