#pragma once
#include <ostream>
#include <string>

#include "sim/metrics/summary.h"
#include "sim/simulation/scenario.h"

namespace kvfleet::sim {

// The terminal report of one run: fleet, memory budget, outcomes, latency table, throughput,
// KV usage and where step time went.
void print_report(std::ostream& o, const Scenario& sc, const RunResult& r, const Summary& s);
// The same report as text (the CLI prints it and stores it in the result file as /report).
std::string report_text(const Scenario& sc, const RunResult& r, const Summary& s);

}  // namespace kvfleet::sim
