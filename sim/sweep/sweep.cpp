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

namespace sweep_detail {

bool is_number(const std::string& s) {
  if (s.empty()) return false;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

// An axis value as one spelling: a number as format_double writes it (10, 10.0 and 1e1 are
// one value), any other text as it is.
std::string canonical_value(const std::string& v) {
  return is_number(v) ? config::format_double(std::strtod(v.c_str(), nullptr)) : v;
}

std::vector<std::string> summary_metric_names() {
  std::vector<std::string> names;
  for (const auto& [k, v] : Summary{}.flatten()) names.push_back(k);
  return names;
}

Scenario load_point(const SweepSpec& spec, const std::vector<std::string>& overrides) {
  std::vector<std::string> all = spec.sets;
  all.insert(all.end(), overrides.begin(), overrides.end());
  return spec.base_source.load(all);
}

// Percentiles 1..99 of `v` (linear interpolation), NaN when empty.
void percentiles(std::vector<double> v, std::vector<double>& out) {
  std::sort(v.begin(), v.end());
  for (int p = 1; p <= kCurvePercentiles; ++p) {
    if (v.empty()) {
      out.push_back(std::nan(""));
      continue;
    }
    const double pos = p / 100.0 * static_cast<double>(v.size() - 1);
    const std::size_t lo = static_cast<std::size_t>(pos);
    const std::size_t hi = std::min(lo + 1, v.size() - 1);
    out.push_back(v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]));
  }
}

}  // namespace sweep_detail

using namespace sweep_detail;

std::size_t SweepSpec::num_combinations() const {
  if (axes.empty()) return 1;
  if (sampled) return axes.front().values.size();
  std::size_t n = 1;
  for (const auto& a : axes) n *= a.values.size();
  return n;
}

std::vector<std::string> SweepSpec::axis_values(std::size_t point) const {
  std::size_t c = point / static_cast<std::size_t>(replicates);
  std::vector<std::string> v(axes.size());
  if (sampled) {
    for (std::size_t k = 0; k < axes.size(); ++k) v[k] = axes[k].values[c];
    return v;
  }
  for (std::size_t k = axes.size(); k-- > 0;) {  // last axis fastest
    v[k] = axes[k].values[c % axes[k].values.size()];
    c /= axes[k].values.size();
  }
  return v;
}

std::vector<std::string> SweepSpec::overrides(std::size_t point, std::int64_t base_seed) const {
  const auto vals = axis_values(point);
  std::vector<std::string> o;
  for (std::size_t k = 0; k < axes.size(); ++k) {
    if (axes[k].cases.empty()) {
      o.push_back(axes[k].key + "=" + vals[k]);
      continue;
    }
    const auto at = std::find(axes[k].values.begin(), axes[k].values.end(), vals[k]);
    const auto& set = axes[k].cases[static_cast<std::size_t>(at - axes[k].values.begin())];
    o.insert(o.end(), set.begin(), set.end());
  }
  o.push_back("seed=" + std::to_string(base_seed + static_cast<std::int64_t>(point % replicates)));
  return o;
}

