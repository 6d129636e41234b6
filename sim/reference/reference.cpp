#include "sim/reference/reference.h"

#include <cmath>

#include <sstream>

#include "sim/cost/profile_data.h"
#include "sim/engine/scheduler.h"
#include "sim/io/input_file.h"
#include "sim/output/results.h"
#include "sim/simulation/scenario.h"
#include "sim/simulation/simulation.h"
#include "sim/sweep/sweep.h"

namespace kvfleet::sim {

namespace {

// Each registry of engine components, as a table of names and what they do.
void registries_markdown(std::ostream& o) {
  o << "\n## Scheduling policies\n\n`pools[].engine.scheduling_policy` names one of:\n\n"
       "| policy | what it does |\n|---|---|\n";
  for (const auto& e : scheduling_registry().entries())
    o << "| `" << e.name << "` | " << e.description << " |\n";
  o << "\n## Preemption modes\n\n`pools[].engine.preemption_mode` names one of:\n\n"
       "| mode | what it does |\n|---|---|\n";
  for (const auto& e : preemption_registry().entries())
    o << "| `" << e.name << "` | " << e.description << " |\n";
  o << "\n## KV layouts\n\n`pools[].engine.kv_layout` names one of:\n\n"
       "| layout | what it does |\n|---|---|\n";
  for (const auto& e : kv_layout_registry().entries())
    o << "| `" << e.name << "` | " << e.description << " |\n";
}

// The ranges numbers take by unit, and the sizes a run derives.
void ranges_markdown(std::ostream& o) {
  o << "\n## Ranges by unit\n\n"
       "A number whose declaration above gives no bound of its own takes the bound of its unit, "
       "so that no value can overflow the clock, a counter or memory. A value out of range is "
       "refused naming the key, the range and this reason.\n\n"
       "| unit | at least | at most | why |\n|---|---|---|---|\n";
  for (const auto& u : config::unit_ranges()) {
    o << "| " << u.unit << " | " << (u.min ? config::format_double(*u.min) : "") << " | "
      << (u.max ? config::format_double(*u.max) : "") << " | " << u.why << " |\n";
  }
  o << "\nSizes the run derives are bounded before anything is allocated: at most "
    << kMaxKvBlocksPerReplica << " KV blocks per replica and " << kMaxKvBlocksPerFleet
    << " in the fleet, " << kMaxTimeseriesRows
    << " time-series rows (all replicas; an idle stretch longer than " << kIdleRowsWritten
    << " intervals keeps its first and last rows only), " << kMaxSweepPoints
    << " points per sweep; a scenario or sweep file holds at most " << (kMaxYamlFileBytes >> 20)
    << " MiB, nested at most " << config::kMaxYamlDepth << " levels.\n";
}

// The contract on exit codes, outputs and input files.
void errors_markdown(std::ostream& o) {
  o << R"(
## Errors and exit codes

Every command keeps one contract, for anything a user can type and any file they can hand in:

| exit | meaning |
|---|---|
| 0 | the command completed and every requested output is complete at its final path |
| 2 | bad input or an unusable output path: one message on stderr names the file, the line or row where one exists, and the key or column, and says what was expected; nothing new is left on disk |
| 100 + N | `kvfleet sweep` finished with N failed points (at most 200); the others are in the file |
| 130, 143 | interrupted by SIGINT or SIGTERM: the temporaries were removed, nothing was published |

Never 1, 134 (abort) or 139 (segfault): those are defects of kvfleet, to be reported.

How outputs are written: every output (`--out`, `--csv`, `--trace`, `--prometheus`, `--plots`,
a sweep's checkpoints, `plot --out`) is written under a temporary name beside its final path
(`NAME.tmp-PID`; inside an existing output folder, `DIR/.kvfleet.tmp-PID`, so that a folder that is
a mount point works) with every write, the fsync and the close checked, and renamed into place
when complete: a full disk or an I/O error is exit 2 naming the file, never a short file.
`kvfleet run` checks every output path before the run and publishes them together: when a rename
fails half-way, the outputs already renamed are taken back and the previous files restored.
kvfleet replaces only regular files: a final path that is a directory, a symbolic link, a fifo or
a device is refused. A temporary left by a killed process (SIGKILL) is removed by the next command
on the same path. Every writer holds an advisory lock (`PATH.lock`) on its output while it writes
(a sweep for its whole run): a second command on the same path is refused, naming the process.
The same scenario and seed write byte-identical HDF5 files.

YAML input (scenarios, sweep files, `--set` values): a key given twice in one map, a key that is
not a plain name, and a key given without a value are errors (YAML's own rule is that keys are
unique; a silent first-wins would hide typos). Trace rows need a prompt of at least one token (vLLM
refuses an empty prompt); a recorded output of 0 tokens is replayed as one (vLLM always samples
one); timestamps must lie within +-1e10 s. A CSV may start with a UTF-8 byte-order mark.
docs/reliability.md describes the fuzzing and mutation tests that hold kvfleet to this contract.
)";
}

// The model and GPU presets.
void presets_markdown(std::ostream& o) {
  o << "\n## Model presets\n\n| name | attention | layers | hidden | heads | KV heads | head dim | "
       "MLP | experts (per token, FFN) | vocab | parameters | KV bytes/token (bf16) | max context "
       "| "
       "source |\n"
       "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& m : model_presets()) {
    o << "| " << m.name << " | " << m.attention << " | " << m.num_layers << " | " << m.hidden_size
      << " | " << m.num_attention_heads << " | " << m.num_kv_heads << " | " << m.head_dim << " | "
      << m.intermediate_size << " | "
      << (m.moe() ? std::to_string(m.num_experts) + " (" + std::to_string(m.experts_per_token) +
                        ", " + std::to_string(m.moe_intermediate_size) + ")" +
                        (m.num_shared_experts > 0
                             ? " + " + std::to_string(m.num_shared_experts) + " shared"
                             : "") +
                        (m.first_dense_layers > 0
                             ? ", first " + std::to_string(m.first_dense_layers) + " layers dense"
                             : "")
                  : std::string("dense"))
      << " | " << m.vocab_size << " | " << m.num_params / 1e9 << "B"
      << (m.moe() || m.num_active_params > 0
              ? " (" + config::format_double(std::round(m.active_params() / 1e7) / 100) +
                    "B active)"
              : "")
      << " | " << static_cast<long long>(m.kv_bytes_per_token(2.0)) << " | "
      << m.max_position_embeddings << " | " << m.source << " |\n";
  }
  o << "\n## GPU presets\n\n| name | memory (GiB) | bandwidth (GB/s) | bf16 dense (TFLOP/s) | fp8 "
       "dense (TFLOP/s) | fp4 dense (TFLOP/s) | interconnect (GB/s) | source "
       "|\n|---|---|---|---|---|---|---|---|\n";
  char buf[256];
  for (const auto& g : gpu_presets()) {
    std::snprintf(buf, sizeof buf, "| %s | %.1f | %.0f | %.1f | %.1f | %.1f | %.0f | ",
                  g.name.c_str(), g.memory_bytes / (1024.0 * 1024 * 1024),
                  g.memory_bandwidth_Bps / 1e9, g.bf16_flops / 1e12, g.fp8_flops / 1e12,
                  g.fp4_flops / 1e12, g.interconnect_Bps / 1e9);
    o << buf << g.source << " |\n";
  }
}

}  // namespace

