#pragma once
// Routers pick a replica of a pool for each request from the load signals the replicas publish,
// as stale as the gateway's scrape interval (`simulation.scrape_interval_s`). Chosen by
// `router.impl`; one instance per pool. Each policy's decision logic is unit-tested
// (fleet/router_test.cpp).
#include <cstdint>
#include <span>

#include "sim/config/params.h"
#include "sim/request/request.h"

namespace kvfleet::sim {

// What a router knows of one replica: its last scraped signals.
struct ReplicaLoad {
  std::int32_t running = 0;
  std::int32_t waiting = 0;
  double kv_usage = 0;    // fraction of KV blocks in use
  bool available = true;  // accepts new requests (not starting, draining, failed or off)
  std::int32_t outstanding() const { return running + waiting; }
};

// The replicas' true prefix caches, for routers that may look at them (an exact index, as a
// gateway fed by KV-cache events from the engines keeps).
class CacheProbe {
 public:
  virtual ~CacheProbe() = default;
  virtual int block_size() const = 0;
  // How many of `hashes` (leading full-block hashes of a prompt) replica `i` holds in its cache.
  virtual std::int64_t cached_blocks(std::size_t i,
                                     std::span<const std::uint64_t> hashes) const = 0;
};

class Router {
 public:
  virtual ~Router() = default;
  // Index into `loads` of an available replica; the caller guarantees that one is.
  virtual std::size_t pick(const RequestSpec& req, std::span<const ReplicaLoad> loads) = 0;
  // Gives the router the replicas' true caches (called once, before any pick).
  virtual void attach(const CacheProbe*) {}
  // The block hashes of the prompt of the last pick, if the router computed them (empty
  // otherwise), and the block size they were computed at.
  virtual std::span<const std::uint64_t> prompt_hashes(int& block_size) const {
    block_size = 0;
    return {};
  }
};

// Built with a seed for the router's own random stream.
using RouterRegistry = config::Registry<Router, std::uint64_t>;
const RouterRegistry& router_registry();

}  // namespace kvfleet::sim
