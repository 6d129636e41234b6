#include "sim/workload/workload.h"

#include "sim/core/rng.h"
#include "sim/workload/distributions.h"
#include "sim/workload/trace.h"

namespace kvfleet::sim {
namespace {

// Independent requests from an arrival process and two length distributions.
class Synthetic final : public Workload {
 public:
  struct Config {
    std::int64_t num_requests = 1000;
    double duration_s = 0;
    config::ImplSpec arrival;
    config::ImplSpec input_tokens;
    config::ImplSpec output_tokens;
    template <class V>
    void visit(V& v) {
      v.param(
          "num_requests", num_requests,
          {.unit = "requests", .desc = "stop after this many arrivals; 0 = no limit", .min = 0});
      v.param("duration_s", duration_s,
              {.unit = "s", .desc = "stop arrivals after this time; 0 = no limit", .min = 0});
      v.impl("arrival", arrival, arrival_registry(), {.desc = "arrival process"});
      v.impl("input_tokens", input_tokens, length_dist_registry(),
             {.desc = "prompt length distribution", .required = true});
      v.impl("output_tokens", output_tokens, length_dist_registry(),
             {.desc = "output length distribution", .required = true});
    }
    void check(config::Reader& r) const {
      if (num_requests == 0 && duration_s == 0)
        r.fail_key("num_requests", "set num_requests or duration_s (or both) so that arrivals end");
    }
  };

  Synthetic(const Config& c, std::uint64_t seed)
      : cfg_(c),
        arrival_(arrival_registry().make(c.arrival)),
        input_(length_dist_registry().make(c.input_tokens)),
        output_(length_dist_registry().make(c.output_tokens)),
        rng_arrival_(seed, "workload.arrival"),
        rng_input_(seed, "workload.input_tokens"),
        rng_output_(seed, "workload.output_tokens") {}

  bool next(RequestSpec& out) override {
    if (cfg_.num_requests > 0 && count_ >= cfg_.num_requests) return false;
    // The first request arrives after one gap, as in a stationary renewal process started at 0.
    t_s_ += arrival_->next_gap_s(rng_arrival_);
    if (cfg_.duration_s > 0 && t_s_ > cfg_.duration_s) return false;
    out.arrival = from_seconds(t_s_);
    out.input_tokens = input_->sample(rng_input_);
    out.output_tokens = output_->sample(rng_output_);
    ++count_;
    return true;
  }
  double nominal_rate_per_s() const override { return arrival_->rate_per_s(); }

 private:
  Config cfg_;
  std::unique_ptr<ArrivalProcess> arrival_;
  std::unique_ptr<LengthDist> input_, output_;
  RngStream rng_arrival_, rng_input_, rng_output_;
  double t_s_ = 0;
  std::int64_t count_ = 0;
};

// Replay of a recorded trace: arrival times and token counts as recorded.
class Trace final : public Workload {
 public:
  struct Config {
    std::string format = "vidur";
    std::string path;
    double time_scale = 1.0;
    std::int64_t start_row = 0;
    std::int64_t max_requests = 0;
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
    }
  };

  Trace(const Config& c, std::uint64_t) : rows_(read_trace(c.format, c.path)) {
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
  bool next(RequestSpec& out) override {
    if (i_ >= rows_.size()) return false;
    const auto& r = rows_[i_++];
    out.arrival = from_seconds(r.arrival_s);
    // A recorded request with no output still gets one token: the engine always samples one.
    out.input_tokens = std::max<std::int32_t>(1, r.input_tokens);
    out.output_tokens = std::max<std::int32_t>(1, r.output_tokens);
    return true;
  }
  double nominal_rate_per_s() const override { return rate_; }

 private:
  std::vector<TraceRow> rows_;
  std::size_t i_ = 0;
  double rate_ = 0;
};

}  // namespace

const WorkloadRegistry& workload_registry() {
  static const WorkloadRegistry reg = [] {
    WorkloadRegistry r("workload", "synthetic");
    r.add<Synthetic>(
        "synthetic",
        "Independent requests: an arrival process and input/output length distributions.");
    r.add<Trace>("trace",
                 "Replay of a recorded trace (Azure, Vidur, vLLM requests.jsonl, Mooncake).");
    return r;
  }();
  return reg;
}

}  // namespace kvfleet::sim
