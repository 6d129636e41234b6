// kvfleet-plot: a sweep's results as a chart, rendered offscreen (PNG or SVG) through the same
// chart code as the GUI. `kvfleet plot ...` runs this program.
//   kvfleet-plot RESULTS.h5 --x KEY --y METRIC [--series KEY] [--slo SECONDS] [--log-x]
//                [--log-y] [--title TEXT] --out FILE.png|svg
// Exit status: 0 done, 2 bad input, 1 anything else.
#include <QtWidgets/QApplication>
#include <boost/program_options.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "gui/charts/sweep_chart.h"
#include "sim/core/error.h"
#include "sim/io/output_set.h"
#include "sim/io/temp_files.h"

namespace po = boost::program_options;

int main(int argc, char** argv) {
  if (std::getenv("QT_QPA_PLATFORM") == nullptr) setenv("QT_QPA_PLATFORM", "offscreen", 1);
  // Qt warns on stderr when XDG_RUNTIME_DIR is unset (a batch job, a container): give it one.
  if (std::getenv("XDG_RUNTIME_DIR") == nullptr) {
    const std::string dir = "/tmp/kvfleet-runtime-" + std::to_string(::getuid());
    ::mkdir(dir.c_str(), 0700);
    setenv("XDG_RUNTIME_DIR", dir.c_str(), 1);
  }
  kvfleet::sim::install_temp_cleanup_on_signals();
  po::options_description opts("kvfleet plot RESULTS.h5 [options]");
  std::string x, y, series, out, title;
  opts.add_options()("help,h", "show this help")("x", po::value(&x), "axis key or metric for x")(
      "y", po::value(&y), "metric for y")("series", po::value(&series),
                                          "axis key: one line per value")(
      "where", po::value<std::vector<std::string>>()->composing(),
      "AXIS=VALUE: keep only the points where a varied axis has this value (repeatable)")(
      "mean-over", po::value<std::vector<std::string>>()->composing(),
      "AXIS: average over a varied axis on purpose (the legend says so)")(
      "slo", po::value<double>(), "draw a horizontal SLO line at this y value")(
      "log-x", "logarithmic x axis")("log-y", "logarithmic y axis")(
      "title", po::value(&title), "chart title")("out,o", po::value(&out), "FILE.png or FILE.svg")(
      "width", po::value<int>()->default_value(960), "pixels (PNG at twice that)")(
      "height", po::value<int>()->default_value(600), "pixels");
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
    std::cout
        << "Usage: kvfleet plot RESULTS.h5 --x KEY --y METRIC [--series KEY] "
           "[--where AXIS=VALUE] [--mean-over AXIS] --out FILE.png|svg\n\n"
           "Every axis the file varies must be on the chart (x, series), fixed with\n"
           "--where, or averaged on purpose with --mean-over: nothing is averaged silently.\n\n"
        << opts;
    return 0;
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
  } catch (const kvfleet::sim::InputError& e) {
    std::cerr << "kvfleet plot: error: " << e.what() << "\n";
    return 2;
  }
  QApplication app(argc, argv);
  try {
    const auto results = kvfleet::sim::read_sweep_h5(vm["results"].as<std::string>());
    kvfleet::charts::SweepChartOptions o;
    o.series = series;
    if (vm.count("where")) {
      for (const auto& w : vm["where"].as<std::vector<std::string>>()) {
        const auto eq = w.find('=');
        if (eq == std::string::npos || eq == 0)
          throw kvfleet::sim::InputError("--where", w, "expected AXIS=VALUE");
        o.where[w.substr(0, eq)] = w.substr(eq + 1);
      }
    }
    if (vm.count("mean-over")) o.mean_over = vm["mean-over"].as<std::vector<std::string>>();
    auto spec = kvfleet::charts::sweep_chart(results, x, y, o);
    if (!title.empty()) spec.title = title;
    if (vm.count("slo")) spec.y_limit = vm["slo"].as<double>();
    spec.log_x = vm.count("log-x") > 0;
    spec.log_y = vm.count("log-y") > 0;
    const std::string err =
        kvfleet::charts::render_to_file(spec, out, vm["width"].as<int>(), vm["height"].as<int>());
    if (!err.empty()) {
      std::cerr << "kvfleet plot: " << err << "\n";
      return 2;
    }
    std::cout << "kvfleet plot: " << spec.series.size() << " series -> " << out << "\n";
  } catch (const kvfleet::sim::InputError& e) {
    std::cerr << "kvfleet plot: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "kvfleet plot: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
