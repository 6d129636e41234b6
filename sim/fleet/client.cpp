#include "sim/fleet/client.h"

namespace kvfleet::sim {

Client::Client(const ClientConfig& c, std::uint64_t seed, EventQueue& queue, RequestLog& log,
               ClientHost& host)
    : config_(c),
      queue_(queue),
      log_(log),
      host_(host),
      budget_(c.retry_budget_ratio, c.retry_budget_reserve),
      backoff_rng_(seed, "client.backoff"),
      keep_specs_(c.max_attempts > 1) {}

void Client::watch(std::uint32_t id, const RequestSpec& spec, SimTime now) {
  if (spec.cancel_at != kTimeNever) {
    log_[id].cancel_propagates = spec.cancel_propagates;
    // A retry keeps the user's patience, counted from the first attempt.
    queue_.push(std::max(spec.cancel_at, now), this, kCancel, id);
  }
  if (config_.timeout_s > 0) queue_.push(now + from_seconds(config_.timeout_s), this, kTimeout, id);
  if (keep_specs_) kept_.emplace(id, spec);
}

void Client::handle(ClientEvent kind, std::uint64_t arg, SimTime now) {
  switch (kind) {
    case kCancel: {
      const RequestRecord& r = log_[arg];
      leave(static_cast<std::uint32_t>(arg), now, Outcome::kCancelled, r.cancel_propagates);
      return;
    }
    case kTimeout:
      leave(static_cast<std::uint32_t>(arg), now, Outcome::kTimedOut, config_.timeout_cancels);
      return;
    case kRetry: {
      auto it = retries_.find(arg);
      PendingRetry pr = std::move(it->second);
      retries_.erase(it);
      host_.deliver(pr.spec, now, pr.origin, pr.attempt);
      return;
    }
    case kCount:
      return;
  }
}

void Client::leave(std::uint32_t id, SimTime now, Outcome as, bool propagate) {
  RequestRecord& r = log_[id];
  if (r.client_gone) return;  // already over
  if (r.outcome != Outcome::kPending) {
    // The engine finished, but its last tokens reach the client only at r.finish (the
    // frontend's delivery), after the client's timeout: it was not told of the end (see
    // times_out_before_delivery), and leaves without them, now (its timeout, or its patience
    // before that).
    if (!(times_out_before_delivery(r) && r.finish > now)) return;
    r.client_gone = true;
    r.gone_as = as;
    r.outcome = as;
    r.finish = now;
    end(id, now);
    return;
  }
  r.client_gone = true;
  r.gone_as = as;
  if (r.replica < 0) {
    // Still at the gateway: it never reaches a replica (the queue drops it lazily).
    r.outcome = as;
    r.finish = now;
    host_.forget_at_gateway(PoolId{static_cast<std::size_t>(r.pool)});
  } else if (propagate) {
    host_.cancel_at_replica(NodeId{static_cast<std::size_t>(r.replica)}, RequestId{id}, now);
  }
  // Else the engine goes on and the work is wasted when it ends.
  end(id, now);
}

void Client::end(std::uint32_t id, SimTime now) {
  RequestRecord& r = log_[id];
  const Outcome o = r.client_gone ? r.gone_as : r.outcome;
  const ClientConfig& c = config_;
  bool retry = false;
  if (r.attempt + 1 < c.max_attempts) {
    retry = (o == Outcome::kRejected && c.retry_rejected && retryable(r.reject_reason)) ||
            (o == Outcome::kTimedOut && c.retry_timed_out) ||
            (o == Outcome::kFailed && c.retry_failed);
    retry = retry && budget_.try_withdraw();
  }
  auto kept = kept_.find(id);
  if (retry && kept != kept_.end()) {
    r.retried = true;
    const double after =
        o == Outcome::kRejected ? host_.retry_after_s(PoolId{static_cast<std::size_t>(r.pool)}) : 0;
    const double delay = backoff_delay_s(c, r.attempt + 1, after, backoff_rng_);
    PendingRetry pr{std::move(kept->second), r.origin, static_cast<std::int16_t>(r.attempt + 1),
                    id};
    kept_.erase(kept);
    const std::uint64_t token = next_retry_++;
    retries_.emplace(token, std::move(pr));
    queue_.push(now + std::max<SimTime>(0, from_seconds(delay)), this, kRetry, token);
    return;
  }
  if (kept != kept_.end()) kept_.erase(kept);
  RequestRecord seen = r;
  seen.outcome = o;
  if (seen.finish < 0) seen.finish = now;
  host_.request_done(seen, now);
}

void Client::abandon() {
  for (const auto& [token, pr] : retries_) log_[pr.previous].retried = false;
}

}  // namespace kvfleet::sim
