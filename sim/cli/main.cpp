// kvfleet: the headless command line.
//   kvfleet run [SCENARIO] [--out FILE.h5] [--csv DIR] [--set key=value ...]
//   kvfleet sweep SWEEP.yaml --out RESULTS.h5 [--threads N] [--resume] [--shard k/N]
//   kvfleet merge OUT.h5 PART.h5 ...
//   kvfleet capacity [SCENARIO] --slo ttft_p99=2s,tpot_p99=100ms [--metric arrival_rate|users]
//   kvfleet schema            (the scenario reference, Markdown)
//   kvfleet presets           (model and GPU presets)
//   kvfleet outputs           (the output reference, Markdown)
// Exit status (docs/scenarios.md, "Errors and exit codes"): 0 success with every output complete;
// 2 bad input or an unusable output path (one message naming file, line or row, and key);
// sweep: 100 + the number of failed points (at most 200) when points failed; 130 and 143 after
// SIGINT and SIGTERM (temporaries removed); 1 only for a defect of kvfleet itself.
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
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

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
#include "sim/simulation/scenario.h"
#include "sim/simulation/simulation.h"
#include "sim/sweep/capacity.h"
#include "sim/sweep/sizing.h"
#include "sim/sweep/sweep.h"

namespace po = boost::program_options;
using namespace kvfleet::sim;

namespace {

constexpr const char* kUsage =
    "kvfleet: a discrete-event simulator of LLM serving fleets bound by KV-cache memory.\n\n"
    "Usage: kvfleet <command> [options]\n\n"
    "Commands:\n"
    "  run [SCENARIO]   simulate a scenario and print the report (default: the built-in\n"
    "                   scenarios/default.yaml)\n"
    "  sweep SWEEP.yaml run a sweep of scenarios on all cores (MPI: mpirun -n N kvfleet sweep)\n"
    "  merge OUT PARTS  join the result files of sweep shards (--shard k/N)\n"
    "  capacity [SCEN]  the highest load at which a latency SLO holds, with a 95% interval\n"
    "  size [SCEN]      how many replicas and GPUs serve a target load within an SLO, at what "
    "cost\n"
    "  model-from-hf CONFIG  a Hugging Face config.json as a scenario's models: entry\n"
    "  plot RESULTS.h5  a sweep's metric against an axis as PNG or SVG (--x, --y, --series)\n"
    "  replay RUN       replay a measured vLLM run, inference-perf folder or vllm bench\n"
    "                   result with the settings of its own files and compare the latencies\n"
    "  schema           print the scenario reference (Markdown) generated from the code\n"
    "  outputs          print the output reference: every file, dataset and column\n"
    "  presets          list the model and GPU presets\n\n"
    "Run 'kvfleet <command> --help' for a command's options.\n";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Whether two paths name the same existing file (an output must not overwrite an input).
bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return std::filesystem::exists(a, ec) && std::filesystem::exists(b, ec) &&
         std::filesystem::equivalent(a, b, ec);
}

// Parses a command's options with one positional argument named `positional`.
po::variables_map parse_command(const std::vector<std::string>& args,
                                const po::options_description& opts, const char* positional,
                                const char* command) {
  po::options_description hidden;
  hidden.add_options()(positional, po::value<std::string>(), positional);
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description pos;
  pos.add(positional, 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(std::string("kvfleet ") + command + ": " + e.what());
  }
  return vm;
}

// A benchmark client's results (inference-perf folder, vllm bench serve JSON) replayed.
// Where a benchmark replay's --write-scenario keeps the trace its scenario reads: beside it,
// NAME.trace.csv.
std::string kept_trace_path(const std::string& scenario_path) {
  const std::filesystem::path w(scenario_path);
  return (w.parent_path() / (w.stem().string() + ".trace.csv")).string();
}

