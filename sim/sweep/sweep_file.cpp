// The sweep file (kvfleet sweep SWEEP.yaml): its axes, cases and samples read and checked.
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
#include <functional>
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

// Every key once, however spelled (pools.0.x is pools[0].x): a key varied twice would give points
// whose second value silently wins. An axis cannot take the name of a column /points has anyway
// (point, seed, ...) or of a metric.
void check_unique_key(const SweepSpec& s, const std::string& name, config::Reader& top,
                      const std::vector<std::string>& metric_names, const std::string& key,
                      const YAML::Node& at, const std::string& p) {
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
}

// An axis of named cases, each a list of settings.
void read_cases(const AxisConfig& a, const YAML::Node& an, const std::string& p, config::Reader& ar,
                SweepAxis& ax) {
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
}

// An axis of listed values: a value given twice would run the same point twice, with the same
// seed, and count as a replicate it is not (10, 10.0 and 1e1 are one value).
void read_values(const AxisConfig& a, const YAML::Node& an, config::Reader& ar, SweepAxis& ax) {
  ax.values = a.values;
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
}

// start, start + step, ... up to stop (with a relative slack for rounding); each value must differ
// from the one before (a step below the values' precision would repeat them).
void read_range(const RangeConfig& r, config::Reader& ar, SweepAxis& ax) {
  const double n = std::floor((r.stop - r.start) / r.step) + 1;
  if (!(n <= static_cast<double>(kMaxSweepPoints)))
    ar.fail_key("range", "gives " + config::format_double(n) + " values, above the limit of " +
                             std::to_string(kMaxSweepPoints) + " points of a sweep");
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
}

// An axis of the grid: its cases, values, range or log range.
SweepAxis read_axis(const AxisConfig& a, const YAML::Node& an, const std::string& p,
                    config::Reader& ar) {
  SweepAxis ax;
  ax.key = a.key;
  if (an["cases"].IsDefined()) {
    read_cases(a, an, p, ar, ax);
  } else if (an["values"].IsDefined()) {
    read_values(a, an, ar, ax);
  } else if (an["range"].IsDefined()) {
    read_range(a.range, ar, ax);
  } else {
    const LogRangeConfig& lr = a.log_range;
    for (std::int64_t j = 0; j < lr.num; ++j) {
      const double t = lr.num == 1 ? 0 : static_cast<double>(j) / static_cast<double>(lr.num - 1);
      ax.values.push_back(config::format_double(lr.start * std::pow(lr.stop / lr.start, t)));
    }
  }
  return ax;
}

// The sampled points' axes (one per key, every axis with n values, not combined).
void read_sample(
    const SampleConfig& smp, const YAML::Node& root, config::Reader& top,
    const std::function<void(const std::string&, const YAML::Node&, const std::string&)>& unique,
    SweepSpec& s) {
  if (smp.keys.empty()) top.fail(root["sample"], "sample.keys", "expected a non-empty list");
  const auto n = static_cast<std::size_t>(smp.n);
  // kvfleet's own stream: the same samples from every standard library.
  RngStream rng(static_cast<std::uint64_t>(smp.seed), "sweep.sample");
  for (std::size_t i = 0; i < smp.keys.size(); ++i) {
    const SampleKeyConfig& k = smp.keys[i];
    unique(k.key, root["sample"]["keys"][i]["key"], "sample.keys[" + std::to_string(i) + "].key");
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
}

// Metrics by their one name; aliases (ttft_p99) are accepted and stored as that name.
void read_metrics(const SweepFileConfig& c, const YAML::Node& root, config::Reader& top,
                  const std::vector<std::string>& known, SweepSpec& s) {
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
  const auto metric_names = summary_metric_names();
  auto unique = [&](const std::string& key, const YAML::Node& at, const std::string& p) {
    check_unique_key(s, name, top, metric_names, key, at, p);
  };
  double points = 1;
  for (std::size_t i = 0; i < c.axes.size(); ++i) {
    const YAML::Node an = root["axes"][i];
    const std::string p = "axes[" + std::to_string(i) + "]";
    config::Reader ar(an, p, src);
    unique(c.axes[i].key, an["key"], p + ".key");
    SweepAxis ax = read_axis(c.axes[i], an, p, ar);
    points *= static_cast<double>(ax.values.size());
    s.axes.push_back(std::move(ax));
  }
  if (has_sample) {
    read_sample(c.sample, root, top, unique, s);
    points = static_cast<double>(c.sample.n);
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
  read_metrics(c, root, top, metric_names, s);
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

}  // namespace kvfleet::sim
