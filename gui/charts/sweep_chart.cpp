#include "gui/charts/sweep_chart.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "sim/core/error.h"

namespace kvfleet::charts {

namespace {

// Units for axis titles from the /summary naming convention.
std::string label(const std::string& key) {
  if (key.size() > 6 && key.substr(key.size() - 6) == "_per_s") return key + " (1/s)";
  if (key.size() > 2 && key.substr(key.size() - 2) == "_s") return key + " (s)";
  return key;
}

}  // namespace

LineChartSpec sweep_chart(const sim::SweepResults& r, const std::string& x, const std::string& y,
                          const std::string& series) {
  auto axis_index = [&](const std::string& k) -> long {
    auto it = std::find(r.axis_keys.begin(), r.axis_keys.end(), k);
    return it == r.axis_keys.end() ? -1 : it - r.axis_keys.begin();
  };
  auto metric_index = [&](const std::string& k) -> long {
    auto it = std::find(r.metric_names.begin(), r.metric_names.end(), k);
    return it == r.metric_names.end() ? -1 : it - r.metric_names.begin();
  };
  std::string known;
  for (const auto& k : r.axis_keys) known += (known.empty() ? "" : ", ") + k;
  for (const auto& k : r.metric_names) known += ", " + k;
  const long xa = axis_index(x), xm = xa < 0 ? metric_index(x) : -1;
  if (xa < 0 && xm < 0)
    throw sim::InputError("--x", x, "neither an axis nor a metric (" + known + ")");
  const long ym = metric_index(y);
  if (ym < 0) throw sim::InputError("--y", y, "not a metric of this file (" + known + ")");
  const long sa = series.empty() ? -1 : axis_index(series);
  if (!series.empty() && sa < 0)
    throw sim::InputError("--series", series, "not an axis (" + known + ")");
  // series value -> x -> (sum, n)
  std::map<std::string, std::map<double, std::pair<double, int>>> acc;
  std::map<std::string, double> order;  // numeric order of series values where they are numbers
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    const auto& p = r.points[i];
    if (!p.done || !p.ok) continue;
    const double xv = xa >= 0 ? std::strtod(r.axis_values[i][xa].c_str(), nullptr) : p.metrics[xm];
    const double yv = p.metrics[ym];
    if (!std::isfinite(xv) || !std::isfinite(yv)) continue;
    const std::string sv = sa >= 0 ? r.axis_values[i][sa] : "";
    auto& e = acc[sv][xv];
    e.first += yv;
    e.second += 1;
    char* end = nullptr;
    const double num = std::strtod(sv.c_str(), &end);
    order[sv] = end != sv.c_str() && *end == '\0' ? num : static_cast<double>(order.size());
  }
  std::vector<std::string> names;
  for (const auto& [k, v] : acc) names.push_back(k);
  std::sort(names.begin(), names.end(),
            [&](const auto& a, const auto& b) { return order[a] < order[b]; });
  LineChartSpec spec;
  spec.x_label = label(x);
  spec.y_label = label(y);
  spec.title = y + " against " + x;
  for (const auto& n : names) {
    Series s;
    s.name = series.empty() ? y : series + " = " + n;
    for (const auto& [xv, e] : acc[n]) {
      s.x.push_back(xv);
      s.y.push_back(e.first / e.second);
    }
    spec.series.push_back(std::move(s));
  }
  return spec;
}

}  // namespace kvfleet::charts
