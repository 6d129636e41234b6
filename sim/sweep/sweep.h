#pragma once
// Sweeps (`kvfleet sweep`): a base scenario, axes over any scenario key, replicates with
// distinct seeds, run on all cores with results identical whatever the thread count, written to
// one HDF5 file that an interruption never corrupts and that --resume continues.
//
// Sweep file (YAML; paths relative to it):
//   base: ../default.yaml          # scenario file; omitted: the built-in default scenario
//   set: [simulation.max_time_s=600]   # overrides applied to every point
//   axes:                          # the grid is their Cartesian product, first axis slowest
//     - {key: workload.arrival.rate_per_s, values: [10, 20, 40]}
//     - {key: pools[0].engine.max_num_seqs, range: {start: 64, stop: 256, step: 64}}
//     - {key: pools[0].engine.gpu_memory_utilization, log_range: {start: 0.5, stop: 0.9, num: 3}}
//     - key: config                # cases: named sets of overrides (the key is only a label)
//       cases:
//         - {name: tp4, set: [pools[0].tensor_parallel=4]}
//         - {name: 2x-tp2, set: [pools[0].replicas=2, pools[0].tensor_parallel=2]}
//   sample:                        # or instead: random or Latin-hypercube points in a box
//     {method: latin_hypercube | random, n: 100, seed: 7,
//      keys: [{key: ..., min: ..., max: ..., log: false, integer: false}]}
//   replicates: 3                  # seeds seed, seed+1, ... (seed: the base scenario's)
//   metrics: [ttft_p99_s, tpot_p99_s]  # /summary names to keep; omitted: all
//   curves: true                   # per point: TTFT, TPOT and E2E at percentiles 1..99
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/io/table.h"
#include "sim/simulation/scenario.h"

namespace kvfleet::sim {

// The most points one sweep may have (combinations × replicates): each keeps a row of results.
inline constexpr std::size_t kMaxSweepPoints = 1'000'000;

struct SweepAxis {
  std::string key;
  std::vector<std::string> values;              // as --set values; for cases, their names
  std::vector<std::vector<std::string>> cases;  // cases: each value's overrides; else empty
};

struct SweepSpec {
  std::string path;  // the sweep file ("" for text)
  std::string text;  // its YAML text, stored in the results to check --resume
  std::string base;  // scenario file, resolved; "" = the built-in default
  // Where the points' scenario is loaded from: the base file, or text given by a program (the
  // Python package); a sweep file's `base` sets its path.
  ScenarioSource base_source;
  std::vector<std::string> sets;
  std::vector<SweepAxis> axes;  // for grids and samples alike (samples: one value per point)
  bool sampled = false;         // points are the i-th value of every axis, not the product
  int replicates = 1;
  std::int64_t seed = -1;            // -1: the base scenario's seed
  std::vector<std::string> metrics;  // empty = all
  bool curves = true;

  std::size_t num_combinations() const;
  std::size_t num_points() const { return num_combinations() * replicates; }
  // Overrides of point i (combination i / replicates, replicate i % replicates).
  std::vector<std::string> overrides(std::size_t point, std::int64_t base_seed) const;
  std::vector<std::string> axis_values(std::size_t point) const;
};

// Parses a sweep file; throws InputError naming the file, line and key (unknown keys, an empty
// range, a range with a non-positive step, no axes and no sample, a key varied twice, more than
// kMaxSweepPoints points...).
SweepSpec load_sweep_file(const std::string& path);
// `check_files` false skips the base scenario's existence check (reading stored sweep text).
SweepSpec load_sweep_text(const std::string& yaml, const std::string& name,
                          const std::string& base_dir, bool check_files = true);

// One point's outcome. Metrics follow SweepResults::metric_names; curves hold, for TTFT, TPOT
// and E2E in turn, the percentiles 1..99 (seconds, NaN when no request completed).
struct PointResult {
  std::int64_t point = 0;
  std::int32_t replicate = 0;
  std::int64_t seed = 0;
  bool done = false;
  bool ok = false;
  std::string error;
  double wall_s = 0;
  std::vector<double> metrics;
  std::vector<double> curves;
};
inline constexpr int kCurvePercentiles = 99;
// What a count metric's integer column holds for a failed point (which has no metrics).
inline constexpr std::int64_t kFailedCount = -1;

struct SweepResults {
  std::string sweep_text;
  std::string base_yaml;  // the base scenario resolved (first point's, seed aside)
  std::vector<std::string> axis_keys;
  std::vector<std::string> metric_names;
  std::vector<std::vector<std::string>> axis_values;  // per point (as given)
  std::vector<PointResult> points;                    // index = point
  // Whether /points keeps each point's wall-clock time (wall_s; kvfleet sweep --timing). Off by
  // default so that a sweep's file is byte-identical for the same sweep file and seeds.
  bool record_wall_time = false;
  std::size_t completed() const;
  std::size_t failed() const;
};

struct SweepOptions {
  int threads = 0;            // 0: all cores
  int shard = 0, shards = 1;  // run the points with index % shards == shard
  // Called on the calling thread about every `report_every_s` and at the end.
  std::function<void(const SweepResults&, std::size_t done_now, std::size_t to_do)> on_progress;
  double report_every_s = 0.5;
  // Called on the calling thread every `checkpoint_every_s` with the results so far (write them).
  std::function<void(const SweepResults&)> on_checkpoint;
  double checkpoint_every_s = 10;
};

// Checks every point's scenario loads (unknown keys, bad values) before anything runs; throws
// the first InputError with the point's overrides named.
void validate_sweep(const SweepSpec& spec);

// Prepares the results skeleton: metric names (from the spec, checked against the summary's),
// axis values per point. `previous` (from --resume) supplies points already done.
SweepResults prepare_sweep(const SweepSpec& spec, const SweepResults* previous = nullptr);

// Runs the points of the shard that are not done yet, on `threads` threads.
void run_sweep(const SweepSpec& spec, SweepResults& results, const SweepOptions& opt);

// The /points and /curves tables of the points done.
Table sweep_points_table(const SweepResults& r);
Table sweep_curves_table(const SweepResults& r);

// HDF5: /sweep (the sweep file), /scenario (base resolved), /points (point, replicate, seed, one
// column per axis, status, error, wall_s, one column per metric), /curves (point, metric,
// percentile, value). Written atomically. Only points done are written.
void write_sweep_h5(const std::string& path, const SweepResults& r);
SweepResults read_sweep_h5(const std::string& path);
// The tables of a sweep file, as declared (docs/outputs.md); axis and metric columns shown once.
std::vector<TableDoc> sweep_table_docs();
// Joins shard files of one sweep (same /sweep text); throws InputError when they differ or
// overlap.
SweepResults merge_sweeps(const std::vector<SweepResults>& parts);

// Bytes for MPI gathering, and back.
std::string serialize_points(const std::vector<PointResult>& points);
std::vector<PointResult> deserialize_points(const std::string& bytes);

}  // namespace kvfleet::sim
