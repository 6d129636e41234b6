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

namespace kvfleet::sim {

namespace {

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

}  // namespace

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

// The sweep file's declarations (read by config::Reader: file:line errors, unknown keys with
// "did you mean"). Components of an axis: exactly one of values, range, log_range, cases.
// Keys a block needs when it is given (blocks are optional, so their keys cannot be `required`).
void require(const config::Reader& r, const char* block, std::initializer_list<const char*> keys) {
  const YAML::Node b = r.node()[block];
  if (!b.IsDefined() || !b.IsMap()) return;
  config::Reader br(b, r.child_path(block), r.source());
  for (const char* k : keys)
    if (!b[k].IsDefined()) br.fail(b, br.child_path(k), "missing (required)");
}

struct RangeConfig {
  double start = 0, stop = 0, step = 0;
  template <class V>
  void visit(V& v) {
    v.param("start", start, {.desc = "first value"});
    v.param("stop", stop, {.desc = "last value (taken when the steps land on it)"});
    v.param("step", step, {.desc = "increment", .positive = true});
  }
};

struct LogRangeConfig {
  double start = 0, stop = 0;
  std::int64_t num = 0;
  template <class V>
  void visit(V& v) {
    v.param("start", start, {.desc = "first value", .positive = true});
    v.param("stop", stop, {.desc = "last value", .positive = true});
    v.param("num", num,
            {.unit = "points",
             .desc = "values, spaced evenly in log scale",
             .min = 1,
             .max = static_cast<double>(kMaxSweepPoints)});
  }
};

struct CaseConfig {
  std::string name;
  std::vector<std::string> set;
  template <class V>
  void visit(V& v) {
    v.param("name", name, {.desc = "the case's label", .required = true});
    v.param("set", set, {.desc = "its overrides, key=value", .required = true});
  }
};

struct AxisConfig {
  std::string key;
  std::vector<std::string> values;
  RangeConfig range;
  LogRangeConfig log_range;
  std::vector<CaseConfig> cases;
  template <class V>
  void visit(V& v) {
    v.param("key", key, {.desc = "the scenario key varied (a label for cases)", .required = true});
    v.param("values", values, {.desc = "the values, as --set would take them"});
    v.param("range", range, {.desc = "start, stop, step"});
    v.param("log_range", log_range, {.desc = "start, stop, num (log spaced)"});
    v.param("cases", cases, {.desc = "named sets of overrides"});
  }
  void check(config::Reader& r) const {
    require(r, "range", {"start", "stop", "step"});
    require(r, "log_range", {"start", "stop", "num"});
    int kinds = 0;
    for (const char* k : {"values", "range", "log_range", "cases"})
      kinds += r.node()[k].IsDefined() ? 1 : 0;
    if (kinds != 1)
      r.fail(r.node(), r.child_path("key").substr(0, r.child_path("key").size() - 4),
             "give exactly one of values, range, log_range, cases");
    if (r.node()["values"].IsDefined() && values.empty()) r.fail_key("values", "empty list");
    if (r.node()["cases"].IsDefined() && cases.empty()) r.fail_key("cases", "empty list");
    if (r.node()["range"].IsDefined() && range.stop < range.start)
      r.fail_key("range", "empty range: stop is below start");
  }
};

struct SampleKeyConfig {
  std::string key;
  double min = 0, max = 0;
  bool log = false, integer = false;
  template <class V>
  void visit(V& v) {
    v.param("key", key, {.desc = "the scenario key sampled", .required = true});
    v.param("min", min, {.desc = "lower end", .required = true});
    v.param("max", max, {.desc = "upper end", .required = true});
    v.param("log", log, {.desc = "sample in log scale"});
    v.param("integer", integer, {.desc = "round to whole numbers"});
  }
  void check(config::Reader& r) const {
    if (!(max > min)) r.fail_key("max", "empty range: max must exceed min");
    if (log && !(min > 0)) r.fail_key("min", "must be > 0 with log: true");
  }
};

struct SampleConfig {
  std::string method = "latin_hypercube";
  std::int64_t n = 0;
  std::int64_t seed = 1;
  std::vector<SampleKeyConfig> keys;
  template <class V>
  void visit(V& v) {
    v.param("method", method,
            {.desc = "latin_hypercube or random", .choices = {"latin_hypercube", "random"}});
    v.param("n", n,
            {.unit = "points",
             .desc = "points drawn",
             .min = 1,
             .max = static_cast<double>(kMaxSweepPoints)});
    v.param("seed", seed, {.desc = "seed of the draws", .min = 0});
    v.param("keys", keys, {.desc = "the box: one key with min and max each"});
  }
};

struct SweepFileConfig {
  std::string description, base;
  std::vector<std::string> set;
  std::vector<AxisConfig> axes;
  SampleConfig sample;
  std::int64_t replicates = 1;
  std::int64_t seed = -1;
  std::vector<std::string> metrics;
  bool curves = true;
  template <class V>
  void visit(V& v) {
    v.param("description", description, {.desc = "what the sweep shows"});
    v.param("base", base, {.desc = "the base scenario file", .path = true});
    v.param("set", set, {.desc = "overrides applied to every point, key=value"});
    v.param("axes", axes, {.desc = "the grid: the Cartesian product of the axes"});
    v.param("sample", sample, {.desc = "random or Latin-hypercube points in a box"});
    v.param("replicates", replicates,
            {.unit = "seeds", .desc = "runs per combination", .min = 1, .max = 10000});
    v.param("seed", seed, {.desc = "first replicate's seed; -1 = the base scenario's", .min = -1});
    v.param("metrics", metrics, {.desc = "/summary names to keep; omitted: all"});
    v.param("curves", curves, {.desc = "keep TTFT, TPOT and E2E percentiles per point"});
  }
};

std::string known_list(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : ", ") + x;
  return out;
}

}  // namespace

