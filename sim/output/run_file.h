#pragma once
// Reading a run's result file back (what `kvfleet plot run.h5` draws): the replicas with their
// time series, the requests' latencies and the scenario's title and SLO. Kept apart from the
// charts (gui/charts/run_dashboard.h) so that it builds without Qt and is fuzzed
// (tests/fuzz/runfile_fuzz.cpp).
#include <string>
#include <vector>

namespace kvfleet::sim {

// What a run's file holds for its dashboard (sim/output/results.h writes it).
struct RunData {
  std::string title;  // the scenario's name
  struct Replica {
    std::string name, pool;
    std::vector<double> t_s, kv_usage, running, waiting, generation_tokens, compute, bandwidth;
  };
  std::vector<Replica> replicas;  // with their time series, in the order of /replicas
  struct Request {
    double arrival_s, ttft_s, tpot_s, e2e_s;
    double input_tokens, cached_tokens;
    bool ok, scheduled;
    std::string pool;
  };
  std::vector<Request> requests;
  std::vector<std::string> pools;
  double sample_interval_s = 1;
  // The scenario's alert thresholds as an SLO text ("ttft_p99=2s,tpot_p99=0.1s"), when set.
  std::string scenario_slo;
};

// Reads a run's result file; throws InputError naming the file and what is missing or of the
// wrong kind (a sweep file is named as such). Every time series has as many values as times.
RunData read_run_file(const std::string& path);

}  // namespace kvfleet::sim
