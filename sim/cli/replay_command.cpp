// kvfleet replay: a measured run (vLLM server log, inference-perf folder, vllm bench result,
// GuideLLM report)
// replayed with the settings of its own files.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <boost/program_options.hpp>

#include <algorithm>
#include <array>
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

#include "sim/cli/command.h"
#include "sim/cli/mpi.h"
#include "sim/config/params.h"
#include "sim/core/build_info.h"
#include "sim/core/error.h"
#include "sim/cost/calibration_file.h"
#include "sim/io/output_set.h"
#include "sim/io/temp_files.h"
#include "sim/io/text_file.h"
#include "sim/metrics/summary.h"
#include "sim/model/presets.h"
#include "sim/output/chrome_trace.h"
#include "sim/output/prometheus.h"
#include "sim/output/report.h"
#include "sim/output/results.h"
#include "sim/reference/reference.h"
#include "sim/replay/bench_results.h"
#include "sim/replay/latency_definition.h"
#include "sim/replay/locate.h"
#include "sim/replay/replay.h"
#include "sim/simulation/scenario.h"
#include "sim/simulation/simulation.h"
#include "sim/sweep/capacity.h"
#include "sim/sweep/sizing.h"
#include "sim/sweep/sweep.h"

using namespace kvfleet::sim;

