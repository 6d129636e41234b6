#pragma once
// Retention policies: which cached KV blocks an engine gives up first when it needs memory, and
// whether it gives some up before it must. Chosen by `engine.retention.impl`.
//   lru            vLLM's implicit behaviour: one free queue, least recently freed block first.
//   watermark      keep caches until usage passes a watermark, then evict down to it, least
//                  recently active sessions first.
//   idle_ttl       evict the caches of sessions idle longer than a time to live; otherwise least
//                  recently active sessions first.
//   priority       low-priority sessions' caches go first, then least recently active.
//   session_aware  the rule from the field: never evict active sessions (a request running or
//                  waiting) while others can go; evict sessions idle longer than a limit first
//                  (oldest first), then the largest caches, keeping high-priority sessions last.
// Session-based policies use free blocks that cache nothing before any cached block, and evict a
// victim session's blocks in the order its requests freed them (last block first).
#include <array>
#include <cstdint>
#include <limits>

#include "sim/config/params.h"
#include "sim/core/time.h"

namespace kvfleet::sim {

// What a policy knows of a session on one replica.
struct SessionState {
  std::int32_t active = 0;         // its requests running or waiting here
  SimTime last_active = 0;         // last arrival or completion here
  std::int32_t priority = 0;       // lower is more urgent
  std::int64_t cached_blocks = 0;  // its cached blocks in the free pool
};

class RetentionPolicy {
 public:
  virtual ~RetentionPolicy() = default;
  // False: vLLM's single LRU free queue (no per-session bookkeeping).
  virtual bool by_session() const { return true; }
  // Eviction order: the session with the smallest key loses its cached blocks first.
  virtual std::array<double, 3> key(const SessionState& s, SimTime now) const = 0;
  // Evict proactively above this fraction of blocks held or cached (1 = only when needed).
  virtual double watermark() const { return 1.0; }
  // Evict proactively the caches of inactive sessions idle longer than this.
  virtual double idle_ttl_s() const { return std::numeric_limits<double>::infinity(); }
};

using RetentionRegistry = config::Registry<RetentionPolicy>;
const RetentionRegistry& retention_registry();

}  // namespace kvfleet::sim
