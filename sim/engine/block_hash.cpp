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

namespace {

// Tokens at the front of `a` and `b` made of the same pieces: equal segments, then the common
// start of one more segment of the same content and owner (its first tokens are the same
// pieces). Empty segments count only where both lists have them alike.
std::int64_t shared_tokens(std::span<const Segment> a, std::span<const Segment> b) {
  std::int64_t n = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const Segment& x = a[i];
    const Segment& y = b[i];
    if (x.content == 0 || x.content != y.content || x.owner != y.owner) break;
    if (x.tokens != y.tokens) return n + std::max(0, std::min(x.tokens, y.tokens));
    n += std::max(0, x.tokens);
  }
  return n;
}

}  // namespace

void PromptHashCache::hash(const RequestSpec& req, int block_size,
                           std::vector<std::uint64_t>& out) {
  if (req.session == 0) {
    prompt_block_hashes(req, block_size, out);
    return;
  }
  out.clear();
  if (req.segments.empty() || req.segments.front().content == 0) return;
  auto it = now_.find(req.session);
  if (it == now_.end()) {
    Entry last;  // the session's entry of the older generation, if any, moves to the new one
    if (const auto old = old_.find(req.session); old != old_.end()) {
      last = std::move(old->second);
      old_.erase(old);
    }
    if (now_.size() >= capacity_) {  // a new generation: the oldest sessions are forgotten
      old_ = std::move(now_);
      now_.clear();
    }
    it = now_.emplace(req.session, std::move(last)).first;
  }
  Entry& e = it->second;
  const std::int64_t blocks = req.input_tokens / block_size;
  if (e.block_size == block_size) {
    const std::int64_t keep = std::min({shared_tokens(e.segments, req.segments) / block_size,
                                        static_cast<std::int64_t>(e.hashes.size()), blocks});
    out.assign(e.hashes.begin(), e.hashes.begin() + keep);
    reused_ += keep;
  }
  BlockHasher h;
  h.reset(req.segments, 0, req.tenant, block_size);
  h.skip(out);
  h.extend(out, blocks, req.input_tokens);
  e.block_size = block_size;
  e.segments.assign(req.segments.begin(), req.segments.end());
  e.hashes.assign(out.begin(), out.end());
}

}  // namespace kvfleet::sim
