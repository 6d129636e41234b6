#include "sim/sweep/sweep.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "sim/config/params.h"
#include "sim/core/error.h"
#include "sim/io/h5.h"
#include "sim/metrics/summary.h"
#include "sim/scenario.h"
#include "sim/simulation.h"

namespace kvfleet::sim {

namespace {

std::string where(const std::string& file, const YAML::Node& n) {
  if (n.IsDefined() && n.Mark().line >= 0) return file + ":" + std::to_string(n.Mark().line + 1);
  return file;
}

[[noreturn]] void fail(const std::string& file, const YAML::Node& n, const std::string& key,
                       const std::string& problem) {
  throw InputError(where(file, n), key, problem);
}

void check_keys(const std::string& file, const YAML::Node& map, const std::string& path,
                const std::set<std::string>& known) {
  if (!map.IsMap()) fail(file, map, path, "expected a map of keys");
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string k = it->first.as<std::string>();
    if (!known.count(k)) {
      std::string list;
      for (const auto& x : known) list += (list.empty() ? "" : ", ") + x;
      fail(file, it->first, path.empty() ? k : path + "." + k, "unknown key (known: " + list + ")");
    }
  }
}

double number(const std::string& file, const YAML::Node& n, const std::string& key) {
  if (!n.IsDefined() || n.IsNull()) fail(file, n, key, "missing (required)");
  try {
    return n.as<double>();
  } catch (const YAML::Exception&) {
    fail(file, n, key, "expected a number, got '" + n.Scalar() + "'");
  }
}

std::vector<std::string> summary_metric_names() {
  std::vector<std::string> names;
  for (const auto& [k, v] : Summary{}.flatten()) names.push_back(k);
  return names;
}

Scenario load_point(const SweepSpec& spec, const std::vector<std::string>& overrides) {
  std::vector<std::string> all = spec.sets;
  all.insert(all.end(), overrides.begin(), overrides.end());
  if (spec.base.empty()) {
    return load_scenario_text(builtin_default_scenario(), "<built-in default.yaml>", ".", all);
  }
  return load_scenario_file(spec.base, all);
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

SweepSpec load_sweep_text(const std::string& yaml, const std::string& name,
                          const std::string& base_dir, bool check_files) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    throw InputError(name + ":" + std::to_string(e.mark.line + 1), "", e.msg);
  }
  SweepSpec s;
  s.path = name;
  s.text = yaml;
  check_keys(
      name, root, "",
      {"base", "set", "axes", "sample", "replicates", "seed", "metrics", "curves", "description"});
  if (root["base"]) {
    std::filesystem::path b = root["base"].as<std::string>();
    if (b.is_relative()) b = std::filesystem::path(base_dir) / b;
    s.base = b.lexically_normal().string();
    if (check_files && !std::filesystem::exists(s.base)) {
      fail(name, root["base"], "base", "file not found: " + s.base);
    }
  }
  if (auto set = root["set"]) {
    if (!set.IsSequence()) fail(name, set, "set", "expected a list of key=value");
    for (const auto& x : set) s.sets.push_back(x.as<std::string>());
  }
  if (root["axes"] && root["sample"]) {
    fail(name, root["sample"], "sample", "give axes or sample, not both");
  }
  if (auto axes = root["axes"]) {
    if (!axes.IsSequence() || axes.size() == 0)
      fail(name, axes, "axes", "expected a non-empty list");
    for (std::size_t i = 0; i < axes.size(); ++i) {
      const YAML::Node a = axes[i];
      const std::string p = "axes[" + std::to_string(i) + "]";
      check_keys(name, a, p, {"key", "values", "range", "log_range", "cases"});
      if (!a["key"]) fail(name, a, p + ".key", "missing (required)");
      SweepAxis ax;
      ax.key = a["key"].as<std::string>();
      const int kinds = (a["values"] ? 1 : 0) + (a["range"] ? 1 : 0) + (a["log_range"] ? 1 : 0) +
                        (a["cases"] ? 1 : 0);
      if (kinds != 1) fail(name, a, p, "give exactly one of values, range, log_range, cases");
      if (auto cs = a["cases"]) {
        if (!cs.IsSequence() || cs.size() == 0) fail(name, cs, p + ".cases", "empty list");
        for (std::size_t j = 0; j < cs.size(); ++j) {
          const std::string cp = p + ".cases[" + std::to_string(j) + "]";
          check_keys(name, cs[j], cp, {"name", "set"});
          if (!cs[j]["name"] || !cs[j]["name"].IsScalar())
            fail(name, cs[j], cp + ".name", "missing (required)");
          const std::string n = cs[j]["name"].Scalar();
          if (std::find(ax.values.begin(), ax.values.end(), n) != ax.values.end())
            fail(name, cs[j]["name"], cp + ".name", "'" + n + "' names two cases");
          const YAML::Node set = cs[j]["set"];
          if (!set || !set.IsSequence() || set.size() == 0)
            fail(name, cs[j], cp + ".set", "expected a non-empty list of key=value overrides");
          std::vector<std::string> o;
          for (const auto& x : set) {
            if (!x.IsScalar() || x.Scalar().find('=') == std::string::npos)
              fail(name, x, cp + ".set", "expected key=value");
            o.push_back(x.Scalar());
          }
          ax.values.push_back(n);
          ax.cases.push_back(std::move(o));
        }
      } else if (auto v = a["values"]) {
        if (!v.IsSequence() || v.size() == 0) fail(name, v, p + ".values", "empty list");
        for (const auto& x : v) {
          if (!x.IsScalar()) fail(name, x, p + ".values", "values must be scalars");
          ax.values.push_back(x.Scalar());
        }
      } else if (const YAML::Node r = a["range"]) {
        check_keys(name, r, p + ".range", {"start", "stop", "step"});
        const double start = number(name, r["start"], p + ".range.start");
        const double stop = number(name, r["stop"], p + ".range.stop");
        const double step = number(name, r["step"], p + ".range.step");
        if (!(step > 0)) fail(name, r["step"], p + ".range.step", "must be positive");
        if (stop < start) fail(name, r, p + ".range", "empty range: stop is below start");
        for (double x = start; x <= stop * (1 + 1e-12) + 1e-12; x += step) {
          ax.values.push_back(config::format_double(x));
        }
      } else {
        const YAML::Node lr = a["log_range"];
        check_keys(name, lr, p + ".log_range", {"start", "stop", "num"});
        const double start = number(name, lr["start"], p + ".log_range.start");
        const double stop = number(name, lr["stop"], p + ".log_range.stop");
        const double num = number(name, lr["num"], p + ".log_range.num");
        if (!(start > 0 && stop > 0))
          fail(name, lr, p + ".log_range", "start and stop must be > 0");
        if (num < 1 || num != std::floor(num)) {
          fail(name, lr["num"], p + ".log_range.num",
               "empty range: num must be a whole number ≥ 1");
        }
        for (int j = 0; j < num; ++j) {
          const double t = num == 1 ? 0 : j / (num - 1);
          ax.values.push_back(config::format_double(start * std::pow(stop / start, t)));
        }
      }
      s.axes.push_back(std::move(ax));
    }
  }
  if (auto smp = root["sample"]) {
    check_keys(name, smp, "sample", {"method", "n", "seed", "keys"});
    const std::string method = smp["method"] ? smp["method"].as<std::string>() : "latin_hypercube";
    if (method != "latin_hypercube" && method != "random") {
      fail(name, smp["method"], "sample.method",
           "'" + method + "' is not latin_hypercube or random");
    }
    const double nd = number(name, smp["n"], "sample.n");
    if (nd < 1 || nd != std::floor(nd))
      fail(name, smp["n"], "sample.n", "must be a whole number ≥ 1");
    const auto n = static_cast<std::size_t>(nd);
    std::mt19937_64 rng(smp["seed"] ? smp["seed"].as<std::uint64_t>() : 1);
    const YAML::Node keys = smp["keys"];
    if (!keys || !keys.IsSequence() || keys.size() == 0)
      fail(name, smp, "sample.keys", "expected a non-empty list");
    std::uniform_real_distribution<double> u(0, 1);
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const YAML::Node k = keys[i];
      const std::string p = "sample.keys[" + std::to_string(i) + "]";
      check_keys(name, k, p, {"key", "min", "max", "log", "integer"});
      if (!k["key"]) fail(name, k, p + ".key", "missing (required)");
      const double lo = number(name, k["min"], p + ".min"), hi = number(name, k["max"], p + ".max");
      if (!(hi > lo)) fail(name, k, p, "empty range: max must exceed min");
      const bool lg = k["log"] && k["log"].as<bool>();
      const bool integer = k["integer"] && k["integer"].as<bool>();
      if (lg && !(lo > 0)) fail(name, k["min"], p + ".min", "must be > 0 with log: true");
      std::vector<std::size_t> strata(n);
      for (std::size_t j = 0; j < n; ++j) strata[j] = j;
      if (method == "latin_hypercube") std::shuffle(strata.begin(), strata.end(), rng);
      SweepAxis ax;
      ax.key = k["key"].as<std::string>();
      for (std::size_t j = 0; j < n; ++j) {
        const double f = method == "latin_hypercube" ? (strata[j] + u(rng)) / n : u(rng);
        double x = lg ? lo * std::pow(hi / lo, f) : lo + f * (hi - lo);
        if (integer) x = std::round(x);
        ax.values.push_back(config::format_double(x));
      }
      s.axes.push_back(std::move(ax));
    }
    s.sampled = true;
  }
  if (s.axes.empty()) fail(name, root, "axes", "a sweep needs axes or a sample");
  if (auto r = root["replicates"]) {
    const double v = number(name, r, "replicates");
    if (v < 1 || v != std::floor(v)) fail(name, r, "replicates", "must be a whole number ≥ 1");
    s.replicates = static_cast<int>(v);
  }
  if (auto r = root["seed"]) s.seed = static_cast<std::int64_t>(number(name, r, "seed"));
  if (auto m = root["metrics"]) {
    if (!m.IsSequence()) fail(name, m, "metrics", "expected a list of /summary names");
    const auto known = summary_metric_names();
    for (const auto& x : m) {
      const std::string v = x.as<std::string>();
      if (std::find(known.begin(), known.end(), v) == known.end()) {
        std::string list;
        for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
        fail(name, x, "metrics", "unknown metric '" + v + "' (known: " + list + ")");
      }
      s.metrics.push_back(v);
    }
  }
  if (auto c = root["curves"]) s.curves = c.as<bool>();
  return s;
}