int replay_bench(const po::variables_map& vm, const std::string& path, const std::string& profile,
                 const std::string& model, const std::string& gpu, const std::string& write) {
  BenchOptions bo;
  bo.path = path;
  bo.profile = profile;
  bo.model = model;
  bo.gpu = gpu;
  if (vm.count("cost-model")) bo.cost_model = vm["cost-model"].as<std::string>();
  if (vm.count("leave-out")) bo.leave_out = vm["leave-out"].as<std::vector<std::string>>();
  if (vm.count("model-config")) bo.model_config = vm["model-config"].as<std::string>();
  if (vm.count("engine-args")) bo.engine_args = vm["engine-args"].as<std::string>();
  if (vm.count("tp")) bo.tensor_parallel = vm["tp"].as<int>();
  if (vm.count("tp") && (bo.tensor_parallel < 1 || bo.tensor_parallel > 64))
    throw InputError("--tp", "", "must be from 1 to 64");
  BenchReplay plan = plan_bench_replay(bo);
  OutputSet outputs;
  std::string out_h5, out_yaml, out_trace, trace_name;
  if (vm.count("out")) out_h5 = outputs.add_file("--out", vm["out"].as<std::string>());
  if (!write.empty()) {
    out_yaml = outputs.add_file("--write-scenario", write);
    if (!plan.trace.empty()) {
      trace_name = std::filesystem::path(kept_trace_path(write)).filename().string();
      out_trace = outputs.add_file("--write-scenario", kept_trace_path(write));
    }
  }
  // The trace the scenario reads, for this run: a temporary removed when the command ends.
  struct TempTrace {
    std::string path;
    ~TempTrace() {
      if (path.empty()) return;
      std::error_code ec;
      std::filesystem::remove(path, ec);
      forget_temp(path);
    }
  } run_trace;
  auto write_trace = [&](const std::string& file) {
    write_text_atomically(file, [&](std::ostream& o) {
      o << "arrived_at,num_prefill_tokens,num_decode_tokens\n";
      char buf[96];
      for (const auto& row : plan.trace) {
        std::snprintf(buf, sizeof buf, "%.6f,%.0f,%.0f\n", row[0], row[1], row[2]);
        o << buf;
      }
    });
  };
  if (!plan.trace.empty()) {
    run_trace.path = (std::filesystem::temp_directory_path() /
                      ("kvfleet-replay-" + std::to_string(getpid()) + ".trace.csv"))
                         .string();
    track_temp(run_trace.path);
    write_trace(run_trace.path);
    plan.scenario["workload"]["path"] = run_trace.path;
  }
  YAML::Emitter em;
  em.SetDoublePrecision(12);
  em << plan.scenario;
  const Scenario sc = load_scenario_text(em.c_str(), "<replay of " + path + ">", ".", {});
  // The scenario kept in --out names the trace where --write-scenario keeps it, not this
  // process's temporary: the same command gives the same file.
  std::string stored = sc.resolved_yaml;
  if (!run_trace.path.empty()) {
    const std::string kept =
        write.empty()
            ? std::string("kvfleet-replay.trace.csv (not kept: --write-scenario keeps it)")
            : kept_trace_path(write);
    for (std::size_t at = 0; (at = stored.find(run_trace.path, at)) != std::string::npos;
         at += kept.size())
      stored.replace(at, run_trace.path.size(), kept);
  }
  Simulation simulation(sc);
  RunResult r = simulation.run();
  const Summary s = summarize(r);
  const std::string report = report_text(sc, r, s);
  if (!out_h5.empty()) write_results_h5(out_h5, sc, r, s, report, &stored);
  if (!out_yaml.empty()) {
    if (!plan.trace.empty()) {
      write_trace(out_trace);
      plan.scenario["workload"]["path"] = trace_name;
    }
    YAML::Emitter ey;
    ey.SetDoublePrecision(12);
    ey << plan.scenario;
    write_text_atomically(out_yaml, [&](std::ostream& o) {
      o << "# kvfleet replay of the " << plan.format << " result " << path << "\n"
        << ey.c_str() << "\n";
    });
  }
  outputs.publish();
  if (!vm.count("quiet")) std::cout << report;
  std::cout << "\nReplay of the " << plan.format << " result " << path << ":\n";
  for (const auto& n : plan.notes) std::cout << "  " << n << "\n";
  double mae = 0;
  std::cout << bench_comparison(plan, sc, r, &mae);
  if (std::isfinite(mae)) {
    char buf[120];
    std::snprintf(buf, sizeof buf, "\nMean absolute error over the statistics measured: %.1f%%\n",
                  100 * mae);
    std::cout << buf;
  }
  return 0;
}

