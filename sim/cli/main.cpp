// kvfleet: the headless command line.
//   kvfleet run [SCENARIO] [--out FILE.h5] [--csv DIR] [--set key=value ...]
//   kvfleet schema            (the scenario reference, Markdown)
//   kvfleet presets           (model and GPU presets)
// Exit status: 0 success, 1 internal failure, 2 bad input (scenario, trace or command line).
#include <unistd.h>
#include <boost/program_options.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "sim/core/error.h"
#include "sim/io/results.h"
#include "sim/metrics/report.h"
#include "sim/metrics/summary.h"
#include "sim/scenario.h"
#include "sim/simulation.h"

namespace po = boost::program_options;
using namespace kvfleet::sim;

namespace {

constexpr const char* kUsage =
    "kvfleet: a discrete-event simulator of LLM serving fleets bound by KV-cache memory.\n\n"
    "Usage: kvfleet <command> [options]\n\n"
    "Commands:\n"
    "  run [SCENARIO]   simulate a scenario and print the report (default: the built-in\n"
    "                   scenarios/default.yaml)\n"
    "  schema           print the scenario reference (Markdown) generated from the code\n"
    "  presets          list the model and GPU presets\n\n"
    "Run 'kvfleet <command> --help' for a command's options.\n";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

int cmd_run(const std::vector<std::string>& args) {
  po::options_description opts("Options of 'kvfleet run [SCENARIO]'");
  opts.add_options()("help,h", "show this help")("out,o", po::value<std::string>(),
                                                 "write the HDF5 result file here (FILE.h5)")(
      "csv", po::value<std::string>(), "also write each result table as CSV into this folder")(
      "set,s", po::value<std::vector<std::string>>()->composing(),
      "override a scenario key: --set pools[0].engine.max_num_seqs=64 (repeatable)")(
      "quiet,q", "print no report");
  po::options_description hidden;
  hidden.add_options()("scenario", po::value<std::string>(), "scenario file");
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description pos;
  pos.add("scenario", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(std::string("kvfleet run: ") + e.what());
  }
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
  // Check output locations before spending time on the run.
  for (const char* key : {"out", "csv"}) {
    if (!vm.count(key)) continue;
    const std::filesystem::path parent =
        std::filesystem::path(vm[key].as<std::string>()).parent_path();
    if (!parent.empty() && !std::filesystem::is_directory(parent))
      throw InputError("--" + std::string(key), "", "folder does not exist: " + parent.string());
  }

  const auto t0 = std::chrono::steady_clock::now();
  Simulation simulation(sc);
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
  RunResult r = simulation.run();
  if (shown && tty) std::fputc('\n', stderr);
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const Summary s = summarize(r);
  if (vm.count("out")) write_results_h5(vm["out"].as<std::string>(), sc, r, s);
  if (vm.count("csv")) write_results_csv(vm["csv"].as<std::string>(), r, s);
  if (!vm.count("quiet")) {
    print_report(std::cout, sc, r, s);
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "\nSimulated %.1f s in %.2f s of wall time (%.0f requests/s, %llu events).\n",
                  to_seconds(r.end_time), wall_s, wall_s > 0 ? s.requests / wall_s : 0.0,
                  static_cast<unsigned long long>(r.events));
    std::cout << buf;
    if (vm.count("out")) std::cout << "Results: " << vm["out"].as<std::string>() << "\n";
    if (vm.count("csv")) std::cout << "CSV tables: " << vm["csv"].as<std::string>() << "/\n";
  }
  return 0;
}

int cmd_schema(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << "Usage: kvfleet schema\n\nPrints the scenario reference (Markdown) generated from "
                 "the parameter declarations: every key, type, unit, default and description.\n";
    return 0;
  }
  if (!args.empty()) throw UsageError("kvfleet schema: unexpected argument '" + args[0] + "'");
  std::cout << scenario_reference_markdown();
  return 0;
}

int cmd_presets(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << "Usage: kvfleet presets\n\nLists the built-in model and GPU presets.\n";
    return 0;
  }
  if (!args.empty()) throw UsageError("kvfleet presets: unexpected argument '" + args[0] + "'");
  std::printf("%-14s %6s %7s %6s %4s %12s %14s\n", "model", "layers", "hidden", "heads", "kv",
              "params", "KV B/token");
  for (const auto& m : model_presets())
    std::printf("%-14s %6d %7d %6d %4d %11.1fB %14.0f\n", m.name.c_str(), m.num_layers,
                m.hidden_size, m.num_attention_heads, m.num_kv_heads, m.num_params / 1e9,
                m.kv_bytes_per_token(2.0));
  std::printf("\n%-10s %10s %10s %12s %12s\n", "gpu", "GiB", "GB/s", "bf16 TF/s", "fp8 TF/s");
  for (const auto& g : gpu_presets())
    std::printf("%-10s %10.1f %10.0f %12.1f %12.1f\n", g.name.c_str(),
                g.memory_bytes / (1024.0 * 1024 * 1024), g.memory_bandwidth_Bps / 1e9,
                g.bf16_flops / 1e12, g.fp8_flops / 1e12);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  const std::string cmd = args[0];
  args.erase(args.begin());
  try {
    if (cmd == "run") return cmd_run(args);
    if (cmd == "schema") return cmd_schema(args);
    if (cmd == "presets") return cmd_presets(args);
    std::cerr << "kvfleet: unknown command '" << cmd << "'\n\n" << kUsage;
    return 2;
  } catch (const InputError& e) {
    std::cerr << "kvfleet: error: " << e.what() << "\n";
    return 2;
  } catch (const UsageError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "kvfleet: internal error: " << e.what() << "\n";
    return 1;
  }
}
