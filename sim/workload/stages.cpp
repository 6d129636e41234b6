#include "sim/workload/stages.h"

#include <algorithm>
#include <cmath>

namespace kvfleet::sim {

namespace {
std::int64_t stage_requests(const LoadStage& s) {
  return static_cast<std::int64_t>(std::floor(s.rate_per_s * s.duration_s));
}
}  // namespace

void StagesConfig::check(config::Reader& r) const {
  std::int64_t total = 0;
  for (std::size_t i = 0; i < stages.size(); ++i) {
    const std::int64_t n = stage_requests(stages[i]);
    if (n > 100'000'000)
      r.fail_key("stages", "stage " + std::to_string(i) + " would send " + std::to_string(n) +
                               " requests (more than 100,000,000)");
    total += n;
  }
  if (total > 1'000'000'000)
    r.fail_key("stages", "the stages would send more than 1,000,000,000 requests");
}

std::int64_t StagesConfig::total_requests() const {
  std::int64_t n = 0;
  for (const auto& s : stages) n += stage_requests(s);
  return n;
}

std::int64_t poisson_count(RngStream& rng, double mean) {
  if (mean <= 0) return 0;
  if (mean < 10) {
    const double limit = std::exp(-mean);
    std::int64_t k = 0;
    for (double p = rng.uniform_pos(); p > limit; p *= rng.uniform_pos()) ++k;
    return k;
  }
  // PTRS (W. Hörmann, "The transformed rejection method for generating Poisson random
  // variables", Insurance: Mathematics and Economics 12, 1993).
  const double slam = std::sqrt(mean), loglam = std::log(mean);
  const double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
  const double inv_alpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2);
  for (;;) {
    const double u = rng.uniform() - 0.5, v = rng.uniform_pos();
    const double us = 0.5 - std::fabs(u);
    const double k = std::floor((2 * a / us + b) * u + mean + 0.43);
    if (us >= 0.07 && v <= vr) return static_cast<std::int64_t>(k);
    if (k < 0 || (us < 0.013 && v > us)) continue;
    if (std::log(v) + std::log(inv_alpha) - std::log(a / (us * us) + b) <=
        -mean + k * loglam - std::lgamma(k + 1))
      return static_cast<std::int64_t>(k);
  }
}

StagedArrivals::StagedArrivals(const StagesConfig& c, std::uint64_t seed)
    : cfg_(c), rng_(seed, "workload.stages") {}

double StagedArrivals::nominal_rate_per_s() const {
  double n = 0, t = 0;
  for (const auto& s : cfg_.stages) n += stage_requests(s), t += s.duration_s;
  return t > 0 ? n / t : 0;
}

// `count` arrivals over [from, from + span], the gaps exponential and scaled to end exactly at
// from + span.
static void spread(RngStream& rng, std::int64_t count, double from, double span,
                   std::vector<double>& out) {
  std::vector<double> gaps(static_cast<std::size_t>(count));
  double sum = 0;
  for (auto& g : gaps) sum += (g = rng.exponential(1.0));
  double t = 0;
  for (const double g : gaps) {
    t += g;
    out.push_back(from + span * (sum > 0 ? t / sum : 1.0));
  }
}

void StagedArrivals::plan(int stage, SimTime start) {
  stage_ = stage;
  times_.clear();
  const LoadStage& s = cfg_.stages[static_cast<std::size_t>(stage)];
  const std::int64_t n = stage_requests(s);
  const double t0 = to_seconds(start) + cfg_.lead_in_s;
  std::vector<double> at;
  at.reserve(static_cast<std::size_t>(n));
  if (cfg_.type == "constant") {
    spread(rng_, n, t0, s.duration_s, at);
  } else {
    for (double second = 0; static_cast<std::int64_t>(at.size()) < n; ++second) {
      const std::int64_t k = poisson_count(rng_, s.rate_per_s);
      if (k > 0) spread(rng_, k, t0 + second, 1.0, at);
    }
    at.resize(static_cast<std::size_t>(n));
  }
  for (const double x : at) times_.push_back(std::max(start, from_seconds(x)));
  outstanding_ = n;
}

bool StagedArrivals::next(SimTime& arrival, int& stage, bool& done) {
  done = false;
  const int count = static_cast<int>(cfg_.stages.size());
  while (times_.empty()) {
    // The current stage's requests are all sent: the next stage starts once it has drained
    // (or, without draining, when its sending window has passed).
    const int next_stage = stage_ + 1;
    if (next_stage >= count) {
      done = outstanding_ <= 0 || !cfg_.drain;
      return false;
    }
    if (stage_ >= 0 && cfg_.drain && outstanding_ > 0) return false;
    SimTime start = 0;
    if (stage_ >= 0)  // after the drain, or (not draining) after the previous window
      start = (cfg_.drain ? drained_at_ : last_arrival_) + from_seconds(cfg_.interval_s);
    plan(next_stage, start);
  }
  arrival = last_arrival_ = std::max(last_arrival_, times_.front());
  times_.pop_front();
  stage = stage_;
  return true;
}

void StagedArrivals::ended(int stage, SimTime now) {
  if (stage != stage_) return;
  if (--outstanding_ <= 0 && times_.empty()) drained_at_ = now;
}

}  // namespace kvfleet::sim