int cmd_replay(const std::vector<std::string>& args) {
  po::options_description opts("Options of 'kvfleet replay RUN'");
  std::string profile, model, gpu, write;
  opts.add_options()("help,h", "show this help")(
      "profile,p", po::value(&profile),
      "price steps with this calibration profile (kvfleet-calibrate run or import); default: "
      "the roofline")("cost-model", po::value<std::string>(),
                      "without a profile: roofline (default) or fitted (per-operation "
                      "efficiencies fitted to the public GPU profiles)")(
      "leave-out", po::value<std::vector<std::string>>()->multitoken(),
      "with --cost-model fitted: public fits not used, by GPU name (validation without the "
      "run's own GPU)")("model", po::value(&model),
                        "model preset (default: the one matching the run's model name)")(
      "model-config", po::value<std::string>(),
      "benchmark results: the model's Hugging Face config.json instead of a preset")(
      "gpu", po::value(&gpu),
      "GPU preset (default for a run folder: the one matching its hardware; required for "
      "benchmark results, which do not record it)")(
      "engine-args", po::value<std::string>(),
      "benchmark results: the server's vLLM engine arguments, as a JSON or YAML mapping or a "
      "`vllm serve MODEL --flag value` command line in a file")(
      "tp", po::value<int>(), "benchmark results: tensor-parallel GPUs per replica")(
      "write-scenario", po::value(&write), "also write the scenario it built (YAML) here")(
      "out,o", po::value<std::string>(), "write the HDF5 result file here (FILE.h5)")(
      "quiet,q", "print the comparison only, not the run's report");
  const po::variables_map vm = parse_command(args, opts, "run_dir", "replay");
  if (!vm.count("help") && !vm.count("run_dir"))
    throw UsageError(
        "kvfleet replay: RUN is required (a run folder with meta.json and requests.jsonl, an "
        "inference-perf result folder, or a vllm bench serve result JSON)");
  if (vm.count("help")) {
    std::cout << "Usage: kvfleet replay RUN [options]\n\nReplays a measured serving run with "
                 "the settings of its own files and compares TTFT, TPOT and E2E with the "
                 "measurement. RUN is one of:\n"
                 "  a run folder: meta.json, requests.jsonl and, optionally, config.json (engine "
                 "settings, parallelism and link as recorded);\n"
                 "  an inference-perf result folder: config.yaml and the stage_N / summary "
                 "lifecycle metrics (each load stage compared apart);\n"
                 "  a `vllm bench serve` result JSON (--save-result; --save-detailed adds the "
                 "requests' own lengths).\n"
                 "Benchmark results do not record the GPU or the server's settings: give --gpu "
                 "and, where they differ from kvfleet's defaults, --engine-args.\n\n"
              << opts;
    return 0;
  }
  if (vm.count("cost-model") && vm["cost-model"].as<std::string>().empty())
    throw InputError("--cost-model", "",
                     "is empty: name roofline or fitted, or leave the option out for the "
                     "roofline");
  if (vm.count("profile") && vm.count("cost-model"))
    throw InputError("--cost-model", "",
                     "a profile prices the steps: give --profile or --cost-model, not both");
  if (vm.count("profile") && profile.empty())
    throw InputError("--profile", "",
                     "is empty: name a profile file, or leave the option out "
                     "for the roofline");
  const std::string run = vm["run_dir"].as<std::string>();
  // An output may not replace an input: the result file, a folder's files, the engine
  // arguments, the model's config.json or the profile (a replay once turned its own JSON into
  // HDF5).
  {
    std::vector<std::string> inputs = {run, profile};
    for (const char* o : {"engine-args", "model-config"})
      if (vm.count(o)) inputs.push_back(vm[o].as<std::string>());
    std::error_code ec;
    if (std::filesystem::is_directory(run, ec))
      for (const auto& f : std::filesystem::directory_iterator(run, ec))
        inputs.push_back(f.path().string());
    std::vector<std::pair<std::string, std::string>> outs;
    if (vm.count("out")) outs.emplace_back("--out", vm["out"].as<std::string>());
    if (!write.empty()) {
      outs.emplace_back("--write-scenario", write);
      outs.emplace_back("--write-scenario", kept_trace_path(write));
    }
    for (const auto& [option, out] : outs)
      for (const auto& in : inputs)
        if (!in.empty() && same_file(out, in))
          throw InputError(option, "",
                           out + " is also an input of this replay: write it elsewhere");
  }
  const std::string cost_model =
      vm.count("cost-model") ? vm["cost-model"].as<std::string>() : std::string();
  const std::vector<std::string> leave_out = vm.count("leave-out")
                                                 ? vm["leave-out"].as<std::vector<std::string>>()
                                                 : std::vector<std::string>();
  replay_cost_model_yaml(cost_model, leave_out);  // refuses another name before any work
  if (!detect_bench_format(run).empty()) return replay_bench(vm, run, profile, model, gpu, write);
  {
    std::error_code ec;
    const auto st = std::filesystem::status(run, ec);
    if (!std::filesystem::exists(st)) throw InputError(run, "", "not found");
    if (!std::filesystem::is_directory(st))
      throw InputError(run, "",
                       "is not a vllm bench serve result JSON (a .json file with ttft_ms, "
                       "ttfts or request_throughput), and a measured run or an inference-perf "
                       "result is a folder");
  }
  for (const char* o : {"model-config", "engine-args", "tp"})
    if (vm.count(o))
      throw InputError(std::string("--") + o, "",
                       "applies to benchmark results (an inference-perf folder or a vllm bench "
                       "serve JSON); " +
                           run + " is a run folder, whose files record it");
  ReplayOptions ro{run, profile, model, gpu, cost_model, leave_out};
  const ReplayPlan plan = plan_replay(ro);
  OutputSet outputs;
  std::string out_h5, out_yaml;
  if (vm.count("out")) out_h5 = outputs.add_file("--out", vm["out"].as<std::string>());
  if (!write.empty()) out_yaml = outputs.add_file("--write-scenario", write);
  const Scenario sc = load_scenario_text(plan.yaml, "<replay of " + ro.run_dir + ">", ".", {});
  const MeasuredLatencies measured =
      read_measured((std::filesystem::path(ro.run_dir) / "requests.jsonl").string());
  Simulation simulation(sc);
  RunResult r = simulation.run();
  const Summary s = summarize(r);
  const std::string report = report_text(sc, r, s);
  if (vm.count("out")) write_results_h5(out_h5, sc, r, s, report);
  if (!write.empty()) write_text_atomically(out_yaml, [&](std::ostream& o) { o << plan.yaml; });
  outputs.publish();
  if (!vm.count("quiet")) std::cout << report;
  std::cout << "\nReplay of " << ro.run_dir << ", settings from its files:\n";
  for (const auto& n : plan.notes) std::cout << "  " << n << "\n";
  double mae = 0;
  std::cout << "\n" << comparison_table(measured, s, &mae);
  char buf[120];
  if (std::isfinite(mae)) {
    std::snprintf(buf, sizeof buf, "\nMean absolute error over the twelve: %.1f%%\n", 100 * mae);
    std::cout << buf;
  }
  return 0;
}

// kvfleet-plot (gui/, built with Qt6 Charts) beside this program, or "" when it was not built:
// the simulator core stays free of Qt.
std::string plot_program(const char* argv0) {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const auto plot =
      (ec ? std::filesystem::path(argv0 ? argv0 : "") : self).parent_path() / "kvfleet-plot";
  return std::filesystem::exists(plot) ? plot.string() : "";
}

