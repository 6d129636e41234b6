#pragma once
// Routers pick a replica for each request from the load signals replicas publish. Chosen by
// `router.impl`; the fleet issue adds cache-aware and bounded-load policies behind the same
// interface.
#include <cstdint>
#include <span>

#include "sim/config/params.h"
#include "sim/workload/request.h"

namespace kvfleet::sim {

class Replica;

class Router {
 public:
  virtual ~Router() = default;
  // Index into `replicas` (never empty).
  virtual std::size_t pick(const RequestSpec& req, std::span<Replica* const> replicas) = 0;
};

using RouterRegistry = config::Registry<Router, std::uint64_t>;
const RouterRegistry& router_registry();

}  // namespace kvfleet::sim
