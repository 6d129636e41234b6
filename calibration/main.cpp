// kvfleet-calibrate: make calibration profiles.
//   kvfleet-calibrate --model MODEL [--tp N] [--kv-dtype D] [--quick] [--backend gpu|cpu]
//                     --out PROFILE.h5
//   kvfleet-calibrate import --format vidur|llmservingsim PATH --out PROFILE.h5 [--tp N]
//                            [--network DIR]
// Exit status: 0 done, 2 bad input (the message names what and where), 1 anything else.
#include <unistd.h>
#include <boost/program_options.hpp>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "calibration/fit.h"
#include "calibration/import.h"
#include "calibration/pipeline.h"
#include "calibration/roofline_profile.h"
#include "sim/core/error.h"
#include "sim/io/output_set.h"
#include "sim/io/temp_files.h"
#include "sim/io/text_file.h"

namespace po = boost::program_options;
using namespace kvfleet;

namespace {

int usage(std::ostream& o) {
  o << "usage:\n"
       "  kvfleet-calibrate roofline --model MODEL --gpu GPU [--tp N] --out PROFILE.h5\n"
       "  kvfleet-calibrate compare PROFILE.h5 --model MODEL --gpu GPU [--tp N]\n"
       "  kvfleet-calibrate --model MODEL [--tp N] [--kv-dtype fp16|bf16|fp8] [--quick]\n"
       "                    [--backend gpu|cpu] [--iters N] --out PROFILE.h5\n"
       "  kvfleet-calibrate import --format vidur|llmservingsim PATH --out PROFILE.h5 [--tp N]\n"
       "                           [--network DIR]\n"
       "  kvfleet-calibrate fit RUN... [--gpu GPU] [--model M] [--vllm-version V]\n"
       "                        [--tool-version V] [--max-evals N] [--no-leave-one-out]\n"
       "                        --out CALIBRATION.yaml\n"
       "      RUN: anything kvfleet replay takes (run folder, inference-perf folder, vllm bench\n"
       "      result, GuideLLM report), all on one GPU.\n";
  return 2;
}

// Checks --out before any work: a path that takes a file, writable, and none of the inputs.
void check_out(const std::string& out, const std::vector<std::string>& inputs) {
  sim::check_output_file("--out", out);
  std::error_code ec;
  for (const auto& in : inputs)
    if (!in.empty() && std::filesystem::exists(in, ec) && std::filesystem::exists(out, ec) &&
        std::filesystem::equivalent(in, out, ec))
      throw sim::InputError("--out", "", out + " is an input (" + in + "); write elsewhere");
  sim::remove_stale_temps(out);
  sim::check_writable("--out", out);
}

int cmd_import(const std::vector<std::string>& args) {
  po::options_description opts("import options");
  std::string format, out, network;
  int tp = 1;
  opts.add_options()("format", po::value(&format)->required(), "vidur or llmservingsim")(
      "out", po::value(&out)->required(), "profile to write (HDF5)")(
      "tp", po::value(&tp)->default_value(1), "tensor-parallel degree to import")(
      "network", po::value(&network), "Vidur network/<node> folder with all_reduce.csv")(
      "path", po::value<std::string>()->required(), "the profile to import");
  po::positional_options_description pos;
  pos.add("path", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).positional(pos).run(), vm);
  po::notify(vm);
  const std::string path = vm["path"].as<std::string>();
  check_out(out, {path, path + "/meta.yaml", network});
  sim::Profile p;
  std::vector<std::string> report;
  if (format == "llmservingsim") {
    p = calibration::import_llmservingsim(path, tp, &report);
  } else if (format == "vidur") {
    p = calibration::import_vidur(path, tp, network);
  } else {
    throw sim::InputError("--format", "", "'" + format + "' is not vidur or llmservingsim");
  }
  sim::write_profile(out, p);
  std::size_t points = p.attention.size();
  for (const auto& c : p.curves) points += c.x.size();
  std::cout << "kvfleet-calibrate: imported " << format << " profile of " << p.get("model")
            << " on " << p.get("gpu") << " (tp " << tp << "): " << p.curves.size()
            << " operation curves, " << p.attention.size() << " attention points, " << points
            << " points in all -> " << out << "\n  provenance: " << p.get("provenance") << "\n";
  for (const auto& line : report) std::cout << "  " << line << "\n";
  return 0;
}