// Runs kvfleet-plot with `args` and waits; its list of files written (temporary names) is
// dropped, its error messages are kept in `errors` (the last line, without the tool's prefix) so
// that kvfleet's own message carries them. Returns its exit status.
int run_plot(const std::string& program, const std::vector<std::string>& args,
             std::string& errors) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(program.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return 127;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (spawned != 0) {
    ::close(pipe_fds[0]);
    return 127;
  }
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(pipe_fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (text.size() < (1 << 16)) text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(pipe_fds[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  // The last non-empty line is the tool's own message (libraries may print before it).
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  errors =
      text.substr(text.find_last_of('\n') == std::string::npos ? 0 : text.find_last_of('\n') + 1);
  for (const char* prefix : {"kvfleet plot: error: ", "kvfleet plot: "})
    if (errors.rfind(prefix, 0) == 0) errors = errors.substr(std::strlen(prefix));
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int cmd_run(const std::vector<std::string>& args) {
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
  // Every output path is checked before the run, written under a temporary name, and all are
  // published together when every one is complete (io/output_set.h).
  OutputSet outputs;
  std::string out_h5, out_csv, out_trace, out_prom;
  for (const char* key : {"out", "trace"})
    if (vm.count(key) && vm.count("scenario") &&
        same_file(vm[key].as<std::string>(), vm["scenario"].as<std::string>()))
      throw InputError(std::string("--") + key, "",
                       vm[key].as<std::string>() + " is the scenario file itself");
  if (vm.count("out")) out_h5 = outputs.add_file("--out", vm["out"].as<std::string>());
  if (vm.count("csv")) out_csv = outputs.add_folder("--csv", vm["csv"].as<std::string>());
  if (vm.count("trace")) out_trace = outputs.add_file("--trace", vm["trace"].as<std::string>());
  const long long trace_requests = vm["trace-requests"].as<long long>();
  if (trace_requests < 0 || trace_requests > 100'000'000)
    throw InputError("--trace-requests", "", "must be between 0 and 100000000");
  double epoch = 0;
  if (vm.count("prometheus-epoch")) {
    epoch = vm["prometheus-epoch"].as<double>();
    if (!(epoch >= 0 && epoch <= 1e10))
      throw InputError("--prometheus-epoch", "",
                       "must be seconds since 1970 between 0 and 1e10 (the year 2286)");
  } else {
    epoch =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  }
  if (vm.count("prometheus"))
    out_prom = outputs.add_folder("--prometheus", vm["prometheus"].as<std::string>());
  std::string out_plots, plotter;
  if (vm.count("plots")) {
    plotter = plot_program(nullptr);
    if (plotter.empty())
      throw InputError("--plots", "",
                       "needs kvfleet-plot, which this build lacks (built without Qt6 Charts: "
                       "KVFLEET_WITH_GUI=OFF)");
    out_plots = outputs.add_folder("--plots", vm["plots"].as<std::string>());
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
  if (vm.count("trace")) simulation.record_steps(2'000'000);  // per replica
  RunResult r = simulation.run();
  if (shown && tty) std::fputc('\n', stderr);
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const Summary s = summarize(r);
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
  // The report, made once for the terminal, --out and --plots alike.
  std::string report;
  auto report_once = [&]() -> const std::string& {
    if (report.empty()) report = report_text(sc, r, s);
    return report;
  };
  if (vm.count("out")) writing("--out", [&] { write_results_h5(out_h5, sc, r, s, report_once()); });
  if (vm.count("csv")) writing("--csv", [&] { write_results_csv(out_csv, r, s); });
  if (vm.count("trace")) {
    writing("--trace",
            [&] { write_chrome_trace(out_trace, r, static_cast<std::size_t>(trace_requests)); });
  }
  if (vm.count("prometheus")) {
    writing("--prometheus", [&] {
      write_openmetrics((std::filesystem::path(out_prom) / "backfill.om").string(), sc, r, epoch);
    });
  }
  if (vm.count("plots")) {
    // The dashboard is drawn from the result file: --out's when given, else one written for it
    // (and removed) in the plots' temporary folder.
    const std::string h5 =
        vm.count("out") ? out_h5 : (std::filesystem::path(out_plots) / ".run.h5").string();
    if (!vm.count("out"))
      writing("--plots", [&] { write_results_h5(h5, sc, r, s, report_once()); });
    std::string why;
    const int st = run_plot(plotter, {h5, "--out", out_plots + "/"}, why);
    if (!vm.count("out")) std::filesystem::remove(h5);
    // Its bad-input status stays one (2); anything else is a failure of kvfleet's own (1).
    if (st == 2) throw InputError("--plots", "", why + "; nothing was written");
    if (st != 0)
      throw std::runtime_error("--plots: kvfleet-plot failed (exit status " + std::to_string(st) +
                               (why.empty() ? "" : ": " + why) + "); nothing was written");
  }
  outputs.publish();
  if (!vm.count("quiet")) {
    std::cout << report_once();
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
  return 0;
}

// The sweep's progress on stderr: a bar with rate and ETA on a terminal, a line every 10 s
// otherwise.
class SweepProgress {
 public:
  SweepProgress() : tty_(isatty(STDERR_FILENO) != 0), t0_(std::chrono::steady_clock::now()) {}
  void operator()(std::size_t done, std::size_t todo, std::size_t failed, bool last = false) {
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    if (!tty_ && wall - last_ < 10 && done < todo && !last) return;
    last_ = wall;
    const double rate = wall > 0 ? done / wall : 0;
    const double eta = rate > 0 ? (todo - done) / rate : 0;
    const int w = 30;
    const int fill = todo ? static_cast<int>(w * done / todo) : w;
    std::fprintf(stderr, "%s[%s%s] %zu/%zu points, %.1f points/s, ETA %.0f s, %zu failed%s",
                 tty_ ? "\r" : "", std::string(fill, '#').c_str(),
                 std::string(w - fill, '.').c_str(), done, todo, rate, eta, failed,
                 tty_ ? (done >= todo || last ? "\n" : "   ") : "\n");
    std::fflush(stderr);
  }

 private:
  bool tty_;
  std::chrono::steady_clock::time_point t0_;
  double last_ = -1e9;
};

int cmd_sweep(const std::vector<std::string>& args, Mpi& mpi) {
  po::options_description opts("Options of 'kvfleet sweep SWEEP.yaml'");
  opts.add_options()("help,h", "show this help")("out,o", po::value<std::string>(),
                                                 "the HDF5 results file (required)")(
      "threads,j", po::value<int>()->default_value(0),
      "threads (0: every core this process may use: SLURM_CPUS_PER_TASK, else the CPU affinity "
      "mask)")("resume",
               "skip the points already in --out (made by this sweep file, or one that adds "
               "comments, values or replicates)")("shard", po::value<std::string>(),
                                                  "run only shard k of N: --shard k/N (0-based)")(
      "checkpoint-s", po::value<double>()->default_value(10),
      "rewrite --out with the points done every this many seconds")(
      "timing",
      "keep each point's wall-clock time (/points wall_s); without it the file is "
      "byte-identical for the same sweep")("quiet,q", "no progress output");
  const po::variables_map vm = parse_command(args, opts, "sweep", "sweep");
  if (vm.count("help")) {
    std::cout << "Usage: kvfleet sweep SWEEP.yaml --out RESULTS.h5 [options]\n\nRuns every "
                 "point of the sweep (docs/sweeps.md) and writes one HDF5 file.\n\n"
              << opts;
    return 0;
  }
  if (!vm.count("sweep")) throw UsageError("kvfleet sweep: the sweep file is missing");
  if (!vm.count("out")) throw UsageError("kvfleet sweep: --out RESULTS.h5 is required");
  const std::string out = vm["out"].as<std::string>();
  check_output_file("--out", out);
  SweepOptions opt;
  opt.threads = vm["threads"].as<int>();
  if (opt.threads < 0) throw InputError("--threads", "", "must be >= 0 (0: all cores)");
  opt.checkpoint_every_s = vm["checkpoint-s"].as<double>();
  if (!(opt.checkpoint_every_s > 0 && opt.checkpoint_every_s <= 1e6))
    throw InputError("--checkpoint-s", "", "must be positive (and at most 1e6 s)");
  if (vm.count("shard")) {
    const std::string sh = vm["shard"].as<std::string>();
    const auto slash = sh.find('/');
    auto whole = [&](const std::string& t, int& v) {
      const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
      return !t.empty() && r.ec == std::errc() && r.ptr == t.data() + t.size();
    };
    if (slash == std::string::npos || !whole(sh.substr(0, slash), opt.shard) ||
        !whole(sh.substr(slash + 1), opt.shards))
      throw InputError("--shard", "", "'" + sh + "' is not k/N (two whole numbers)");
    if (opt.shards < 1 || opt.shard < 0 || opt.shard >= opt.shards)
      throw InputError("--shard", "", "'" + sh + "': need 0 <= k < N");
    if (mpi.size() > 1)
      throw InputError("--shard", "", "use either MPI ranks or --shard, not both");
  }
  if (mpi.size() > 1) {
    opt.shard = mpi.rank();
    opt.shards = mpi.size();
  }
  const SweepSpec spec = load_sweep_file(vm["sweep"].as<std::string>());
  validate_sweep(spec);  // bad input: exit 2 before any point runs
  if (same_file(out, vm["sweep"].as<std::string>()) ||
      (!spec.base.empty() && same_file(out, spec.base)))
    throw InputError("--out", "", out + " is an input of the sweep (its file or base scenario)");
  // One sweep at a time writes --out (rank 0 under MPI); the path must take a file.
  std::optional<OutputLock> lock;
  if (mpi.rank() == 0) {
    lock.emplace("--out", out);
    remove_stale_temps(out);
    check_writable("--out", out);
  }
  SweepResults previous;
  const bool resume = vm.count("resume") && std::filesystem::exists(out);
  if (resume) previous = read_sweep_h5(out);
  SweepResults results = prepare_sweep(spec, resume ? &previous : nullptr);
  results.record_wall_time = vm.count("timing") > 0;
  const bool root = mpi.rank() == 0;
  const bool quiet = vm.count("quiet") || !root;
  if (!quiet) {
    std::fprintf(stderr, "kvfleet sweep: %zu points (%zu already done)%s\n", results.points.size(),
                 results.completed(),
                 mpi.size() > 1 ? (", " + std::to_string(mpi.size()) + " MPI ranks").c_str() : "");
  }
  SweepProgress bar;
  // Under MPI, rank 0's display counts every rank's points (the others report as they go).
  Mpi::Progress last_mine;
  if (mpi.size() > 1) {
    opt.on_progress = [&](const SweepResults& r, std::size_t done, std::size_t to_do) {
      last_mine = {static_cast<std::int64_t>(done), static_cast<std::int64_t>(to_do),
                   static_cast<std::int64_t>(r.failed())};
      if (!root) return mpi.send_progress(last_mine, false);
      const Mpi::Progress all = mpi.total_progress(last_mine);
      // Rank 0's own end is not the sweep's: its last line comes after every rank's.
      if (!quiet && all.done < all.to_do)
        bar(static_cast<std::size_t>(all.done), static_cast<std::size_t>(all.to_do),
            static_cast<std::size_t>(all.failed));
    };
  } else if (!quiet) {
    opt.on_progress = [&](const SweepResults& r, std::size_t done, std::size_t to_do) {
      bar(done, to_do, r.failed());
    };
  }
  // Checkpoints keep an interrupted sweep resumable (single process or one shard). One that
  // cannot be written stops the sweep (exit 2): the points done so far are in the last one.
  auto write_out = [&](const SweepResults& r) {
    try {
      write_sweep_h5(out, r);
    } catch (const InputError&) {
      throw;
    } catch (const std::exception& e) {
      throw InputError("--out", "", out + ": cannot write: " + e.what());
    }
  };
  if (mpi.size() == 1) opt.on_checkpoint = write_out;
  run_sweep(spec, results, opt);
  if (mpi.size() > 1) {
    // Every rank's final count, then rank 0's last line with all of them.
    if (!root) mpi.send_progress(last_mine, true);
    mpi.finish_progress();
    if (root && !quiet) {
      const Mpi::Progress all = mpi.total_progress(last_mine);
      bar(static_cast<std::size_t>(all.done), static_cast<std::size_t>(all.to_do),
          static_cast<std::size_t>(all.failed), true);
    }
    // Every rank sends its points to rank 0, which writes the file.
    std::vector<PointResult> mine;
    for (const auto& p : results.points)
      if (p.done && static_cast<int>(p.point % mpi.size()) == mpi.rank()) mine.push_back(p);
    const auto parts = mpi.gather(serialize_points(mine));
    if (root) {
      for (std::size_t k = 1; k < parts.size(); ++k) {
        for (auto& p : deserialize_points(parts[k])) results.points[p.point] = std::move(p);
      }
    }
  }
  if (!root) return 0;
  write_out(results);
  const std::size_t failed = results.failed();
  std::cout << "kvfleet sweep: " << results.completed() << " of " << results.points.size()
            << " points done, " << failed << " failed -> " << out << "\n";
  for (const auto& p : results.points) {
    if (p.done && !p.ok) std::cout << "  point " << p.point << " failed: " << p.error << "\n";
  }
  return failed == 0 ? 0 : 100 + static_cast<int>(std::min<std::size_t>(failed, 100));
}

int cmd_merge(const std::vector<std::string>& args) {
  const bool help = !args.empty() && (args[0] == "--help" || args[0] == "-h");
  if (help) {
    std::cout << "Usage: kvfleet merge OUT.h5 PART.h5 [PART.h5 ...]\n\nJoins the results of "
                 "sweep shards (kvfleet sweep --shard k/N) into one file.\n";
    return 0;
  }
  for (const auto& a : args)
    if (!a.empty() && a[0] == '-')
      throw UsageError("kvfleet merge: unknown option '" + a + "' (kvfleet merge --help)");
  if (args.size() < 2)
    throw UsageError("kvfleet merge: needs OUT.h5 and at least one PART.h5 (kvfleet merge --help)");
  check_output_file("OUT.h5", args[0]);
  for (std::size_t i = 1; i < args.size(); ++i)
    if (same_file(args[0], args[i]))
      throw InputError("OUT.h5", "", args[0] + " is also an input: write the merge elsewhere");
  remove_stale_temps(args[0]);
  check_writable("OUT.h5", args[0]);
  const OutputLock lock("OUT.h5", args[0]);  // a sweep still writing OUT refuses, and is refused
  std::vector<SweepResults> parts;
  for (std::size_t i = 1; i < args.size(); ++i) parts.push_back(read_sweep_h5(args[i]));
  const SweepResults merged = merge_sweeps(parts);
  write_sweep_h5(args[0], merged);
  std::cout << "kvfleet merge: " << merged.completed() << " of " << merged.points.size()
            << " points -> " << args[0] << "\n";
  return 0;
}

int cmd_capacity(const std::vector<std::string>& args) {
  po::options_description opts("Options of 'kvfleet capacity [SCENARIO]'");
  opts.add_options()("help,h", "show this help")(
      "slo", po::value<std::string>(),
      "targets: latencies (ttft_p99=2s,tpot_p99=100ms) and shares of the requests "
      "(reject_rate=1%, goodput=99%) (required)")(
      "metric", po::value<std::string>()->default_value("arrival_rate"),
      "the load to raise: arrival_rate or users")(
      "key", po::value<std::string>(), "the scenario key to raise instead (e.g. a pool's rate)")(
      "replicates", po::value<int>()->default_value(3), "seeds; the interval is over them")(
      "tolerance", po::value<double>()->default_value(0.02), "relative width to stop bisecting")(
      "threads,j", po::value<int>()->default_value(0),
      "threads (0: every core this process may use: SLURM_CPUS_PER_TASK, else the CPU affinity "
      "mask)")(
      "step-sensitivity", po::value<double>()->default_value(0.02),
      "also search with every step this much slower and faster, to show how far the answer "
      "moves with the cost model's error (0: not; triples the runs)")(
      "set,s", po::value<std::vector<std::string>>()->composing(), "override a scenario key");
  const po::variables_map vm = parse_command(args, opts, "scenario", "capacity");
  if (vm.count("help")) {
    std::cout
        << "Usage: kvfleet capacity [SCENARIO] --slo ttft_p99=2s,tpot_p99=100ms,reject_rate=1%\n\n"
           "Finds the highest load at which every SLO target holds, by bracketing and\n"
           "bisection for each replicate seed (docs/sweeps.md).\n\n"
        << opts;
    return 0;
  }
  if (!vm.count("slo")) throw UsageError("kvfleet capacity: --slo is required");
  const auto slo = parse_slo(vm["slo"].as<std::string>());
  CapacityOptions opt;
  opt.load = vm["metric"].as<std::string>();
  if (vm.count("key")) opt.key = vm["key"].as<std::string>();
  opt.replicates = vm["replicates"].as<int>();
  opt.tolerance = vm["tolerance"].as<double>();
  opt.threads = vm["threads"].as<int>();
  opt.step_time_sensitivity = vm["step-sensitivity"].as<double>();
  check_capacity_options(opt);
  if (vm.count("set")) opt.sets = vm["set"].as<std::vector<std::string>>();
  const bool tty = isatty(STDERR_FILENO) != 0;
  // Progress: in place on a terminal; otherwise a line every 10 s at most.
  auto last = std::chrono::steady_clock::now();
  opt.on_run = [&](std::int64_t seed, double x, bool ok) {
    const auto now = std::chrono::steady_clock::now();
    if (!tty && std::chrono::duration<double>(now - last).count() < 10) return;
    last = now;
    std::fprintf(stderr, "%sseed %lld: load %g %s", tty ? "\r" : "", static_cast<long long>(seed),
                 x, ok ? "holds   " : "misses  ");
    if (!tty) std::fputc('\n', stderr);
  };
  const std::string path = vm.count("scenario") ? vm["scenario"].as<std::string>() : "";
  const CapacityResult c = find_capacity(path, slo, opt);
  if (tty) std::fputc('\n', stderr);
  std::string targets;
  for (const auto& s : slo) targets += (targets.empty() ? "" : ", ") + s.describe();
  std::printf("Capacity of %s under %s\n", path.empty() ? "<built-in default.yaml>" : path.c_str(),
              targets.c_str());
  std::printf("  %s = %.4g (95%% interval %.4g to %.4g over %zu seeds; %d runs)\n", c.key.c_str(),
              c.mean, c.ci95_low, c.ci95_high, c.per_seed.size(), c.runs);
  for (std::size_t i = 0; i < c.per_seed.size(); ++i)
    std::printf("  seed %lld: %.4g\n", static_cast<long long>(c.seeds[i]), c.per_seed[i]);
  if (c.sensitivity > 0) {
    auto rel = [&](double x) { return c.mean > 0 ? 100 * (x / c.mean - 1) : 0.0; };
    std::printf("  with every step %.0f%% slower: %.4g (%+.1f%%); %.0f%% faster: %.4g (%+.1f%%)\n",
                100 * c.sensitivity, c.slower_steps, rel(c.slower_steps), 100 * c.sensitivity,
                c.faster_steps, rel(c.faster_steps));
  }
  std::printf("  cost model's expected error: %s\n", c.expected.describe().c_str());
  if (std::isfinite(c.expected_low))
    std::printf(
        "  so the capacity is about %.4g to %.4g (its TPOT error through the step-time "
        "sensitivity above, linearised; docs/validation.md)\n",
        c.expected_low, c.expected_high);
  if (!c.limited_by.empty())
    std::printf("  The SLO still held when the load could go no higher: %s\n",
                c.limited_by.c_str());
  if (!c.not_met.empty()) std::printf("  The SLO holds at no load tried: %s\n", c.not_met.c_str());
  std::printf("\nThe workload this capacity belongs to (resolved; %s is what was varied):\n",
              c.key.c_str());
  std::stringstream ws(c.workload_yaml);
  for (std::string line; std::getline(ws, line);) std::printf("  %s\n", line.c_str());
  return 0;
}

int cmd_size(const std::vector<std::string>& args) {
  po::options_description opts("Options of 'kvfleet size [SCENARIO]'");
  opts.add_options()("help,h", "show this help")(
      "slo", po::value<std::string>(),
      "targets: latencies (ttft_p99=2s,tpot_p99=50ms) and shares of the requests "
      "(timeout_rate=1%, reject_rate=1%, refused_rate=1%, goodput=99%) (required)")(
      "target", po::value<double>(), "the load to serve, in the units of --metric (required)")(
      "metric", po::value<std::string>()->default_value("arrival_rate"),
      "what --target is: arrival_rate (requests/s), users, or output_tokens_per_s (served as "
      "the request arrival rate that offers them: the target over the workload's mean output "
      "tokens per request, measured on one run at its own settings)")(
      "key", po::value<std::string>(), "the scenario key --target sets instead")(
      "pool", po::value<std::string>(), "the pool whose replicas are counted (default: the first)")(
      "price-per-hour", po::value<double>(),
      "price of one GPU per hour (default: the pool's price_per_hour, else the GPU preset's "
      "list price)")("max-replicas", po::value<int>()->default_value(1024),
                     "search no further than this")(
      "replicates", po::value<int>()->default_value(3),
      "seeds; the answer is the most replicas any of them needed")(
      "threads,j", po::value<int>()->default_value(0),
      "threads (0: every core this process may use)")(
      "set,s", po::value<std::vector<std::string>>()->composing(), "override a scenario key");
  const po::variables_map vm = parse_command(args, opts, "scenario", "size");
  if (vm.count("help")) {
    std::cout << "Usage: kvfleet size [SCENARIO] --target 2000 --metric users "
                 "--slo ttft_p99=2s,tpot_p99=50ms,timeout_rate=1%\n\n"
                 "How many replicas (and GPUs) of a pool serve the target load within the SLO,\n"
                 "and what they cost: the fewest at which every target holds with every seed,\n"
                 "each count a full simulation of the fleet (docs/sweeps.md, \"Sizing\").\n\n"
              << opts;
    return 0;
  }
  if (!vm.count("slo")) throw UsageError("kvfleet size: --slo is required");
  if (!vm.count("target")) throw UsageError("kvfleet size: --target is required");
  const auto slo = parse_slo(vm["slo"].as<std::string>());
  SizingOptions opt;
  opt.target = vm["target"].as<double>();
  opt.load = vm["metric"].as<std::string>();
  if (vm.count("key")) opt.key = vm["key"].as<std::string>();
  if (vm.count("pool")) {
    opt.pool = vm["pool"].as<std::string>();
    if (opt.pool.empty()) throw InputError("--pool", "", "empty: name a pool of the scenario");
  }
  if (vm.count("price-per-hour")) {
    opt.price_per_hour = vm["price-per-hour"].as<double>();
    if (!(opt.price_per_hour >= 0) || opt.price_per_hour > 1e6)
      throw InputError("--price-per-hour", "", "must be from 0 to 1e6 ($ per GPU-hour)");
  }
  opt.max_replicas = vm["max-replicas"].as<int>();
  opt.replicates = vm["replicates"].as<int>();
  opt.threads = vm["threads"].as<int>();
  if (opt.threads < 0) throw InputError("--threads", "", "must be >= 0");
  if (vm.count("set")) opt.sets = vm["set"].as<std::vector<std::string>>();
  ScenarioSource source;
  source.path = vm.count("scenario") ? vm["scenario"].as<std::string>() : "";
  const SizingResult z = find_replicas(source, slo, opt);
  std::string targets;
  for (const auto& s : slo) targets += (targets.empty() ? "" : ", ") + s.describe();
  std::printf("Sizing of pool %s in %s for %s = %s under %s\n", z.pool.c_str(),
              source.path.empty() ? "<built-in default.yaml>" : source.path.c_str(),
              z.load_key.c_str(), config::format_double(z.target).c_str(), targets.c_str());
  if (z.output_tokens_per_request > 0)
    std::printf(
        "  target: %s output tokens/s = %.6g requests/s at %.4g output tokens per request (the "
        "mean of the %lld requests that completed, of %lld, in one run at the scenario's own "
        "settings)\n",
        config::format_double(z.target_output_tokens_per_s).c_str(), z.target,
        z.output_tokens_per_request, static_cast<long long>(z.measured_completed),
        static_cast<long long>(z.measured_arrived));
  if (!z.not_met.empty()) {
    std::printf("  The SLO holds at no replica count tried: %s\n", z.not_met.c_str());
    return 0;
  }
  std::printf("  replicas needed: %d (%d GPUs, %d per replica); %d runs\n", z.replicas, z.gpus,
              z.gpus_per_replica, z.runs);
  for (std::size_t i = 0; i < z.per_seed.size(); ++i)
    std::printf("  seed %lld: %d\n", static_cast<long long>(z.seeds[i]), z.per_seed[i]);
  std::printf(
      "  served over the run (%.4g s, drain included): %.4g requests/s, %.4g output "
      "tokens/s\n",
      z.duration_s, z.requests_per_s, z.output_tokens_per_s);
  if (z.price_per_hour > 0)
    std::printf(
        "  cost: $%.2f per hour, $%.0f per month (730 h), $%.3f per million output "
        "tokens (the fleet's cost over the run / the tokens it generated), at $%.2f per "
        "GPU-hour (%s)\n",
        z.cost_per_hour, z.cost_per_month, z.usd_per_million_output_tokens, z.price_per_hour,
        z.price_source.c_str());
  else
    std::printf(
        "  cost: no price (give --price-per-hour or pools[].price_per_hour; this GPU has no list "
        "price)\n");
  if (!z.limited_by.empty()) std::printf("  what fewer replicas miss: %s\n", z.limited_by.c_str());
  std::printf("  cost model's expected error: %s\n", z.expected.describe().c_str());
  return 0;
}

// `kvfleet plot` is kvfleet-plot (gui/, built with Qt6 Charts), found beside this program: the
// simulator core stays free of Qt.
int cmd_plot(char** argv) {
  const std::string p = plot_program(argv[0]);
  if (p.empty()) {
    std::cerr << "kvfleet plot: kvfleet-plot is missing beside kvfleet: kvfleet was built "
                 "without Qt6 Charts (KVFLEET_WITH_GUI=OFF)\n";
    return 1;
  }
  std::vector<char*> args;
  args.push_back(const_cast<char*>(p.c_str()));
  for (char** a = argv + 2; *a != nullptr; ++a) args.push_back(*a);
  args.push_back(nullptr);
  execv(p.c_str(), args.data());
  std::cerr << "kvfleet plot: cannot run " << p << "\n";
  return 1;
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

int cmd_outputs(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << "Usage: kvfleet outputs\n\nPrints the output reference (Markdown) generated from "
                 "the tables' declarations: every file, dataset and column with its unit.\n";
    return 0;
  }
  if (!args.empty()) throw UsageError("kvfleet outputs: unexpected argument '" + args[0] + "'");
  std::cout << outputs_reference_markdown();
  return 0;
}

// `kvfleet model-from-hf CONFIG [--name NAME]`: a Hugging Face config.json as a `models:` entry.
int cmd_model_from_hf(const std::vector<std::string>& args) {
  po::options_description opts("Options of 'kvfleet model-from-hf CONFIG'");
  opts.add_options()("help,h", "show this help")(
      "name", po::value<std::string>(),
      "the model's name in scenarios (default: the config's folder name)");
  const po::variables_map vm = parse_command(args, opts, "config", "model-from-hf");
  if (vm.count("help") || !vm.count("config")) {
    std::cout << "Usage: kvfleet model-from-hf CONFIG.json|FOLDER [--name NAME]\n\n"
                 "Reads a Hugging Face config.json (dense or mixture-of-experts decoder: llama,\n"
                 "mistral, qwen2, qwen3, granite, mixtral, qwen2_moe, qwen3_moe, deepseek_v2,\n"
                 "deepseek_v3) and prints it as an entry for a scenario's models: list, the\n"
                 "parameter count counted from its shapes. A scenario can also name the file\n"
                 "itself: models: [{name: my-model, hf_config: path/config.json}].\n\n"
              << opts;
    return vm.count("help") ? 0 : 2;
  }
  const std::string path = vm["config"].as<std::string>();
  std::string name;
  if (vm.count("name")) {
    name = vm["name"].as<std::string>();
  } else {
    std::filesystem::path p = std::filesystem::absolute(path).lexically_normal();
    if (p.filename() == "config.json") p = p.parent_path();
    name = p.filename().string();
  }
  ModelSpec m = read_hf_config(path, name);
  std::cout << "# " << m.source << "\nmodels:\n";
  YAML::Node entry = config::Writer::write(m);
  entry.remove("hf_config");
  YAML::Node list(YAML::NodeType::Sequence);
  list.push_back(entry);
  YAML::Emitter e;
  e << list;
  std::stringstream ss(e.c_str());
  for (std::string line; std::getline(ss, line);) std::cout << "  " << line << "\n";
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

// An error message as one line: control characters a user typed (a newline in a --set value)
// are shown escaped.
std::string one_line(const std::string& s) {
  std::string out;
  for (const unsigned char c : s) {
    if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

int run_command(const std::string& cmd, std::vector<std::string>& args, int& argc, char**& argv) {
  if (cmd == "run") return cmd_run(args);
  if (cmd == "sweep") {
    Mpi mpi(&argc, &argv);
    return cmd_sweep(args, mpi);
  }
  if (cmd == "merge") return cmd_merge(args);
  if (cmd == "capacity") return cmd_capacity(args);
  if (cmd == "size") return cmd_size(args);
  if (cmd == "model-from-hf") return cmd_model_from_hf(args);
  if (cmd == "replay") return cmd_replay(args);
  if (cmd == "plot") return cmd_plot(argv);
  if (cmd == "schema") return cmd_schema(args);
  if (cmd == "presets") return cmd_presets(args);
  if (cmd == "outputs") return cmd_outputs(args);
  throw UsageError(
      "kvfleet: unknown command '" + cmd +
      "' (commands: run, sweep, merge, capacity, model-from-hf, plot, schema, presets, outputs; "
      "kvfleet --help)");
}

}  // namespace

int main(int argc, char** argv) {
  set_command_line(argc, argv);  // for every result file's /provenance
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << "kvfleet: error: no command given (kvfleet --help lists them)\n";
    return 2;
  }
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return 0;
  }
  const std::string cmd = args[0];
  args.erase(args.begin());
  // SIGINT and SIGTERM remove this process's temporaries and exit 130 and 143.
  install_temp_cleanup_on_signals();
  int status = 0;
  try {
    status = run_command(cmd, args, argc, argv);
  } catch (const InputError& e) {
    std::cerr << "kvfleet: error: " << one_line(e.what()) << "\n";
    return 2;
  } catch (const UsageError& e) {
    std::cerr << one_line(e.what()) << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "kvfleet: internal error: " << one_line(e.what()) << "\n";
    return 1;
  }
  // A report or reference that could not be written (a full disk, a closed pipe) is not a
  // success.
  std::cout.flush();
  if (!std::cout) {
    std::cerr << "kvfleet: error: cannot write to standard output\n";
    return 2;
  }
  return status;
}
