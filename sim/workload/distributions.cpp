#include "sim/workload/distributions.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "sim/workload/trace.h"

namespace kvfleet::sim {
namespace {

// Clamp bounds shared by the continuous distributions.
struct Bounds {
  std::int64_t min = 1;
  std::int64_t max = 1'000'000;
  template <class V>
  void bounds(V& v) {
    v.param("min", min, {.unit = "tokens", .desc = "samples below are raised to this", .min = 1});
    v.param("max", max, {.unit = "tokens", .desc = "samples above are cut to this", .min = 1});
  }
  void check_bounds(config::Reader& r) const {
    if (max < min) r.fail_key("max", "must be >= min (" + std::to_string(min) + ")");
  }
  std::int32_t clamp(double x) const {
    return static_cast<std::int32_t>(std::clamp<std::int64_t>(std::llround(x), min, max));
  }
};

class Fixed final : public LengthDist {
 public:
  struct Config {
    std::int64_t value = 128;
    template <class V>
    void visit(V& v) {
      v.param("value", value,
              {.unit = "tokens", .desc = "every request has this length", .min = 1});
    }
  };
  explicit Fixed(const Config& c) : v_(static_cast<std::int32_t>(c.value)) {}
  std::int32_t sample(RngStream&) const override { return v_; }
  double mean() const override { return v_; }

 private:
  std::int32_t v_;
};

class Uniform final : public LengthDist {
 public:
  struct Config {
    std::int64_t min = 1, max = 256;
    template <class V>
    void visit(V& v) {
      v.param("min", min, {.unit = "tokens", .desc = "smallest length", .min = 1});
      v.param("max", max, {.unit = "tokens", .desc = "largest length", .min = 1});
    }
    void check(config::Reader& r) const {
      if (max < min) r.fail_key("max", "must be >= min (" + std::to_string(min) + ")");
    }
  };
  explicit Uniform(const Config& c) : c_(c) {}
  std::int32_t sample(RngStream& rng) const override {
    return static_cast<std::int32_t>(c_.min +
                                     static_cast<std::int64_t>(rng.below(c_.max - c_.min + 1)));
  }
  double mean() const override { return 0.5 * static_cast<double>(c_.min + c_.max); }

 private:
  Config c_;
};

// Lognormal given by its arithmetic mean and the sigma of the underlying normal; rounded to
// whole tokens and clamped to [min, max].
class LogNormal final : public LengthDist {
 public:
  struct Config : Bounds {
    double mean = 256;
    double sigma = 1.0;
    template <class V>
    void visit(V& v) {
      v.param("mean", mean,
              {.unit = "tokens",
               .desc = "arithmetic mean before rounding and clamping",
               .positive = true});
      v.param("sigma", sigma, {.desc = "standard deviation of log(length)", .min = 0});
      bounds(v);
    }
    void check(config::Reader& r) const { check_bounds(r); }
  };
  explicit LogNormal(const Config& c) : c_(c), mu_(std::log(c.mean) - 0.5 * c.sigma * c.sigma) {}
  std::int32_t sample(RngStream& rng) const override {
    return c_.clamp(std::exp(mu_ + c_.sigma * rng.normal()));
  }
  double mean() const override { return c_.mean; }

 private:
  Config c_;
  double mu_;
};

// Two populations of lengths: with probability long_fraction from `long`, else from `short`
// (short questions among long document jobs, say).
class Mix final : public LengthDist {
 public:
  struct Config {
    double long_fraction = 0.05;
    config::ImplSpec short_dist, long_dist;
    template <class V>
    void visit(V& v) {
      v.param("long_fraction", long_fraction,
              {.unit = "probability", .desc = "share drawn from `long`", .min = 0, .max = 1});
      v.impl("short", short_dist, length_dist_registry(),
             {.desc = "the common lengths", .required = true});
      v.impl("long", long_dist, length_dist_registry(),
             {.desc = "the rare long ones", .required = true});
    }
  };
  explicit Mix(const Config& c)
      : p_(c.long_fraction),
        short_(length_dist_registry().make(c.short_dist)),
        long_(length_dist_registry().make(c.long_dist)) {}
  std::int32_t sample(RngStream& rng) const override {
    return rng.uniform() < p_ ? long_->sample(rng) : short_->sample(rng);
  }
  double mean() const override { return p_ * long_->mean() + (1 - p_) * short_->mean(); }

