#include "gui/app/compare.h"

#include "sim/sweep/point_runner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>

namespace kvfleet::gui {

double percent_of(std::int64_t part, std::int64_t whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

double refused_percent(const sim::Summary& s) {
  return percent_of(s.rejected + s.timed_out, s.requests);
}

const std::vector<CompareMetric>& compare_metrics() {
  using S = sim::Summary;
  static const std::vector<CompareMetric> m = {
      {"TTFT p99", true, [](const S& s) { return s.ttft.p99; }},
      {"TTFT p90", true, [](const S& s) { return s.ttft.p90; }},
      {"TTFT p50", true, [](const S& s) { return s.ttft.p50; }},
      {"TTFT mean", true, [](const S& s) { return s.ttft.mean; }},
      {"TPOT p99", true, [](const S& s) { return s.tpot.p99; }},
      {"TPOT p90", true, [](const S& s) { return s.tpot.p90; }},
      {"TPOT p50", true, [](const S& s) { return s.tpot.p50; }},
      {"TPOT mean", true, [](const S& s) { return s.tpot.mean; }},
      {"E2E p99", true, [](const S& s) { return s.e2e.p99; }},
      {"E2E p90", true, [](const S& s) { return s.e2e.p90; }},
      {"E2E p50", true, [](const S& s) { return s.e2e.p50; }},
      {"E2E mean", true, [](const S& s) { return s.e2e.mean; }},
      {"Queue time p99", true, [](const S& s) { return s.queue.p99; }},
      {"Queue time p90", true, [](const S& s) { return s.queue.p90; }},
      {"Queue time p50", true, [](const S& s) { return s.queue.p50; }},
      {"Queue time mean", true, [](const S& s) { return s.queue.mean; }},
      {"Goodput", false, [](const S& s) { return percent_of(s.ok, s.requests); }},
      {"Rejected", false, [](const S& s) { return percent_of(s.rejected, s.requests); }},
      {"Timed out", false, [](const S& s) { return percent_of(s.timed_out, s.requests); }},
  };
  return m;
}

const CompareMetric* find_compare_metric(const QString& name) {
  for (const auto& m : compare_metrics())
    if (m.name == name) return &m;
  return nullptr;
}

CapacityEstimate estimate_capacity(const std::vector<LoadPoint>& points,
                                   const CompareMetric& latency, double slo_s,
                                   double max_reject_pct) {
  std::vector<const LoadPoint*> done;
  for (const auto& p : points)
    if (p.done && p.ok) done.push_back(&p);
  std::sort(done.begin(), done.end(),
            [](const LoadPoint* a, const LoadPoint* b) { return a->load < b->load; });
  CapacityEstimate c;
  c.cost_per_m_tokens = std::numeric_limits<double>::quiet_NaN();
  if (done.empty()) return c;
  c.known = true;
  auto lat = [&](const LoadPoint* p) { return latency.get(p->summary); };
  // Refused: rejected or timed out, as the chart's markers and kvfleet capacity's refused_rate.
  auto rej = [&](const LoadPoint* p) { return refused_percent(p->summary); };
  auto meets = [&](const LoadPoint* p) {
    return p->summary.ok > 0 && lat(p) <= slo_s && rej(p) <= max_reject_pct;
  };
  std::size_t i = 0;
  while (i < done.size() && meets(done[i])) ++i;
  if (i == 0) {
    c.below = true;
    c.hi = done[0]->load;
    c.limited_by = lat(done[0]) <= slo_s ? "rejections" : "latency";
    return c;
  }
  const LoadPoint* a = done[i - 1];
  c.cost_per_m_tokens = a->summary.cost_per_million_output_tokens;
  if (i == done.size()) {
    c.beyond = true;
    c.value = c.lo = a->load;
    return c;
  }
  const LoadPoint* b = done[i];
  c.lo = a->load;
  c.hi = b->load;
  // Where the criterion that fails at b crosses its limit, linearly between a and b.
  double t = 1;
  const bool latency_fails = !(lat(b) <= slo_s);
  c.limited_by = latency_fails ? "latency" : "rejections";
  const double ya = latency_fails ? lat(a) : rej(a);
  const double yb = latency_fails ? lat(b) : rej(b);
  const double limit = latency_fails ? slo_s : max_reject_pct;
  if (std::isfinite(yb) && yb > ya) {
    // A latency grows steeply towards saturation: interpolated on a log scale (as the chart
    // draws it), a share of the requests linearly.
    if (latency_fails && ya > 0 && limit > 0) {
      t = std::clamp((std::log(limit) - std::log(ya)) / (std::log(yb) - std::log(ya)), 0.0, 1.0);
    } else {
      t = std::clamp((limit - ya) / (yb - ya), 0.0, 1.0);
    }
  }
  c.value = a->load + t * (b->load - a->load);
  return c;
}

std::vector<std::string> variant_overrides(const std::vector<std::string>& base,
                                           const std::string& key, const std::string& value) {
  std::vector<std::string> o;
  const bool impl = is_impl_key(key);
  const std::string section = impl ? key.substr(0, key.size() - 4) : "";  // "a.b."
  for (const auto& s : base) {
    if (s.rfind(key + "=", 0) == 0) continue;
    if (impl && s.rfind(section, 0) == 0) continue;
    o.push_back(s);
  }
  o.push_back(key + "=" + value);
  return o;
}

bool CompareRun::start(const std::string& yaml, const std::string& base_dir,
                       const std::string& what, const std::vector<Spec>& specs,
                       const std::string& load_key, double base_load,
                       const std::vector<double>& factors) {
  if (running() || specs.empty() || specs.size() > 6) return false;
  reset();
  key_ = what;
  const int cores = sim::usable_cores();
  const int each = std::max(1, cores / static_cast<int>(specs.size()));
  for (const auto& sp : specs) {
    Variant var;
    var.value = sp.value;
    var.label = sp.label;
    var.overrides = sp.overrides;
    var.sweep = std::make_unique<LoadSweep>();
    connect(var.sweep.get(), &LoadSweep::pointDone, this, [this](int) { Q_EMIT changed(); });
    connect(var.sweep.get(), &LoadSweep::finished, this, [this](bool) {
      if (!running()) Q_EMIT finished();
    });
    variants_.push_back(std::move(var));
  }
  for (std::size_t i = 0; i < variants_.size(); ++i) {
    variants_[i].sweep->start(yaml, base_dir, specs[i].overrides, load_key, base_load, factors,
                              each);
  }
  return true;
}

void CompareRun::cancel() {
  for (auto& v : variants_) v.sweep->cancel();
}

void CompareRun::reset() {
  for (auto& v : variants_) v.sweep->reset();
  variants_.clear();
  key_.clear();
}

bool CompareRun::running() const {
  return std::any_of(variants_.begin(), variants_.end(),
                     [](const Variant& v) { return v.sweep->running(); });
}

}  // namespace kvfleet::gui
