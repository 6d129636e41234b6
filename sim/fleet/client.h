#pragma once
// Clients between the workload and the gateway (DESIGN.md: Workload -> Client -> Gateway): a
// timeout per attempt, retries with exponential backoff honouring the gateway's retry-after, and
// a retry budget that stops retries from multiplying load when the fleet is overloaded.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include <absl/container/flat_hash_map.h>

#include "sim/config/params.h"
#include "sim/core/event_queue.h"
#include "sim/core/ids.h"
#include "sim/core/rng.h"
#include "sim/request/request.h"
#include "sim/request/request_log.h"

namespace kvfleet::sim {

struct ClientConfig {
  double timeout_s = 0;
  int max_concurrency = 0;
  bool timeout_cancels = true;
  int max_attempts = 1;
  double backoff_initial_s = 0.5;
  double backoff_multiplier = 2;
  double backoff_max_s = 30;
  std::string jitter = "full";
  double retry_budget_ratio = 0;
  double retry_budget_reserve = 10;
  bool retry_rejected = true, retry_timed_out = true, retry_failed = true;

  template <class V>
  void visit(V& v) {
    v.param("timeout_s", timeout_s,
            {.unit = "s",
             .desc = "a client gives up on an attempt whose reply has not finished this long "
                     "after sending it; 0 = waits forever",
             .min = 0,
             .label = "Client timeout"});
    v.param("max_concurrency", max_concurrency,
            {.unit = "requests",
             .desc = "the clients send at most this many requests at once: a request due while "
                     "that many are unanswered waits for one to end, and its latencies start "
                     "when it is sent (vllm bench --max-concurrency, a load generator's "
                     "concurrency); 0 = no cap",
             .min = 0,
             .max = 100000000,
             .label = "Client concurrency"});
    v.param("timeout_cancels", timeout_cancels,
            {.desc = "a timed-out attempt is cancelled at the server (else the server finishes "
                     "it for nobody: wasted work)"});
    v.param("max_attempts", max_attempts,
            {.unit = "attempts",
             .desc = "attempts per request, the first included",
             .min = 1,
             .max = 100,
             .why = "a client that tries more than 100 times is a retry storm of its own"});
    v.param("backoff_initial_s", backoff_initial_s,
            {.unit = "s", .desc = "delay before the first retry (before jitter)", .min = 0});
    v.param("backoff_multiplier", backoff_multiplier,
            {.desc = "each further retry waits this many times longer", .min = 1, .max = 1000});
    v.param("backoff_max_s", backoff_max_s, {.unit = "s", .desc = "cap on the delay", .min = 0});
    v.param("jitter", jitter,
            {.desc = "full = uniform in [0, delay]; equal = delay/2 + uniform in [0, delay/2]; "
                     "none",
             .choices = {"full", "equal", "none"}});
    v.param("retry_budget_ratio", retry_budget_ratio,
            {.unit = "retries per request",
             .desc = "retry budget: each first attempt earns this many retries, each retry "
                     "spends one, none when the balance is below one (Finagle's RetryBudget); "
                     "0 = no budget, every failure may retry up to max_attempts",
             .min = 0});
    v.param("retry_budget_reserve", retry_budget_reserve,
            {.unit = "retries", .desc = "the budget's balance at the start", .min = 0});
    v.param("retry_rejected", retry_rejected,
            {.desc = "retry attempts the gateway rejected (after their retry-after)"});
    v.param("retry_timed_out", retry_timed_out, {.desc = "retry attempts that timed out"});
    v.param("retry_failed", retry_failed,
            {.desc = "retry attempts that failed (their replica failed or was stopped)"});
  }
};

// Finagle-style retry budget: deposits per first attempt, withdrawals per retry. Total retries
// never exceed reserve + ratio × first attempts.
class RetryBudget {
 public:
  RetryBudget(double ratio, double reserve) : ratio_(ratio), balance_(reserve) {}
  bool limited() const { return ratio_ > 0; }
  void on_first_attempt() { balance_ += ratio_; }
  // Takes one retry from the budget if there is one.
  bool try_withdraw() {
    if (!limited()) return true;
    if (balance_ < 1.0 - 1e-9) return false;  // ten deposits of 0.1 make one retry
    balance_ -= 1.0;
    return true;
  }
  double balance() const { return balance_; }

