// kvfleet capacity and kvfleet size: the load at which an SLO holds, and the replicas that
// serve a target load within it.
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
#include "sim/simulation/scenario.h"
#include "sim/simulation/simulation.h"
#include "sim/sweep/capacity.h"
#include "sim/sweep/sizing.h"
#include "sim/sweep/sweep.h"

using namespace kvfleet::sim;

namespace kvfleet::cli {

namespace {

po::options_description capacity_options() {
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
  return opts;
}

// The capacity as kvfleet capacity prints it: per seed, the step-time sensitivity, the expected
// error, what limited it and the workload it belongs to.
void print_capacity(const std::string& path, const std::vector<Slo>& slo, const CapacityResult& c) {
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
  if (!c.not_met.empty())
    std::printf(
        "  The SLO holds at no load tried: %s\n  (capacity assumes that raising %s raises the "
        "load; for a key that lowers it the search went the wrong way)\n",
        c.not_met.c_str(), c.key.c_str());
  std::printf("\nThe workload this capacity belongs to (resolved; %s is what was varied):\n",
              c.key.c_str());
  std::stringstream ws(c.workload_yaml);
  for (std::string line; std::getline(ws, line);) std::printf("  %s\n", line.c_str());
}

po::options_description size_options() {
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
  return opts;
}

// The sizing as kvfleet size prints it: the target, replicas per seed, what the fleet served, its
// cost, what one replica fewer misses, the expected error.
void print_sizing(const ScenarioSource& source, const std::vector<Slo>& slo,
                  const SizingResult& z) {
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
    return;
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
}

}  // namespace

int cmd_capacity(const std::vector<std::string>& args) {
  const po::options_description opts = capacity_options();
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
  print_capacity(path, slo, c);
  return 0;
}

int cmd_size(const std::vector<std::string>& args) {
  const po::options_description opts = size_options();
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
  print_sizing(source, slo, z);
  return 0;
}

}  // namespace kvfleet::cli