std::string scenario_reference_markdown() {
  std::ostringstream o;
  o << "# Scenario reference\n\n"
       "<!-- Generated by `kvfleet schema` from the parameter declarations in the code; do not "
       "edit "
       "by hand. tests check that this file is current. -->\n\n"
       "A scenario is one YAML file. Every key below may also be set from the command line with "
       "`--set key.path=value` (list elements as `pools[0].engine.max_num_seqs` or "
       "`pools.0.engine.max_num_seqs`). Unknown keys, values of the wrong type and values out of "
       "range are errors that name the file, the line and the key. Relative paths are resolved "
       "from the scenario file's folder. Components chosen by name take `impl:` plus the "
       "parameters listed in their own section. Setting a component's `impl` to another "
       "implementation (`--set workload.context_policy.impl=full`, or the GUI's box) replaces "
       "that section's parameters with the new implementation's defaults, keeping those given "
       "by other `--set` options before or after it (`--set workload.context_policy.impl=window "
       "--set workload.context_policy.turns=4`); setting the implementation the section already "
       "names changes nothing.\n\n"
       "## Top level\n\n";
  config::Documenter d;
  ScenarioConfig def;
  def.visit(d);
  o << config::to_markdown(d);
  registries_markdown(o);
  ranges_markdown(o);
  errors_markdown(o);
  presets_markdown(o);
  return o.str();
}

