// kvfleet-plot: a sweep's results as a chart, rendered offscreen (PNG or SVG) through the same
// chart code as the GUI. `kvfleet plot ...` runs this program.
//   kvfleet-plot RESULTS.h5 --x KEY --y METRIC [--series KEY] [--slo SECONDS] [--log-x]
//                [--log-y] [--title TEXT] --out FILE.png|svg
// Exit status: 0 done, 2 bad input, 1 anything else.
#include <QtWidgets/QApplication>
#include <boost/program_options.hpp>

#include <cstdlib>
#include <iostream>

#include "gui/charts/sweep_chart.h"
#include "sim/core/error.h"

namespace po = boost::program_options;

int main(int argc, char** argv) {
  if (std::getenv("QT_QPA_PLATFORM") == nullptr) setenv("QT_QPA_PLATFORM", "offscreen", 1);
  po::options_description opts("kvfleet plot RESULTS.h5 [options]");
  std::string x, y, series, out, title;
  opts.add_options()("help,h", "show this help")("x", po::value(&x), "axis key or metric for x")(
      "y", po::value(&y), "metric for y")("series", po::value(&series),
                                          "axis key: one line per value")(
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
    std::cout << "Usage: kvfleet plot RESULTS.h5 --x KEY --y METRIC [--series KEY] --out "
                 "FILE.png|svg\n\n"
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
  QApplication app(argc, argv);
  try {
    const auto results = kvfleet::sim::read_sweep_h5(vm["results"].as<std::string>());
    auto spec = kvfleet::charts::sweep_chart(results, x, y, series);
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