namespace {

// A sweep file as data, without what --resume lets change: comments (gone once parsed), the
// description, the replicates and each axis's values.
std::string resumable_part(const std::string& text) {
  YAML::Node n;
  try {
    n = YAML::Load(text);
  } catch (const YAML::Exception&) {
    return text;
  }
  if (!n.IsMap()) return text;
  n.remove("description");
  n.remove("replicates");
  if (n["axes"] && n["axes"].IsSequence())
    for (auto a : n["axes"])
      if (a.IsMap()) a.remove("values"), a.remove("range");
  YAML::Emitter e;
  e << n;
  return e.c_str();
}

// A sweep file edited in ways that keep the points it made (comments, values added to an axis,
// more replicates, axes' values reordered) resumes; other axes or another base scenario are
// refused. The metric columns are matched by name: a file whose columns differ is refused, never
// read shifted.
void check_resumable(const SweepSpec& spec, const SweepResults& previous, const SweepResults& r) {
  if (previous.sweep_text != spec.text) {
    if (resumable_part(previous.sweep_text) != resumable_part(spec.text) &&
        previous.axis_keys == r.axis_keys)
      throw InputError("--resume", "",
                       "the results were made by a different sweep file (only comments, the "
                       "description, axis values and replicates may change for --resume)");
    if (previous.axis_keys != r.axis_keys) {
      auto join = [](const std::vector<std::string>& v) {
        std::string s;
        for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
        return s;
      };
      throw InputError("--resume", "",
                       "the results were made by a sweep over other axes (" +
                           join(previous.axis_keys) + "); this one varies " + join(r.axis_keys));
    }
    if (previous.base_yaml != r.base_yaml)
      throw InputError("--resume", "",
                       "the results were made from another base scenario (its file, base: or "
                       "set: changed): write them to another --out");
  }
  if (previous.metric_names != r.metric_names) {
    std::string missing, extra;
    for (const auto& m : r.metric_names)
      if (std::find(previous.metric_names.begin(), previous.metric_names.end(), m) ==
          previous.metric_names.end())
        missing += (missing.empty() ? "" : ", ") + m;
    for (const auto& m : previous.metric_names)
      if (std::find(r.metric_names.begin(), r.metric_names.end(), m) == r.metric_names.end())
        extra += (extra.empty() ? "" : ", ") + m;
    throw InputError("--resume", "",
                     "the results file's metric columns differ from this sweep's" +
                         (missing.empty() ? std::string() : "; missing: " + missing) +
                         (extra.empty() ? std::string() : "; not in this sweep: " + extra) +
                         (missing.empty() && extra.empty() ? "; in another order" : ""));
  }
}

// The finished points of `previous` into `r`, matched by their identity: their axis values
// (numbers compared as numbers) and seed. Resuming would rewrite the file without a point no
// longer in the sweep: refused, not lost.
void take_finished_points(const SweepResults& previous, SweepResults& r) {
  auto identity = [](const std::vector<std::string>& values, std::int64_t point_seed) {
    std::string k = std::to_string(point_seed);
    for (const auto& v : values) k += '\x1f' + canonical_value(v);
    return k;
  };
  std::map<std::string, std::vector<std::size_t>> by_identity;
  for (std::size_t i = r.points.size(); i-- > 0;)
    by_identity[identity(r.axis_values[i], r.points[i].seed)].push_back(i);
  std::size_t dropped = 0;
  for (std::size_t j = 0; j < previous.points.size(); ++j) {
    const PointResult& p = previous.points[j];
    if (!p.done || !p.ok || j >= previous.axis_values.size()) continue;
    auto it = by_identity.find(identity(previous.axis_values[j], p.seed));
    if (it == by_identity.end() || it->second.empty()) {
      ++dropped;  // no longer in the sweep
      continue;
    }
    const std::size_t i = it->second.back();
    it->second.pop_back();
    const std::int32_t replicate = r.points[i].replicate;
    r.points[i] = p;
    r.points[i].point = static_cast<std::int64_t>(i);
    r.points[i].replicate = replicate;
  }
  if (dropped > 0)
    throw InputError("--resume", "",
                     std::to_string(dropped) +
                         " finished points of the results file are not in this sweep (values "
                         "or replicates removed): write this sweep to another --out, or put "
                         "them back");
}

}  // namespace

SweepResults prepare_sweep(const SweepSpec& spec, const SweepResults* previous) {
  SweepResults r;
  r.sweep_text = spec.text;
  for (const auto& a : spec.axes) r.axis_keys.push_back(a.key);
  r.metric_names = spec.metrics.empty() ? summary_metric_names() : spec.metrics;
  const Scenario base = load_point(spec, {});
  r.base_yaml = base.resolved_yaml;
  const std::int64_t seed = spec.seed >= 0 ? spec.seed : base.config.seed;
  if (seed > 9007199254740992ll - spec.replicates)
    throw InputError(spec.path, "seed",
                     "the base scenario's seed plus the replicates passes 2^53, the largest seed");
  const std::size_t n = spec.num_points();
  r.points.resize(n);
  r.axis_values.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    r.axis_values[i] = spec.axis_values(i);
    r.points[i].point = static_cast<std::int64_t>(i);
    r.points[i].replicate = static_cast<std::int32_t>(i % spec.replicates);
    r.points[i].seed = seed + r.points[i].replicate;
  }
  if (previous) {
    check_resumable(spec, *previous, r);
    take_finished_points(*previous, r);
  }
  return r;
}

