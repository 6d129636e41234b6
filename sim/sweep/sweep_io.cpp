// A sweep's results as tables and files: /points, /curves, HDF5 written and read back, shards
// merged, points serialised for MPI.
#include "sim/sweep/sweep.h"

#include "sim/simulation/provenance.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "sim/config/params.h"
#include "sim/core/error.h"
#include "sim/core/rng.h"
#include "sim/io/h5.h"
#include "sim/io/input_file.h"
#include "sim/metrics/summary.h"
#include "sim/simulation/scenario.h"
#include "sim/simulation/simulation.h"
#include "sim/sweep/point_runner.h"

#include "sim/sweep/sweep_detail.h"

namespace kvfleet::sim {

using namespace sweep_detail;

namespace {

const char* kCurveNames[3] = {"ttft", "tpot", "e2e"};

}  // namespace

namespace {

std::vector<std::size_t> done_rows(const SweepResults& r) {
  std::vector<std::size_t> rows;
  for (std::size_t i = 0; i < r.points.size(); ++i)
    if (r.points[i].done) rows.push_back(i);
  return rows;
}

}  // namespace

Table sweep_points_table(const SweepResults& r) {
  const std::vector<std::size_t> rows = done_rows(r);
  Table t;
  t.desc = "one row per point done: its axis values, status and metrics";
  auto& point = t.i64("point", "", "point index (combination x replicates + replicate)");
  auto& rep = t.i64("replicate", "", "replicate, from 0");
  auto& seed = t.i64("seed", "", "the point's scenario seed");
  for (std::size_t k = 0; k < r.axis_keys.size(); ++k) {
    bool numeric = true, whole = true;
    for (std::size_t i : rows) {
      numeric = numeric && is_number(r.axis_values[i][k]);
      if (numeric) {
        const double v = std::strtod(r.axis_values[i][k].c_str(), nullptr);
        whole = whole && std::nearbyint(v) == v && std::fabs(v) < 9.0e15;
      }
    }
    // The key's unit from its declaration; an integer key's values stay integers.
    const KeyDeclaration decl = declared_key(r.axis_keys[k]);
    if (numeric && decl.integer && whole) {
      auto& c = t.i64(r.axis_keys[k], decl.unit, "axis: the value of this scenario key");
      for (std::size_t i : rows)
        c.push_back(static_cast<std::int64_t>(std::strtod(r.axis_values[i][k].c_str(), nullptr)));
    } else if (numeric) {
      auto& c = t.f64(r.axis_keys[k], decl.unit, "axis: the value of this scenario key");
      for (std::size_t i : rows) c.push_back(std::strtod(r.axis_values[i][k].c_str(), nullptr));
    } else {
      auto& c = t.str(r.axis_keys[k], "", "axis: the value (or case) of this key");
      for (std::size_t i : rows) c.push_back(r.axis_values[i][k]);
    }
  }
  auto& status = t.str("status", "", "ok or failed");
  auto& error = t.str("error", "", "why it failed (empty when ok)");
  std::vector<double>* wall =
      r.record_wall_time
          ? &t.f64("wall_s", "s",
                   "wall-clock time the point took (varies run to run; only with kvfleet sweep "
                   "--timing)")
          : nullptr;
  for (std::size_t i : rows) {
    const auto& p = r.points[i];
    point.push_back(p.point);
    rep.push_back(p.replicate);
    seed.push_back(p.seed);
    status.push_back(p.ok ? "ok" : "failed");
    error.push_back(p.error);
    if (wall) wall->push_back(p.wall_s);
  }
  for (std::size_t m = 0; m < r.metric_names.size(); ++m) {
    std::string unit, desc = "a counter the workload keeps";
    bool integer = false;
    for (const auto& decl : summary_metrics())
      if (decl.name == r.metric_names[m])
        unit = decl.unit, desc = decl.desc, integer = decl.integer;
    // Counts stay integers; a failed point has none (kFailedCount, status says failed).
    if (integer) {
      auto& c = t.i64(r.metric_names[m], unit,
                      desc + " (" + std::to_string(kFailedCount) + ": the point failed)");
      for (std::size_t i : rows) {
        const auto& p = r.points[i];
        const double v = m < p.metrics.size() ? p.metrics[m] : std::nan("");
        c.push_back(std::isfinite(v) ? static_cast<std::int64_t>(v) : kFailedCount);
      }
      continue;
    }
    auto& c = t.f64(r.metric_names[m], unit, desc);
    for (std::size_t i : rows) {
      const auto& p = r.points[i];
      c.push_back(m < p.metrics.size() ? p.metrics[m] : std::nan(""));
    }
  }
  return t;
}

Table sweep_curves_table(const SweepResults& r) {
  const std::vector<std::size_t> rows = done_rows(r);
  Table cv;
  cv.desc = "per point: percentiles 1..99 of TTFT, TPOT and E2E of completed requests";
  auto& cp = cv.i64("point", "", "point index");
  auto& cm = cv.str("metric", "", "ttft, tpot or e2e");
  auto& pct = cv.i64("percentile", "", "1 to 99");
  auto& val = cv.f64("value_s", "s", "the latency at that percentile (NaN: none completed)");
  for (std::size_t i : rows) {
    const auto& p = r.points[i];
    for (std::size_t j = 0; j < p.curves.size(); ++j) {
      cp.push_back(p.point);
      cm.push_back(kCurveNames[j / kCurvePercentiles]);
      pct.push_back(static_cast<std::int64_t>(j % kCurvePercentiles) + 1);
      val.push_back(p.curves[j]);
    }
  }
  return cv;
}

void write_sweep_h5(const std::string& path, const SweepResults& r) {
  h5::write_file_atomically(path, [&](hid_t file) {
    h5::write_string_dataset(file, "sweep", r.sweep_text, "the sweep file (YAML)");
    h5::write_string_dataset(file, "scenario", r.base_yaml,
                             "the base scenario as run, defaults filled in (YAML)");
    h5::write_table(file, "points", sweep_points_table(r));
    h5::write_table(file, "curves", sweep_curves_table(r));
    h5::write_table(file, "provenance", provenance_table_for_sweep(r.sweep_text));
  });
}

std::vector<TableDoc> sweep_table_docs() {
  SweepResults r;             // one point with one axis and one metric, to show the shape
  r.record_wall_time = true;  // documented, with when it is written
  r.axis_keys = {"<axis key>"};
  r.metric_names = {"<metric>"};
  r.axis_values = {{"1"}};
  r.points.resize(1);
  r.points[0].done = r.points[0].ok = true;
  r.points[0].metrics = {0.0};
  std::vector<TableDoc> d = {doc_of("points", sweep_points_table(r)),
                             doc_of("curves", sweep_curves_table(r)),
                             doc_of("provenance", provenance_table_for_sweep(""))};
  d.back().desc += " (rows: kvfleet.version, kvfleet.commit, command_line, sweep.sha256)";
  for (auto& c : d[0].columns) {
    if (c.name == "<metric>") {
      c.desc =
          "one column per metric kept (the sweep file's metrics:, all of /summary when "
          "omitted), with its unit and meaning in /summary";
    }
    if (c.name == "<axis key>") {
      c.type = "number, integer or text";
      c.desc =
          "one column per axis: the value of this scenario key, with the unit its declaration "
          "gives (docs/scenarios.md); an integer key's values as integers, a case axis's "
          "names as text";
    }
  }
  return d;
}

namespace {

using I64 = std::vector<std::int64_t>;
using F64 = std::vector<double>;
using Str = std::vector<std::string>;

// Typed access to a sweep file's tables that names what is missing or of the wrong type.
struct SweepTables {
  const std::string& path;
  const Column& column(const Table& tb, const char* ds, const std::string& n) const {
    if (const Column* c = tb.find(n)) return *c;
    throw InputError(path, std::string(ds) + "." + n, "column is missing");
  }
  template <class V>
  const V& typed(const Table& tb, const char* ds, const std::string& n, const char* kind) const {
    if (auto* v = std::get_if<V>(&column(tb, ds, n).data)) return *v;
    throw InputError(path, std::string(ds) + "." + n, std::string("is not ") + kind);
  }
};

// A point's axis value as its text.
std::string axis_value(const Column& c, std::size_t row) {
  if (auto* d = std::get_if<F64>(&c.data)) return config::format_double((*d)[row]);
  if (auto* x = std::get_if<Str>(&c.data)) return (*x)[row];
  if (auto* k = std::get_if<Categorical>(&c.data)) return k->name(row);
  return std::to_string(std::get<I64>(c.data)[row]);
}

// /points into r.points and r.axis_values; returns each point's index in r.points.
std::map<std::int64_t, std::size_t> read_points(const SweepTables& at, const Table& t,
                                                const SweepSpec& spec, SweepResults& r) {
  const auto& point = at.typed<I64>(t, "points", "point", "integer");
  const auto& replicate = at.typed<I64>(t, "points", "replicate", "integer");
  const auto& seed = at.typed<I64>(t, "points", "seed", "integer");
  const auto& status = at.typed<Str>(t, "points", "status", "text");
  const auto& error = at.typed<Str>(t, "points", "error", "text");
  // wall_s: only in files written with --timing (and every file before it was optional).
  const bool has_wall = t.find("wall_s") != nullptr;
  r.record_wall_time = has_wall;
  static const F64 no_wall;
  const auto& wall = has_wall ? at.typed<F64>(t, "points", "wall_s", "a number") : no_wall;
  // A metric column: numbers, or a count (integers, kFailedCount for a failed point).
  std::vector<const Column*> metrics;
  for (const auto& m : r.metric_names) {
    const Column& c = at.column(t, "points", m);
    if (!std::holds_alternative<F64>(c.data) && !std::holds_alternative<I64>(c.data))
      throw InputError(at.path, "points." + m, "is not a number");
    metrics.push_back(&c);
  }
  std::vector<const Column*> axis_cols;
  for (const auto& k : r.axis_keys) axis_cols.push_back(&at.column(t, "points", k));
  std::map<std::int64_t, std::size_t> index;
  for (std::size_t row = 0; row < point.size(); ++row) {
    PointResult p;
    p.point = point[row];
    if (p.point < 0 || static_cast<std::size_t>(p.point) >= spec.num_points() ||
        index.count(p.point))
      throw InputError(at.path + ": points row " + std::to_string(row + 1), "point",
                       std::to_string(p.point) + " is not a point of this sweep, or appears twice");
    p.replicate = static_cast<std::int32_t>(replicate[row]);
    p.seed = seed[row];
    p.done = true;
    p.ok = status[row] == "ok";
    p.error = error[row];
    p.wall_s = has_wall ? wall[row] : 0.0;
    for (const Column* m : metrics) {
      if (auto* d = std::get_if<F64>(&m->data)) {
        p.metrics.push_back((*d)[row]);
      } else {
        const std::int64_t v = std::get<I64>(m->data)[row];
        p.metrics.push_back(v == kFailedCount && !p.ok ? std::nan("") : static_cast<double>(v));
      }
    }
    std::vector<std::string> av;
    for (const Column* c : axis_cols) av.push_back(axis_value(*c, row));
    index[p.point] = r.points.size();
    r.points.push_back(std::move(p));
    r.axis_values.push_back(std::move(av));
  }
  return index;
}

// /curves: each point's latency percentiles.
void read_curves(const SweepTables& at, const Table& cv,
                 const std::map<std::int64_t, std::size_t>& index, SweepResults& r) {
  const auto& cp = at.typed<I64>(cv, "curves", "point", "integer");
  const auto& val = at.typed<F64>(cv, "curves", "value_s", "a number");
  for (std::size_t row = 0; row < cp.size(); ++row) {
    auto it = index.find(cp[row]);
    if (it != index.end()) r.points[it->second].curves.push_back(val[row]);
  }
  for (const auto& p : r.points)
    if (!p.curves.empty() && p.curves.size() != 3 * kCurvePercentiles)
      throw InputError(at.path, "curves",
                       "point " + std::to_string(p.point) + " has " +
                           std::to_string(p.curves.size()) + " curve values, not " +
                           std::to_string(3 * kCurvePercentiles));
}

}  // namespace

SweepResults read_sweep_h5(const std::string& path) {
  const h5::H5 file = h5::open_for_reading(path, "sweep results");
  auto read_text = [&](const char* name) {
    if (!h5::has_link(file.id, name))
      throw InputError(path, name, "dataset missing: not a sweep file");
    try {
      return h5::read_string_dataset(file.id, name);
    } catch (const std::runtime_error& e) {
      throw InputError(path, name, e.what());
    }
  };
  SweepResults r;
  r.sweep_text = read_text("sweep");
  r.base_yaml = read_text("scenario");
  auto table = [&](const char* name) {
    try {
      return h5::read_table(file.id, name);
    } catch (const std::runtime_error& e) {
      throw InputError(path, name, e.what());
    }
  };
  const Table t = table("points");
  const Table cv = table("curves");
  const SweepSpec spec = load_sweep_text(r.sweep_text, path + ":/sweep", ".", false);
  for (const auto& a : spec.axes) r.axis_keys.push_back(a.key);
  const std::set<std::string> fixed = {"point", "replicate", "seed", "status", "error", "wall_s"};
  const std::set<std::string> axes(r.axis_keys.begin(), r.axis_keys.end());
  for (const auto& c : t.columns)
    if (!fixed.count(c.name) && !axes.count(c.name)) r.metric_names.push_back(c.name);
  const SweepTables at{path};
  const auto index = read_points(at, t, spec, r);
  read_curves(at, cv, index, r);
  return r;
}

SweepResults merge_sweeps(const std::vector<SweepResults>& parts) {
  if (parts.empty()) throw InputError("merge", "", "no inputs");
  SweepResults out;
  out.sweep_text = parts[0].sweep_text;
  out.base_yaml = parts[0].base_yaml;
  out.axis_keys = parts[0].axis_keys;
  out.metric_names = parts[0].metric_names;
  // Wall times kept only when every part kept them.
  out.record_wall_time = std::all_of(parts.begin(), parts.end(),
                                     [](const SweepResults& p) { return p.record_wall_time; });
  std::map<std::int64_t, std::pair<PointResult, std::vector<std::string>>> all;
  for (std::size_t k = 0; k < parts.size(); ++k) {
    const auto& p = parts[k];
    if (p.sweep_text != out.sweep_text || p.metric_names != out.metric_names) {
      throw InputError("merge input " + std::to_string(k + 1), "",
                       "comes from a different sweep file than the first input");
    }
    for (std::size_t i = 0; i < p.points.size(); ++i) {
      if (!p.points[i].done) continue;
      if (all.count(p.points[i].point)) {
        throw InputError("merge input " + std::to_string(k + 1), "",
                         "point " + std::to_string(p.points[i].point) + " appears twice");
      }
      all[p.points[i].point] = {p.points[i], p.axis_values[i]};
    }
  }
  const SweepSpec spec = load_sweep_text(out.sweep_text, "merge", ".", false);
  out.points.resize(spec.num_points());
  out.axis_values.resize(spec.num_points());
  for (std::size_t i = 0; i < out.points.size(); ++i) {
    out.points[i].point = static_cast<std::int64_t>(i);
    out.axis_values[i] = spec.axis_values(i);
  }
  for (auto& [i, pv] : all) {
    if (i < 0 || static_cast<std::size_t>(i) >= out.points.size()) continue;
    out.points[i] = std::move(pv.first);
    out.axis_values[i] = std::move(pv.second);
  }
  return out;
}

namespace {
void put(std::string& s, const void* p, std::size_t n) { s.append(static_cast<const char*>(p), n); }
template <typename T>
void put(std::string& s, T v) {
  put(s, &v, sizeof v);
}
template <typename T>
T get(const std::string& s, std::size_t& at) {
  T v;
  if (at + sizeof v > s.size()) throw std::runtime_error("truncated sweep message");
  std::memcpy(&v, s.data() + at, sizeof v);
  at += sizeof v;
  return v;
}
}  // namespace

std::string serialize_points(const std::vector<PointResult>& points) {
  std::string s;
  put<std::uint64_t>(s, points.size());
  for (const auto& p : points) {
    put(s, p.point);
    put(s, p.replicate);
    put(s, p.seed);
    put<std::uint8_t>(s, p.done);
    put<std::uint8_t>(s, p.ok);
    put(s, p.wall_s);
    put<std::uint64_t>(s, p.error.size());
    put(s, p.error.data(), p.error.size());
    put<std::uint64_t>(s, p.metrics.size());
    put(s, p.metrics.data(), p.metrics.size() * sizeof(double));
    put<std::uint64_t>(s, p.curves.size());
    put(s, p.curves.data(), p.curves.size() * sizeof(double));
  }
  return s;
}

std::vector<PointResult> deserialize_points(const std::string& s) {
  std::size_t at = 0;
  std::vector<PointResult> out(get<std::uint64_t>(s, at));
  for (auto& p : out) {
    p.point = get<std::int64_t>(s, at);
    p.replicate = get<std::int32_t>(s, at);
    p.seed = get<std::int64_t>(s, at);
    p.done = get<std::uint8_t>(s, at) != 0;
    p.ok = get<std::uint8_t>(s, at) != 0;
    p.wall_s = get<double>(s, at);
    const auto ne = get<std::uint64_t>(s, at);
    if (at + ne > s.size()) throw std::runtime_error("truncated sweep message");
    p.error.assign(s.data() + at, ne);
    at += ne;
    for (auto* v : {&p.metrics, &p.curves}) {
      const auto n = get<std::uint64_t>(s, at);
      if (at + n * sizeof(double) > s.size()) throw std::runtime_error("truncated sweep message");
      v->resize(n);
      std::memcpy(v->data(), s.data() + at, n * sizeof(double));
      at += n * sizeof(double);
    }
  }
  return out;
}

}  // namespace kvfleet::sim
