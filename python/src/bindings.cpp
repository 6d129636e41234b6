// kvfleet._core: the C++ simulator for Python (pybind11). The functions here take what the CLI
// takes (scenario text or file, --set overrides, sweep and SLO text) and return plain data: each
// result table as its declared columns (name, kind, unit, description, values as numpy arrays,
// lists of str, or codes with names for categories). python/kvfleet/ turns them into pandas.
//
// Simulations run with the GIL released. Ctrl-C: the run's progress callback (every time-series
// sample; for sweeps and capacity searches every 0.1 s on the calling thread) takes the GIL and
// checks Python's signals; a pending KeyboardInterrupt cancels the run between events and is
// raised once it has stopped. Input errors are raised as kvfleet.InputError (a ValueError) with
// `where`, `key` and `problem`.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/cancel.h"
#include "sim/core/error.h"
#include "sim/io/output_set.h"
#include "sim/io/table.h"
#include "sim/metrics/summary.h"
#include "sim/output/report.h"
#include "sim/output/results.h"
#include "sim/simulation/scenario.h"
#include "sim/simulation/simulation.h"
#include "sim/sweep/capacity.h"
#include "sim/sweep/sizing.h"
#include "sim/sweep/sweep.h"

namespace py = pybind11;
using namespace kvfleet::sim;

namespace {

// Python's signal handlers ran and one raised (KeyboardInterrupt): thrown through the C++ code
// that polls, caught where the GIL is held again.
struct Interrupted {};

// Python's main thread: only there do signal handlers run (elsewhere a poll is pointless, and
// taking the GIL at every sample would slow a run beside busy Python threads).
unsigned long main_thread_ident = 0;

// Whether the calling thread (holding the GIL) is Python's main thread.
bool on_main_thread() { return PyThread_get_thread_ident() == main_thread_ident; }

// Checks Python's signals from a thread without the GIL; throws Interrupted when a handler
// raised (the exception stays set for Python).
void poll_signals() {
  py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() != 0) throw Interrupted{};
}

template <class T>
py::array_t<T> to_array(const std::vector<T>& v) {
  py::array_t<T> a(static_cast<py::ssize_t>(v.size()));
  if (!v.empty()) std::copy(v.begin(), v.end(), a.mutable_data());
  return a;
}

// A table as {"description": ..., "columns": [(name, kind, unit, description, values)]} where
// kind is integer, number, text or category (values: (codes, names)).
py::dict table_to_py(const Table& t) {
  py::list cols;
  for (const auto& c : t.columns) {
    py::object values;
    const char* kind;
    if (auto* i = std::get_if<std::vector<std::int64_t>>(&c.data)) {
      kind = "integer";
      values = to_array(*i);
    } else if (auto* d = std::get_if<std::vector<double>>(&c.data)) {
      kind = "number";
      values = to_array(*d);
    } else if (auto* s = std::get_if<std::vector<std::string>>(&c.data)) {
      kind = "text";
      values = py::cast(*s);
    } else {
      const auto& cat = std::get<Categorical>(c.data);
      kind = "category";
      values = py::make_tuple(to_array(cat.codes), py::cast(cat.names));
    }
    cols.append(py::make_tuple(c.name, kind, c.unit, c.desc, values));
  }
  py::dict out;
  out["description"] = t.desc;
  out["columns"] = cols;
  return out;
}

py::list docs_to_py(const std::vector<TableDoc>& docs) {
  py::list out;
  for (const auto& d : docs) {
    py::list cols;
    for (const auto& c : d.columns) cols.append(py::make_tuple(c.name, c.type, c.unit, c.desc));
    out.append(py::make_tuple(d.name, d.desc, cols));
  }
  return out;
}

ScenarioSource source(const std::string& path, const std::string& text, const std::string& name,
                      const std::string& base_dir) {
  ScenarioSource s;
  s.path = path;
  s.text = text;
  if (!name.empty()) s.name = name;
  if (!base_dir.empty()) s.base_dir = base_dir;
  return s;
}

