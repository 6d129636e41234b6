#pragma once
// A sweep's points as a line chart: y (a metric) against x (an axis key or a metric), one series
// per value of another axis key, replicates averaged.
#include <string>

#include "gui/charts/line_chart.h"
#include "sim/sweep/sweep.h"

namespace kvfleet::charts {

// Throws sim::InputError naming a key that is neither an axis nor a metric of the file.
LineChartSpec sweep_chart(const sim::SweepResults& r, const std::string& x, const std::string& y,
                          const std::string& series = "");

}  // namespace kvfleet::charts
