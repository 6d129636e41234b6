#pragma once
// Disaggregated prefill and decode (DistServe, Splitwise, vLLM's disaggregated prefilling): the
// component that decides where a prompt runs, holds each request between its prefill and its
// decode stage, and moves its KV over the replicas' links.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "sim/config/params.h"
#include "sim/core/event_queue.h"
#include "sim/core/ids.h"
#include "sim/fleet/router.h"
#include "sim/request/request.h"
#include "sim/request/request_log.h"

namespace kvfleet::sim {

// Disaggregated prefill and decode: requests bound for the prefill pool run their prompt there;
// after the first token their KV crosses the network to a replica of the decode pool, which
// generates the rest. Short prompts with little uncached go straight to the decode pool.
struct DisaggregationConfig {
  bool enabled = false;
  std::string prefill_pool = "prefill";
  std::string decode_pool = "decode";
  double network_GBps = 50;
  double latency_s = 0.0005;
  std::int64_t direct_decode_tokens = 512;
  template <class V>
  void visit(V& v) {
    v.param("enabled", enabled,
            {.desc = "requests bound for prefill_pool (the first pool unless they name one) "
                     "prefill there and decode in decode_pool"});
    v.param("prefill_pool", prefill_pool, {.desc = "the pool that runs prompts"});
    v.param("decode_pool", decode_pool, {.desc = "the pool that generates the rest"});
    v.param("network_GBps", network_GBps,
            {.unit = "GB/s",
             .desc = "link bandwidth of each replica, each way; a link carries one KV transfer "
                     "at a time (others queue)",
             .positive = true});
    v.param("latency_s", latency_s, {.unit = "s", .desc = "fixed cost of a transfer", .min = 0});
    v.param("direct_decode_tokens", direct_decode_tokens,
            {.unit = "tokens",
             .desc = "a prompt whose part not cached on the best decode replica is shorter than "
                     "this goes straight to the decode pool (decode replicas run it whole)",
             .min = 0});
  }
};

// What disaggregation asks of the rest of the fleet (Simulation wires it).
class DisaggregationHost {
 public:
  virtual ~DisaggregationHost() = default;
  virtual std::span<const ReplicaLoad> signals(PoolId pool) = 0;
  // The replica of `pool` its router picks for `spec`.
  virtual LocalId pick(PoolId pool, const RequestSpec& spec,
                       std::span<const ReplicaLoad> loads) = 0;
  // Full blocks of `hashes` cached on replica `local` of `pool`, if it is up (else 0).
  virtual std::int64_t cached_blocks_if_up(PoolId pool, LocalId local,
                                           std::span<const std::uint64_t> hashes) const = 0;
  virtual std::size_t pool_size(PoolId pool) const = 0;
  virtual NodeId node_of(PoolId pool, LocalId local) const = 0;
  virtual bool replica_up(NodeId node) const = 0;
  // The prefill replica `node` may free the KV of `request`: it has left.
  virtual void release_handoff(NodeId node, RequestId request, SimTime now) = 0;
  // The decode stage of `request` starts on replica `node` of `pool`.
  virtual void submit_decode(PoolId pool, NodeId node, RequestId request, RequestSpec&& spec,
                             SimTime now) = 0;
  // The client learns how `request` ended.
  virtual void client_end(RequestId request, SimTime now) = 0;
};

// The KV of a request reached its decode replica (arg: the request).
enum class DisaggregationEvent : std::uint32_t { kTransfer, kCount };

class Disaggregation final : public EventHandlerOf<DisaggregationEvent> {
 public:
  // `block_size` is the decode pool's, `kv_bytes_per_token` its KV per token (all layers, one
  // copy), `replicas` the fleet's.
  Disaggregation(const DisaggregationConfig& c, PoolId prefill_pool, PoolId decode_pool,
                 int block_size, double kv_bytes_per_token, std::size_t replicas, EventQueue& queue,
                 RequestLog& log, DisaggregationHost& host);
  PoolId prefill_pool() const { return prefill_pool_; }
  PoolId decode_pool() const { return decode_pool_; }
  // The decider, for a request bound for the prefill pool: true to prefill it there and decode
  // remotely, false to run it whole on the decode pool (little of its prompt is uncached on the
  // best decode replica).
  bool prefill_remotely(const RequestSpec& spec);
  // Keeps the whole request for its decode stage (the prefill replica gets a one-token copy).
  void hold(std::uint32_t request, const RequestSpec& spec) {
    handoffs_.emplace(request, Handoff{spec, LocalId{}, NodeId{}});
  }
  // Its prefill replica produced the first token: choose the decode replica and send the KV.
  void on_prefilled(std::uint32_t request, SimTime now);
  // The request ended before its decode stage.
  void forget(std::uint32_t request) {
    if (!handoffs_.empty()) handoffs_.erase(request);
  }
  bool pending() const { return !handoffs_.empty(); }

 private:
  void handle(DisaggregationEvent kind, std::uint64_t arg, SimTime now) override;
  const char* handler_name() const override { return "Disaggregation"; }
  struct Handoff {
    RequestSpec spec;      // the whole request, for its decode stage
    LocalId decode_local;  // decode replica chosen when the transfer starts
    NodeId prefill_node;   // holds the KV until the transfer completes
  };
  // When the KV of `bytes` sent from `src` to `dst` from `now` arrives.
  SimTime send(NodeId src, NodeId dst, double bytes, SimTime now);
  void transfer_done(std::uint32_t request, SimTime now);

  const DisaggregationConfig& config_;
  PoolId prefill_pool_, decode_pool_;
  int block_size_;
  double kv_bytes_per_token_;
  EventQueue& queue_;
  RequestLog& log_;
  DisaggregationHost& host_;
  absl::flat_hash_map<std::uint32_t, Handoff> handoffs_;
  std::vector<SimTime> link_out_free_, link_in_free_;  // by replica: when its link is free
  std::vector<std::uint64_t> hash_scratch_;
};

}  // namespace kvfleet::sim
