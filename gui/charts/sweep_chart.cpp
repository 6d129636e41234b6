#include "gui/charts/sweep_chart.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "sim/core/error.h"
#include "sim/metrics/summary.h"
#include "sim/simulation/scenario.h"

namespace kvfleet::charts {

namespace {

// An axis title: the name as the user writes it, with its unit from the declarations (a /summary
// metric's, or a scenario key's).
std::string label(const std::string& key) {
  std::string unit;
  const std::string metric = sim::canonical_metric(key);
  for (const auto& m : sim::summary_metrics())
    if (m.name == metric) unit = m.unit;
  if (unit.empty()) unit = sim::declared_key(key).unit;
  return unit.empty() ? key : key + " (" + unit + ")";
}

}  // namespace

namespace {

// The values axis `a` takes at the points `keep` accepts, in first-seen order.
template <typename Keep>
std::vector<std::string> distinct_values(const sim::SweepResults& r, std::size_t a, Keep keep) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < r.axis_values.size(); ++i) {
    const auto& v = r.axis_values[i];
    if (a < v.size() && keep(i) && std::find(out.begin(), out.end(), v[a]) == out.end())
      out.push_back(v[a]);
  }
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

std::vector<std::string> axis_values(const sim::SweepResults& r, const std::string& axis) {
  const auto it = std::find(r.axis_keys.begin(), r.axis_keys.end(), axis);
  if (it == r.axis_keys.end()) return {};
  return distinct_values(r, static_cast<std::size_t>(it - r.axis_keys.begin()),
                         [](std::size_t) { return true; });
}

namespace {

// What the chart shows: x (an axis, or a metric), y (a metric), the series' axis, and the points
// kept (axis values fixed with --where).
struct Choice {
  const sim::SweepResults& r;
  long xa = -1, xm = -1, ym = -1, sa = -1;
  std::vector<std::pair<long, std::string>> where;  // axis index, value
  long axis_index(const std::string& k) const {
    auto it = std::find(r.axis_keys.begin(), r.axis_keys.end(), k);
    return it == r.axis_keys.end() ? -1 : it - r.axis_keys.begin();
  }
  // A metric by its name in the file, or by an alias of it (ttft_p99 for
  // time_to_first_token_p99_s).
  long metric_index(const std::string& k) const {
    auto it = std::find(r.metric_names.begin(), r.metric_names.end(), k);
    if (it == r.metric_names.end())
      it = std::find(r.metric_names.begin(), r.metric_names.end(), sim::canonical_metric(k));
    return it == r.metric_names.end() ? -1 : it - r.metric_names.begin();
  }
  bool kept(std::size_t i) const {
    for (const auto& [a, v] : where)
      if (r.axis_values[i][a] != v) return false;
    return true;
  }
};

Choice choose(const sim::SweepResults& r, const std::string& x, const std::string& y,
              const SweepChartOptions& options) {
  Choice c{r};
  const std::string& series = options.series;
  std::vector<std::string> names_in_file = r.axis_keys;
  names_in_file.insert(names_in_file.end(), r.metric_names.begin(), r.metric_names.end());
  const std::string known = join(names_in_file);
  c.xa = c.axis_index(x);
  c.xm = c.xa < 0 ? c.metric_index(x) : -1;
  if (c.xa < 0 && c.xm < 0)
    throw sim::InputError("--x", x, "neither an axis nor a metric (" + known + ")");
  c.ym = c.metric_index(y);
  if (c.ym < 0) throw sim::InputError("--y", y, "not a metric of this file (" + known + ")");
  c.sa = series.empty() ? -1 : c.axis_index(series);
  if (!series.empty() && c.sa < 0)
    throw sim::InputError("--series", series, "not an axis (" + known + ")");
  for (const auto& [k, v] : options.where) {
    const long a = c.axis_index(k);
    if (a < 0)
      throw sim::InputError("--where", k, "not an axis of this file (" + join(r.axis_keys) + ")");
    const auto values = axis_values(r, k);
    if (std::find(values.begin(), values.end(), v) == values.end())
      throw sim::InputError("--where", k, "never '" + v + "' in this file (" + join(values) + ")");
    c.where.emplace_back(a, v);
  }
  for (const auto& k : options.mean_over) {
    if (c.axis_index(k) < 0)
      throw sim::InputError("--mean-over", k,
                            "not an axis of this file (" + join(r.axis_keys) + ")");
  }
  // Every other axis must be fixed (one value among the points kept), chosen or averaged.
  for (std::size_t a = 0; a < r.axis_keys.size(); ++a) {
    const std::string& k = r.axis_keys[a];
    if (static_cast<long>(a) == c.xa || static_cast<long>(a) == c.sa) continue;
    if (options.where.count(k) ||
        std::find(options.mean_over.begin(), options.mean_over.end(), k) != options.mean_over.end())
      continue;
    const std::vector<std::string> values =
        distinct_values(r, a, [&](std::size_t i) { return c.kept(i); });
    if (values.size() > 1) {
      throw sim::InputError("--where", k,
                            "the file varies this axis (" + join(values) +
                                ") and the chart does not show it: pick one value (--where " + k +
                                "=" + values[0] + "), make it the series (--series " + k +
                                "), or average over it on purpose "
                                "(--mean-over " +
                                k + ")");
    }
  }
  return c;
}

// One line: the mean at each x, with a band for replicates (the 95% interval of their mean from
// three replicates on; with two, their range: Student's t with one degree of freedom makes the
// interval 12.7 standard errors wide, down through any log axis). `said` receives what each
// point averages: said, never silent.
Series line_of(const std::map<double, std::vector<double>>& at, const SweepChartOptions& options,
               std::string name, std::string* said) {
  Series s;
  s.name = std::move(name);
  std::size_t most = 1;
  const bool band = options.mean_over.empty();
  std::size_t fewest = std::numeric_limits<std::size_t>::max();
  for (const auto& [xv, v] : at) {
    double sum = 0;
    for (double value : v) sum += value;
    const double mean = sum / static_cast<double>(v.size());
    s.x.push_back(xv);
    s.y.push_back(mean);
    most = std::max(most, v.size());
    fewest = std::min(fewest, v.size());
    double lo = mean, hi = mean;
    if (v.size() == 2) {
      lo = std::min(v[0], v[1]);
      hi = std::max(v[0], v[1]);
    } else if (v.size() > 2) {
      double ss = 0;
      for (double value : v) ss += (value - mean) * (value - mean);
      const double sd = std::sqrt(ss / static_cast<double>(v.size() - 1));
      const double half =
          sim::t95(static_cast<int>(v.size()) - 1) * sd / std::sqrt(double(v.size()));
      lo = mean - half;
      hi = mean + half;
    }
    s.band_lo.push_back(lo);
    s.band_hi.push_back(hi);
  }
  if (!band || most < 2) s.band_lo.clear(), s.band_hi.clear();
  said->clear();
  if (!options.mean_over.empty()) *said = "mean over " + join(options.mean_over);
  if (most > 1 && options.mean_over.empty())
    *said = "mean of " + std::to_string(most) + " replicates, " +
            (fewest > 2  ? "95% CI"
             : most == 2 ? "band: their range"
                         : "band: range of 2, 95% CI of 3 or more");
  return s;
}

}  // namespace

LineChartSpec sweep_chart(const sim::SweepResults& r, const std::string& x, const std::string& y,
                          const SweepChartOptions& options) {
  const std::string& series = options.series;
  const Choice c = choose(r, x, y, options);
  // series value -> x -> the values averaged there
  std::map<std::string, std::map<double, std::vector<double>>> acc;
  std::map<std::string, double> order;  // numeric order of series values where they are numbers
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    const auto& p = r.points[i];
    if (!p.done || !p.ok || !c.kept(i)) continue;
    const double xv =
        c.xa >= 0 ? std::strtod(r.axis_values[i][c.xa].c_str(), nullptr) : p.metrics[c.xm];
    const double yv = p.metrics[c.ym];
    if (!std::isfinite(xv) || !std::isfinite(yv)) continue;
    const std::string sv = c.sa >= 0 ? r.axis_values[i][c.sa] : "";
    acc[sv][xv].push_back(yv);
    char* end = nullptr;
    const double num = std::strtod(sv.c_str(), &end);
    order[sv] = end != sv.c_str() && *end == '\0' ? num : static_cast<double>(order.size());
  }
  std::vector<std::string> names;
  for (const auto& [k, v] : acc) names.push_back(k);
  std::sort(names.begin(), names.end(),
            [&](const auto& a, const auto& b) { return order[a] < order[b]; });
  LineChartSpec spec;
  const std::string& x_name = c.xm >= 0 ? r.metric_names[c.xm] : x;  // metrics by their one name
  const std::string& y_name = r.metric_names[c.ym];
  spec.x_label = label(x_name);
  spec.y_label = label(y_name);
  spec.title = y_name + " against " + x_name;
  std::string fixed;
  for (const auto& [k, v] : options.where) fixed += (fixed.empty() ? "" : ", ") + k + " = " + v;
  if (!fixed.empty()) spec.title += " (" + fixed + ")";
  std::vector<std::string> said(names.size());  // what each line averages
  for (std::size_t i = 0; i < names.size(); ++i)
    spec.series.push_back(line_of(acc[names[i]], options,
                                  series.empty() ? y_name : series + " = " + names[i], &said[i]));
  // Said once under the title when every line averages alike (a legend entry has no room for
  // it: Qt elides it), else after each line's name.
  const bool alike = std::all_of(said.begin(), said.end(),
                                 [&](const std::string& a) { return a == said.front(); });
  if (alike && !said.empty() && !said.front().empty()) {
    spec.note = "each line: the " + said.front();
  } else {
    for (std::size_t i = 0; i < said.size(); ++i)
      if (!said[i].empty()) spec.series[i].name += " (" + said[i] + ")";
  }
  return spec;
}

}  // namespace kvfleet::charts