std::size_t SweepResults::completed() const {
  return static_cast<std::size_t>(
      std::count_if(points.begin(), points.end(), [](const PointResult& p) { return p.done; }));
}
std::size_t SweepResults::failed() const {
  return static_cast<std::size_t>(std::count_if(
      points.begin(), points.end(), [](const PointResult& p) { return p.done && !p.ok; }));
}

// One point: its scenario, run, summarised into the metrics and curves kept. A run cancelled
// midway returns false (the point stays to do).
static bool run_point(const SweepSpec& spec, const SweepResults& results, PointResult& p,
                      const CancelToken& cancel) {
  try {
    std::vector<std::string> o =
        spec.overrides(static_cast<std::size_t>(p.point), p.seed - p.replicate);
    const Scenario sc = load_point(spec, o);
    Simulation sim(sc);
    sim.set_cancel(&cancel);
    const RunResult rr = sim.run();
    if (rr.cancelled) return false;
    const Summary s = summarize(rr);
    const auto flat = s.flatten();
    p.metrics.clear();
    for (const auto& name : results.metric_names) {
      double v = std::nan("");
      for (const auto& [k, x] : flat) {
        if (k == name) v = x;
      }
      p.metrics.push_back(v);
    }
    p.curves.clear();
    if (spec.curves) {
      std::vector<double> ttft, tpot, e2e;
      for (const auto& q : rr.requests) {
        if (q.outcome != Outcome::kOk) continue;
        ttft.push_back(q.ttft_s());
        e2e.push_back(q.e2e_s());
        if (q.tpot_s() >= 0) tpot.push_back(q.tpot_s());
      }
      percentiles(std::move(ttft), p.curves);
      percentiles(std::move(tpot), p.curves);
      percentiles(std::move(e2e), p.curves);
    }
    p.ok = true;
    p.error.clear();
  } catch (const std::exception& e) {
    p.ok = false;
    p.error = e.what();
    p.metrics.assign(results.metric_names.size(), std::nan(""));
    p.curves.clear();
  }
  return true;
}

void run_sweep(const SweepSpec& spec, SweepResults& results, const SweepOptions& opt) {
  std::vector<std::size_t> todo;
  for (std::size_t i = 0; i < results.points.size(); ++i) {
    if (!results.points[i].done && static_cast<int>(i % opt.shards) == opt.shard) todo.push_back(i);
  }
  std::mutex mu;
  CancelToken cancel;
  PointRunnerOptions ro;
  ro.threads = opt.threads;
  ro.cancel = &cancel;
  ro.report_every_s = opt.report_every_s;
  ro.checkpoint_every_s = opt.checkpoint_every_s;
  if (opt.on_progress) {
    ro.on_progress = [&](std::size_t done, std::size_t total) {
      std::lock_guard<std::mutex> lock(mu);
      opt.on_progress(results, done, total);
    };
  }
  // A checkpoint that cannot be written stops the sweep: the runs in flight stop at their next
  // sample, and the error reaches the caller.
  if (opt.on_checkpoint) {
    ro.on_checkpoint = [&] {
      std::lock_guard<std::mutex> lock(mu);
      opt.on_checkpoint(results);
    };
  }
  run_points(
      todo.size(),
      [&](std::size_t j) {
        const std::size_t i = todo[j];
        PointResult p;
        {
          std::lock_guard<std::mutex> lock(mu);
          p = results.points[i];
        }
        const auto t0 = std::chrono::steady_clock::now();
        if (!run_point(spec, results, p, cancel)) return;
        p.done = true;
        p.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::lock_guard<std::mutex> lock(mu);
        results.points[i] = std::move(p);
      },
      ro);
}

}  // namespace kvfleet::sim
