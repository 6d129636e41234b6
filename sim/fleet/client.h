#pragma once
// Clients between the workload and the gateway (DESIGN.md: Workload -> Client -> Gateway): a
// timeout per attempt, retries with exponential backoff honouring the gateway's retry-after, and
// a retry budget that stops retries from multiplying load when the fleet is overloaded.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "sim/config/params.h"
#include "sim/core/rng.h"

namespace kvfleet::sim {

struct ClientConfig {
  double timeout_s = 0;
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
             .min = 0});
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

}  // namespace kvfleet::sim