template <typename T>
const T& preset(const std::vector<T>& all, const std::string& name, const char* flag) {
  std::string names;
  for (const auto& x : all) {
    if (x.name == name) return x;
    names += (names.empty() ? "" : ", ") + x.name;
  }
  throw sim::InputError(flag, "", "'" + name + "' is not a preset (" + names + ")");
}

// roofline: a profile of the roofline's predictions; compare: roofline against a measured
// profile, one Markdown row per linear layer.
int cmd_roofline(const std::vector<std::string>& args, bool compare) {
  po::options_description opts(compare ? "compare options" : "roofline options");
  std::string model, gpu, out;
  int tp = 1;
  opts.add_options()("model", po::value(&model)->required(), "model preset")(
      "gpu", po::value(&gpu)->required(), "GPU preset")("tp", po::value(&tp)->default_value(1),
                                                        "tensor-parallel degree");
  if (compare) {
    opts.add_options()("profile", po::value<std::string>()->required(), "measured profile");
  } else {
    opts.add_options()("out", po::value(&out)->required(), "profile to write (HDF5)");
  }
  po::positional_options_description pos;
  pos.add("profile", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).positional(pos).run(), vm);
  po::notify(vm);
  if (!compare) check_out(out, {});
  const auto& m = preset(sim::model_presets(), model, "--model");
  const auto& g = preset(sim::gpu_presets(), gpu, "--gpu");
  if (tp < 1 || m.num_attention_heads % tp != 0) {
    throw sim::InputError("--tp", "", std::to_string(tp) + " does not divide the model's heads");
  }
  if (!compare) {
    sim::write_profile(out, calibration::roofline_profile(m, g, tp));
    std::cout << "kvfleet-calibrate: roofline profile (not measured) of " << model << " on " << gpu
              << " at tp " << tp << " -> " << out << "\n";
    return 0;
  }
  const std::string path = vm["profile"].as<std::string>();
  const sim::Profile p = sim::read_profile(path);
  const auto rows = calibration::compare_with_roofline(p, m, g, tp);
  if (rows.empty()) throw sim::InputError(path, "curves", "holds none of the linear layers");
  std::cout << "Roofline (" << gpu << " preset) against " << p.get("source") << " measurements of "
            << p.get("model") << " on " << p.get("gpu") << ", tp " << tp
            << "; error = (roofline - measured) / measured\n\n"
            << "| operation | points | median error | median abs. error | p95 abs. error | at "
               "fewest tokens | at most tokens |\n|---|---|---|---|---|---|---|\n";
  for (const auto& r : rows) {
    std::printf("| %s | %d | %+.0f%% | %.0f%% | %.0f%% | %+.0f%% | %+.0f%% |\n", r.op.c_str(),
                r.points, 100 * r.median_error, 100 * r.median_ape, 100 * r.p95_ape,
                100 * r.error_small, 100 * r.error_large);
  }
  return 0;
}

// A progress bar on a terminal (redrawn in place), a line per 10% otherwise.
class Bar {
 public:
  Bar() : tty_(isatty(STDERR_FILENO) != 0) {}
  void operator()(int done, int total, const std::string& what) {
    const int pct = total > 0 ? 100 * done / total : 100;
    if (tty_) {
      const int w = 30, fill = w * pct / 100;
      std::cerr << "\r[" << std::string(fill, '#') << std::string(w - fill, '.') << "] " << pct
                << "% " << what << "\033[K" << std::flush;
      if (done >= total) std::cerr << "\n";
    } else if (pct / 10 != last_ / 10 || done >= total) {
      std::cerr << "kvfleet-calibrate: " << pct << "% (" << done << " of at most " << total
                << " measurements) " << what << "\n";
    }
    last_ = pct;
  }

 private:
  bool tty_;
  int last_ = -1;
};

