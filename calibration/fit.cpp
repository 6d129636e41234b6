#include "calibration/fit.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <ostream>
#include <sstream>

#include "sim/core/error.h"
#include "sim/cost/calibration_file.h"
#include "sim/io/temp_files.h"
#include "sim/io/text_file.h"
#include "sim/metrics/summary.h"
#include "sim/model/presets.h"
#include "sim/replay/locate.h"
#include "sim/replay/replay.h"
#include "sim/simulation/scenario.h"
#include "sim/simulation/simulation.h"
#include "sim/sweep/point_runner.h"

namespace kvfleet::calibration {

namespace fs = std::filesystem;
using sim::InputError;

namespace {

std::string emit(const YAML::Node& n) {
  YAML::Emitter em;
  em.SetDoublePrecision(12);
  em << n;
  return em.c_str();
}

std::string fmt(const char* f, double x) {
  char b[64];
  std::snprintf(b, sizeof b, f, x);
  return b;
}

int trace_counter = 0;

}  // namespace

FitRun::FitRun(sim::BenchOptions o, sim::ScoreWindow window) : window_(window) {
  const sim::LocatedResult located = sim::locate_result(o.path);
  path_ = located.path;
  if (!window.all() && located.kind != sim::ResultKind::kRunFolder)
    throw InputError("--score-requests", "",
                     "applies to run folders; " + located.path + " is a benchmark result");
  if (!o.profile.empty())
    throw InputError("--profile", "", "the fit corrects the fitted cost model, not a profile");
  if (located.kind == sim::ResultKind::kRunFolder) {
    sim::ReplayOptions ro;
    ro.run_dir = located.path;
    ro.model = o.model;
    ro.cost_model = "fitted";
    ro.model_config = o.model_config;
    ro.weight_dtype = o.weight_dtype;
    // A run folder records its GPU, and that record wins: --gpu names the GPU of benchmark
    // results and lends its datasheet to a run folder only where the record matches no preset
    // (another memory size, an unknown name), as `kvfleet replay --gpu` does.
    const sim::ReplayPlan plan = [&] {
      try {
        return sim::plan_replay(ro);
      } catch (const InputError& e) {
        if (o.gpu.empty() || e.key() != "hardware") throw;
        ro.gpu = o.gpu;
        return sim::plan_replay(ro);
      }
    }();
    scenario_ = YAML::Load(plan.yaml);
    datasheet_ = plan.gpu_datasheet;
    // Read once, in the window scored: a damaged file or an empty window is named now.
    measured_ = sim::read_measured((fs::path(located.path) / "requests.jsonl").string(), window_);
    format_ = "run folder";
  } else {
    o.cost_model = "fitted";
    bench_ = std::make_unique<sim::BenchReplay>(sim::plan_bench_replay(o));
    scenario_ = YAML::Clone(bench_->scenario);
    format_ = bench_->format;
    if (!bench_->trace.empty()) {
      // In a folder of this process's own, which the next fit removes if this one is killed
      // outright (sim/io/temp_files.h).
      const std::string folder = sim::private_temp_folder("kvfleet-fit");
      trace_ = (fs::path(folder) / ("trace-" + std::to_string(trace_counter++) + ".csv")).string();
      sim::write_text_atomically(trace_, [&](std::ostream& out) {
        out << "arrived_at,num_prefill_tokens,num_decode_tokens\n";
        for (const auto& row : bench_->trace) out << sim::trace_row(row);
      });
      scenario_["workload"]["path"] = trace_;
    }
  }
  // Kept as text, each replay parsing its own copy: yaml-cpp nodes are not safe to read from
  // several threads at once, and replays run side by side.
  scenario_text_ = emit(scenario_);
  if (bench_) bench_->scenario = YAML::Node();
  const YAML::Node pool = scenario_["pools"][0];
  gpu_ = pool["gpu"] ? pool["gpu"].as<std::string>() : "H100-SXM";
  // A run folder replayed on a preset's datasheet with the run's own memory (--gpu naming a
  // preset of other memory) is a fit of that preset: the file applies to its pools. A GPU that
  // no datasheet prices could not be told from another such GPU nor used by a pool.
  if (gpu_ == "replay-gpu" && !datasheet_.empty()) gpu_ = datasheet_;
  if (gpu_ == "replay-gpu")
    throw InputError(path_, "",
                     "runs on a GPU kvfleet has no preset for (replayed as replay-gpu): a "
                     "calibration is of a preset GPU (give --gpu if it is one)");
  tp_ = pool["tensor_parallel"] ? pool["tensor_parallel"].as<int>() : 1;
}

FitRun::~FitRun() {
  if (trace_.empty()) return;
  std::error_code ec;
  fs::remove(trace_, ec);
  // The folder goes with the last trace in it.
  const fs::path folder = fs::path(trace_).parent_path();
  if (fs::is_empty(folder, ec) && !ec) {
    fs::remove(folder, ec);
    sim::forget_temp(folder.string());
  }
}

double FitRun::error(const YAML::Node& calibration, double* lost) const {
  YAML::Node sc = YAML::Load(scenario_text_);
  if (calibration && calibration.IsMap())
    sim::apply_calibration(sc["pools"][0], calibration, "<fit>", path_ + ": pools[0]", datasheet_);
  try {
    const sim::Scenario s = sim::load_scenario_text(emit(sc), "<fit of " + path_ + ">", ".", {});
    sim::Simulation simulation(s);
    const sim::RunResult r = simulation.run();
    double mae = NAN;
    double measured_ok = 0, simulated_ok = 0;
    const auto ok = [](const sim::RunResult& run) {
      double n = 0;
      for (const auto& q : run.requests)
        n += q.outcome == sim::Outcome::kOk && q.purpose == sim::kPurposeTurn;
      return n;
    };
    if (bench_) {
      sim::bench_comparison(*bench_, s, r, &mae);
      // The stages' groups, else the one of every request (a file may hold both).
      double staged = 0, whole = 0;
      for (const auto& g : bench_->groups)
        (g.stage >= 0 ? staged : whole) += static_cast<double>(g.requests);
      measured_ok = staged > 0 ? staged : whole;
      simulated_ok = ok(r);
    } else {
      const sim::RunResult scored = window_.all() ? r : sim::window_of(r, window_);
      sim::comparison_table(measured_, sim::summarize(scored), &mae);
      measured_ok = static_cast<double>(measured_.e2e.size());
      simulated_ok = ok(scored);
    }
    if (lost) *lost = measured_ok > 0 ? std::fabs(simulated_ok - measured_ok) / measured_ok : 0;
    return std::isfinite(mae) ? mae : std::numeric_limits<double>::infinity();
  } catch (const InputError&) {
    // A calibration beyond a parameter's range: no candidate.
    return std::numeric_limits<double>::infinity();
  }
}

namespace {

// One parameter the fit may move: x = 0 is the public fits' (or kvfleet's default) value.
struct Param {
  const char* name;
  const char* words;
  double prior;  // the value at x = 0
  enum Form { kFactor, kMilliseconds } form;
  double value(double x) const {
    return form == kFactor ? prior * std::exp(x) : 1e-3 * std::max(0.0, x);
  }
  double reg_scale;  // x units per "one unit" of the regulariser
  double lo, hi;     // bounds of x
};

std::vector<Param> parameters(const std::string& gpu) {
  const double lf = std::log(20.0) - 0.01;  // adjust factors stay within 0.05-20
  std::vector<Param> p = {
      {"cost_model.adjust.gemm_compute", "linear layers' compute efficiency (prefill)", 1,
       Param::kFactor, 1, -lf, lf},
      {"cost_model.adjust.gemm_falloff", "linear layers' small-batch falloff", 1, Param::kFactor, 1,
       -lf, lf},
      {"cost_model.adjust.gemm_bandwidth", "linear layers' weight bandwidth (decode)", 1,
       Param::kFactor, 1, -lf, lf},
      {"cost_model.adjust.attention_bandwidth", "decode attention's KV bandwidth", 1,
       Param::kFactor, 1, -lf, lf},
      {"cost_model.adjust.attention_per_seq", "decode attention's time per sequence", 1,
       Param::kFactor, 1, -lf, lf},
      {"cost_model.adjust.attention_compute", "prefill attention's compute efficiency", 1,
       Param::kFactor, 1, -lf, lf},
      {"cost_model.step_overhead_s", "fixed time per engine step", 0, Param::kMilliseconds, 2, 0,
       50},
      {"frontend.request_s", "API server time per request", 0.005, Param::kFactor, 1, -4, 3},
      {"frontend.per_output_token_s", "API server time per output token", 45.9e-6, Param::kFactor,
       1, -4, 3},
  };
  for (const sim::GpuSpec& g : sim::gpu_presets()) {
    if (g.name != gpu) continue;
    if (g.interconnect_Bps > 0)
      p.push_back({"link_Bps", "GPU-to-GPU bandwidth of collectives", g.interconnect_Bps,
                   Param::kFactor, 1, -3, 1});
    if (g.interconnect_latency_s > 0)
      p.push_back({"link_latency_s", "latency of one collective step", g.interconnect_latency_s,
                   Param::kFactor, 1, -3, 3});
  }
  return p;
}

// The calibration file's content for x over the parameters `on` (the others left out).
YAML::Node calibration_of(const std::string& gpu, const std::vector<Param>& ps,
                          const std::vector<double>& x, const std::vector<bool>& on) {
  YAML::Node c;
  c["kvfleet_calibration"] = sim::kCalibrationFileVersion;
  c["gpu"] = gpu;
  YAML::Node pool;
  pool["cost_model"]["impl"] = "fitted";
  for (std::size_t i = 0; i < ps.size(); ++i) {
    if (!on[i]) continue;
    const std::string name = ps[i].name;
    const double v = ps[i].value(x[i]);
    std::vector<std::string> parts;
    std::stringstream ss(name);
    for (std::string part; std::getline(ss, part, '.');) parts.push_back(part);
    if (parts.size() == 1) pool[parts[0]] = v;
    if (parts.size() == 2) pool[parts[0]][parts[1]] = v;
    if (parts.size() == 3) pool[parts[0]][parts[1]][parts[2]] = v;
  }
  c["pool"] = pool;
  return c;
}

// Every run's error under `cal`, the runs replayed side by side; with `lost`, each run's share of
// requests ended otherwise than measured is added to its error (the search's objective).
std::vector<double> errors(const std::vector<const FitRun*>& runs, const YAML::Node& cal,
                           bool lost = false) {
  // yaml-cpp nodes are not safe to share between threads, even to read: one copy each.
  std::vector<YAML::Node> copies;
  for (std::size_t i = 0; i < runs.size(); ++i) copies.push_back(YAML::Clone(cal));
  std::vector<double> e(runs.size());
  sim::run_points(runs.size(),
                  [&](std::size_t i) {
                    double l = 0;
                    e[i] = runs[i]->error(copies[i], &l);
                    if (lost) e[i] += l;
                  },
                  {});
  return e;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? NAN : s / static_cast<double>(v.size());
}

struct Search {
  std::vector<double> x;
  std::vector<bool> on;
  std::vector<std::string> not_exercised;
  double objective = 0;
  int evaluations = 0;
};

// Pattern search (Hooke and Jeeves' exploratory moves, the step halved when no move helps) over
// the parameters that move some run's error: deterministic, and indifferent to the small steps a
// discrete-event simulation's error takes as a parameter moves.
Search search(const std::vector<const FitRun*>& runs, const std::string& gpu,
              const std::vector<Param>& ps, const FitOptions& o, std::ostream& log) {
  Search s;
  s.x.assign(ps.size(), 0.0);
  s.on.assign(ps.size(), true);
  std::atomic<int> evaluations{0};
  auto objective = [&](const std::vector<double>& x, std::vector<double>* each = nullptr) {
    ++evaluations;
    const std::vector<double> e = errors(runs, calibration_of(gpu, ps, x, s.on), true);
    if (each) *each = e;
    double reg = 0;
    for (std::size_t i = 0; i < ps.size(); ++i)
      if (s.on[i]) reg += std::pow(x[i] / ps[i].reg_scale, 2);
    return mean(e) + o.regularisation * reg;
  };
  std::vector<double> base;
  s.objective = objective(s.x, &base);
  // What the runs exercise: a parameter moved well off its prior must move some run's error.
  for (std::size_t i = 0; i < ps.size(); ++i) {
    // Both ways: a factor on the side of a max() that is not the bottleneck moves nothing
    // upward and may downward.
    double most = 0;
    for (double probe : {+1.0, -1.0}) {
      std::vector<double> x = s.x, moved;
      x[i] = std::clamp(probe * (ps[i].form == Param::kFactor ? 0.7 : 2.0), ps[i].lo, ps[i].hi);
      if (x[i] == s.x[i]) continue;
      objective(x, &moved);
      for (std::size_t k = 0; k < base.size(); ++k) {
        const double d = std::fabs(moved[k] - base[k]);
        most = std::max(most, std::isfinite(d) ? d : 1.0);  // a change to +inf is a change
      }
    }
    if (most < 2e-4) {
      s.on[i] = false;
      s.not_exercised.push_back(ps[i].name);
    }
  }
  double step = 0.5;
  while (step > 0.02 && evaluations < o.max_evaluations) {
    bool moved = false;
    for (std::size_t i = 0; i < ps.size() && evaluations < o.max_evaluations; ++i) {
      if (!s.on[i]) continue;
      const double h = ps[i].form == Param::kFactor ? step : 4 * step;
      // Both directions replayed side by side; the better one is taken if it helps.
      std::vector<std::vector<double>> tries;
      for (double dir : {+1.0, -1.0}) {
        std::vector<double> x = s.x;
        x[i] = std::clamp(x[i] + dir * h, ps[i].lo, ps[i].hi);
        if (x[i] != s.x[i]) tries.push_back(std::move(x));
      }
      std::vector<double> v(tries.size());
      sim::run_points(tries.size(), [&](std::size_t k) { v[k] = objective(tries[k]); }, {});
      for (std::size_t k = 0; k < tries.size(); ++k)
        if (v[k] < s.objective - 1e-6) s.x = tries[k], s.objective = v[k], moved = true;
    }
    if (!moved) step /= 2;
    log << "  fit: objective " << fmt("%.4f", s.objective) << " after " << evaluations
        << " replays of the runs (step " << fmt("%.3g", step) << ")\n"
        << std::flush;
  }
  s.evaluations = evaluations;
  return s;
}

}  // namespace

FitResult fit_runs(const std::vector<std::unique_ptr<FitRun>>& runs, const FitOptions& o,
                   std::ostream& log) {
  if (runs.empty()) throw InputError("RUN", "", "give at least one measured run");
  FitResult r;
  r.gpu = runs.front()->gpu();
  for (const auto& run : runs)
    if (run->gpu() != r.gpu)
      throw InputError(run->path(), "",
                       "was replayed on " + run->gpu() + ", " + runs.front()->path() + " on " +
                           r.gpu + ": a fit is of one GPU (give --gpu, or fit each apart)");
  const std::vector<Param> ps = parameters(r.gpu);
  std::vector<const FitRun*> all;
  for (const auto& run : runs) all.push_back(run.get());

  r.before = errors(all, YAML::Node());
  // A run the replay cannot score (no request simulated to compare, a window beyond it) would
  // make every candidate equal: refused by name instead of a fit that moves nothing.
  for (std::size_t i = 0; i < runs.size(); ++i)
    if (!std::isfinite(r.before[i]))
      throw InputError(runs[i]->path(), "",
                       "its replay compares no statistic (kvfleet replay " + runs[i]->path() +
                           " says why): nothing to fit it to");
  const Search s = search(all, r.gpu, ps, o, log);
  r.evaluations = s.evaluations;
  r.calibration = calibration_of(r.gpu, ps, s.x, s.on);
  r.after = errors(all, r.calibration);
  r.not_exercised = s.not_exercised;
  for (std::size_t i = 0; i < ps.size(); ++i) {
    if (!s.on[i]) continue;
    r.fitted.push_back(ps[i].name);
    const double v = ps[i].value(s.x[i]);
    r.values.push_back(std::string(ps[i].name) + " = " + fmt("%.4g", v) + "  (" + ps[i].words +
                       (ps[i].form == Param::kFactor && ps[i].prior != 1
                            ? "; prior " + fmt("%.4g", ps[i].prior)
                            : "") +
                       ")");
  }
  r.left_out.assign(runs.size(), NAN);
  if (o.leave_one_out && runs.size() >= 2) {
    for (std::size_t k = 0; k < runs.size(); ++k) {
      std::vector<const FitRun*> rest;
      for (std::size_t j = 0; j < runs.size(); ++j)
        if (j != k) rest.push_back(all[j]);
      log << "  leave-one-out: fitting without " << runs[k]->path() << "\n";
      const Search sk = search(rest, r.gpu, ps, o, log);
      r.left_out[k] = runs[k]->error(calibration_of(r.gpu, ps, sk.x, sk.on));
    }
  }
  return r;
}

std::string calibration_text(const FitResult& r, const std::vector<std::unique_ptr<FitRun>>& runs,
                             const std::string& command) {
  std::ostringstream o;
  o << "# kvfleet calibration: the fitted cost model of " << sim::comment_line(r.gpu)
    << " corrected by measured runs.\n# Written by: " << sim::comment_line(command)
    << "\n# Runs (mean absolute "
    << "error of the replay before -> after the fit):\n";
  for (std::size_t i = 0; i < runs.size(); ++i)
    o << "#   " << sim::comment_line(runs[i]->path()) << " (" << runs[i]->format() << ", TP "
      << runs[i]->tensor_parallel() << "): " << fmt("%.1f%%", 100 * r.before[i]) << " -> "
      << fmt("%.1f%%", 100 * r.after[i]) << "\n";
  if (!r.not_exercised.empty()) {
    o << "# Not fitted (no run's error moves with them; the public fits' values stand):\n";
    for (const auto& n : r.not_exercised) o << "#   " << n << "\n";
  }
  o << "# Use: a scenario's pools[].calibration: THIS_FILE, or kvfleet replay --calibration.\n";
  o << emit(r.calibration) << "\n";
  return o.str();
}

}  // namespace kvfleet::calibration
