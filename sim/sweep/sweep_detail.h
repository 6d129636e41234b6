#pragma once
// What the sweep's three files share (sweep.cpp runs, sweep_file.cpp reads the sweep file,
// sweep_io.cpp writes and reads results): small helpers, not part of the sweep's interface.
#include <string>
#include <vector>

#include "sim/sweep/sweep.h"

namespace kvfleet::sim::sweep_detail {

bool is_number(const std::string& s);
// An axis value as one spelling: a number as format_double writes it (10, 10.0 and 1e1 are
// one value), any other text as it is.
std::string canonical_value(const std::string& v);
std::vector<std::string> summary_metric_names();
Scenario load_point(const SweepSpec& spec, const std::vector<std::string>& overrides);
// Percentiles 1..99 of `v` (linear interpolation), NaN when empty.
void percentiles(std::vector<double> v, std::vector<double>& out);

}  // namespace kvfleet::sim::sweep_detail
