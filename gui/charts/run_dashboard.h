#pragma once
// The dashboard of one run (`kvfleet plot run.h5`, `kvfleet run --plots DIR`): pages of charts
// read from a run's result file, as an operator's Grafana board or Vidur's per-run plots show
// them.
//   page "state":   KV cache usage, running and waiting requests, output throughput, compute and
//                   memory-bandwidth utilisation over time, one line per replica; past
//                   `max_lines` replicas the hottest (by mean KV cache usage) that fit beside one
//                   dashed line per pool, the mean over all its replicas;
//   page "latency": CDFs of TTFT, TPOT and E2E of completed requests with the SLO marked (its
//                   limit and percentile), and the prefix-cache hit rate over time.
// Pages render to PNG or SVG (one file per page) or one multi-page PDF.
#include <string>
#include <vector>

#include "gui/charts/line_chart.h"
#include "sim/io/output_set.h"
#include "sim/output/run_file.h"
#include "sim/sweep/capacity.h"

namespace kvfleet::charts {

// What the dashboard reads from a run's file (sim/output/run_file.h, no Qt).
using sim::read_run_file;
using sim::RunData;

struct DashboardOptions {
  std::vector<sim::Slo> slo;  // marked on the CDFs; empty: the scenario's alert thresholds
  std::size_t max_lines = 4;  // more replicas than this: the hottest and the pools' means
};

// The pages, by name (the file name's suffix), in order.
inline constexpr const char* kDashboardPages[] = {"state", "latency"};

struct DashboardPage {
  std::string name;   // state, latency: the file name's suffix
  std::string title;  // above the charts
  std::vector<LineChartSpec> charts;
  std::string note = "";  // a line under the title: what the lines show, when not everything
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