int cmd_run(const std::vector<std::string>& args) {
  po::options_description opts("calibration options");
  std::string model, kv = "bf16", backend = "gpu", out;
  calibration::RunOptions ro;
  int iters = 10;
  opts.add_options()("model", po::value(&model)->required(),
                     "model preset (kvfleet schema lists them)")(
      "tp", po::value(&ro.tensor_parallel)->default_value(1), "tensor-parallel degree")(
      "kv-dtype", po::value(&kv)->default_value("bf16"), "KV cache dtype: fp16, bf16 or fp8")(
      "quick", po::bool_switch(&ro.quick), "a smaller grid (target: one minute on a GPU)")(
      "backend", po::value(&backend)->default_value("gpu"), "gpu or cpu (the CPU references)")(
      "iters", po::value(&iters)->default_value(10), "timed repetitions per point")(
      "block-size", po::value(&ro.block_size)->default_value(16), "KV block size in tokens")(
      "out", po::value(&out)->required(), "profile to write (HDF5)");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).run(), vm);
  po::notify(vm);
  check_out(out, {});  // before minutes of measuring
  const sim::ModelSpec* spec = &preset(sim::model_presets(), model, "--model");
  if (!kernels::parse_kv_dtype(kv, &ro.kv_dtype)) {
    throw sim::InputError("--kv-dtype", "", "'" + kv + "' is not fp16, bf16 or fp8");
  }
  if (iters < 1) throw sim::InputError("--iters", "", "must be at least 1");
  std::unique_ptr<calibration::Backend> be;
  if (backend == "gpu") {
    be = calibration::make_gpu_backend(iters);
  } else if (backend == "cpu") {
    be = calibration::make_cpu_backend(std::min(iters, 3));
  } else {
    throw sim::InputError("--backend", "", "'" + backend + "' is not gpu or cpu");
  }
  Bar bar;
  sim::Profile p;
  try {
    p = calibration::calibrate(*spec, ro, *be, std::ref(bar));
  } catch (const std::invalid_argument& e) {
    throw sim::InputError("--model " + model, "", e.what());
  }
  sim::write_profile(out, p);
  std::cout << "kvfleet-calibrate: " << model << " at tp " << ro.tensor_parallel << " on "
            << p.get("gpu") << " in " << p.get("duration_s") << " s -> " << out << "\n";
  std::cout << "held-out error per operation (median / p95):\n";
  for (const auto& f : p.fits) {
    std::printf("  %-18s %5.1f%% / %5.1f%%  (%ld held out of %ld)  %s\n", f.op.c_str(),
                100 * f.median_ape, 100 * f.p95_ape, f.n_test, f.n_test + f.n_train,
                f.model.c_str());
  }
  return 0;
}