namespace {

void table_markdown(std::ostringstream& o, const std::string& dataset, const TableDoc& t) {
  o << "### `" << dataset << "`\n\n"
    << (t.desc.empty() ? "" : t.desc + ".") << "\n\n"
    << "| column | type | unit | description |\n|---|---|---|---|\n";
  for (const auto& c : t.columns)
    o << "| `" << c.name << "` | " << c.type << " | " << c.unit << " | " << c.desc << " |\n";
  o << "\n";
}

}  // namespace

std::string outputs_reference_markdown() {
  std::ostringstream o;
  o << "# Output reference\n\n"
       "<!-- Generated by `kvfleet outputs` from the tables' declarations in the code; do not "
       "edit by hand. tests check that this file is current. -->\n\n"
       "Every table below is an HDF5 compound dataset (one member per column, one element per "
       "row; h5py and pandas read it directly) and, for runs, a CSV file of the same columns. "
       "Each dataset carries its units and descriptions as attributes: `description` (the "
       "table's), `units` and `descriptions` (one per column, in order). Times are seconds, "
       "counts integers; NaN marks a value that does not exist (the TTFT of a request that "
       "never produced a token). A column of type *category* is an HDF5 enum: its names with "
       "codes 0, 1, ..., and `(none)` = -1 for a row without one (h5py: "
       "`h5py.check_enum_dtype(ds.dtype.fields[column][0])` gives the names); CSV writes the "
       "name (empty for none) and the Python package a pandas Categorical (NaN for none). CSV "
       "numbers are the shortest text that reads back to the same double. Recipes for reading "
       "every file with pandas, and the Python package that does it for you, are in "
       "[python.md](python.md).\n\n";
  o << "## Run results (`kvfleet run --out FILE.h5`, `--csv DIR`)\n\n"
       "`/scenario` is the scenario as run (YAML text, every default filled in) and `/report` "
       "the text report `kvfleet run` prints. `/timeseries` holds one table per replica, named "
       "by the replica with `/` as `_` (replica `h100/0` is `/timeseries/h100_0`; CSV: "
       "`timeseries_h100_0.csv`); each table's `replica` attribute holds the name as "
       "`/replicas` and `/requests` spell it. `/alerts` and `/alert_events` are written when "
       "the scenario has alert rules.\n\n";
  for (const auto& t : run_table_docs()) {
    const std::string ds =
        t.name == "timeseries/<replica>" ? "/timeseries/<replica>" : "/" + t.name;
    table_markdown(o, ds, t);
  }
  o << "### Counters on every surface\n\n"
       "A counter declared with a total beside its field (`EngineStats::declare`, "
       "`RequestRecord::declare_counters`) is a column of its table, a `/summary` metric "
       "(its total over the run: sweeps, `--slo`, `--y`, Python), a line of the report's "
       "*Counters*, a column of the GUI's table of points and, for a replica's, the OpenMetrics "
       "family `kvfleet:<name>` (one sample per replica at the end of the run). Today's:\n\n"
       "| counter | table | total | OpenMetrics |\n|---|---|---|---|\n";
  for (const auto& t : summary_totals())
    o << "| `" << t.name << "` | " << (t.per_replica ? "`/replicas`" : "`/requests`") << " | "
      << (t.how == Total::kMax ? "largest" : "sum") << " | "
      << (t.per_replica ? "`kvfleet:" + t.name + (t.how == Total::kSum ? "_total`" : "`") : "-")
      << " |\n";
  o << "\n";
  o << "## Sweep results (`kvfleet sweep --out FILE.h5`)\n\n"
       "`/sweep` is the sweep file (YAML text) and `/scenario` the base scenario as run. Axis "
       "columns are numbers when every value is, else text. Metrics that count (requests, "
       "tokens, preemptions) are integer columns, -1 for a failed point (whose `status` says "
       "failed).\n\n";
  for (const auto& t : sweep_table_docs()) table_markdown(o, "/" + t.name, t);
  o << "## Calibration profiles (`kvfleet-calibrate ... --out PROFILE.h5`)\n\n"
       "Read by the `profile` cost model (docs/calibration.md).\n\n";
  for (const auto& t : profile_table_docs()) table_markdown(o, "/" + t.name, t);
  return o.str();
}

}  // namespace kvfleet::sim