 private:
  double ratio_;
  double balance_;
};

// Delay before retry number `retry` (1 = the first retry), at least `retry_after_s`.
inline double backoff_delay_s(const ClientConfig& c, int retry, double retry_after_s,
                              RngStream& rng) {
  // initial × multiplier^(retry-1), capped; computed so that a huge power gives the cap, never
  // inf × 0 = NaN.
  double d = 0;
  if (c.backoff_initial_s > 0) {
    const double grow = std::pow(c.backoff_multiplier, std::max(0, retry - 1));
    d = grow >= c.backoff_max_s / c.backoff_initial_s ? c.backoff_max_s
                                                      : c.backoff_initial_s * grow;
  }
  d = std::min(d, c.backoff_max_s);
  if (c.jitter == "full")
    d *= rng.uniform();
  else if (c.jitter == "equal")
    d = d / 2 + d / 2 * rng.uniform();
  return std::max(d, retry_after_s);
}

// What the client asks of the rest of the fleet (Simulation wires it to the gateways, the engines
// and the workload).
class ClientHost {
 public:
  virtual ~ClientHost() = default;
  // Sends an attempt (a retry: `attempt` > 0, of the request first sent as `origin`).
  virtual void deliver(RequestSpec& spec, SimTime now, std::uint64_t origin,
                       std::int16_t attempt) = 0;
  // The request is over for the user (the workload may send the conversation's next turn).
  virtual void request_done(const RequestRecord& seen, SimTime now) = 0;
  // Stops attempt `id` on the engine it runs on.
  virtual void cancel_at_replica(NodeId replica, RequestId id, SimTime now) = 0;
  // Attempt of `pool` left while queued at the gateway.
  virtual void forget_at_gateway(PoolId pool) = 0;
  // The gateway's retry-after for a rejected attempt.
  virtual double retry_after_s(PoolId pool) const = 0;
};

// The clients: each attempt's timeout and the user's patience (cancellation), and retries with
// backoff under the retry budget. Owns its events (cancel, timeout, retry) and the attempts'
// content a retry needs.
// A client's events (arg: the request, or a retry's token).
enum class ClientEvent : std::uint32_t {
  kCancel,   // the user leaves (workload patience)
  kTimeout,  // an attempt times out
  kRetry,    // the next attempt is sent
  kCount
};

class Client final : public EventHandlerOf<ClientEvent> {
 public:
  Client(const ClientConfig& c, std::uint64_t seed, EventQueue& queue, RequestLog& log,
         ClientHost& host);
  // Attempt `id` (logged) was sent: counts first attempts for the retry budget.
  void sent(std::uint32_t id) {
    if (log_[id].attempt == 0) budget_.on_first_attempt();
  }
  // Attempt `id` goes to the fleet: its timeout and the user's patience start, and its content
  // is kept for a retry.
  void watch(std::uint32_t id, const RequestSpec& spec, SimTime now);
  // The client learns how attempt `id` ended: it retries or hands the result to the workload.
  void end(std::uint32_t id, SimTime now);
  // Whether the client times out before the result of attempt `r`, which the engine has
  // finished, reaches it (r.finish: the frontend's delivery, after the engine's end). Its
  // timeout then ends it, at the deadline, not the engine's end.
  bool times_out_before_delivery(const RequestRecord& r) const {
    return config_.timeout_s > 0 && r.outcome == Outcome::kOk &&
           r.finish > r.arrival + from_seconds(config_.timeout_s);
  }
  // Retries waiting for their backoff.
  bool pending() const { return !retries_.empty(); }
  // The run stopped early: retries not sent are not retries.
  void abandon();

 private:
  using enum ClientEvent;
  void handle(ClientEvent kind, std::uint64_t arg, SimTime now) override;
  const char* handler_name() const override { return "Client"; }
  struct PendingRetry {
    RequestSpec spec;
    std::uint64_t origin = 0;
    std::int16_t attempt = 0;
    std::uint32_t previous = 0;
  };
  // The client stops waiting for `id` (cancelled or timed out).
  void leave(std::uint32_t id, SimTime now, Outcome as, bool propagate);

  const ClientConfig& config_;
  EventQueue& queue_;
  RequestLog& log_;
  ClientHost& host_;
  RetryBudget budget_;
  RngStream backoff_rng_;
  bool keep_specs_ = false;                                   // retries need each attempt's content
  absl::flat_hash_map<std::uint32_t, RequestSpec> kept_;      // by attempt: for a retry
  absl::flat_hash_map<std::uint64_t, PendingRetry> retries_;  // by token
  std::uint64_t next_retry_ = 0;
};

}  // namespace kvfleet::sim
