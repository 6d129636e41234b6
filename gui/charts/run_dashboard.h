#pragma once
// The dashboard of one run (`kvfleet plot run.h5`, `kvfleet run --plots DIR`): pages of charts
// read from a run's result file, as an operator's Grafana board or Vidur's per-run plots show
// them.
//   page "state":   KV cache usage, running and waiting requests, output throughput, compute and
//                   memory-bandwidth utilisation over time, one line per replica (per pool, the
//                   mean over its replicas, when the fleet has more than `max_lines` replicas);
//   page "latency": CDFs of TTFT, TPOT and E2E of completed requests with the SLO marked (its
//                   limit and percentile), and the prefix-cache hit rate over time.
// Pages render to PNG or SVG (one file per page) or one multi-page PDF.
#include <string>
#include <vector>

#include "gui/charts/line_chart.h"
#include "sim/io/output_set.h"
#include "sim/sweep/capacity.h"

namespace kvfleet::charts {

// What the dashboard reads from a run's file (sim/output/results.h writes it).
struct RunData {
  std::string title;  // the scenario's name
  struct Replica {
    std::string name, pool;
    std::vector<double> t_s, kv_usage, running, waiting, generation_tokens, compute, bandwidth;
  };
  std::vector<Replica> replicas;  // with their time series
  struct Request {
    double arrival_s, ttft_s, tpot_s, e2e_s;
    double input_tokens, cached_tokens;
    bool ok, scheduled;
    std::string pool;
  };
  std::vector<Request> requests;
  std::vector<std::string> pools;
  double sample_interval_s = 1;
  std::vector<sim::Slo> scenario_slo;  // from the scenario's alert thresholds, when set
};

// Reads a run's result file; throws InputError naming the file and what is missing (a sweep file
// is named as such).
RunData read_run_file(const std::string& path);

struct DashboardOptions {
  std::vector<sim::Slo> slo;  // marked on the CDFs; empty: the scenario's alert thresholds
  std::size_t max_lines = 8;  // more replicas than this: one line per pool
};

// The pages, by name (the file name's suffix), in order.
inline constexpr const char* kDashboardPages[] = {"state", "latency"};

struct DashboardPage {
  std::string name;   // state, latency: the file name's suffix
  std::string title;  // above the charts
  std::vector<LineChartSpec> charts;
};

std::vector<DashboardPage> run_dashboard(const RunData& run, const DashboardOptions& options);

// Where a run's dashboard goes: `out` ending in .pdf gets one multi-page PDF; .png or .svg one
// file per page (out with -<page> before the extension); an existing folder (or a path ending in
// /) gets <page>.png and <page>.svg for every page and dashboard.pdf. Constructing it checks `out`
// and registers every file (sim::OutputSet; InputError naming --out) before anything is read or
// drawn; write() draws every page into temporary files and publishes them together, so that a
// failure leaves nothing behind. write() needs a QApplication and returns the files written.
class DashboardOutput {
 public:
  explicit DashboardOutput(const std::string& out);
  std::vector<std::string> write(const std::vector<DashboardPage>& pages, int width, int height);

 private:
  sim::OutputSet files_;
  std::vector<std::pair<std::string, std::string>> targets_;  // temporary file, page ("": PDF)
  std::vector<std::string> written_;                          // their final names
};

}  // namespace kvfleet::charts