namespace kvfleet::cli {

namespace {

// A benchmark client's results (inference-perf folder, vllm bench serve JSON) replayed.
// Where a benchmark replay's --write-scenario keeps the trace its scenario reads: beside it,
// NAME.trace.csv.
std::string kept_trace_path(const std::string& scenario_path) {
  const std::filesystem::path w(scenario_path);
  return (w.parent_path() / (w.stem().string() + ".trace.csv")).string();
}

BenchOptions bench_options(const po::variables_map& vm, const std::string& path,
                           const std::string& profile, const std::string& model,
                           const std::string& gpu) {
  BenchOptions bo;
  bo.path = path;
  bo.profile = profile;
  bo.model = model;
  bo.gpu = gpu;
  if (vm.count("cost-model")) bo.cost_model = vm["cost-model"].as<std::string>();
  if (vm.count("calibration")) bo.cost_model = "fitted";
  if (vm.count("leave-out")) bo.leave_out = vm["leave-out"].as<std::vector<std::string>>();
  if (vm.count("model-config")) bo.model_config = vm["model-config"].as<std::string>();
  if (vm.count("engine-args")) bo.engine_args = vm["engine-args"].as<std::string>();
  if (vm.count("weight-dtype")) bo.weight_dtype = vm["weight-dtype"].as<std::string>();
  if (vm.count("vllm-version")) bo.vllm_version = vm["vllm-version"].as<std::string>();
  if (vm.count("tool-version")) bo.tool_version = vm["tool-version"].as<std::string>();
  if (vm.count("benchmark")) bo.benchmark = vm["benchmark"].as<int>();
  if (vm.count("benchmark") && bo.benchmark < 0)
    throw InputError("--benchmark", "", "must be 0 or more (a benchmark's index in the report)");
  if (vm.count("tp")) bo.tensor_parallel = vm["tp"].as<int>();
  if (vm.count("tp") && (bo.tensor_parallel < 1 || bo.tensor_parallel > 64))
    throw InputError("--tp", "", "must be from 1 to 64");
  return bo;
}

// The replay's trace as the Vidur-format CSV its scenario reads.
void write_trace_csv(const std::string& file, const std::vector<std::array<double, 3>>& trace) {
  write_text_atomically(file, [&](std::ostream& o) {
    o << "arrived_at,num_prefill_tokens,num_decode_tokens\n";
    for (const auto& row : trace) o << trace_row(row);
  });
}

// The trace the scenario reads, for this run: a temporary removed when the command ends.
// It lives in a folder of this process's own, TMPDIR/kvfleet-replay.tmp-PID, which the next
// replay removes if this process is killed outright (temp_files.h).
struct TempTrace {
  std::string folder, path;
  TempTrace() = default;
  TempTrace(const TempTrace&) = delete;
  TempTrace& operator=(const TempTrace&) = delete;
  void create() {
    folder = private_temp_folder("kvfleet-replay");
    path = (std::filesystem::path(folder) / "trace.csv").string();
  }
  ~TempTrace() {
    if (folder.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(folder, ec);
    forget_temp(folder);
  }
};

// The scenario kept in --out names the trace where --write-scenario keeps it, not this process's
// temporary: the same command gives the same file.
std::string stored_scenario(const Scenario& sc, const TempTrace& run_trace,
                            const std::string& write) {
  std::string stored = sc.resolved_yaml;
  if (run_trace.path.empty()) return stored;
  const std::string kept =
      write.empty() ? std::string("kvfleet-replay.trace.csv (not kept: --write-scenario keeps it)")
                    : kept_trace_path(write);
  for (std::size_t at = 0; (at = stored.find(run_trace.path, at)) != std::string::npos;
       at += kept.size())
    stored.replace(at, run_trace.path.size(), kept);
  return stored;
}

// A KV pool the run's block count sets far above what the model and GPU leave for it: the
// model, its precision or the GPU's memory is not the run's (the blocks are used as recorded).
std::vector<std::string> budget_warnings(const Scenario& sc) {
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  std::vector<std::string> w;
  for (const auto& p : sc.pools) {
    const MemoryBudget& m = p.memory;
    if (!m.override_exceeds_budget()) continue;
    char buf[700];
    std::snprintf(buf, sizeof buf,
                  "WARNING: the run's %lld KV blocks hold %.2f GiB at %.1f KiB per token, but "
                  "%s on this GPU (%.2f GiB) leaves %.2f GiB for KV: the model, its weight "
                  "precision (%s here; --weight-dtype, --model-config) or the GPU's memory is "
                  "not the run's, so step times may be off too",
                  static_cast<long long>(m.num_blocks), m.kv_pool_bytes / kGiB,
                  m.kv_bytes_per_token / 1024, p.model.name.c_str(), m.device_bytes / kGiB,
                  m.computed_pool_bytes / kGiB, m.weight_dtype.c_str());
    w.emplace_back(buf);
  }
  return w;
}

void print_settings(const std::vector<ReplaySetting>& settings) {
  std::size_t w = 0;
  for (const auto& s : settings) w = std::max(w, s.key.size() + 3 + s.value.size());
  std::cout << "\n  Settings used, and where each came from:\n";
  for (const auto& s : settings) {
    const std::string kv = s.key + " = " + s.value;
    std::cout << "    " << kv << std::string(w - kv.size() + 2, ' ') << s.from << "\n";
  }
}

void print_bench_replay(const BenchReplay& plan, const Scenario& sc, const RunResult& r,
                        const std::string& path) {
  std::cout << "\nReplay of the " << plan.format << " result " << path << ":\n";
  for (const auto& n : plan.notes) std::cout << "  " << n << "\n";
  std::cout << "  latencies as " << plan.latency.tool << " measures them (" << plan.latency.version
            << "; " << plan.latency.how << "): TPOT = " << plan.latency.tpot_words() << "\n";
  print_settings(plan.settings);
  for (const auto& n : budget_warnings(sc)) std::cout << "  " << n << "\n";
  double mae = 0;
  std::cout << bench_comparison(plan, sc, r, &mae);
  if (std::isfinite(mae)) {
    char buf[120];
    std::snprintf(buf, sizeof buf, "\nMean absolute error over the statistics measured: %.1f%%\n",
                  100 * mae);
    std::cout << buf;
  }
}

int replay_bench(const po::variables_map& vm, const std::string& path, const std::string& profile,
                 const std::string& model, const std::string& gpu, const std::string& write) {
  if (vm.count("score-requests"))
    throw InputError("--score-requests", "",
                     "applies to run folders (engine timestamps per request); " + path +
                         " is a benchmark result, compared by its own groups");
  BenchReplay plan = plan_bench_replay(bench_options(vm, path, profile, model, gpu));
  if (vm.count("calibration")) {
    const std::string f = vm["calibration"].as<std::string>();
    apply_calibration(plan.scenario["pools"][0], read_checked_calibration(f), f, "--calibration");
    plan.settings.push_back({"pools[0] cost model, frontend, link", "as calibrated", f});
  }
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
  TempTrace run_trace;
  if (!plan.trace.empty()) {
    run_trace.create();
    write_trace_csv(run_trace.path, plan.trace);
    plan.scenario["workload"]["path"] = run_trace.path;
  }
  YAML::Emitter em;
  em.SetDoublePrecision(12);
  em << plan.scenario;
  const Scenario sc = load_scenario_text(em.c_str(), "<replay of " + path + ">", ".", {});
  const std::string stored = stored_scenario(sc, run_trace, write);
  Simulation simulation(sc);
  RunResult r = simulation.run();
  const Summary s = summarize(r);
  const std::string report = report_text(sc, r, s);
  if (!out_h5.empty()) write_results_h5(out_h5, sc, r, s, report, &stored);
  if (!out_yaml.empty()) {
    if (!plan.trace.empty()) {
      write_trace_csv(out_trace, plan.trace);
      plan.scenario["workload"]["path"] = trace_name;
    }
    YAML::Emitter ey;
    ey.SetDoublePrecision(12);
    ey << plan.scenario;
    write_text_atomically(out_yaml, [&](std::ostream& o) {
      o << "# kvfleet replay of the " << plan.format << " result " << comment_line(path) << "\n"
        << ey.c_str() << "\n";
    });
  }
  outputs.publish();
  if (!vm.count("quiet")) std::cout << report;
  print_bench_replay(plan, sc, r, path);
  return 0;
}

}  // namespace

namespace {

void print_replay_help(const po::options_description& opts) {
  std::cout << "Usage: kvfleet replay RUN [options]\n\nReplays a measured serving run with "
               "the settings of its own files and compares TTFT, TPOT and E2E with the "
               "measurement. RUN is one of:\n"
               "  a run folder: meta.json, requests.jsonl and, optionally, config.json (engine "
               "settings, parallelism and link as recorded);\n"
               "  an inference-perf result folder: config.yaml and the stage_N / summary "
               "lifecycle metrics (each load stage compared apart);\n"
               "  a `vllm bench serve` result JSON (--save-result; --save-detailed adds the "
               "requests' own lengths);\n"
               "  a GuideLLM benchmark report (benchmarks.json or .yaml, 0.2 to 0.8): one of its "
               "benchmarks (--benchmark N, default the last), its successful requests sent as "
               "they were (concurrent and synchronous strategies: as slots free), compared with "
               "the report's own statistics.\n"
               "RUN may also be a file inside such a folder or a folder above it (searched "
               "three levels down). Benchmark results do not record the GPU: give --gpu. The "
               "server's engine arguments are read from --engine-args or from a launch script "
               "or arguments file kept with the result; every setting they leave out is the "
               "default of the server's vLLM release (--vllm-version). The replay prints every "
               "setting it used and where it came from.\n\n"
               "Latency definitions (--tool-version takes a release of the tool or one of "
               "these ids; by default they are told from the files):\n";
  for (const LatencyDefinition& d : known_latency_definitions())
    std::cout << "  " << d.id << "  " << d.tool << " " << d.version << ": TPOT = " << d.tpot_words()
              << "\n";
  std::cout << "\n" << opts;
}

// Options that contradict each other, or name nothing, are refused before any work.
void check_replay_options(const po::variables_map& vm, const std::string& profile) {
  if (vm.count("calibration") &&
      (vm.count("profile") ||
       (vm.count("cost-model") && vm["cost-model"].as<std::string>() != "fitted")))
    throw InputError("--calibration", "",
                     "corrects the fitted cost model: leave out --profile and --cost-model");
  if (vm.count("cost-model") && vm["cost-model"].as<std::string>().empty())
    throw InputError("--cost-model", "",
                     "is empty: name roofline or fitted, or leave the option out for the "
                     "roofline");
  if (vm.count("profile") && vm.count("cost-model"))
    throw InputError("--cost-model", "",
                     "a profile prices the steps: give --profile or --cost-model, not both");
  if (vm.count("weight-dtype")) {
    const std::string& w = vm["weight-dtype"].as<std::string>();
    if (std::find(kWeightDtypes.begin(), kWeightDtypes.end(), w) == kWeightDtypes.end())
      throw InputError("--weight-dtype", "",
                       "'" + w + "' is not one of " + config::describe_choices(kWeightDtypes));
  }
  if (vm.count("profile") && profile.empty())
    throw InputError("--profile", "",
                     "is empty: name a profile file, or leave the option out "
                     "for the roofline");
}

// An output may not replace an input: the result file, a folder's files, the engine
// arguments, the model's config.json or the profile (a replay once turned its own JSON into
// HDF5).
void check_outputs_are_not_inputs(const po::variables_map& vm, const std::string& run,
                                  const std::string& profile, const std::string& write) {
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
        throw InputError(option, "", out + " is also an input of this replay: write it elsewhere");
}

// RUN is a run folder (not a benchmark result): it exists, and options for benchmark results
// are refused.
void check_run_folder(const po::variables_map& vm, const std::string& run) {
  std::error_code ec;
  const auto st = std::filesystem::status(run, ec);
  if (!std::filesystem::exists(st)) throw InputError(run, "", "not found");
  if (!std::filesystem::is_directory(st))
    throw InputError(run, "",
                     "is not a vllm bench serve result JSON (a .json file with ttft_ms, "
                     "ttfts or request_throughput) nor a GuideLLM report (benchmarks), and a "
                     "measured run or an inference-perf result is a folder");
  for (const char* o : {"engine-args", "tp", "benchmark"})
    if (vm.count(o))
      throw InputError(std::string("--") + o, "",
                       "applies to benchmark results (an inference-perf folder or a vllm bench "
                       "serve JSON); " +
                           run +
                           " is a run folder, whose meta.json records the engine's arguments");
}

// A measured run folder replayed: the run, its outputs, the report and the comparison.
int replay_run_folder(const po::variables_map& vm, const ReplayOptions& ro,
                      const std::string& write) {
  ReplayPlan plan = plan_replay(ro);
  if (vm.count("calibration")) {
    const std::string f = vm["calibration"].as<std::string>();
    YAML::Node y = YAML::Load(plan.yaml);
    apply_calibration(y["pools"][0], read_checked_calibration(f), f, "--calibration",
                      plan.gpu_datasheet);
    YAML::Emitter em;
    em.SetDoublePrecision(12);
    em << y;
    plan.yaml = "# kvfleet replay of " + comment_line(ro.run_dir) + " with the calibration " +
                comment_line(f) + "\n" + em.c_str() + "\n";
    plan.notes.push_back("cost model, frontend and link: as calibrated by " + f);
  }
  OutputSet outputs;
  std::string out_h5, out_yaml;
  if (vm.count("out")) out_h5 = outputs.add_file("--out", vm["out"].as<std::string>());
  if (!write.empty()) out_yaml = outputs.add_file("--write-scenario", write);
  const Scenario sc = load_scenario_text(plan.yaml, "<replay of " + ro.run_dir + ">", ".", {});
  const ScoreWindow window =
      vm.count("score-requests")
          ? parse_score_window(vm["score-requests"].as<std::string>(), "--score-requests")
          : ScoreWindow{};
  const MeasuredLatencies measured =
      read_measured((std::filesystem::path(ro.run_dir) / "requests.jsonl").string(), window);
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
  for (const auto& n : budget_warnings(sc)) std::cout << "  " << n << "\n";
  if (measured.aborted > 0)
    std::cout << "  " << measured.aborted
              << " request(s) of requests.jsonl have no first or last token time (aborted): "
                 "simulated, not in the measured statistics\n";
  const std::int64_t not_served = s.rejected + s.timed_out + s.cancelled + s.failed + s.unfinished;
  if (not_served > 0)
    std::cout << "  WARNING: the simulation did not complete " << not_served << " of " << s.requests
              << " requests (rejected " << s.rejected << ", unfinished " << s.unfinished
              << ", other " << not_served - s.rejected - s.unfinished
              << "; the report says why): the simulated statistics leave them out, the measured "
                 "ones do not\n";
  double mae = 0;
  int compared = 0;
  if (!window.all())
    std::cout << "  scored: " << window.text()
              << " of both sides (--score-requests); the others replayed, not scored\n";
  const Summary scored = window.all() ? s : summarize(window_of(r, window));
  std::cout << "\n" << comparison_table(measured, scored, &mae, &compared);
  char buf[160];
  if (std::isfinite(mae)) {
    if (compared == 12)
      std::snprintf(buf, sizeof buf, "\nMean absolute error over the twelve: %.1f%%\n", 100 * mae);
    else
      std::snprintf(buf, sizeof buf,
                    "\nMean absolute error over the %d statistics both sides have: %.1f%%\n",
                    compared, 100 * mae);
    std::cout << buf;
  }
  return 0;
}

}  // namespace

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
      "the model's Hugging Face config.json instead of a preset (its quantization_config "
      "sets the weights' precision)")(
      "weight-dtype", po::value<std::string>(),
      "weight precision (bf16, fp16, fp8, int8, int4) where the run's files do not tell it "
      "(default: from vLLM's quantization and dtype arguments and the model's name)")(
      "gpu", po::value(&gpu),
      "GPU preset (default for a run folder: the one matching its hardware; required for "
      "benchmark results, which do not record it)")(
      "engine-args", po::value<std::string>(),
      "benchmark results: the server's vLLM engine arguments, as a JSON or YAML mapping or a "
      "`vllm serve MODEL --flag value` command line in a file")(
      "tp", po::value<int>(), "benchmark results: tensor-parallel GPUs per replica")(
      "vllm-version", po::value<std::string>(),
      "the server's vLLM release, whose defaults fill what the engine arguments leave out "
      "(default: the release the result or the engine arguments record, else the newest kvfleet "
      "knows, said so)")(
      "tool-version", po::value<std::string>(),
      "benchmark results: the load generator's latency definitions where its files do not tell "
      "them (kvfleet replay --help lists them)")(
      "benchmark", po::value<int>(),
      "a GuideLLM report: which of its benchmarks to replay, from 0 (default: the last)")(
      "score-requests", po::value<std::string>(),
      "run folders: score only requests FROM:TO in arrival order (from 0; either end may be "
      "left out), the others replayed but not scored (a warm-up, or one run split by load)")(
      "calibration", po::value<std::string>(),
      "a calibration file from `kvfleet-calibrate fit` (runs measured on this GPU): the fitted "
      "cost model with its factors, step overhead, frontend times and link")(
      "write-scenario", po::value(&write), "also write the scenario it built (YAML) here")(
      "out,o", po::value<std::string>(), "write the HDF5 result file here (FILE.h5)")(
      "quiet,q", "print the comparison only, not the run's report");
  const po::variables_map vm = parse_command(args, opts, "run_dir", "replay");
  if (!vm.count("help") && !vm.count("run_dir"))
    throw UsageError(
        "kvfleet replay: RUN is required (a run folder with meta.json and requests.jsonl, an "
        "inference-perf result folder, a vllm bench serve result JSON or a GuideLLM report)");
  if (vm.count("help")) {
    print_replay_help(opts);
    return 0;
  }
  check_replay_options(vm, profile);
  const std::string run = vm["run_dir"].as<std::string>();
  check_outputs_are_not_inputs(vm, run, profile, write);
  const std::string cost_model = vm.count("calibration")  ? std::string("fitted")
                                 : vm.count("cost-model") ? vm["cost-model"].as<std::string>()
                                                          : std::string();
  const std::vector<std::string> leave_out = vm.count("leave-out")
                                                 ? vm["leave-out"].as<std::vector<std::string>>()
                                                 : std::vector<std::string>();
  replay_cost_model_yaml(cost_model, leave_out);  // refuses another name before any work
  const LocatedResult located = locate_result(run);
  if (located.kind != ResultKind::kRunFolder)
    return replay_bench(vm, run, profile, model, gpu, write);
  check_run_folder(vm, located.path);
  ReplayOptions ro;
  ro.run_dir = located.path;
  ro.profile = profile;
  ro.model = model;
  ro.gpu = gpu;
  ro.cost_model = cost_model;
  ro.leave_out = leave_out;
  if (vm.count("model-config")) ro.model_config = vm["model-config"].as<std::string>();
  if (vm.count("weight-dtype")) ro.weight_dtype = vm["weight-dtype"].as<std::string>();
  return replay_run_folder(vm, ro, write);
}

}  // namespace kvfleet::cli