SweepSpec load_sweep_text(const std::string& yaml, const std::string& name,
                          const std::string& base_dir, bool check_files) {
  const YAML::Node root = config::parse_yaml(yaml, name);
  // A scenario given where a sweep file belongs: say so, instead of its first unknown key.
  if (root.IsMap() && (root["pools"] || root["workload"]) && !root["axes"] && !root["sample"])
    throw InputError(name, "",
                     "this is a scenario (pools:, workload:), not a sweep file: run it with "
                     "'kvfleet run " +
                         name + "', or sweep it from a file with 'base: " + name +
                         "' and axes: (docs/sweeps.md)");
  config::Source src;
  src.file = name;
  src.base_dir = base_dir;
  const SweepFileConfig c = config::read_document<SweepFileConfig>(root, src);
  config::Reader top(root, "", src);
  SweepSpec s;
  s.path = name;
  s.text = yaml;
  s.base = c.base;
  s.base_source.path = c.base;
  if (!s.base.empty() && check_files) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(s.base, ec))
      top.fail_key("base", "scenario file not found: " + s.base);
  }
  for (std::size_t i = 0; i < c.set.size(); ++i) {
    if (c.set[i].find('=') == std::string::npos)
      top.fail(root["set"][i], "set[" + std::to_string(i) + "]", "expected key=value");
    s.sets.push_back(c.set[i]);
  }
  const bool has_axes = root["axes"].IsDefined(), has_sample = root["sample"].IsDefined();
  require(top, "sample", {"n", "keys"});
  if (has_axes && has_sample) top.fail_key("sample", "give axes or sample, not both");
  if (!has_axes && !has_sample) top.fail_key("axes", "a sweep needs axes or a sample");
  if (has_axes && c.axes.empty()) top.fail_key("axes", "expected a non-empty list");
  // Every key once, however spelled (pools.0.x is pools[0].x): a key varied twice would give
  // points whose second value silently wins. An axis cannot take the name of a column /points
  // has anyway (point, seed, ...) or of a metric.
  const auto metric_names = summary_metric_names();
  auto check_unique_key = [&](const std::string& key, const YAML::Node& at, const std::string& p) {
    static const std::set<std::string> fixed = {"point",  "replicate", "seed",
                                                "status", "error",     "wall_s"};
    if (fixed.count(key) ||
        std::find(metric_names.begin(), metric_names.end(), key) != metric_names.end())
      top.fail(at, p,
               "'" + key + "' names a column the results have already" +
                   (key == "seed" ? " (vary seeds with replicates:)" : std::string()));
    const std::string canon = config::canonical_key(key, name + ": " + p);
    for (const auto& a : s.axes)
      if (config::canonical_key(a.key, name) == canon)
        top.fail(at, p, "'" + key + "' is varied twice (each key once)");
  };
  double points = 1;
  for (std::size_t i = 0; i < c.axes.size(); ++i) {
    const AxisConfig& a = c.axes[i];
    const YAML::Node an = root["axes"][i];
    const std::string p = "axes[" + std::to_string(i) + "]";
    config::Reader ar(an, p, src);
    check_unique_key(a.key, an["key"], p + ".key");
    SweepAxis ax;
    ax.key = a.key;
    if (an["cases"].IsDefined()) {
      for (std::size_t j = 0; j < a.cases.size(); ++j) {
        const CaseConfig& cs = a.cases[j];
        const YAML::Node cn = an["cases"][j];
        const std::string cp = p + ".cases[" + std::to_string(j) + "]";
        if (std::find(ax.values.begin(), ax.values.end(), cs.name) != ax.values.end())
          ar.fail(cn["name"], cp + ".name", "'" + cs.name + "' names two cases");
        for (std::size_t k = 0; k < cs.set.size(); ++k)
          if (cs.set[k].find('=') == std::string::npos)
            ar.fail(cn["set"][k], cp + ".set[" + std::to_string(k) + "]", "expected key=value");
        ax.values.push_back(cs.name);
        ax.cases.push_back(cs.set);
      }
    } else if (an["values"].IsDefined()) {
      ax.values = a.values;
      // A value given twice would run the same point twice, with the same seed, and count as
      // a replicate it is not (10, 10.0 and 1e1 are one value).
      std::map<std::string, std::size_t> seen;
      for (std::size_t k = 0; k < a.values.size(); ++k) {
        const std::string& v = a.values[k];
        const std::string norm = canonical_value(v);
        if (const auto it = seen.find(norm); it != seen.end())
          ar.fail(an["values"][k], ar.child_path("values") + "[" + std::to_string(k) + "]",
                  "'" + v + "' is the value of values[" + std::to_string(it->second) +
                      "] again (each value once; replicates: runs each point with more seeds)");
        seen.emplace(norm, k);
      }
    } else if (an["range"].IsDefined()) {
      const RangeConfig& r = a.range;
      const double n = std::floor((r.stop - r.start) / r.step) + 1;
      if (!(n <= static_cast<double>(kMaxSweepPoints)))
        ar.fail_key("range", "gives " + config::format_double(n) + " values, above the limit of " +
                                 std::to_string(kMaxSweepPoints) + " points of a sweep");
      // start, start + step, ... up to stop (with a relative slack for rounding); each value
      // must differ from the one before (a step below the values' precision would repeat them).
      double limit = r.stop * (1 + 1e-12) + 1e-12;
      if (!std::isfinite(limit)) limit = r.stop;
      for (double x = r.start; x <= limit;) {
        ax.values.push_back(config::format_double(x));
        const double next = x + r.step;
        if (!(next <= limit) || (!(next > x) && x >= r.stop)) break;
        if (!(next > x) || ax.values.size() > kMaxSweepPoints)
          ar.fail_key("range", "the step " + config::format_double(r.step) +
                                   " is below the precision of values near " +
                                   config::format_double(x));
        x = next;
      }
    } else {
      const LogRangeConfig& lr = a.log_range;
      for (std::int64_t j = 0; j < lr.num; ++j) {
        const double t = lr.num == 1 ? 0 : static_cast<double>(j) / static_cast<double>(lr.num - 1);
        ax.values.push_back(config::format_double(lr.start * std::pow(lr.stop / lr.start, t)));
      }
    }
    points *= static_cast<double>(ax.values.size());
    s.axes.push_back(std::move(ax));
  }
  if (has_sample) {
    const SampleConfig& smp = c.sample;
    if (smp.keys.empty()) top.fail(root["sample"], "sample.keys", "expected a non-empty list");
    const auto n = static_cast<std::size_t>(smp.n);
    // kvfleet's own stream: the same samples from every standard library.
    RngStream rng(static_cast<std::uint64_t>(smp.seed), "sweep.sample");
    for (std::size_t i = 0; i < smp.keys.size(); ++i) {
      const SampleKeyConfig& k = smp.keys[i];
      check_unique_key(k.key, root["sample"]["keys"][i]["key"],
                       "sample.keys[" + std::to_string(i) + "].key");
      std::vector<std::size_t> strata(n);
      for (std::size_t j = 0; j < n; ++j) strata[j] = j;
      const bool lhs = smp.method == "latin_hypercube";
      if (lhs)  // Fisher-Yates
        for (std::size_t j = n; j > 1; --j) std::swap(strata[j - 1], strata[rng.below(j)]);
      SweepAxis ax;
      ax.key = k.key;
      for (std::size_t j = 0; j < n; ++j) {
        const double f = lhs ? (strata[j] + rng.uniform()) / n : rng.uniform();
        double x = k.log ? k.min * std::pow(k.max / k.min, f) : k.min + f * (k.max - k.min);
        if (k.integer) x = std::round(x);
        ax.values.push_back(config::format_double(x));
      }
      s.axes.push_back(std::move(ax));
    }
    s.sampled = true;
    points = static_cast<double>(n);
  }
  s.replicates = static_cast<int>(c.replicates);
  if (points * static_cast<double>(s.replicates) > static_cast<double>(kMaxSweepPoints)) {
    top.fail(root, "axes",
             "the sweep has " + config::format_double(points * s.replicates) +
                 " points (combinations x replicates), above the limit of " +
                 std::to_string(kMaxSweepPoints));
  }
  s.seed = c.seed;
  if (s.seed > 9007199254740992ll - s.replicates)
    top.fail_key("seed", "with the replicates' seeds after it, must stay within 2^53");
  // Metrics by their one name; aliases (ttft_p99) are accepted and stored as that name.
  const auto& known = metric_names;
  for (std::size_t i = 0; i < c.metrics.size(); ++i) {
    const std::string m = canonical_metric(c.metrics[i]);
    if (m.empty() || std::find(known.begin(), known.end(), m) == known.end())
      top.fail(root["metrics"][i], "metrics",
               "unknown metric '" + c.metrics[i] + "' (known: " + known_list(known) +
                   "; aliases: ttft, tpot, e2e, queue for the latency stems, e.g. ttft_p99)");
    for (std::size_t j = 0; j < i; ++j)
      if (s.metrics[j] == m)
        top.fail(root["metrics"][i], "metrics",
                 "'" + c.metrics[i] + "' is listed twice" +
                     (m == c.metrics[i] ? "" : " (as " + m + ")"));
    s.metrics.push_back(m);
  }
  s.curves = c.curves;
  return s;
}