// Runs `work` (which may poll) with the GIL released; a poll that found a signal re-raises it.
template <class F>
auto without_gil(F&& work) {
  try {
    py::gil_scoped_release release;
    return work();
  } catch (const Interrupted&) {
    throw py::error_already_set();
  }
}

py::dict run(const std::string& path, const std::string& text, const std::string& name,
             const std::string& base_dir, const std::vector<std::string>& sets) {
  struct Out {
    std::unique_ptr<Scenario> sc;
    RunResult r;
    Summary s;
    std::string report;
    bool interrupted = false;
  };
  const bool poll = on_main_thread();
  Out o = without_gil([&] {
    Out out;
    out.sc = std::make_unique<Scenario>(source(path, text, name, base_dir).load(sets));
    Simulation sim(*out.sc);
    CancelToken cancel;
    sim.set_cancel(&cancel);
    if (poll)
      sim.on_progress([&](SimTime, std::size_t) {
        try {
          poll_signals();
        } catch (const Interrupted&) {
          out.interrupted = true;
          cancel.cancel();  // the run stops at its next sample
        }
      });
    out.r = sim.run();
    if (out.interrupted) throw Interrupted{};
    out.s = summarize(out.r);
    out.report = report_text(*out.sc, out.r, out.s);
    return out;
  });
  py::dict d;
  d["scenario"] = o.sc->resolved_yaml;
  d["report"] = o.report;
  d["requests"] = table_to_py(requests_table(o.r));
  d["summary"] = table_to_py(summary_table(o.s));
  d["replicas"] = table_to_py(replicas_table(o.r));
  d["tenants"] = table_to_py(tenants_table(o.r));
  d["sessions"] = table_to_py(sessions_table(o.r.requests));
  d["binding"] = table_to_py(binding_table(o.r, o.s));
  py::list ts;
  for (const auto& t : o.r.timeseries)
    ts.append(py::make_tuple(t.replica, table_to_py(timeseries_table(t))));
  d["timeseries"] = ts;
  d["stopped_early"] = o.r.stopped_early;
  d["events"] = o.r.events;
  d["end_s"] = to_seconds(o.r.end_time);
  return d;
}

// A sweep, in memory or (out given) into a results file like `kvfleet sweep --out`: checkpoints
// every 10 s, `resume` skips the points the file holds (io: the file's lock is held), and Ctrl-C
// writes the points finished so far before KeyboardInterrupt is raised. `progress` (None or a
// callable) is called with (points done, points to do) about every half second.
py::dict sweep(const std::string& yaml, const std::string& name, const std::string& base_dir,
               const std::string& base_text, const std::string& base_name, int threads,
               const std::string& out, bool resume, py::object progress) {
  SweepSpec spec = load_sweep_text(yaml, name, base_dir);
  if (!base_text.empty()) {
    spec.base_source = source("", base_text, base_name, base_dir);
  }
  std::optional<OutputLock> lock;
  SweepResults previous;
  bool have_previous = false;
  if (!out.empty()) {
    check_output_file("out", out);
    lock.emplace("out", out);
    if (resume && std::filesystem::exists(out)) {
      previous = read_sweep_h5(out);
      have_previous = true;
    }
  } else if (resume) {
    throw InputError("resume", "", "needs out=: the results file to resume");
  }
  const bool poll = on_main_thread();
  const bool report = !progress.is_none();
  SweepResults results = without_gil([&] {
    validate_sweep(spec);
    SweepResults r = prepare_sweep(spec, have_previous ? &previous : nullptr);
    // A DataFrame in memory keeps wall times; a file is byte-identical to the CLI's.
    r.record_wall_time = out.empty();
    SweepOptions opt;
    opt.threads = threads;
    opt.report_every_s = 0.1;
    if (poll || report)
      opt.on_progress = [&](const SweepResults&, std::size_t done, std::size_t to_do) {
        if (poll) poll_signals();
        if (report) {
          py::gil_scoped_acquire gil;
          try {
            progress(done, to_do);
          } catch (py::error_already_set& e) {
            e.restore();  // the callback's exception, set again for Python
            throw Interrupted{};
          }
        }
      };
    if (!out.empty())
      opt.on_checkpoint = [&](const SweepResults& now) { write_sweep_h5(out, now); };
    try {
      run_sweep(spec, r, opt);
    } catch (const Interrupted&) {
      if (!out.empty()) write_sweep_h5(out, r);  // the finished points, for resume=True
      throw;
    }
    if (!out.empty()) write_sweep_h5(out, r);
    return r;
  });
  py::dict d;
  d["points"] = table_to_py(sweep_points_table(results));
  d["curves"] = table_to_py(sweep_curves_table(results));
  d["scenario"] = results.base_yaml;
  d["axes"] = results.axis_keys;
  d["metrics"] = results.metric_names;
  return d;
}