// fit: the fitted cost model of one GPU corrected by measured runs (calibration/fit.h).
int cmd_fit(const std::vector<std::string>& args) {
  po::options_description opts("fit options");
  std::string out;
  int max_evals = 400;
  sim::BenchOptions base;
  opts.add_options()("out", po::value(&out)->required(), "calibration file to write (YAML)")(
      "gpu", po::value(&base.gpu),
      "GPU preset of the runs (benchmark results do not record it; a run folder's own "
      "record wins where it matches a preset)")("model", po::value(&base.model),
                                                "model preset (default: matched from each run)")(
      "vllm-version", po::value(&base.vllm_version),
      "the server's vLLM release where the runs do not record it")(
      "tool-version", po::value(&base.tool_version),
      "the load generator's latency definitions where the files do not tell them")(
      "engine-args", po::value(&base.engine_args),
      "benchmark results: the server's vLLM engine arguments (as kvfleet replay)")(
      "tp", po::value(&base.tensor_parallel),
      "benchmark results: tensor-parallel GPUs per replica")(
      "benchmark", po::value(&base.benchmark),
      "GuideLLM reports: which benchmark, from 0 (default: the last)")(
      "model-config", po::value(&base.model_config),
      "the model's Hugging Face config.json instead of a preset")(
      "weight-dtype", po::value(&base.weight_dtype),
      "weight precision where the runs' files do not tell it")(
      "regularisation", po::value<double>()->default_value(0.03),
      "weight of the pull toward the public fits: this × Σ ln(factor)² is added to the mean "
      "error (a fraction)")(
      "score-requests", po::value<std::string>(),
      "run folders: score only requests FROM:TO in arrival order (kvfleet replay's option), "
      "the others replayed as a warm-up")("max-evals", po::value(&max_evals)->default_value(400),
                                          "most replays of all runs per fit")(
      "no-leave-one-out", "skip the leave-one-run-out table")(
      "run", po::value<std::vector<std::string>>()->required(), "measured runs");
  po::positional_options_description pos;
  pos.add("run", -1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).positional(pos).run(), vm);
  po::notify(vm);
  const auto paths = vm["run"].as<std::vector<std::string>>();
  if (max_evals < 20 || max_evals > 100000)
    throw sim::InputError("--max-evals", "", "must be from 20 to 100000");
  const double reg = vm["regularisation"].as<double>();
  if (!(reg >= 0 && reg <= 10))
    throw sim::InputError("--regularisation", "", "must be from 0 to 10");
  if (vm.count("tp") && (base.tensor_parallel < 1 || base.tensor_parallel > 64))
    throw sim::InputError("--tp", "", "must be from 1 to 64");
  if (vm.count("benchmark") && base.benchmark < 0)
    throw sim::InputError("--benchmark", "", "must be 0 or more");
  std::vector<std::string> inputs = paths;
  for (const auto* f : {&base.engine_args, &base.model_config}) inputs.push_back(*f);
  check_out(out, inputs);
  std::vector<std::unique_ptr<calibration::FitRun>> runs;
  for (const auto& p : paths) {
    sim::BenchOptions o = base;
    o.path = p;
    runs.push_back(std::make_unique<calibration::FitRun>(
        o, vm.count("score-requests")
               ? sim::parse_score_window(vm["score-requests"].as<std::string>(), "--score-requests")
               : sim::ScoreWindow{}));
  }
  calibration::FitOptions fo;
  fo.max_evaluations = max_evals;
  fo.leave_one_out = !vm.count("no-leave-one-out");
  fo.regularisation = reg;
  std::cout << "kvfleet-calibrate fit: " << runs.size() << " run(s) on " << runs.front()->gpu()
            << ", the fitted cost model regularised toward the public fits\n";
  const calibration::FitResult r = calibration::fit_runs(runs, fo, std::cout);
  std::string command = "kvfleet-calibrate fit";
  for (const auto& a : args) command += " " + a;
  sim::write_text_atomically(
      out, [&](std::ostream& o) { o << calibration::calibration_text(r, runs, command); });
  std::cout << "\nFitted (" << r.evaluations << " replays of the runs):\n";
  for (const auto& v : r.values) std::cout << "  " << v << "\n";
  if (!r.not_exercised.empty()) {
    std::cout << "Not fitted: no run's error moves with them (the public fits' values stand):\n";
    for (const auto& n : r.not_exercised) std::cout << "  " << n << "\n";
  }
  std::cout << "\n| run | format | TP | error before | after the fit | fitted without it |\n"
               "|---|---|---|---|---|---|\n";
  auto pct = [](double x) {
    if (!std::isfinite(x)) return std::string("-");
    char b[32];
    std::snprintf(b, sizeof b, "%.1f%%", 100 * x);
    return std::string(b);
  };
  for (std::size_t i = 0; i < runs.size(); ++i)
    std::cout << "| " << runs[i]->path() << " | " << runs[i]->format() << " | "
              << runs[i]->tensor_parallel() << " | " << pct(r.before[i]) << " | " << pct(r.after[i])
              << " | " << pct(r.left_out[i]) << " |\n";
  std::cout << "\n(mean absolute error of each replay over the statistics it compares; "
               "'fitted without it': the run scored with the fit of the others"
            << (runs.size() < 2 ? ", which needs two runs or more" : "") << ")\nwrote " << out
            << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << "kvfleet-calibrate: error: no command given (kvfleet-calibrate --help)\n";
    return 2;
  }
  sim::install_temp_cleanup_on_signals();
  if (args[0] == "--help" || args[0] == "-h") {
    usage(std::cout);
    return 0;
  }
  std::string cmd = args[0];
  if (cmd.rfind("--", 0) == 0) {
    cmd = "run";  // no command word: calibrate
  } else {
    args.erase(args.begin());
  }
  try {
    if (cmd == "import") return cmd_import(args);
    if (cmd == "run") return cmd_run(args);
    if (cmd == "roofline") return cmd_roofline(args, false);
    if (cmd == "compare") return cmd_roofline(args, true);
    if (cmd == "fit") return cmd_fit(args);
    std::cerr << "kvfleet-calibrate: error: unknown command '" << cmd
              << "' (import, run, roofline, compare, fit; kvfleet-calibrate --help)\n";
    return 2;
  } catch (const po::error& e) {
    std::cerr << "kvfleet-calibrate " << cmd << ": " << e.what() << " (kvfleet-calibrate --help)\n";
    return 2;
  } catch (const sim::InputError& e) {
    std::cerr << "kvfleet-calibrate " << cmd << ": " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "kvfleet-calibrate " << cmd << ": " << e.what() << "\n";
    return 1;
  }
}
