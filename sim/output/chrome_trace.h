#pragma once
// A run as a Chrome/Perfetto trace (JSON trace event format; open in ui.perfetto.dev or
// chrome://tracing): one track per replica with its engine steps (batch size, prefill tokens,
// decode sequences), and the first requests' lifetimes as queued, prefill and decode spans.
#include <string>

#include "sim/simulation/simulation.h"

namespace kvfleet::sim {

// Needs the steps that Simulation::record_steps kept. `max_requests` bounds the request spans.
void write_chrome_trace(const std::string& path, const RunResult& r, std::size_t max_requests);

}  // namespace kvfleet::sim
