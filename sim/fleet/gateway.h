#pragma once
// The gateway in front of each pool (DESIGN.md: Client -> Gateway -> Router -> Replica): admission
// control on tokens and KV demand rather than request counts, a saturation detector on the
// replicas' scraped signals, priority bands with shedding of the least urgent when saturated, and a
// bounded queue whose overflow is rejected with a retry-after (HTTP 429).
#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <span>
#include <string>

#include <absl/container/flat_hash_map.h>

#include "sim/config/params.h"
#include "sim/fleet/router.h"
#include "sim/request/request.h"
#include "sim/request/request_log.h"

namespace kvfleet::sim {

struct AdmissionConfig {
  bool enabled = false;
  double queue_threshold = 8;
  double kv_threshold = 0.9;
  double saturation_limit = 1.0;
  double kv_demand_limit = 0;
  std::int64_t max_prefill_tokens = 0;
  int shed_priority = 1;
  int max_queue = 1000;
  double max_queue_wait_s = 0;
  double retry_after_s = 1;

  template <class V>
  void visit(V& v) {
    v.param("enabled", enabled,
            {.desc = "admission control at this pool's gateway (off: every request goes straight "
                     "to a replica that takes requests)"});
    v.param("queue_threshold", queue_threshold,
            {.unit = "requests",
             .desc = "saturation detector: waiting requests at a replica that count as 1",
             .positive = true});
    v.param("kv_threshold", kv_threshold,
            {.unit = "fraction",
             .desc = "saturation detector: KV usage that counts as 1; a replica's saturation is "
                     "min(1, max(waiting / queue_threshold, KV usage / kv_threshold)), the pool's "
                     "the mean over replicas taking requests (the share of them saturated)",
             .positive = true});
    v.param("saturation_limit", saturation_limit,
            {.desc = "the pool is saturated at or above this saturation (1: every replica "
                     "saturated): nothing is admitted and low-priority requests are shed",
             .max = 1,
             .positive = true});
    v.param("kv_demand_limit", kv_demand_limit,
            {.unit = "fraction",
             .desc = "admit while the KV demand in flight (prompt + max output tokens of "
                     "admitted, unfinished requests) stays within this × the KV capacity of the "
                     "replicas taking requests; 0 = no limit",
             .min = 0});
    v.param("max_prefill_tokens", max_prefill_tokens,
            {.unit = "tokens per replica",
             .desc = "admit while the prompt tokens of admitted requests still waiting for their "
                     "first token stay within this × replicas taking requests (limits the "
                     "re-prefill wave after a failure); 0 = no limit",
             .min = 0});
    v.param("shed_priority", shed_priority,
            {.desc = "when saturated, requests with priority >= this are rejected at once (0 is "
                     "the most urgent); more urgent ones wait in the queue"});
    v.param("max_queue", max_queue,
            {.unit = "requests",
             .desc = "gateway queue capacity; a request that finds it full is rejected",
             .min = 0});
    v.param("max_queue_wait_s", max_queue_wait_s,
            {.unit = "s",
             .desc = "a request waiting at the gateway longer is rejected; 0 = no limit "
                     "(checked at each scrape and completion)",
             .min = 0});
    v.param("retry_after_s", retry_after_s,
            {.unit = "s", .desc = "retry-after a rejection tells clients", .min = 0});
  }
};

// Fleet-wide gateway settings.
struct GatewayConfig {
  std::int64_t long_prompt_tokens = 0;
  std::string long_prompt_pool;
  template <class V>
  void visit(V& v) {
    v.param("long_prompt_tokens", long_prompt_tokens,
            {.unit = "tokens",
             .desc = "prompts at least this long go to long_prompt_pool (separate pools for "
                     "long documents so they cannot starve short questions); 0 = off",
             .min = 0});
    v.param("long_prompt_pool", long_prompt_pool, {.desc = "the pool for long prompts"});
  }
};

// One pool's gateway: admission decisions, the queue (with the content of each queued request,
// kept until it is dispatched) and its counters. Requests are ids into the request log; the
// simulation routes what the gateway lets through.
class PoolGateway {
 public:
  PoolGateway(const AdmissionConfig& c, double kv_tokens_per_replica)
      : c_(c), kv_tokens_per_replica_(kv_tokens_per_replica) {}
  const AdmissionConfig& config() const { return c_; }

  // Mean over replicas taking requests of min(1, max(waiting / queue threshold, KV usage / KV
  // threshold)); infinite when none takes requests. Capped at 1 per replica: one replica's long
  // queue must not mark the pool saturated while another has room (it starved idle replicas).
  double saturation(std::span<const ReplicaLoad> loads) const {
    double sum = 0;
    int n = 0;
    for (const auto& x : loads) {
      if (!x.available) continue;
      sum += std::min(1.0, std::max(x.waiting / c_.queue_threshold, x.kv_usage / c_.kv_threshold));
      ++n;
    }
    return n ? sum / n : std::numeric_limits<double>::infinity();
  }
  bool saturated(std::span<const ReplicaLoad> loads) const {
    return saturation(loads) >= c_.saturation_limit;
  }

