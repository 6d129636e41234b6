// kvfleet run: one scenario simulated, its report printed and its results written.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <boost/program_options.hpp>

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "sim/cli/command.h"
#include "sim/cli/mpi.h"
#include "sim/config/params.h"
#include "sim/core/build_info.h"
#include "sim/core/error.h"
#include "sim/io/output_set.h"
#include "sim/io/temp_files.h"
#include "sim/io/text_file.h"
#include "sim/metrics/summary.h"
#include "sim/output/chrome_trace.h"
#include "sim/output/prometheus.h"
#include "sim/output/report.h"
#include "sim/output/results.h"
#include "sim/reference/reference.h"
#include "sim/replay/bench_results.h"
#include "sim/replay/replay.h"
#include "sim/simulation/provenance.h"
#include "sim/simulation/scenario.h"
#include "sim/simulation/simulation.h"
#include "sim/sweep/capacity.h"
#include "sim/sweep/sizing.h"
#include "sim/sweep/sweep.h"

using namespace kvfleet::sim;

namespace kvfleet::cli {

namespace {

po::options_description run_options() {
  po::options_description opts("Options of 'kvfleet run [SCENARIO]'");
  opts.add_options()("help,h", "show this help")("out,o", po::value<std::string>(),
                                                 "write the HDF5 result file here (FILE.h5)")(
      "csv", po::value<std::string>(), "also write each result table as CSV into this folder")(
      "prometheus", po::value<std::string>(),
      "write the signals with vLLM's metric names as an OpenMetrics backfill file into this "
      "folder (DIR/backfill.om; load with promtool tsdb create-blocks-from openmetrics)")(
      "trace", po::value<std::string>(),
      "write a Chrome/Perfetto trace (JSON) of the replicas' steps and the first requests")(
      "trace-requests", po::value<long long>()->default_value(2000),
      "requests whose lifetimes go into --trace")(
      "prometheus-epoch", po::value<double>(),
      "wall-clock time (s since 1970) of simulated time 0 in --prometheus (default: now)")(
      "plots", po::value<std::string>(),
      "write the run's dashboard into this folder: state and latency pages as PNG and SVG, "
      "and dashboard.pdf (as kvfleet plot RUN.h5 --out DIR/)")(
      "set,s", po::value<std::vector<std::string>>()->composing(),
      "override a scenario key: --set pools[0].engine.max_num_seqs=64 (repeatable)")(
      "quiet,q", "print no report");
  return opts;
}

// Where a run writes, checked before it runs.
struct RunOutputs {
  std::string h5, csv, trace, prom, plots, plotter;
  long long trace_requests = 0;
  double epoch = 0;  // wall-clock time of simulated time 0 in --prometheus
};

// Every output path is checked before the run, written under a temporary name, and all are
// published together when every one is complete (io/output_set.h).
RunOutputs plan_outputs(const po::variables_map& vm, OutputSet& outputs) {
  RunOutputs o;
  for (const char* key : {"out", "trace"})
    if (vm.count(key) && vm.count("scenario") &&
        same_file(vm[key].as<std::string>(), vm["scenario"].as<std::string>()))
      throw InputError(std::string("--") + key, "",
                       vm[key].as<std::string>() + " is the scenario file itself");
  if (vm.count("out")) o.h5 = outputs.add_file("--out", vm["out"].as<std::string>());
  if (vm.count("csv")) o.csv = outputs.add_folder("--csv", vm["csv"].as<std::string>());
  if (vm.count("trace")) o.trace = outputs.add_file("--trace", vm["trace"].as<std::string>());
  o.trace_requests = vm["trace-requests"].as<long long>();
  if (o.trace_requests < 0 || o.trace_requests > 100'000'000)
    throw InputError("--trace-requests", "", "must be between 0 and 100000000");
  if (vm.count("prometheus-epoch")) {
    o.epoch = vm["prometheus-epoch"].as<double>();
    if (!(o.epoch >= 0 && o.epoch <= 1e10))
      throw InputError("--prometheus-epoch", "",
                       "must be seconds since 1970 between 0 and 1e10 (the year 2286)");
  } else {
    o.epoch =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  }
  if (vm.count("prometheus"))
    o.prom = outputs.add_folder("--prometheus", vm["prometheus"].as<std::string>());
  if (vm.count("plots")) {
    o.plotter = plot_program(nullptr);
    if (o.plotter.empty())
      throw InputError("--plots", "",
                       "needs kvfleet-plot, which this build lacks (built without Qt6 Charts: "
                       "KVFLEET_WITH_GUI=OFF)");
    o.plots = outputs.add_folder("--plots", vm["plots"].as<std::string>());
  }
  return o;
}

// Runs the simulation; a long run says where it is on stderr. The wall time goes to `wall_s`.
RunResult simulate(Simulation& simulation, bool trace, double& wall_s) {
  const auto t0 = std::chrono::steady_clock::now();
  // Long runs say where they are on stderr: a line rewritten in place on a terminal (every
  // 0.5 s), else a plain line every 30 s. Short runs print nothing.
  const bool tty = isatty(STDERR_FILENO) != 0;
  double shown_s = 0;
  bool shown = false;
  simulation.on_progress([&](SimTime now, std::size_t requests) {
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (wall < 2.0 || wall - shown_s < (tty ? 0.5 : 30.0)) return;
    shown_s = wall;
    shown = true;
    std::fprintf(stderr, "%ssimulated %.0f s, %zu requests, %.0f s of wall time%s", tty ? "\r" : "",
                 to_seconds(now), requests, wall, tty ? "   " : "\n");
    std::fflush(stderr);
  });
  if (trace) simulation.record_steps(2'000'000);  // per replica
  RunResult r = simulation.run();
  if (shown && tty) std::fputc('\n', stderr);
  wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

// Writes every output asked for (under temporary names until publish).
void write_outputs(const po::variables_map& vm, const RunOutputs& o, const Scenario& sc,
                   const RunResult& r, const Summary& s,
                   const std::function<const std::string&()>& report_once) {
  // A write that fails (disk full, a path gone) is an unusable output path: exit 2, nothing
  // published.
  auto writing = [](const char* option, const auto& write) {
    try {
      write();
    } catch (const InputError&) {
      throw;
    } catch (const std::exception& e) {
      throw InputError(option, "", std::string("cannot write: ") + e.what());
    }
  };
  if (vm.count("out")) writing("--out", [&] { write_results_h5(o.h5, sc, r, s, report_once()); });
  if (vm.count("csv")) writing("--csv", [&] { write_results_csv(o.csv, r, s); });
  if (vm.count("trace")) {
    writing("--trace",
            [&] { write_chrome_trace(o.trace, r, static_cast<std::size_t>(o.trace_requests)); });
  }
  if (vm.count("prometheus")) {
    writing("--prometheus", [&] {
      write_openmetrics((std::filesystem::path(o.prom) / "backfill.om").string(), sc, r, o.epoch);
    });
  }
  if (vm.count("plots")) {
    // The dashboard is drawn from the result file: --out's when given, else one written for it
    // (and removed) in the plots' temporary folder.
    const std::string h5 =
        vm.count("out") ? o.h5 : (std::filesystem::path(o.plots) / ".run.h5").string();
    if (!vm.count("out"))
      writing("--plots", [&] { write_results_h5(h5, sc, r, s, report_once()); });
    std::string why;
    const int st = run_plot(o.plotter, {h5, "--out", o.plots + "/"}, why);
    if (!vm.count("out")) std::filesystem::remove(h5);
    // Its bad-input status stays one (2); anything else is a failure of kvfleet's own (1).
    if (st == 2) throw InputError("--plots", "", why + "; nothing was written");
    if (st != 0)
      throw std::runtime_error("--plots: kvfleet-plot failed (exit status " + std::to_string(st) +
                               (why.empty() ? "" : ": " + why) + "); nothing was written");
  }
}

// The report and where the outputs went.
void print_run(const po::variables_map& vm, const std::string& report, const RunResult& r,
               const Summary& s, double wall_s) {
  std::cout << report;
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "\nSimulated %.1f s in %.2f s of wall time (%.0f requests/s, %llu events).\n",
                to_seconds(r.end_time), wall_s, wall_s > 0 ? s.requests / wall_s : 0.0,
                static_cast<unsigned long long>(r.events));
  std::cout << buf;
  if (vm.count("out")) std::cout << "Results: " << vm["out"].as<std::string>() << "\n";
  if (vm.count("csv")) std::cout << "CSV tables: " << vm["csv"].as<std::string>() << "/\n";
  if (vm.count("trace")) std::cout << "Trace: " << vm["trace"].as<std::string>() << "\n";
  if (vm.count("prometheus"))
    std::cout << "OpenMetrics: " << vm["prometheus"].as<std::string>() << "/backfill.om\n";
  if (vm.count("plots"))
    std::cout << "Dashboard: " << vm["plots"].as<std::string>()
              << "/ (state and latency pages: PNG, SVG, dashboard.pdf)\n";
}

}  // namespace

int cmd_run(const std::vector<std::string>& args) {
  const po::options_description opts = run_options();
  const po::variables_map vm = parse_command(args, opts, "scenario", "run");
  if (vm.count("help")) {
    std::cout << "Usage: kvfleet run [SCENARIO] [options]\n\nSimulates SCENARIO (YAML; default: "
                 "the built-in scenarios/default.yaml) and prints the report.\n\n"
              << opts;
    return 0;
  }
  std::vector<std::string> sets;
  if (vm.count("set")) sets = vm["set"].as<std::vector<std::string>>();

  Scenario sc = vm.count("scenario") ? load_scenario_file(vm["scenario"].as<std::string>(), sets)
                                     : load_scenario_text(builtin_default_scenario(),
                                                          "<built-in default.yaml>", ".", sets);
  OutputSet outputs;
  // An output may not replace a file the scenario reads (a trace, a profile, a config.json).
  for (const auto& [key, path] : scenario_input_files(sc.resolved_yaml))
    for (const char* opt : {"out", "trace"})
      if (vm.count(opt) && same_file(vm[opt].as<std::string>(), path))
        throw InputError(std::string("--") + opt, "",
                         vm[opt].as<std::string>() + " is an input of the scenario (" + key +
                             "): write it elsewhere");
  const RunOutputs o = plan_outputs(vm, outputs);
  Simulation simulation(sc);
  double wall_s = 0;
  const RunResult r = simulate(simulation, vm.count("trace") > 0, wall_s);
  const Summary s = summarize(r);
  // The report, made once for the terminal, --out and --plots alike.
  std::string report;
  auto report_once = [&]() -> const std::string& {
    if (report.empty()) report = report_text(sc, r, s);
    return report;
  };
  write_outputs(vm, o, sc, r, s, report_once);
  outputs.publish();
  if (!vm.count("quiet")) print_run(vm, report_once(), r, s, wall_s);
  return 0;
}

}  // namespace kvfleet::cli