SweepSpec load_sweep_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "", "cannot open sweep file");
  std::stringstream ss;
  ss << in.rdbuf();
  return load_sweep_text(ss.str(), path, std::filesystem::path(path).parent_path().string());
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

SweepResults prepare_sweep(const SweepSpec& spec, const SweepResults* previous) {
  SweepResults r;
  r.sweep_text = spec.text;
  for (const auto& a : spec.axes) r.axis_keys.push_back(a.key);
  r.metric_names = spec.metrics.empty() ? summary_metric_names() : spec.metrics;
  const Scenario base = load_point(spec, {});
  r.base_yaml = base.resolved_yaml;
  const std::int64_t seed = spec.seed >= 0 ? spec.seed : base.config.seed;
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
    if (previous->sweep_text != spec.text) {
      throw InputError("--resume", "", "the results were made by a different sweep file");
    }
    for (const auto& p : previous->points) {
      if (p.point >= 0 && static_cast<std::size_t>(p.point) < n && p.done && p.ok) {
        r.points[p.point] = p;
      }
    }
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

void run_sweep(const SweepSpec& spec, SweepResults& results, const SweepOptions& opt) {
  std::vector<std::size_t> todo;
  for (std::size_t i = 0; i < results.points.size(); ++i) {
    if (!results.points[i].done && static_cast<int>(i % opt.shards) == opt.shard) todo.push_back(i);
  }
  const int threads = std::max(
      1, std::min<int>(
             opt.threads > 0 ? opt.threads : static_cast<int>(std::thread::hardware_concurrency()),
             static_cast<int>(std::max<std::size_t>(todo.size(), 1))));
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> finished{0};
  std::mutex mu;
  auto work = [&] {
    for (std::size_t j = next++; j < todo.size(); j = next++) {
      const std::size_t i = todo[j];
      PointResult p;
      {
        std::lock_guard<std::mutex> lock(mu);
        p = results.points[i];
      }
      const auto t0 = std::chrono::steady_clock::now();
      try {
        std::vector<std::string> o = spec.overrides(i, p.seed - p.replicate);
        const Scenario sc = load_point(spec, o);
        Simulation sim(sc);
        const RunResult rr = sim.run();
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
      p.done = true;
      p.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      {
        std::lock_guard<std::mutex> lock(mu);
        results.points[i] = std::move(p);
      }
      ++finished;
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(work);
  auto last_report = std::chrono::steady_clock::now();
  auto last_checkpoint = last_report;
  while (finished.load() < todo.size()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const auto now = std::chrono::steady_clock::now();
    if (opt.on_progress &&
        std::chrono::duration<double>(now - last_report).count() >= opt.report_every_s) {
      std::lock_guard<std::mutex> lock(mu);
      opt.on_progress(results, finished.load(), todo.size());
      last_report = now;
    }
    if (opt.on_checkpoint &&
        std::chrono::duration<double>(now - last_checkpoint).count() >= opt.checkpoint_every_s) {
      std::lock_guard<std::mutex> lock(mu);
      opt.on_checkpoint(results);
      last_checkpoint = now;
    }
  }
  for (auto& t : pool) t.join();
  if (opt.on_progress) opt.on_progress(results, finished.load(), todo.size());
}

namespace {

bool is_number(const std::string& s) {
  if (s.empty()) return false;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

const char* kCurveNames[3] = {"ttft", "tpot", "e2e"};

}  // namespace

void write_sweep_h5(const std::string& path, const SweepResults& r) {
  h5::write_file_atomically(path, [&](hid_t file) {
    h5::write_string_dataset(file, "sweep", r.sweep_text);
    h5::write_string_dataset(file, "scenario", r.base_yaml);
    std::vector<std::size_t> rows;
    for (std::size_t i = 0; i < r.points.size(); ++i)
      if (r.points[i].done) rows.push_back(i);
    Table t;
    auto& point = t.i64("point");
    auto& rep = t.i64("replicate");
    auto& seed = t.i64("seed");
    for (std::size_t k = 0; k < r.axis_keys.size(); ++k) {
      bool numeric = true;
      for (std::size_t i : rows) numeric = numeric && is_number(r.axis_values[i][k]);
      if (numeric) {
        auto& c = t.f64(r.axis_keys[k]);
        for (std::size_t i : rows) c.push_back(std::strtod(r.axis_values[i][k].c_str(), nullptr));
      } else {
        auto& c = t.str(r.axis_keys[k]);
        for (std::size_t i : rows) c.push_back(r.axis_values[i][k]);
      }
    }
    auto& status = t.str("status");
    auto& error = t.str("error");
    auto& wall = t.f64("wall_s");
    for (std::size_t i : rows) {
      const auto& p = r.points[i];
      point.push_back(p.point);
      rep.push_back(p.replicate);
      seed.push_back(p.seed);
      status.push_back(p.ok ? "ok" : "failed");
      error.push_back(p.error);
      wall.push_back(p.wall_s);
    }
    for (std::size_t m = 0; m < r.metric_names.size(); ++m) {
      auto& c = t.f64(r.metric_names[m]);
      for (std::size_t i : rows) {
        const auto& p = r.points[i];
        c.push_back(m < p.metrics.size() ? p.metrics[m] : std::nan(""));
      }
    }
    h5::write_table(file, "points", t);
    Table cv;
    auto& cp = cv.i64("point");
    auto& cm = cv.str("metric");
    auto& pct = cv.i64("percentile");
    auto& val = cv.f64("value_s");
    for (std::size_t i : rows) {
      const auto& p = r.points[i];
      for (std::size_t j = 0; j < p.curves.size(); ++j) {
        cp.push_back(p.point);
        cm.push_back(kCurveNames[j / kCurvePercentiles]);
        pct.push_back(static_cast<std::int64_t>(j % kCurvePercentiles) + 1);
        val.push_back(p.curves[j]);
      }
    }
    h5::write_table(file, "curves", cv);
  });
}

SweepResults read_sweep_h5(const std::string& path) {
  const h5::H5 file = h5::open_for_reading(path, "sweep results");
  auto read_text = [&](const char* name) {
    if (!h5::has_link(file.id, name))
      throw InputError(path, name, "dataset missing: not a sweep file");
    return h5::read_string_dataset(file.id, name);
  };
  SweepResults r;
  r.sweep_text = read_text("sweep");
  r.base_yaml = read_text("scenario");
  Table t, cv;
  try {
    t = h5::read_table(file.id, "points");
    cv = h5::read_table(file.id, "curves");
  } catch (const std::runtime_error& e) {
    throw InputError(path, "points", e.what());
  }
  const SweepSpec spec = load_sweep_text(r.sweep_text, path + ":/sweep", ".", false);
  for (const auto& a : spec.axes) r.axis_keys.push_back(a.key);
  const std::set<std::string> fixed = {"point", "replicate", "seed", "status", "error", "wall_s"};
  const std::set<std::string> axes(r.axis_keys.begin(), r.axis_keys.end());
  std::map<std::string, const Column*> cols;
  for (const auto& c : t.columns) {
    cols[c.name] = &c;
    if (!fixed.count(c.name) && !axes.count(c.name)) r.metric_names.push_back(c.name);
  }
  auto i64 = [&](const char* n) -> const std::vector<std::int64_t>& {
    return std::get<std::vector<std::int64_t>>(cols.at(n)->data);
  };
  auto str = [&](const char* n) -> const std::vector<std::string>& {
    return std::get<std::vector<std::string>>(cols.at(n)->data);
  };
  const auto& point = i64("point");
  std::map<std::int64_t, std::size_t> index;
  for (std::size_t row = 0; row < point.size(); ++row) {
    PointResult p;
    p.point = point[row];
    p.replicate = static_cast<std::int32_t>(i64("replicate")[row]);
    p.seed = i64("seed")[row];
    p.done = true;
    p.ok = str("status")[row] == "ok";
    p.error = str("error")[row];
    p.wall_s = std::get<std::vector<double>>(cols.at("wall_s")->data)[row];
    for (const auto& m : r.metric_names)
      p.metrics.push_back(std::get<std::vector<double>>(cols.at(m)->data)[row]);
    std::vector<std::string> av;
    for (const auto& k : r.axis_keys) {
      if (auto* d = std::get_if<std::vector<double>>(&cols.at(k)->data)) {
        av.push_back(config::format_double((*d)[row]));
      } else {
        av.push_back(std::get<std::vector<std::string>>(cols.at(k)->data)[row]);
      }
    }
    index[p.point] = r.points.size();
    r.points.push_back(std::move(p));
    r.axis_values.push_back(std::move(av));
  }
  auto curve_column = [&](const char* name) -> const Column& {
    for (const auto& c : cv.columns)
      if (c.name == name) return c;
    throw InputError(path, std::string("curves.") + name, "column is missing");
  };
  const auto& cp = std::get<std::vector<std::int64_t>>(curve_column("point").data);
  const auto& val = std::get<std::vector<double>>(curve_column("value_s").data);
  for (std::size_t row = 0; row < cp.size(); ++row) {
    auto it = index.find(cp[row]);
    if (it != index.end()) r.points[it->second].curves.push_back(val[row]);
  }
  return r;
}

SweepResults merge_sweeps(const std::vector<SweepResults>& parts) {
  if (parts.empty()) throw InputError("merge", "", "no inputs");
  SweepResults out;
  out.sweep_text = parts[0].sweep_text;
  out.base_yaml = parts[0].base_yaml;
  out.axis_keys = parts[0].axis_keys;
  out.metric_names = parts[0].metric_names;
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
