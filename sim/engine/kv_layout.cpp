#include "sim/engine/kv_layout.h"

#include <algorithm>
#include <stdexcept>

#include "sim/engine/contiguous_kv.h"

namespace kvfleet::sim {
namespace {

struct NoParams {
  template <class V>
  void visit(V&) {}
};

// vLLM's paged KV: the block manager is the layout.
class Paged final : public KvLayout {
 public:
  using Config = NoParams;
  Paged(const Config&, const KvLayoutContext& ctx) : kv_(*ctx.kv) {}
  bool reserves_at_admission() const override { return false; }
  bool fits(std::int64_t prompt, std::int64_t output) const override {
    return kv_.blocks_for(prompt + output - 1) <= kv_.num_blocks();
  }
  void release(SlotId slot, std::uint64_t session) override { kv_.free(slot, session); }
  double usage() const override { return kv_.usage(); }
  std::int64_t allocated_tokens() const override {
    return kv_.num_used_blocks() * kv_.block_size();
  }
  void clear() override {}  // the replica resets the block manager itself

 private:
  KvCacheManager& kv_;
};

// One contiguous region per request, reserved at admission for its whole life.
class Contiguous final : public KvLayout {
 public:
  using Config = NoParams;
  Contiguous(const Config&, const KvLayoutContext& ctx)
      : capacity_(ctx.kv->num_blocks() * ctx.kv->block_size()),
        buddy_(ctx.contiguous_allocator == "buddy"),
        max_model_len_(ctx.max_model_len),
        reservation_(ctx.contiguous_reservation == "pow2"     ? Reservation::kPow2
                     : ctx.contiguous_reservation == "oracle" ? Reservation::kOracle
                                                              : Reservation::kMax) {
    clear();
  }
  bool reserves_at_admission() const override { return true; }
  bool fits(std::int64_t prompt, std::int64_t output) const override {
    // The buddy allocator's largest block is the largest power of two within the capacity: a
    // reservation above it would wait forever in an empty engine.
    return ckv_->can_ever_reserve(reservation_for(prompt, output));
  }
  bool reserve(SlotId slot, std::int64_t prompt, std::int64_t output) override {
    return ckv_->reserve(slot, reservation_for(prompt, output));
  }
  void release(SlotId slot, std::uint64_t) override { ckv_->release(slot); }
  double usage() const override {
    return static_cast<double>(ckv_->reserved_tokens()) / ckv_->capacity_tokens();
  }
  std::int64_t allocated_tokens() const override { return ckv_->reserved_tokens(); }
  void clear() override { ckv_ = std::make_unique<ContiguousKv>(capacity_, buddy_); }
  std::int64_t reservation(SlotId slot) const override { return ckv_->reservation(slot); }
  void verify(std::span<const SlotId> running, const std::string& replica) const override {
    if (!ckv_->check_consistency())
      throw std::logic_error("replica " + replica + ": contiguous KV regions inconsistent");
    std::int64_t reserved = 0;
    for (auto s : running) reserved += ckv_->reservation(s);
    if (reserved != ckv_->reserved_tokens())
      throw std::logic_error("replica " + replica + ": reservations drifted");
  }

 private:
  enum class Reservation : std::uint8_t { kMax, kPow2, kOracle };
  // The region a request reserves.
  std::int64_t reservation_for(std::int64_t prompt, std::int64_t output) const {
    if (reservation_ == Reservation::kMax) return max_model_len_;
    if (reservation_ == Reservation::kPow2) {
      // PagedAttention's Orca (Pow2): the output space over-reserved by at most 2x (25 -> 32).
      std::int64_t p = 1;
      while (p < output) p <<= 1;
      return std::min<std::int64_t>(prompt + p, max_model_len_);
    }
    return prompt + output;  // oracle
  }

  std::int64_t capacity_;
  bool buddy_;
  std::int64_t max_model_len_;
  Reservation reservation_;
  std::unique_ptr<ContiguousKv> ckv_;
};

}  // namespace

const KvLayoutRegistry& kv_layout_registry() {
  static const KvLayoutRegistry r = [] {
    KvLayoutRegistry reg("KV layout", "paged");
    reg.add<Paged>("paged",
                   "Blocks of block_size tokens claimed as tokens arrive, shared through the "
                   "prefix cache (vLLM's PagedAttention).");
    reg.add<Contiguous>("contiguous",
                        "Each request reserves one contiguous region when admitted, sized by "
                        "contiguous_reservation and placed by contiguous_allocator (systems "
                        "before paging; no prefix cache).");
    return reg;
  }();
  return r;
}

std::unique_ptr<KvLayout> make_kv_layout(const std::string& name, const KvLayoutContext& ctx) {
  return kv_layout_registry().make(name, ctx);
}

}  // namespace kvfleet::sim