 private:
  double p_;
  std::unique_ptr<LengthDist> short_, long_;
};
// ceil(Exponential(mean)): a geometric distribution on {1, 2, ...}, clamped to [min, max].
class Exponential final : public LengthDist {
 public:
  struct Config : Bounds {
    double mean = 256;
    template <class V>
    void visit(V& v) {
      v.param("mean", mean,
              {.unit = "tokens",
               .desc = "mean of the continuous exponential before ceil",
               .positive = true});
      bounds(v);
    }
    void check(config::Reader& r) const { check_bounds(r); }
  };
  explicit Exponential(const Config& c) : c_(c) {}
  std::int32_t sample(RngStream& rng) const override {
    const double x = std::ceil(rng.exponential(c_.mean));
    return static_cast<std::int32_t>(std::clamp<double>(x, c_.min, c_.max));
  }
  // Mean of ceil(Exp(m)) = 1 / (1 - exp(-1/m)), ignoring the clamp.
  double mean() const override { return 1.0 / (1.0 - std::exp(-1.0 / c_.mean)); }

 private:
  Config c_;
};

// Lengths drawn with replacement from a trace's input or output column.
class Empirical final : public LengthDist {
 public:
  struct Config {
    std::string path;
    std::string format = "vidur";
    std::string field = "input";
    template <class V>
    void visit(V& v) {
      v.param("path", path, {.desc = "trace file", .path = true, .required = true});
      v.param("format", format, {.desc = "trace format", .choices = kTraceFormats});
      v.param("field", field,
              {.desc = "which column to draw from", .choices = {"input", "output"}});
    }
  };
  explicit Empirical(const Config& c) {
    for (const auto& r : read_trace(c.format, c.path, /*need_arrivals=*/false)) {
      const std::int32_t v = c.field == "input" ? r.input_tokens : r.output_tokens;
      if (v > 0) values_.push_back(v);
    }
    if (values_.empty()) throw InputError(c.path, c.field, "no positive lengths in the trace");
    double s = 0;
    for (auto v : values_) s += v;
    mean_ = s / static_cast<double>(values_.size());
  }
  std::int32_t sample(RngStream& rng) const override { return values_[rng.below(values_.size())]; }
  double mean() const override { return mean_; }

 private:
  std::vector<std::int32_t> values_;
  double mean_ = 0;
};

// Arrival processes set by their rate alone share this configuration.
struct RateConfig {
  double rate_per_s = 10;
  template <class V>
  void visit(V& v) {
    v.param("rate_per_s", rate_per_s,
            {.unit = "requests/s",
             .desc = "mean arrival rate",
             .positive = true,
             .label = "Arrival rate"});
  }
};

class Poisson final : public ArrivalProcess {
 public:
  using Config = RateConfig;
  explicit Poisson(const Config& c) : rate_(c.rate_per_s) {}
  double next_gap_s(RngStream& rng) override { return rng.exponential(1.0 / rate_); }
  double rate_per_s() const override { return rate_; }

 private:
  double rate_;
};

// Gamma-distributed gaps: cv = 1 is Poisson, cv > 1 bursty, cv < 1 smoother.
class GammaArrivals final : public ArrivalProcess {
 public:
  struct Config {
    double rate_per_s = 10;
    double cv = 2.0;
    template <class V>
    void visit(V& v) {
      v.param("rate_per_s", rate_per_s,
              {.unit = "requests/s",
               .desc = "mean arrival rate",
               .positive = true,
               .label = "Arrival rate"});
      v.param("cv", cv,
              {.desc = "coefficient of variation of the gaps (burstiness)",
               .min = 1e-3,
               .max = 1e3,
               .why = "the gamma's shape 1/cv^2 must stay a normal floating-point number"});
    }
  };
  explicit GammaArrivals(const Config& c)
      : rate_(c.rate_per_s), shape_(1.0 / (c.cv * c.cv)), scale_(1.0 / (c.rate_per_s * shape_)) {}
  double next_gap_s(RngStream& rng) override { return rng.gamma(shape_, scale_); }
  double rate_per_s() const override { return rate_; }