SweepSpec load_sweep_file(const std::string& path) {
  return load_sweep_text(read_input_file(path, "sweep", kMaxYamlFileBytes), path,
                         std::filesystem::path(path).parent_path().string());
}

void validate_sweep(const SweepSpec& spec) {
  const std::int64_t seed = 1;
  // Each distinct axis value once (a grid's points combine them); every sampled point.
  auto check = [&](const std::vector<std::string>& o) {
    try {
      load_point(spec, o);
    } catch (const InputError& e) {
      std::string with;
      for (const auto& x : o) with += (with.empty() ? "" : ", ") + x;
      throw InputError(e.where(), e.key(), e.problem() + " (sweep point with " + with + ")");
    }
  };
  if (spec.sampled) {
    for (std::size_t c = 0; c < spec.num_combinations(); ++c) {
      auto o = spec.overrides(c * spec.replicates, seed);
      o.pop_back();
      check(o);
    }
    return;
  }
  for (const auto& a : spec.axes) {
    if (!a.cases.empty()) {
      for (const auto& set : a.cases) check(set);
      continue;
    }
    for (const auto& v : a.values) check({a.key + "=" + v});
  }
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
    // A sweep file edited in ways that keep the points it made (comments, values added to an
    // axis, more replicates, axes' values reordered) resumes: points are matched by their axis
    // values and seed. Other axes or another base scenario are refused.
    if (previous->sweep_text != spec.text) {
      if (resumable_part(previous->sweep_text) != resumable_part(spec.text) &&
          previous->axis_keys == r.axis_keys)
        throw InputError("--resume", "",
                         "the results were made by a different sweep file (only comments, the "
                         "description, axis values and replicates may change for --resume)");
      if (previous->axis_keys != r.axis_keys) {
        auto join = [](const std::vector<std::string>& v) {
          std::string s;
          for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
          return s;
        };
        throw InputError("--resume", "",
                         "the results were made by a sweep over other axes (" +
                             join(previous->axis_keys) + "); this one varies " + join(r.axis_keys));
      }
      if (previous->base_yaml != r.base_yaml)
        throw InputError("--resume", "",
                         "the results were made from another base scenario (its file, base: or "
                         "set: changed): write them to another --out");
    }
    // The metric columns are matched by name: a file whose columns differ is refused, never
    // read shifted.
    if (previous->metric_names != r.metric_names) {
      std::string missing, extra;
      for (const auto& m : r.metric_names)
        if (std::find(previous->metric_names.begin(), previous->metric_names.end(), m) ==
            previous->metric_names.end())
          missing += (missing.empty() ? "" : ", ") + m;
      for (const auto& m : previous->metric_names)
        if (std::find(r.metric_names.begin(), r.metric_names.end(), m) == r.metric_names.end())
          extra += (extra.empty() ? "" : ", ") + m;
      throw InputError("--resume", "",
                       "the results file's metric columns differ from this sweep's" +
                           (missing.empty() ? std::string() : "; missing: " + missing) +
                           (extra.empty() ? std::string() : "; not in this sweep: " + extra) +
                           (missing.empty() && extra.empty() ? "; in another order" : ""));
    }
    // A point's identity: its axis values (numbers compared as numbers) and its seed.
    auto identity = [](const std::vector<std::string>& values, std::int64_t point_seed) {
      std::string k = std::to_string(point_seed);
      for (const auto& v : values) k += '\x1f' + canonical_value(v);
      return k;
    };
    std::map<std::string, std::vector<std::size_t>> by_identity;
    for (std::size_t i = n; i-- > 0;)
      by_identity[identity(r.axis_values[i], r.points[i].seed)].push_back(i);
    std::size_t dropped = 0;
    for (std::size_t j = 0; j < previous->points.size(); ++j) {
      const PointResult& p = previous->points[j];
      if (!p.done || !p.ok || j >= previous->axis_values.size()) continue;
      auto it = by_identity.find(identity(previous->axis_values[j], p.seed));
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
    // Resuming would rewrite the file without them: refused, not lost.
    if (dropped > 0)
      throw InputError("--resume", "",
                       std::to_string(dropped) +
                           " finished points of the results file are not in this sweep (values "
                           "or replicates removed): write this sweep to another --out, or put "
                           "them back");
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
  std::map<std::string, const Column*> cols;
  for (const auto& c : t.columns) {
    cols[c.name] = &c;
    if (!fixed.count(c.name) && !axes.count(c.name)) r.metric_names.push_back(c.name);
  }
  // Typed access that names what is missing or of the wrong type.
  auto column = [&](const Table& tb, const char* ds, const std::string& n) -> const Column& {
    if (const Column* c = tb.find(n)) return *c;
    throw InputError(path, std::string(ds) + "." + n, "column is missing");
  };
  auto typed = [&]<class V>(const Table& tb, const char* ds, const std::string& n,
                            const char* kind) -> const V& {
    if (auto* v = std::get_if<V>(&column(tb, ds, n).data)) return *v;
    throw InputError(path, std::string(ds) + "." + n, std::string("is not ") + kind);
  };
  using I64 = std::vector<std::int64_t>;
  using F64 = std::vector<double>;
  using Str = std::vector<std::string>;
  const auto& point = typed.operator()<I64>(t, "points", "point", "integer");
  const auto& replicate = typed.operator()<I64>(t, "points", "replicate", "integer");
  const auto& seed = typed.operator()<I64>(t, "points", "seed", "integer");
  const auto& status = typed.operator()<Str>(t, "points", "status", "text");
  const auto& error = typed.operator()<Str>(t, "points", "error", "text");
  // wall_s: only in files written with --timing (and every file before it was optional).
  const bool has_wall = t.find("wall_s") != nullptr;
  r.record_wall_time = has_wall;
  static const F64 no_wall;
  const auto& wall = has_wall ? typed.operator()<F64>(t, "points", "wall_s", "a number") : no_wall;
  // A metric column: numbers, or a count (integers, kFailedCount for a failed point).
  std::vector<const Column*> metrics;
  for (const auto& m : r.metric_names) {
    const Column& c = column(t, "points", m);
    if (!std::holds_alternative<F64>(c.data) && !std::holds_alternative<I64>(c.data))
      throw InputError(path, "points." + m, "is not a number");
    metrics.push_back(&c);
  }
  std::vector<const Column*> axis_cols;
  for (const auto& k : r.axis_keys) axis_cols.push_back(&column(t, "points", k));
  std::map<std::int64_t, std::size_t> index;
  for (std::size_t row = 0; row < point.size(); ++row) {
    PointResult p;
    p.point = point[row];
    if (p.point < 0 || static_cast<std::size_t>(p.point) >= spec.num_points() ||
        index.count(p.point))
      throw InputError(path + ": points row " + std::to_string(row + 1), "point",
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
    for (const Column* c : axis_cols) {
      if (auto* d = std::get_if<F64>(&c->data))
        av.push_back(config::format_double((*d)[row]));
      else if (auto* x = std::get_if<Str>(&c->data))
        av.push_back((*x)[row]);
      else if (auto* k = std::get_if<Categorical>(&c->data))
        av.push_back(k->name(row));
      else
        av.push_back(std::to_string(std::get<I64>(c->data)[row]));
    }
    index[p.point] = r.points.size();
    r.points.push_back(std::move(p));
    r.axis_values.push_back(std::move(av));
  }
  const auto& cp = typed.operator()<I64>(cv, "curves", "point", "integer");
  const auto& val = typed.operator()<F64>(cv, "curves", "value_s", "a number");
  for (std::size_t row = 0; row < cp.size(); ++row) {
    auto it = index.find(cp[row]);
    if (it != index.end()) r.points[it->second].curves.push_back(val[row]);
  }
  for (const auto& p : r.points)
    if (!p.curves.empty() && p.curves.size() != 3 * kCurvePercentiles)
      throw InputError(path, "curves",
                       "point " + std::to_string(p.point) + " has " +
                           std::to_string(p.curves.size()) + " curve values, not " +
                           std::to_string(3 * kCurvePercentiles));
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
