#pragma once
// Strong ids: a pool, a replica (node) of the fleet, a replica's place within its pool, a
// request's slot in an engine and a request are different kinds of number, and a function taking
// two of them cannot be called with them swapped. Each is its integer and nothing more (no
// arithmetic); `value()` gives the integer where an index or an output column needs it.
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace kvfleet::sim {

template <class Tag, class Rep>
class StrongId {
 public:
  using rep = Rep;
  constexpr StrongId() = default;
  constexpr explicit StrongId(Rep v) : v_(v) {}
  constexpr Rep value() const { return v_; }
  friend constexpr auto operator<=>(StrongId, StrongId) = default;
  friend std::string to_string(StrongId id) { return std::to_string(id.v_); }

 private:
  Rep v_{};
};

// A pool of the fleet (its index in the scenario's `pools`).
using PoolId = StrongId<struct PoolIdTag, std::size_t>;
// A replica of the fleet (its index over every pool's replicas together: a data-parallel
// replica's ranks are consecutive nodes).
using NodeId = StrongId<struct NodeIdTag, std::size_t>;
// A replica's place within its pool (0 to the pool's replicas - 1).
using LocalId = StrongId<struct LocalIdTag, std::size_t>;
// A request's place in one replica's engine (its index into the replica's sequences and block
// tables), reused once the request has left.
using SlotId = StrongId<struct SlotIdTag, std::uint32_t>;
// A request attempt (its row in the request log).
using RequestId = StrongId<struct RequestIdTag, std::uint32_t>;

}  // namespace kvfleet::sim

template <class Tag, class Rep>
struct std::hash<kvfleet::sim::StrongId<Tag, Rep>> {
  std::size_t operator()(kvfleet::sim::StrongId<Tag, Rep> id) const noexcept {
    return std::hash<Rep>{}(id.value());
  }
};