py::dict capacity(const std::string& path, const std::string& text, const std::string& name,
                  const std::string& base_dir, const std::string& slo_text, const std::string& load,
                  const std::string& key, int replicates, double tolerance, int threads,
                  const std::vector<std::string>& sets, double step_sensitivity) {
  const std::vector<Slo> slo = parse_slo(slo_text);
  CapacityOptions opt;
  opt.step_time_sensitivity = step_sensitivity;
  opt.load = load;
  opt.key = key;
  opt.replicates = replicates;
  opt.tolerance = tolerance;
  opt.threads = threads;
  opt.sets = sets;
  if (on_main_thread()) opt.poll = [] { poll_signals(); };
  const CapacityResult c =
      without_gil([&] { return find_capacity(source(path, text, name, base_dir), slo, opt); });
  py::dict d;
  d["key"] = c.key;
  d["start"] = c.start;
  d["per_seed"] = c.per_seed;
  d["seeds"] = c.seeds;
  d["mean"] = c.mean;
  d["ci95_low"] = c.ci95_low;
  d["ci95_high"] = c.ci95_high;
  d["runs"] = c.runs;
  d["workload"] = c.workload_yaml;
  d["limited_by"] = c.limited_by;
  d["not_met"] = c.not_met;
  d["step_sensitivity"] = c.sensitivity;
  d["slower_steps"] = c.slower_steps;
  d["faster_steps"] = c.faster_steps;
  py::dict e;
  e["cost_model"] = c.expected.cost_model;
  e["moe"] = c.expected.moe;
  e["runs"] = c.expected.runs;
  e["ttft"] = c.expected.ttft;
  e["tpot"] = c.expected.tpot;
  e["e2e"] = c.expected.e2e;
  e["text"] = c.expected.describe();
  d["expected_error"] = e;
  d["expected_low"] = c.expected_low;
  d["expected_high"] = c.expected_high;
  std::vector<std::string> described;
  for (const auto& s : slo) described.push_back(s.describe());
  d["slo"] = described;
  return d;
}

