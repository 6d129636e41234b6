// kvfleet-plot: a sweep's results as a chart, or a run's dashboard pages, rendered offscreen
// through the same chart code as the GUI. `kvfleet plot ...` runs this program.
//   kvfleet-plot SWEEP.h5 --x KEY --y METRIC [--series KEY] [--slo SECONDS] [--log-x]
//                [--log-y] [--title TEXT] --out FILE.png|svg
//   kvfleet-plot RUN.h5 [--slo ttft_p99=2s,...] --out FILE.pdf|FILE.png|FILE.svg|DIR/
// Exit status: 0 done, 2 bad input, 1 anything else.
#include <QtWidgets/QApplication>
#include <boost/program_options.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <optional>

#include <QtCore/QHashFunctions>
#include "gui/charts/run_dashboard.h"

#include "gui/charts/sweep_chart.h"
#include "sim/core/error.h"
#include "sim/io/h5.h"
#include "sim/io/output_set.h"
#include "sim/io/temp_files.h"
#include "sim/metrics/summary.h"
#include "sim/sweep/capacity.h"

namespace po = boost::program_options;

namespace {

// Runs `body` and turns what it throws into the exit status: 2 for bad input, 1 for the rest.
int exit_status(const std::function<int()>& body) {
  try {
    return body();
  } catch (const kvfleet::sim::InputError& e) {
    std::cerr << "kvfleet plot: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "kvfleet plot: " << e.what() << "\n";
    return 1;
  }
}

// The dashboard of a run's file (gui/charts/run_dashboard.h).
int plot_run(const po::variables_map& vm, int argc, char** argv) {
  namespace sim = kvfleet::sim;
  const std::string file = vm["results"].as<std::string>();
  return exit_status([&] {
    if (!vm.count("out")) throw sim::InputError("--out", "", "is required");
    for (const char* k : {"x", "y", "series", "where", "mean-over", "log-x", "log-y", "title"})
      if (vm.count(k))
        throw sim::InputError(std::string("--") + k, "",
                              "is for sweep files; " + file + " is a run's result file");
    kvfleet::charts::DashboardOptions o;
    if (vm.count("slo")) o.slo = sim::parse_slo(vm["slo"].as<std::string>());
    const int width = vm["width"].defaulted() ? 1800 : vm["width"].as<int>();
    const int height = vm["height"].defaulted() ? 1000 : vm["height"].as<int>();
    for (const int v : {width, height})
      if (v < 100 || v > 10000)
        throw sim::InputError("--width/--height", "", "must be between 100 and 10000 pixels");
    kvfleet::charts::DashboardOutput output(vm["out"].as<std::string>());
    const auto run = kvfleet::charts::read_run_file(file);
    QApplication app(argc, argv);
    const auto pages = kvfleet::charts::run_dashboard(run, o);
    for (const auto& f : output.write(pages, width, height))
      std::cout << "kvfleet plot: " << f << "\n";
    return 0;
  });
}

// What the options name (bound to them).
struct Args {
  std::string x, y, series, out, title;
};

po::options_description plot_options(Args& a) {
  po::options_description opts("kvfleet plot RESULTS.h5 [options]");
  opts.add_options()("help,h", "show this help")("x", po::value(&a.x), "axis key or metric for x")(
      "y", po::value(&a.y), "metric for y")("series", po::value(&a.series),
                                            "axis key: one line per value")(
      "where", po::value<std::vector<std::string>>()->composing(),
      "AXIS=VALUE: keep only the points where a varied axis has this value (repeatable)")(
      "mean-over", po::value<std::vector<std::string>>()->composing(),
      "AXIS: average over a varied axis on purpose (the legend says so)")(
      "slo", po::value<std::string>(),
      "sweeps: a horizontal SLO line at this y value; runs: targets marked on the latency "
      "CDFs (ttft_p99=2s,tpot_p99=100ms; default: the scenario's alert thresholds)")(
      "log-x", "logarithmic x axis")("log-y", "logarithmic y axis")("title", po::value(&a.title),
                                                                    "chart title")(
      "out,o", po::value(&a.out),
      "sweeps: FILE.png or FILE.svg; runs: FILE.pdf (every page), FILE.png or FILE.svg "
      "(FILE-<page> per page) or DIR/ (each page as PNG and SVG, and dashboard.pdf)")(
      "width", po::value<int>()->default_value(960),
      "pixels (PNG at twice that; a run's pages: 1800 unless given)")(
      "height", po::value<int>()->default_value(600), "pixels (a run's pages: 1000 unless given)");
  return opts;
}

void print_plot_help(const po::options_description& opts) {
  std::cout << "Usage: kvfleet plot SWEEP.h5 --x KEY --y METRIC [--series KEY] "
               "[--where AXIS=VALUE] [--mean-over AXIS] --out FILE.png|svg\n"
               "       kvfleet plot RUN.h5 [--slo ttft_p99=2s] --out "
               "FILE.pdf|FILE.png|FILE.svg|DIR/\n\n"
               "A sweep: every axis the file varies must be on the chart (x, series), fixed with\n"
               "--where, or averaged on purpose with --mean-over: nothing is averaged silently;\n"
               "replicates are averaged with their 95% interval shaded.\n"
               "A run: its dashboard, a page of replica state over time (KV usage, running and\n"
               "waiting, throughput, utilisation) and a page of latency CDFs with the SLO marked\n"
               "and the prefix-cache hit rate.\n\n"
            << opts;
}

// Whether the results file is a run's (it has /requests); anything else is read as a sweep.
bool is_run_file(const std::string& f) {
  try {
    if (std::filesystem::is_regular_file(f)) {
      const kvfleet::sim::h5::H5 h = kvfleet::sim::h5::open_for_reading(f, "results");
      return kvfleet::sim::h5::has_link(h.id, "requests");
    }
  } catch (const std::exception&) {
    // Not readable as HDF5: the sweep path reports it.
  }
  return false;
}

// A sweep chart's output, checked before anything is read: a regular .png or .svg file, a size
// in range, writable.
void check_sweep_output(const po::variables_map& vm, const std::string& out) {
  kvfleet::sim::check_output_file("--out", out);
  const std::string ext = std::filesystem::path(out).extension().string();
  if (ext != ".png" && ext != ".svg")
    throw kvfleet::sim::InputError("--out", "", out + ": the name must end in .png or .svg");
  for (const char* k : {"width", "height"}) {
    const int v = vm[k].as<int>();
    if (v < 100 || v > 10000)
      throw kvfleet::sim::InputError(std::string("--") + k, "",
                                     "must be between 100 and 10000 pixels");
  }
  kvfleet::sim::remove_stale_temps(out);
  kvfleet::sim::check_writable("--out", out);
}

// --slo on a sweep chart: a number (the line's y value), or SLO targets (the one on the plotted
// metric).
double slo_line(const std::string& text, const std::string& y) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (!text.empty() && *end == '\0' && std::isfinite(v)) return v;
  std::optional<double> limit;  // the last target on y
  for (const auto& s : kvfleet::sim::parse_slo(text))
    if (s.kind == kvfleet::sim::Slo::Kind::kLatency &&
        s.metric == kvfleet::sim::canonical_metric(y))
      limit = s.limit_s;
  if (!limit)
    throw kvfleet::sim::InputError("--slo", text, "neither a number nor a target on " + y);
  return *limit;
}