  // Whether a request of `prompt` tokens and `total` (prompt + max output) may go in now.
  bool admits(std::int64_t prompt, std::int64_t total, std::span<const ReplicaLoad> loads) const {
    int n = 0;
    for (const auto& x : loads) n += x.available;
    if (n == 0) return false;
    if (!c_.enabled) return true;
    if (saturated(loads)) return false;
    // A limit never blocks the only request in flight, or nothing could ever run.
    if (c_.kv_demand_limit > 0 && inflight_tokens_ > 0 &&
        static_cast<double>(inflight_tokens_ + total) >
            c_.kv_demand_limit * kv_tokens_per_replica_ * n)
      return false;
    if (c_.max_prefill_tokens > 0 && pending_prefill_ > 0 &&
        pending_prefill_ + prompt > c_.max_prefill_tokens * n)
      return false;
    return true;
  }

  enum class Verdict { kDispatch, kQueue, kReject };
  // A request arrives: dispatch it now, queue it (the gateway keeps `spec` until it is
  // dispatched), or reject it (reason in `why`).
  Verdict arrive(std::uint32_t id, RequestSpec& spec, std::int64_t prompt, std::int64_t total,
                 std::span<const ReplicaLoad> loads, RejectReason& why) {
    const std::int32_t priority = spec.priority;
    // Nothing more urgent or as urgent may be waiting: FIFO within a band.
    const bool ahead = !queue_.empty() && queue_.begin()->first <= priority;
    if (!ahead && admits(prompt, total, loads)) return Verdict::kDispatch;
    if (c_.enabled && priority >= c_.shed_priority && saturated(loads)) {
      why = RejectReason::kShed;
      ++rejected_total_;
      return Verdict::kReject;
    }
    if (c_.enabled && queued_ >= c_.max_queue) {
      why = RejectReason::kQueueFull;
      ++rejected_total_;
      return Verdict::kReject;
    }
    queue_[priority].push_back(id);
    ++queued_;
    ++queued_total_;
    parked_.emplace(id, std::move(spec));
    return Verdict::kQueue;
  }
  // The most urgent queued request (FIFO within a band), if any.
  bool front(std::uint32_t& id) const {
    if (queue_.empty()) return false;
    id = queue_.begin()->second.front();
    return true;
  }
  // The front request goes to a replica: its content, out of the queue.
  RequestSpec dispatch_front() {
    const std::uint32_t id = pop_front(true);
    auto it = parked_.find(id);
    RequestSpec spec = std::move(it->second);
    parked_.erase(it);
    return spec;
  }
  // The front request waited longer than max_queue_wait_s: rejected.
  void reject_front() {
    parked_.erase(pop_front(true));
    ++rejected_total_;
  }
  // The front request left earlier (forget()): its entry goes.
  void drop_front() { parked_.erase(pop_front(false)); }
  // A queued request left (its client gave up): it no longer counts against max_queue; its entry
  // is dropped when it reaches the front.
  void forget() { --queued_; }
  // Requests waiting at the gateway.
  int queued() const { return queued_; }
  bool empty() const { return queue_.empty(); }

  // Accounting of admitted requests.
  void on_dispatch(std::int64_t prompt, std::int64_t total) {
    inflight_tokens_ += total;
    pending_prefill_ += prompt;
  }
  void on_first_token(std::int64_t prompt) { pending_prefill_ -= prompt; }
  void on_end(std::int64_t prompt, std::int64_t total, bool had_first_token) {
    inflight_tokens_ -= total;
    if (!had_first_token) pending_prefill_ -= prompt;
  }
  // Requests queued here, and rejected here (shed, queue full, waited too long), so far.
  std::int64_t queued_total() const { return queued_total_; }
  std::int64_t rejected_total() const { return rejected_total_; }

 private:
  // Removes the front entry and returns its id; `live` unless it left the queue earlier.
  std::uint32_t pop_front(bool live) {
    auto it = queue_.begin();
    const std::uint32_t id = it->second.front();
    it->second.pop_front();
    if (it->second.empty()) queue_.erase(it);
    if (live) --queued_;
    return id;
  }

  AdmissionConfig c_;
  double kv_tokens_per_replica_;
  std::map<std::int32_t, std::deque<std::uint32_t>> queue_;  // by priority
  int queued_ = 0;
  std::int64_t inflight_tokens_ = 0, pending_prefill_ = 0;
  std::int64_t queued_total_ = 0, rejected_total_ = 0;
  absl::flat_hash_map<std::uint32_t, RequestSpec> parked_;  // content of queued requests, by id
};

}  // namespace kvfleet::sim