 private:
  double rate_, shape_, scale_;
};

// Evenly spaced arrivals (a deterministic load generator).
class Constant final : public ArrivalProcess {
 public:
  using Config = RateConfig;
  explicit Constant(const Config& c) : rate_(c.rate_per_s) {}
  double next_gap_s(RngStream&) override { return 1.0 / rate_; }
  double rate_per_s() const override { return rate_; }

 private:
  double rate_;
};

// Tidal (diurnal) traffic: a Poisson process whose rate follows
// rate × (1 + amplitude × sin(2π (t + phase_s) / period_s)), drawn by thinning (Lewis and
// Shedler): candidates at the peak rate, each kept with probability rate(t) / peak.
class Diurnal final : public ArrivalProcess {
 public:
  struct Config {
    double rate_per_s = 10;
    double amplitude = 0.5;
    double period_s = 86400;
    double phase_s = 0;
    template <class V>
    void visit(V& v) {
      v.param("rate_per_s", rate_per_s,
              {.unit = "requests/s",
               .desc = "mean arrival rate over a period",
               .positive = true,
               .label = "Arrival rate"});
      v.param("amplitude", amplitude,
              {.unit = "fraction",
               .desc = "peak is rate × (1 + amplitude), trough rate × (1 − "
                       "amplitude)",
               .min = 0,
               .max = 1});
      v.param("period_s", period_s,
              {.unit = "s",
               .desc = "length of one cycle",
               .min = 1,
               .why = "a cycle shorter than a second is not diurnal and leaves the sine's "
                      "resolution"});
      v.param("phase_s", phase_s,
              {.unit = "s",
               .desc = "shift: the rate at t is the sine's value at t + phase_s",
               .min = -1e9});
    }
  };
  explicit Diurnal(const Config& c) : c_(c), peak_(c.rate_per_s * (1 + c.amplitude)) {}
  double next_gap_s(RngStream& rng) override {
    const double start = t_;
    for (;;) {
      t_ += rng.exponential(1.0 / peak_);
      if (rng.uniform() * peak_ <= rate_at(t_)) return t_ - start;
    }
  }
  double rate_per_s() const override { return c_.rate_per_s; }
  double rate_at(double t) const {
    return c_.rate_per_s *
           (1 + c_.amplitude * std::sin(2 * std::numbers::pi * (t + c_.phase_s) / c_.period_s));
  }

 private:
  Config c_;
  double peak_;
  double t_ = 0;  // time of the last arrival drawn
};
}  // namespace

std::int32_t draw_weighted(const std::vector<double>& weights, RngStream& rng) {
  double total = 0;
  for (double w : weights) total += w;
  if (total <= 0) return 0;
  double u = rng.uniform() * total;
  std::int32_t i = 0;
  while (i + 1 < static_cast<std::int32_t>(weights.size()) && u >= weights[i]) u -= weights[i++];
  return i;
}

std::uint32_t draw_tenant(int tenants, RngStream& rng) {
  return tenants > 1 ? 1 + static_cast<std::uint32_t>(rng.below(tenants)) : 1;
}

const LengthDistRegistry& length_dist_registry() {
  static const LengthDistRegistry reg = [] {
    LengthDistRegistry r("length distribution", "");
    r.add<Fixed>("fixed", "Every request has the same length.");
    r.add<Uniform>("uniform", "Uniform over whole numbers in [min, max].");
    r.add<LogNormal>("lognormal", "Lognormal with a given arithmetic mean, rounded and clamped.");
    r.add<Exponential>("exponential", "ceil of an exponential (geometric on 1, 2, ...), clamped.");
    r.add<Empirical>("empirical", "Drawn with replacement from a trace's input or output lengths.");
    r.add<Mix>("mix", "Two populations: `long` with probability long_fraction, else `short`.");
    return r;
  }();
  return reg;
}

const ArrivalRegistry& arrival_registry() {
  static const ArrivalRegistry reg = [] {
    ArrivalRegistry r("arrival process", "poisson");
    r.add<Poisson>("poisson", "Poisson arrivals (exponential gaps).");
    r.add<GammaArrivals>("gamma",
                         "Gamma-distributed gaps with a coefficient of variation (burstiness).");
    r.add<Constant>("constant", "Evenly spaced arrivals.");
    r.add<Diurnal>("diurnal", "Tidal traffic: Poisson with a sinusoidal rate (thinning).");
    return r;
  }();
  return reg;
}

}  // namespace kvfleet::sim
