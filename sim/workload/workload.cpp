#include "sim/workload/workload.h"

#include <algorithm>

#include "sim/core/rng.h"
#include "sim/workload/distributions.h"
#include "sim/workload/trace.h"

namespace kvfleet::sim {

OpenLoopWorkload::OpenLoopWorkload(const StagesConfig& stages, std::uint64_t seed) {
  if (stages.enabled()) staged_.emplace(stages, seed);
}

bool OpenLoopWorkload::fill() {
  next_ = RequestSpec{};
  if (staged_) {
    SimTime t = 0;
    int stage = -1;
    if (!staged_->next(t, stage, stages_done_)) return false;
    if (stage != stage_) stage_ = stage, index_ = 0;
    if (!make(next_, stage, index_++)) return false;
    next_.arrival = t;
    next_.stage = static_cast<std::int16_t>(stage);
    return true;
  }
  double t_s = 0;
  if (!next_arrival_s(t_s) || !make(next_, -1, index_++)) return false;
  next_.arrival = from_seconds(t_s);
  return true;
}

bool OpenLoopWorkload::peek(SimTime& arrival) {
  // While a stage drains nothing is known; a completion may start the next stage, so ask again.
  if (!primed_ || (!has_ && staged_ && !stages_done_)) {
    has_ = fill();
    primed_ = true;
  }
  if (has_) arrival = next_.arrival;
  return has_;
}

RequestSpec OpenLoopWorkload::pop() {
  primed_ = false;
  return std::move(next_);
}

bool OpenLoopWorkload::finished() {
  SimTime t;
  if (peek(t)) return false;
  return !staged_ || stages_done_;
}

void OpenLoopWorkload::on_request_end(const RequestRecord& r, SimTime now) {
  // The client has the whole reply when the stream closes (finish), which the API server may
  // deliver after the engine let go of the request.
  if (staged_ && r.stage >= 0) staged_->ended(r.stage, std::max(now, r.finish));
}

namespace {

// Independent requests from an arrival process and two length distributions, spread over
// tenants, optionally behind a system prompt each tenant shares across its requests.
class Synthetic final : public OpenLoopWorkload {
 public:
  struct Config {
    std::int64_t num_requests = 1000;
    double duration_s = 0;
    config::ImplSpec arrival;
    config::ImplSpec input_tokens;
    config::ImplSpec output_tokens;
    int tenants = 1;
    std::int64_t shared_prefix_tokens = 0;
    std::vector<double> priority_weights;
    StagesConfig load;
    template <class V>
    void visit(V& v) {
      v.param("num_requests", num_requests,
              {.unit = "requests",
               .desc = "stop after this many arrivals; 0 = no limit",
               .min = 0,
               .label = "Requests"});
      v.param("duration_s", duration_s,
              {.unit = "s", .desc = "stop arrivals after this time; 0 = no limit", .min = 0});
      v.impl("arrival", arrival, arrival_registry(), {.desc = "arrival process"});
      v.impl("input_tokens", input_tokens, length_dist_registry(),
             {.desc = "prompt length distribution (after the shared prefix)", .required = true});
      v.impl("output_tokens", output_tokens, length_dist_registry(),
             {.desc = "output length distribution", .required = true});
      v.param(
          "tenants", tenants,
          {.unit = "tenants", .desc = "requests are spread uniformly over tenants 1..N", .min = 1});
      v.param("shared_prefix_tokens", shared_prefix_tokens,
              {.unit = "tokens",
               .desc = "a system prompt before every prompt, shared by all requests of a tenant "
                       "(owned by it); 0 = none",
               .min = 0});
      v.param("priority_weights", priority_weights,
              {.desc = "relative frequency of priority 0, 1, ... (0 is the most urgent); "
                       "empty = all priority 0",
               .min = 0,
               .max = 1e6,
               .why = "relative weights; larger values would overflow their sum"});
      v.param("load", load,
              {.desc = "load stages (inference-perf's): when given, they time the arrivals "
                       "instead of arrival, num_requests and duration_s"});
    }
    void check(config::Reader& r) const {
      if (num_requests == 0 && duration_s == 0 && !load.enabled())
        r.fail_key("num_requests",
                   "set num_requests or duration_s (or both) so that arrivals end, or load.stages");
      double w = 0;
      for (double x : priority_weights) w += x;
      if (!priority_weights.empty() && w <= 0)
        r.fail_key("priority_weights", "at least one weight must be > 0");
    }
  };

  Synthetic(const Config& c, std::uint64_t seed, const std::vector<std::string>&)
      : OpenLoopWorkload(c.load, seed),
        cfg_(c),
        arrival_(arrival_registry().make(c.arrival)),
        input_(length_dist_registry().make(c.input_tokens)),
        output_(length_dist_registry().make(c.output_tokens)),
        rng_arrival_(seed, "workload.arrival"),
        rng_input_(seed, "workload.input_tokens"),
        rng_output_(seed, "workload.output_tokens"),
        rng_tenant_(seed, "workload.tenant"),
        rng_priority_(seed, "workload.priority") {}

