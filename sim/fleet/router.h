#pragma once
// Routers pick a replica of a pool for each request from the load signals the replicas publish,
// as stale as the gateway's scrape interval (`simulation.scrape_interval_s`). Chosen by
// `router.impl`; one instance per pool. Each policy's decision logic is unit-tested
// (fleet/router_test.cpp).
#include <cstdint>
#include <span>

#include "sim/config/params.h"
#include "sim/workload/request.h"

namespace kvfleet::sim {

// What a router knows of one replica: its last scraped signals.
struct ReplicaLoad {
  std::int32_t running = 0;
  std::int32_t waiting = 0;
  double kv_usage = 0;  // fraction of KV blocks in use
  std::int32_t outstanding() const { return running + waiting; }
};

class Router {
 public:
  virtual ~Router() = default;
  // Index into `loads` (never empty).
  virtual std::size_t pick(const RequestSpec& req, std::span<const ReplicaLoad> loads) = 0;
};

// Built with a seed for the router's own random stream.
using RouterRegistry = config::Registry<Router, std::uint64_t>;
const RouterRegistry& router_registry();

}  // namespace kvfleet::sim