int plot_sweep(const po::variables_map& vm, const Args& a) {
  const auto results = kvfleet::sim::read_sweep_h5(vm["results"].as<std::string>());
  kvfleet::charts::SweepChartOptions o;
  o.series = a.series;
  if (vm.count("where")) {
    for (const auto& w : vm["where"].as<std::vector<std::string>>()) {
      const auto eq = w.find('=');
      if (eq == std::string::npos || eq == 0)
        throw kvfleet::sim::InputError("--where", w, "expected AXIS=VALUE");
      o.where[w.substr(0, eq)] = w.substr(eq + 1);
    }
  }
  if (vm.count("mean-over")) o.mean_over = vm["mean-over"].as<std::vector<std::string>>();
  auto spec = kvfleet::charts::sweep_chart(results, a.x, a.y, o);
  if (!a.title.empty()) spec.title = a.title;
  if (vm.count("slo")) spec.y_limit = slo_line(vm["slo"].as<std::string>(), a.y);
  spec.log_x = vm.count("log-x") > 0;
  spec.log_y = vm.count("log-y") > 0;
  const std::string err =
      kvfleet::charts::render_to_file(spec, a.out, vm["width"].as<int>(), vm["height"].as<int>());
  if (!err.empty()) {
    std::cerr << "kvfleet plot: " << err << "\n";
    return 2;
  }
  std::cout << "kvfleet plot: " << spec.series.size() << " series -> " << a.out << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Qt's hashes iterate in a per-process random order, which reordered the fonts of a PDF from
  // one run to the next: a fixed seed makes the same input give the same bytes.
  QHashSeed::setDeterministicGlobalSeed();
  if (std::getenv("QT_QPA_PLATFORM") == nullptr) setenv("QT_QPA_PLATFORM", "offscreen", 1);
  // Qt warns on stderr when XDG_RUNTIME_DIR is unset (a batch job, a container): give it one.
  if (std::getenv("XDG_RUNTIME_DIR") == nullptr) {
    const std::string dir = "/tmp/kvfleet-runtime-" + std::to_string(::getuid());
    ::mkdir(dir.c_str(), 0700);
    setenv("XDG_RUNTIME_DIR", dir.c_str(), 1);
  }
  kvfleet::sim::install_temp_cleanup_on_signals();
  Args args;
  const po::options_description opts = plot_options(args);
  po::options_description hidden;
  hidden.add_options()("results", po::value<std::string>(), "sweep results");
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description pos;
  pos.add("results", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "kvfleet plot: " << e.what() << "\n";
    return 2;
  }
  if (vm.count("help")) {
    print_plot_help(opts);
    return 0;
  }
  if (vm.count("results") && !std::filesystem::is_regular_file(vm["results"].as<std::string>())) {
    const std::string f = vm["results"].as<std::string>();
    std::cerr << "kvfleet plot: error: " << (f.empty() ? "the results file" : f)
              << (f.empty()                    ? ": the path is empty"
                  : std::filesystem::exists(f) ? ": not a regular file"
                                               : ": results file not found")
              << " (a run's or a sweep's HDF5 file is expected)\n";
    return 2;
  }
  // A run's file gets the dashboard; anything else is read as a sweep below.
  if (vm.count("results") && is_run_file(vm["results"].as<std::string>()))
    return plot_run(vm, argc, argv);
  // Neither a run's file nor a sweep's: said before any option is asked for.
  if (vm.count("results")) {
    const std::string f = vm["results"].as<std::string>();
    std::string why;
    try {
      const kvfleet::sim::h5::H5 h = kvfleet::sim::h5::open_for_reading(f, "results");
      if (!kvfleet::sim::h5::has_link(h.id, "sweep"))
        why = "an HDF5 file with neither /requests (a run's) nor /sweep (a sweep's)";
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (!why.empty()) {
      std::cerr << "kvfleet plot: error: " << f << " is not a kvfleet result file (" << why
                << "): plot takes what kvfleet run --out or kvfleet sweep --out wrote\n";
      return 2;
    }
  }
  for (const char* k : {"results", "x", "y", "out"}) {
    if (!vm.count(k)) {
      std::cerr << "kvfleet plot: "
                << (std::string(k) == "results" ? "the results file" : std::string("--") + k)
                << " is required\n";
      return 2;
    }
  }
  try {
    // The output first: before reading anything, and never anything but a regular file.
    check_sweep_output(vm, args.out);
  } catch (const kvfleet::sim::InputError& e) {
    std::cerr << "kvfleet plot: error: " << e.what() << "\n";
    return 2;
  }
  QApplication app(argc, argv);
  return exit_status([&] { return plot_sweep(vm, args); });
}