  bool next_arrival_s(double& t_s) override {
    if (cfg_.num_requests > 0 && count_ >= cfg_.num_requests) return false;
    // The first request arrives after one gap, as in a stationary renewal process started at 0.
    t_s_ += arrival_->next_gap_s(rng_arrival_);
    if (cfg_.duration_s > 0 && t_s_ > cfg_.duration_s) return false;
    t_s = t_s_;
    return true;
  }
  bool make(RequestSpec& out, int, std::int64_t) override {
    const std::int32_t user = input_->sample(rng_input_);
    out.output_tokens = output_->sample(rng_output_);
    out.tenant = draw_tenant(cfg_.tenants, rng_tenant_);
    if (cfg_.shared_prefix_tokens > 0) {
      // Content ids are stable per tenant, so every request of a tenant shares the prefix.
      out.segments.push_back({stable_hash("system-prompt") + out.tenant,
                              static_cast<std::int32_t>(cfg_.shared_prefix_tokens), out.tenant});
    }
    out.segments.push_back({0, user, out.tenant});
    out.input_tokens = static_cast<std::int32_t>(cfg_.shared_prefix_tokens) + user;
    out.priority = draw_weighted(cfg_.priority_weights, rng_priority_);
    ++count_;
    return true;
  }
  double nominal_rate_per_s() const override {
    return staged() ? staged_rate_per_s() : arrival_->rate_per_s();
  }

 private:
  Config cfg_;
  std::unique_ptr<ArrivalProcess> arrival_;
  std::unique_ptr<LengthDist> input_, output_;
  RngStream rng_arrival_, rng_input_, rng_output_, rng_tenant_, rng_priority_;
  double t_s_ = 0;
  std::int64_t count_ = 0;
};

// Replay of a recorded trace: arrival times and token counts as recorded.
class Trace final : public StreamWorkload {
 public:
  struct Config {
    std::string format = "vidur";
    std::string path;
    double time_scale = 1.0;
    std::int64_t start_row = 0;
    std::int64_t max_requests = 0;
    std::int64_t hash_block_tokens = 512;
    template <class V>
    void visit(V& v) {
      v.param("format", format, {.desc = "trace file format", .choices = kTraceFormats});
      v.param("path", path, {.desc = "trace file", .path = true, .required = true});
      v.param("time_scale", time_scale,
              {.desc = "multiplies recorded gaps: 0.5 replays twice as fast", .positive = true});
      v.param("start_row", start_row,
              {.unit = "rows", .desc = "skip this many requests first", .min = 0});
      v.param("max_requests", max_requests,
              {.unit = "requests", .desc = "replay at most this many; 0 = all", .min = 0});
      v.param("hash_block_tokens", hash_block_tokens,
              {.unit = "tokens", .desc = "tokens named by one Mooncake hash id", .min = 1});
    }
  };

  Trace(const Config& c, std::uint64_t, const std::vector<std::string>&)
      : rows_(read_trace(c.format, c.path)),
        block_tokens_(static_cast<std::int32_t>(c.hash_block_tokens)) {
    std::size_t begin = std::min<std::size_t>(c.start_row, rows_.size());
    std::size_t end = rows_.size();
    if (c.max_requests > 0) end = std::min<std::size_t>(end, begin + c.max_requests);
    rows_.erase(rows_.begin() + end, rows_.end());
    rows_.erase(rows_.begin(), rows_.begin() + begin);
    if (rows_.empty()) throw InputError(c.path, "start_row", "no rows left to replay");
    const double t0 = rows_.front().arrival_s;
    for (auto& r : rows_) r.arrival_s = (r.arrival_s - t0) * c.time_scale;
    const double span = rows_.back().arrival_s;
    rate_ = span > 0 ? static_cast<double>(rows_.size() - 1) / span : 0;
  }
  bool generate(RequestSpec& out) override {
    if (i_ >= rows_.size()) return false;
    const auto& r = rows_[i_++];
    out = RequestSpec{};
    out.arrival = from_seconds(r.arrival_s);
    // A recorded request with no output still gets one token: the engine always samples one.
    out.input_tokens = std::max<std::int32_t>(1, r.input_tokens);
    out.output_tokens = std::max<std::int32_t>(1, r.output_tokens);
    out.tenant = 1;
    // Mooncake hash ids name 512-token blocks of public content; equal ids, equal content.
    std::int32_t left = out.input_tokens;
    for (std::uint32_t id : r.hash_ids) {
      if (left <= 0) break;
      const std::int32_t n = std::min(left, block_tokens_);
      out.segments.push_back({kHashIdBase + id, n, 0});
      left -= n;
    }
    if (left > 0) out.segments.push_back({0, left, out.tenant});
    return true;
  }
  double nominal_rate_per_s() const override { return rate_; }

 private:
  static constexpr std::uint64_t kHashIdBase = 0x4D6F6F6E00000000ull;  // "Moon": away from 0
  std::vector<TraceRow> rows_;
  std::int32_t block_tokens_;
  std::size_t i_ = 0;
  double rate_ = 0;
};

}  // namespace

void register_conversations(WorkloadRegistry& r);  // conversations.cpp
void register_shared_prefix(WorkloadRegistry& r);  // shared_prefix.cpp

const WorkloadRegistry& workload_registry() {
  static const WorkloadRegistry reg = [] {
    WorkloadRegistry r("workload", "synthetic");
    r.add<Synthetic>(
        "synthetic",
        "Independent requests: an arrival process and input/output length distributions.");
    r.add<Trace>("trace",
                 "Replay of a recorded trace (Azure, Vidur, vLLM requests.jsonl, Mooncake).");
    register_conversations(r);
    register_shared_prefix(r);
    return r;
  }();
  return reg;
}

}  // namespace kvfleet::sim
