#pragma once
// A run's signals in the Prometheus/OpenMetrics text exposition format, with vLLM's metric names
// and labels, so that dashboards built for vLLM show a simulated run. One backfill file: every
// family once, its samples with timestamps (seconds since the epoch), `# EOF` at the end; load it
// with `promtool tsdb create-blocks-from openmetrics FILE DATA_DIR` (docs/operations.md).
//
// Per replica (labels model_name, engine = replica name), at every time-series sample:
//   vllm:num_requests_running, vllm:num_requests_waiting, vllm:kv_cache_usage_perc (gauges, the
//   last a fraction as in vLLM), vllm:num_preemptions, vllm:prompt_tokens,
//   vllm:generation_tokens (counters), and the histograms vllm:time_to_first_token_seconds,
//   vllm:inter_token_latency_seconds and vllm:e2e_request_latency_seconds over the requests
//   the replica finished by then, with vLLM's bucket boundaries. Inter-token latency: each
//   request contributes its output tokens − 1 observations of its mean gap (kvfleet does not
//   keep every token's time).
// Per replica, once at the end of the run: kvfleet:<name> for every replica counter declared with
// a total in EngineStats::declare (counters: kvfleet:steps_total, ...), its /replicas value.
#include <string>

#include "sim/simulation/scenario.h"
#include "sim/simulation/simulation.h"

namespace kvfleet::sim {

// Writes `path` atomically. `epoch_s` is the wall-clock time given to simulated time 0.
void write_openmetrics(const std::string& path, const Scenario& sc, const RunResult& r,
                       double epoch_s);

}  // namespace kvfleet::sim
