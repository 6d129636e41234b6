#include "sim/fleet/disaggregation.h"

#include <algorithm>

#include "sim/engine/block_hash.h"

namespace kvfleet::sim {

Disaggregation::Disaggregation(const DisaggregationConfig& c, PoolId prefill_pool,
                               PoolId decode_pool, int block_size, double kv_bytes_per_token,
                               std::size_t replicas, EventQueue& queue, RequestLog& log,
                               DisaggregationHost& host)
    : config_(c),
      prefill_pool_(prefill_pool),
      decode_pool_(decode_pool),
      block_size_(block_size),
      kv_bytes_per_token_(kv_bytes_per_token),
      queue_(queue),
      log_(log),
      host_(host),
      link_out_free_(replicas, 0),
      link_in_free_(replicas, 0) {}

bool Disaggregation::prefill_remotely(const RequestSpec& spec) {
  std::int64_t cached = 0;
  prompt_block_hashes(spec, block_size_, hash_scratch_);
  if (!hash_scratch_.empty())
    for (std::size_t i = 0; i < host_.pool_size(decode_pool_); ++i)
      cached = std::max(
          cached, host_.cached_blocks_if_up(decode_pool_, LocalId{i}, hash_scratch_) * block_size_);
  return spec.input_tokens - cached >= config_.direct_decode_tokens;
}

void Disaggregation::on_prefilled(std::uint32_t request, SimTime now) {
  RequestRecord& r = log_[request];
  r.prefill_replica = r.replica;
  auto it = handoffs_.find(request);
  const NodeId prefill{static_cast<std::size_t>(r.replica)};
  it->second.prefill_node = prefill;
  const auto sig = host_.signals(decode_pool_);
  if (std::none_of(sig.begin(), sig.end(), [](const ReplicaLoad& x) { return x.available; })) {
    handoffs_.erase(it);  // nowhere to decode
    host_.release_handoff(prefill, RequestId{request}, now);
    r.outcome = Outcome::kFailed;
    r.finish = now;
    if (!r.client_gone) host_.client_end(RequestId{request}, now);
    return;
  }
  // The decode replica is chosen now and the KV pushed to it.
  it->second.decode_local = host_.pick(decode_pool_, it->second.spec, sig);
  const double bytes = static_cast<double>(r.input_tokens) * kv_bytes_per_token_;
  const SimTime arrive =
      send(prefill, host_.node_of(decode_pool_, it->second.decode_local), bytes, now);
  r.kv_transfer_s = static_cast<float>(to_seconds(arrive - now));
  queue_.push(arrive, this, DisaggregationEvent::kTransfer, request);
}

SimTime Disaggregation::send(NodeId src_node, NodeId dst_node, double bytes, SimTime now) {
  const std::size_t src = src_node.value(), dst = dst_node.value();
  // Each replica's link carries one transfer at a time, in each direction: the transfer starts
  // when both the prefill replica's outbound and the decode replica's inbound link are free,
  // takes bytes / bandwidth, and arrives a latency later.
  const SimTime start = std::max({now, link_out_free_[src], link_in_free_[dst]});
  const SimTime sent =
      start + std::max<SimTime>(1, from_seconds(bytes / (config_.network_GBps * 1e9)));
  link_out_free_[src] = link_in_free_[dst] = sent;
  return sent + from_seconds(config_.latency_s);
}

void Disaggregation::handle(DisaggregationEvent kind, std::uint64_t arg, SimTime now) {
  if (kind == DisaggregationEvent::kTransfer) transfer_done(static_cast<std::uint32_t>(arg), now);
}

void Disaggregation::transfer_done(std::uint32_t id, SimTime now) {
  auto it = handoffs_.find(id);
  Handoff h = std::move(it->second);
  handoffs_.erase(it);
  host_.release_handoff(h.prefill_node, RequestId{id}, now);  // the KV has left the prefill replica
  RequestRecord& r = log_[id];
  if (r.client_gone) {  // the client left meanwhile (and was told then)
    r.outcome = r.gone_as;
    r.finish = now;
    return;
  }
  const NodeId node = host_.node_of(decode_pool_, h.decode_local);
  r.pool = static_cast<std::int16_t>(decode_pool_.value());
  if (!host_.replica_up(node)) {  // it went away while the KV was on its way
    r.outcome = Outcome::kFailed;
    r.finish = now;
    host_.client_end(RequestId{id}, now);
    return;
  }
  RequestSpec& spec = h.spec;
  spec.preloaded_tokens = spec.input_tokens;
  spec.input_tokens += 1;  // the first output token is part of the context now
  spec.output_tokens -= 1;
  spec.output_offset = 1;
  spec.handoff = false;
  host_.submit_decode(decode_pool_, node, RequestId{id}, std::move(spec), now);
}

}  // namespace kvfleet::sim