// The replicas a pool needs for a target load within the SLO (sweep/sizing.h), as kvfleet size.
py::dict size(const std::string& path, const std::string& text, const std::string& name,
              const std::string& base_dir, const std::string& slo_text, double target,
              const std::string& load, const std::string& key, const std::string& pool,
              double price_per_hour, int max_replicas, int replicates, int threads,
              const std::vector<std::string>& sets) {
  const std::vector<Slo> slo = parse_slo(slo_text);
  SizingOptions opt;
  opt.target = target;
  opt.load = load;
  opt.key = key;
  opt.pool = pool;
  opt.price_per_hour = price_per_hour;
  opt.max_replicas = max_replicas;
  opt.replicates = replicates;
  opt.threads = threads;
  opt.sets = sets;
  if (on_main_thread()) opt.poll = [] { poll_signals(); };
  const SizingResult z =
      without_gil([&] { return find_replicas(source(path, text, name, base_dir), slo, opt); });
  py::dict d;
  d["pool"] = z.pool;
  d["key"] = z.load_key;
  d["target"] = z.target;
  // load="output_tokens_per_s": what the target became (0 otherwise).
  d["target_output_tokens_per_s"] = z.target_output_tokens_per_s;
  d["output_tokens_per_request"] = z.output_tokens_per_request;
  d["measured_completed"] = z.measured_completed;
  d["measured_arrived"] = z.measured_arrived;
  d["seeds"] = z.seeds;
  d["per_seed"] = z.per_seed;
  d["replicas"] = z.replicas;
  d["gpus_per_replica"] = z.gpus_per_replica;
  d["gpus"] = z.gpus;
  d["requests_per_s"] = z.requests_per_s;
  d["output_tokens_per_s"] = z.output_tokens_per_s;
  d["duration_s"] = z.duration_s;
  d["price_per_hour"] = z.price_per_hour;
  d["price_source"] = z.price_source;
  d["cost_per_hour"] = z.cost_per_hour;
  d["cost_per_month"] = z.cost_per_month;
  d["usd_per_million_output_tokens"] = z.usd_per_million_output_tokens;
  d["limited_by"] = z.limited_by;
  d["not_met"] = z.not_met;
  d["runs"] = z.runs;
  d["expected_error"] = z.expected.describe();
  std::vector<std::string> described;
  for (const auto& s : slo) described.push_back(s.describe());
  d["slo"] = described;
  return d;
}

// The scenario's parameters as declared: (key, type, unit, default, description).
py::list parameters() {
  py::list out;
  for (const auto& r : scenario_parameters())
    out.append(py::make_tuple(r.key, r.type, r.unit, r.default_value, r.description));
  return out;
}

py::list metrics() {
  py::list out;
  for (const auto& m : summary_metrics())
    out.append(py::make_tuple(m.name, m.unit, m.integer ? "integer" : "number", m.desc,
                              metric_aliases(m.name)));
  return out;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "kvfleet's C++ simulator (use the kvfleet package, not this module)";
  main_thread_ident =
      py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
  static py::exception<InputError> input_error(m, "InputError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InputError& e) {
      py::object err = py::reinterpret_borrow<py::object>(input_error.ptr())(e.what());
      err.attr("where") = e.where();
      err.attr("key") = e.key();
      err.attr("problem") = e.problem();
      PyErr_SetObject(input_error.ptr(), err.ptr());
    }
  });
  m.def("run", &run, py::arg("path"), py::arg("text"), py::arg("name"), py::arg("base_dir"),
        py::arg("sets"));
  m.def("sweep", &sweep, py::arg("yaml"), py::arg("name"), py::arg("base_dir"),
        py::arg("base_text"), py::arg("base_name"), py::arg("threads"), py::arg("out") = "",
        py::arg("resume") = false, py::arg("progress") = py::none());
  m.def("capacity", &capacity, py::arg("path"), py::arg("text"), py::arg("name"),
        py::arg("base_dir"), py::arg("slo"), py::arg("load"), py::arg("key"), py::arg("replicates"),
        py::arg("tolerance"), py::arg("threads"), py::arg("sets"), py::arg("step_sensitivity"));
  m.def("size", &size, py::arg("path"), py::arg("text"), py::arg("name"), py::arg("base_dir"),
        py::arg("slo"), py::arg("target"), py::arg("load"), py::arg("key"), py::arg("pool"),
        py::arg("price_per_hour"), py::arg("max_replicas"), py::arg("replicates"),
        py::arg("threads"), py::arg("sets"));
  m.def("parameters", &parameters);
  m.def("metrics", &metrics);
  m.def("run_tables", [] { return docs_to_py(run_table_docs()); });
  m.def("sweep_tables", [] { return docs_to_py(sweep_table_docs()); });
  m.def("builtin_default_scenario", [] { return builtin_default_scenario(); });
}
