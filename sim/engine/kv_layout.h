#pragma once
// KV layouts: how a request's KV memory is laid out and claimed, chosen by name
// (engine.kv_layout) from a registry. Paged (vLLM): blocks are claimed as tokens arrive and may be
// shared through the prefix cache (the KvCacheManager, whose hit, allocation and eviction order
// the replica's scheduler follows). Contiguous (systems before paging): each request reserves one
// region for its whole life when it is admitted.
//
// Adding a layout: a class with a `Config` deriving from KvLayout, in a file of its own, and one
// line in kv_layout_registry() (kv_layout.cpp).
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "sim/config/params.h"
#include "sim/core/ids.h"
#include "sim/engine/kv_cache.h"

namespace kvfleet::sim {

// What a layout is built on: the replica's block manager (the GPU's KV memory) and the engine
// settings a layout may read.
struct KvLayoutContext {
  KvCacheManager* kv = nullptr;  // outlives the layout (reset in place when the engine restarts)
  std::int64_t max_model_len = 0;
  std::string contiguous_reservation = "max";  // max, pow2 or oracle
  std::string contiguous_allocator = "buddy";  // buddy or first_fit
};

class KvLayout {
 public:
  virtual ~KvLayout() = default;
  // Requests claim all their KV when admitted (true), or blocks as their tokens arrive (false).
  virtual bool reserves_at_admission() const = 0;
  // A request of `prompt` + `output` tokens could run alone on an empty engine.
  virtual bool fits(std::int64_t prompt, std::int64_t output) const = 0;
  // Reserves the region of a request being admitted (reserves_at_admission only).
  virtual bool reserve(SlotId slot, std::int64_t prompt, std::int64_t output) { return true; }
  // Frees what `slot` holds (its blocks return to the cache under `session`).
  virtual void release(SlotId slot, std::uint64_t session) = 0;
  // Fraction of KV memory in use, and tokens given to requests (blocks × block size, regions).
  virtual double usage() const = 0;
  virtual std::int64_t allocated_tokens() const = 0;
  // The engine restarted: everything is free.
  virtual void clear() = 0;
  // Checks the layout's own accounting against the running slots; throws std::logic_error.
  virtual void verify(std::span<const SlotId> running, const std::string& replica) const {}
  // The request in `slot` holds this many tokens of KV memory (0 when the layout does not say).
  virtual std::int64_t reservation(SlotId slot) const { return 0; }
};

using KvLayoutRegistry = config::Registry<KvLayout, const KvLayoutContext&>;
const KvLayoutRegistry& kv_layout_registry();
// Builds the layout named `name` (a kv_layout_registry() name; it takes no parameters).
std::unique_ptr<KvLayout> make_kv_layout(const std::string& name, const KvLayoutContext& ctx);

}  // namespace kvfleet::sim
