// kvfleet sweep and kvfleet merge: a sweep of scenarios on all cores (MPI across machines),
// and the join of its shards.
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
#include "sim/simulation/provenance.h"
#include "sim/simulation/scenario.h"
#include "sim/simulation/simulation.h"
#include "sim/sweep/capacity.h"
#include "sim/sweep/sizing.h"
#include "sim/sweep/sweep.h"

using namespace kvfleet::sim;

namespace kvfleet::cli {

namespace {

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

po::options_description sweep_options() {
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
  return opts;
}

// The sweep's options from the command line; under MPI each rank runs its shard.
SweepOptions sweep_run_options(const po::variables_map& vm, Mpi& mpi) {
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
  return opt;
}

// Every rank sends its points to rank 0, which puts them into `results`.
void gather_points(Mpi& mpi, SweepResults& results) {
  const bool root = mpi.rank() == 0;
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

// Writes the results file; one that cannot be written is an unusable --out (exit 2).
void write_results(const std::string& out, const SweepResults& r) {
  try {
    write_sweep_h5(out, r);
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError("--out", "", out + ": cannot write: " + e.what());
  }
}

// The sweep's last words; the exit status: 0, or 100 + the failed points (at most 200).
int report_sweep(const SweepResults& results, const std::string& out) {
  const std::size_t failed = results.failed();
  std::cout << "kvfleet sweep: " << results.completed() << " of " << results.points.size()
            << " points done, " << failed << " failed -> " << out << "\n";
  for (const auto& p : results.points) {
    if (p.done && !p.ok) std::cout << "  point " << p.point << " failed: " << p.error << "\n";
  }
  return failed == 0 ? 0 : 100 + static_cast<int>(std::min<std::size_t>(failed, 100));
}

// --out may not replace a file the sweep's scenario reads (a trace, a profile, a config.json).
void check_not_an_input(const std::string& out, const std::string& base_yaml) {
  for (const auto& [key, path] : scenario_input_files(base_yaml))
    if (same_file(out, path))
      throw InputError(
          "--out", "",
          out + " is an input of the sweep's scenario (" + key + "): write it elsewhere");
}

}  // namespace

int cmd_sweep(const std::vector<std::string>& args, Mpi& mpi) {
  const po::options_description opts = sweep_options();
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
  SweepOptions opt = sweep_run_options(vm, mpi);
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
  check_not_an_input(out, results.base_yaml);
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
  auto write_out = [&](const SweepResults& r) { write_results(out, r); };
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
    gather_points(mpi, results);
  }
  if (!root) return 0;
  write_out(results);
  return report_sweep(results, out);
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

}  // namespace kvfleet::cli
