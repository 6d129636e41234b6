// Replica: its sessions' KV retention (idle TTL, watermark, which session goes first) and the
// KV tiers below GPU memory (what spills down, what a prompt loads back).
#include "sim/engine/replica.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace kvfleet::sim {

// Past the GPU-cached prefix (`hit_blocks` of `hashes`), the next blocks may sit in a KV tier:
// how many to load, and how long that takes, when loading is cheaper than recomputing them.
std::pair<std::int64_t, double> Replica::tier_prefix(std::span<const std::uint64_t> hashes,
                                                     std::int64_t hit_blocks) {
  std::int64_t blocks = 0;
  double load_s = 0;
  const SimTime now = queue_.now();
  for (std::size_t b = hit_blocks; b < hashes.size(); ++b) {
    const KvTier* from = nullptr;
    for (const auto& t : tiers_)
      if (t.ready(hashes[b], now)) {
        from = &t;
        break;
      }
    if (!from) break;
    load_s += from->read_seconds(1);
    ++blocks;
  }
  if (blocks > 0 &&
      load_s >= prefill_seconds(blocks * kv_.block_size(), hit_blocks * kv_.block_size())) {
    stats_.tier_recomputed_tokens += blocks * kv_.block_size();
    return {0, 0.0};
  }
  return {blocks, load_s};
}

void Replica::load_from_tiers(std::span<const std::uint64_t> hashes, std::int64_t hit_blocks,
                              std::int64_t tier_blocks, double load_s, RequestRecord& rec,
                              bool first_admission) {
  for (std::int64_t b = hit_blocks; b < hit_blocks + tier_blocks; ++b)
    for (auto& t : tiers_)
      if (t.ready(hashes[b], queue_.now())) {
        t.read(hashes[b]);
        break;
      }
  load_s_ += load_s;
  stats_.tier_hit_tokens += tier_blocks * kv_.block_size();
  // As cached_tokens, the request's record counts its first admission's loads: a load after a
  // preemption brings back positions it computed before (counted in its work once), not prompt
  // tokens it was spared.
  if (first_admission)
    rec.loaded_tokens += static_cast<std::int32_t>(tier_blocks * kv_.block_size());
}

void Replica::session_start(std::uint64_t key, std::int32_t priority, SimTime now) {
  SessionState& st = sessions_[key];
  ++st.active;
  st.last_active = now;
  st.priority = priority;
}

void Replica::session_end(std::uint64_t key, SimTime now) {
  SessionState& st = sessions_[key];
  --st.active;
  st.last_active = now;
  // Forget sessions with nothing here any more, now and then.
  if (++session_ends_ % 4096 == 0)
    absl::erase_if(sessions_, [&](const auto& kv) {
      return kv.second.active == 0 && kv_.session_cached_blocks(kv.first) == 0;
    });
}

std::uint64_t Replica::choose_victim() {
  const SimTime now = queue_.now();
  std::uint64_t best = 0;
  std::array<double, 3> best_key{};
  bool found = false;
  kv_.for_each_session_with_cached([&](std::uint64_t session, std::int64_t blocks) {
    SessionState st = sessions_[session];
    st.cached_blocks = blocks;
    const auto k = retention_->key(st, now);
    if (!found || k < best_key || (k == best_key && session < best)) {
      best = session;
      best_key = k;
      found = true;
    }
  });
  return best;
}

void Replica::retain(SimTime now) {
  if (!by_session_) return;
  const double ttl = retention_->idle_ttl_s();
  if (ttl < std::numeric_limits<double>::infinity()) {
    std::vector<std::uint64_t> stale;
    kv_.for_each_session_with_cached([&](std::uint64_t session, std::int64_t) {
      const SessionState& st = sessions_[session];
      if (st.active == 0 && to_seconds(now - st.last_active) > ttl) stale.push_back(session);
    });
    std::sort(stale.begin(), stale.end());
    for (auto session : stale) kv_.evict_session(session, INT64_MAX);
  }
  const double w = retention_->watermark();
  if (w < 1.0) {
    const auto limit = static_cast<std::int64_t>(w * static_cast<double>(kv_.num_blocks()));
    std::int64_t over = kv_.num_blocks() - kv_.num_uncached_free_blocks() - limit;
    while (over > 0 && kv_.num_free_blocks() > kv_.num_uncached_free_blocks()) {
      const std::int64_t n = kv_.evict_session(choose_victim(), over);
      if (n == 0) break;
      over -= n;
    }
  }
}

void Replica::spill_evicted(SimTime now) {
  for (std::uint64_t h : kv_.evicted()) {
    std::optional<std::uint64_t> down = h;
    for (auto& t : tiers_) {
      down = t.write(*down, now);
      if (!down) break;
    }
  }
  kv_.evicted().clear();
}

std::int64_t Replica::release_session(std::uint64_t session) {
  return by_session_ ? kv_.evict_session(session, INT64_MAX) : 0;
}

}  // namespace kvfleet::sim
