#pragma once
// A sweep's points as a line chart: y (a metric) against x (an axis key or a metric), one series
// per value of another axis key. It never averages silently: when the file varies an axis that
// the chart does not show (not x, not the series), the caller must pick one value of it
// (`where`) or average over it on purpose (`mean_over`), and the legend says what was averaged;
// otherwise sweep_chart refuses, naming the axis and its values. Replicates of a point (the same
// axis values, other seeds) are averaged, and the legend says how many.
#include <map>
#include <string>
#include <vector>

#include "gui/charts/line_chart.h"
#include "sim/sweep/sweep.h"

namespace kvfleet::charts {

struct SweepChartOptions {
  std::string series;                        // an axis key: one line per value ("" none)
  std::map<std::string, std::string> where;  // axis key -> the value to keep
  std::vector<std::string> mean_over;        // axis keys averaged on purpose
};

// Throws sim::InputError naming a key that is neither an axis nor a metric of the file, a
// `where` value the axis never takes, or an axis the file varies that the chart would average
// without being told (the message lists its values and the options that resolve it).
LineChartSpec sweep_chart(const sim::SweepResults& r, const std::string& x, const std::string& y,
                          const SweepChartOptions& options);
inline LineChartSpec sweep_chart(const sim::SweepResults& r, const std::string& x,
                                 const std::string& y, const std::string& series = "") {
  return sweep_chart(r, x, y, SweepChartOptions{series, {}, {}});
}

// The values an axis takes in the file, in first-seen order ("" for no such axis).
std::vector<std::string> axis_values(const sim::SweepResults& r, const std::string& axis);

}  // namespace kvfleet::charts
