#include "sim/sweep/capacity.h"

#include <yaml-cpp/yaml.h>

#include <atomic>
#include <charconv>
#include <cmath>
#include <exception>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <tuple>

#include "sim/config/params.h"
#include "sim/core/error.h"
#include "sim/metrics/summary.h"
#include "sim/simulation/scenario.h"
#include "sim/simulation/simulation.h"
#include "sim/sweep/point_runner.h"

namespace kvfleet::sim {

std::string Slo::measured(const Summary& s) const {
  const double offered = static_cast<double>(s.requests);
  char buf[64];
  switch (kind) {
    case Kind::kRejectRate:
      std::snprintf(buf, sizeof buf, "%.3g%%",
                    100 * (offered > 0 ? static_cast<double>(s.rejected) / offered : 0.0));
      return buf;
    case Kind::kTimeoutRate:
      std::snprintf(buf, sizeof buf, "%.3g%%",
                    100 * (offered > 0 ? static_cast<double>(s.timed_out) / offered : 0.0));
      return buf;
    case Kind::kRefusedRate:
      std::snprintf(
          buf, sizeof buf, "%.3g%%",
          100 * (offered > 0 ? static_cast<double>(s.rejected + s.timed_out) / offered : 0.0));
      return buf;
    case Kind::kGoodput:
      std::snprintf(buf, sizeof buf, "%.3g%%",
                    100 * (offered > 0 ? static_cast<double>(s.ok) / offered : 0.0));
      return buf;
    case Kind::kLatency:
      for (const auto& m : summary_metrics()) {
        if (m.name != metric) continue;
        const double v = m.get(s);
        if (!std::isfinite(v)) return "none completed";
        if (v < 1)
          std::snprintf(buf, sizeof buf, "%.3g ms", 1e3 * v);
        else
          std::snprintf(buf, sizeof buf, "%.3g s", v);
        return buf;
      }
  }
  return "?";
}

bool Slo::holds(const Summary& s) const {
  const double offered = static_cast<double>(s.requests);
  switch (kind) {
    case Kind::kRejectRate:
      return (offered > 0 ? static_cast<double>(s.rejected) / offered : 0.0) <= fraction;
    case Kind::kTimeoutRate:
      return (offered > 0 ? static_cast<double>(s.timed_out) / offered : 0.0) <= fraction;
    case Kind::kRefusedRate:
      return (offered > 0 ? static_cast<double>(s.rejected + s.timed_out) / offered : 0.0) <=
             fraction;
    case Kind::kGoodput:
      return offered > 0 && static_cast<double>(s.ok) / offered >= fraction;
    case Kind::kLatency:
      for (const auto& m : summary_metrics()) {            // the one metric, not the whole table
        if (m.name == metric) return m.get(s) <= limit_s;  // NaN (none completed) does not hold
      }
      return false;
  }
  return false;
}

std::string Slo::describe() const {
  switch (kind) {
    case Kind::kRejectRate:
    case Kind::kTimeoutRate:
    case Kind::kRefusedRate:
      return name + " <= " + config::format_double(fraction * 100) + "%";
    case Kind::kGoodput:
      return name + " >= " + config::format_double(fraction * 100) + "%";
    case Kind::kLatency:
      break;
  }
  return name + " <= " + config::format_double(limit_s) + " s";
}

std::vector<Slo> parse_slo(const std::string& text) {
  std::vector<std::string> known;  // the latencies: /summary metrics in seconds
  for (const auto& m : summary_metrics())
    if (m.unit == "s" && m.name.size() > 2 && m.name.substr(m.name.size() - 2) == "_s")
      known.push_back(m.name);
  std::vector<Slo> out;
  std::stringstream ss(text);
  std::string part;
  std::set<std::string> named;
  if (!text.empty() && text.back() == ',')
    throw InputError("--slo", "", "an empty target (two commas, or one at an end)");
  while (std::getline(ss, part, ',')) {
    if (part.empty())
      throw InputError("--slo", "", "an empty target (two commas, or one at an end)");
    const auto eq = part.find('=');
    if (eq == std::string::npos) {
      throw InputError("--slo", part, "expected name=limit with a unit, e.g. ttft_p99=2s");
    }
    Slo s;
    s.name = part.substr(0, eq);
    if (!named.insert(s.name).second)
      throw InputError("--slo", s.name, "is given twice (one limit per target)");
    const std::string lim = part.substr(eq + 1);
    if (s.name == "reject_rate" || s.name == "goodput" || s.name == "timeout_rate" ||
        s.name == "refused_rate") {
      s.kind = s.name == "goodput"        ? Slo::Kind::kGoodput
               : s.name == "timeout_rate" ? Slo::Kind::kTimeoutRate
               : s.name == "refused_rate" ? Slo::Kind::kRefusedRate
                                          : Slo::Kind::kRejectRate;
      double v = 0;
      const auto r =
          std::from_chars(lim.data(), lim.data() + lim.size(), v, std::chars_format::general);
      const std::string unit(r.ptr, lim.data() + lim.size());
      if (unit == "%") v /= 100;
      const bool in_range = s.kind == Slo::Kind::kGoodput ? v > 0 && v <= 1 : v >= 0 && v < 1;
      if (r.ec != std::errc() || (unit != "%" && !unit.empty()) || !in_range) {
        throw InputError(
            "--slo", s.name,
            "limit '" + lim + "' is not a share of the requests: a percentage " +
                (s.kind == Slo::Kind::kGoodput ? "above 0% and at most 100% (99%)"
                                               : "from 0% up to, not including, 100% (1%)") +
                " or the same as a fraction (" + (s.kind == Slo::Kind::kGoodput ? "0.99" : "0.01") +
                ")");
      }
      s.fraction = v;
      out.push_back(s);
      continue;
    }
    const std::string metric = canonical_metric(s.name);  // ttft_p99 or its one name
    if (std::find(known.begin(), known.end(), metric) == known.end()) {
      throw InputError(
          "--slo", s.name,
          "unknown latency (use ttft, tpot, e2e or queue with _mean, _p50, _p90, _p99 "
          "or _max, e.g. ttft_p99) or share (reject_rate, timeout_rate, refused_rate, goodput)");
    }
    s.metric = metric;
    // A decimal number (no hex, inf or nan) and its unit.
    double v = 0;
    const auto r =
        std::from_chars(lim.data(), lim.data() + lim.size(), v, std::chars_format::general);
    const std::string unit(r.ptr, lim.data() + lim.size());
    double scale = 0;
    if (unit == "s") scale = 1;
    if (unit == "ms") scale = 1e-3;
    if (unit == "us") scale = 1e-6;
    if (r.ec != std::errc() || scale == 0 || !(v > 0) || !std::isfinite(v)) {
      throw InputError("--slo", s.name,
                       "limit '" + lim + "' is not a positive number with a unit s, ms or us");
    }
    s.limit_s = v * scale;
    out.push_back(s);
  }
  if (out.empty()) throw InputError("--slo", "", "empty SLO");
  return out;
}

CapacityResult find_capacity(const std::string& path, const std::vector<Slo>& slo,
                             const CapacityOptions& opt) {
  ScenarioSource source;
  source.path = path;
  return find_capacity(source, slo, opt);
}

void check_capacity_options(const CapacityOptions& opt) {
  if (opt.replicates < 1 || opt.replicates > 1000)
    throw InputError("--replicates", "", "must be between 1 and 1000");
  if (!(opt.tolerance >= 1e-6 && opt.tolerance <= 1))
    throw InputError("--tolerance", "", "must be between 1e-6 and 1 (a relative width)");
  if (opt.threads < 0) throw InputError("--threads", "", "must be >= 0 (0: all cores)");
  if (!(opt.step_time_sensitivity >= 0 && opt.step_time_sensitivity <= 0.5))
    throw InputError("--step-sensitivity", "", "must be between 0 (off) and 0.5 (a fraction)");
}

std::string load_key(const Scenario& base, const std::string& load, const std::string& key,
                     double* value) {
  const YAML::Node resolved = YAML::Load(base.resolved_yaml);
  const YAML::Node wl = resolved["workload"];
  std::string k = key.empty() ? "" : config::canonical_key(key, "--key");
  if (k.empty()) {
    if (load == "users") {
      if (!wl["users"]) throw InputError("--metric", "users", "this workload has no users key");
      k = "workload.users";
    } else if (load == "arrival_rate") {
      if (wl["arrival"] && wl["arrival"]["rate_per_s"]) {
        k = "workload.arrival.rate_per_s";
      } else if (wl["session_arrival"] && wl["session_arrival"]["rate_per_s"]) {
        k = "workload.session_arrival.rate_per_s";
      } else {
        throw InputError("--metric", "arrival_rate",
                         "this workload has no arrival rate key (give --key)");
      }
    } else {
      throw InputError("--metric", load, "is not arrival_rate or users");
    }
  }
  // Keys whose growth lowers the load: the search would run the wrong way and answer 0.
  for (const char* inverse : {"time_scale", "think_time_s"}) {
    const std::string tail = std::string(".") + inverse;
    if (k.size() >= tail.size() && k.compare(k.size() - tail.size(), tail.size(), tail) == 0)
      throw InputError("--key", k,
                       "raising it lowers the load (it stretches the time between requests), and "
                       "capacity searches for the highest value of a key that raises it: vary an "
                       "arrival rate or the users, or sweep this key (kvfleet sweep)");
  }
  // The current value of the key in the resolved scenario (canonical path: a.b[2].c).
  YAML::Node node = resolved;
  std::stringstream keys(k);
  for (std::string part; std::getline(keys, part, '.') && node.IsDefined();) {
    const auto br = part.find('[');
    node.reset(node.IsMap() ? node[part.substr(0, br)] : YAML::Node(YAML::NodeType::Undefined));
    for (auto at = br; at != std::string::npos && node.IsDefined(); at = part.find('[', at + 1)) {
      const std::size_t idx = std::stoul(part.substr(at + 1));
      node.reset(node.IsSequence() && idx < node.size() ? node[idx]
                                                        : YAML::Node(YAML::NodeType::Undefined));
    }
  }
  if (!node.IsDefined() || !node.IsScalar())
    throw InputError("--key", k, "is not a number in this scenario");
  double v = 0;
  const std::string& text = node.Scalar();
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size() || !std::isfinite(v))
    throw InputError("--key", k, "is '" + text + "' in this scenario, not a number");
  if (value) *value = v;
  return k;
}

double load_cap(const Scenario& base, const std::string& key) {
  if (key != "workload.users") return INFINITY;
  const YAML::Node wl = YAML::Load(base.resolved_yaml)["workload"];
  if (!wl["num_sessions"] || !wl["num_sessions"].IsScalar()) return INFINITY;
  const double n = wl["num_sessions"].as<double>(0);
  return n >= 1 ? n : INFINITY;
}

SloCheck check_slo(const ScenarioSource& source, const std::vector<std::string>& sets,
                   const std::vector<Slo>& slo, const CancelToken* cancel) {
  SloCheck c;
  const Scenario sc = source.load(sets);
  Simulation sim(sc);
  if (cancel) sim.set_cancel(cancel);
  const RunResult rr = sim.run();
  if (rr.cancelled) {
    c.cancelled = true;
    return c;
  }
  c.summary = std::make_shared<Summary>(summarize(rr));
  const Summary& s = *c.summary;
  c.ok = s.ok > 0;
  for (const auto& q : slo) {
    if (q.holds(s)) continue;
    c.ok = false;
    c.failed += (c.failed.empty() ? "" : "; ") + q.name + " measured " + q.measured(s) +
                " against " + q.describe();
  }
  if (s.ok == 0 && c.failed.empty()) c.failed = "no request completed";
  return c;
}

namespace {

// One capacity search: every seed's bisection of the load at which the SLO holds, run in
// parallel, under the step-time scaling `extra` of a sensitivity search.
class CapacitySearch {
 public:
  CapacitySearch(const ScenarioSource& source, const std::vector<Slo>& slo,
                 const CapacityOptions& opt, const Scenario& base, CapacityResult& res)
      : source_(source),
        slo_(slo),
        opt_(opt),
        res_(res),
        reps_(std::max(1, opt.replicates)),
        // A key declared an integer (users, replicas, max_num_seqs) is varied in whole steps.
        integer_(opt.load == "users" || declared_key(res.key).integer),
        // Closed-loop users beyond the workload's conversations have nothing to send: every load
        // past num_sessions is the load at num_sessions, and would pass for a higher capacity.
        cap_(load_cap(base, res.key)),
        cap_why_("workload.num_sessions: the workload holds " + config::format_double(cap_) +
                 " conversations, so more users than that would have nothing to send (raise "
                 "num_sessions to search further)"),
        lowest_fail_(static_cast<std::size_t>(reps_), {INFINITY, ""}),
        ro_(searching_options(opt.threads, &stop_, opt.poll)) {}

  // Every seed's capacity under the current `extra` settings.
  std::vector<double> search_all() {
    std::vector<double> per_seed(static_cast<std::size_t>(reps_), 0.0);
    std::exception_ptr failure;
    run_points(
        static_cast<std::size_t>(reps_),
        [&](std::size_t r) {
          try {
            per_seed[r] = search(static_cast<int>(r));
          } catch (const Stopped&) {
          } catch (...) {
            std::lock_guard<std::mutex> lock(mu_);
            if (!failure) failure = std::current_exception();
            stop_.cancel();
          }
        },
        ro_);
    if (failure) std::rethrow_exception(failure);
    return per_seed;
  }
  std::vector<std::string>& extra() { return extra_; }
  int runs() const { return runs_.load(); }
  // The first seed's failing targets at the lowest load that failed, or "" when none failed.
  std::string lowest_failure() const {
    const auto& lf = lowest_fail_.front();
    if (!std::isfinite(lf.first)) return "";
    return "at the lowest load tried, " + res_.key + " = " + config::format_double(lf.first) +
           " (seed " + std::to_string(res_.seeds.front()) + "): " + lf.second;
  }

 private:
  struct Stopped {};
  double round(double x) const { return integer_ ? std::max(1.0, std::round(x)) : x; }

  bool holds(int r, double x) {
    if (stop_.cancelled()) throw Stopped{};
    std::vector<std::string> sets = opt_.sets;
    sets.insert(sets.end(), extra_.begin(), extra_.end());
    sets.push_back(res_.key + "=" + config::format_double(x));
    sets.push_back("seed=" + std::to_string(res_.seeds[r]));
    const SloCheck c = check_slo(source_, sets, slo_, &stop_);
    if (c.cancelled) throw Stopped{};
    ++runs_;
    if (!c.ok) {
      std::lock_guard<std::mutex> lock(mu_);
      auto& lf = lowest_fail_[static_cast<std::size_t>(r)];
      if (x < lf.first) lf = {x, c.failed};
    }
    if (opt_.on_run) {
      std::lock_guard<std::mutex> lock(mu_);
      opt_.on_run(res_.seeds[r], x, c.ok);
    }
    return c.ok;
  }

  void limited_by(const std::string& why) {
    std::lock_guard<std::mutex> lock(mu_);
    if (res_.limited_by.empty()) res_.limited_by = why;
  }

  // From a load that holds, doubling until one fails: {lo, hi}, hi 0 when none failed (lo is
  // then the answer).
  std::pair<double, double> bracket_up(int r, double x) {
    double lo = x;
    for (int i = 0; i < 30; ++i) {
      const double y = std::min(round(lo * 2), cap_);
      if (y <= lo) {  // at the cap, and the SLO still holds
        limited_by(cap_why_);
        return {lo, 0};
      }
      bool ok;
      try {
        ok = holds(r, y);
      } catch (const InputError& e) {
        // The load cannot go higher (beyond the key's range, or the scenario no longer fits at
        // it): the SLO holds up to there.
        limited_by(e.what());
        return {lo, 0};
      }
      if (!ok) return {lo, y};
      lo = y;
    }
    return {lo, 0};  // holds far beyond the start: report the largest load tried
  }

  // From a load that fails, halving until one holds: {lo, hi}, lo 0 when none held.
  std::pair<double, double> bracket_down(int r, double x) {
    double hi = x;
    // Down to 1/1024 of the scenario's load: the SLO that fails that far down fails unloaded
    // (lower loads only stretch the simulated time toward the clock's range).
    for (int i = 0; i < 10; ++i) {
      const double y = round(hi / 2);
      if (integer_ && y >= hi) return {0, hi};
      bool ok;
      try {
        ok = holds(r, y);
      } catch (const InputError& e) {
        // The load cannot go lower (below the key's range, or a run at it would outlast the
        // clock): the SLO holds at no load tried.
        if (e.key() != res_.key && e.where() != "simulated time") throw;
        return {0, hi};
      }
      if (ok) return {y, hi};
      hi = y;
    }
    return {0, hi};
  }

  double search(int r) {
    const double x = std::min(round(res_.start), cap_);
    double lo, hi;
    if (holds(r, x)) {
      std::tie(lo, hi) = bracket_up(r, x);
      if (hi == 0) return lo;
    } else {
      std::tie(lo, hi) = bracket_down(r, x);
      if (lo == 0) return 0.0;
    }
    for (int i = 0; i < 40 && (hi - lo) / lo > opt_.tolerance; ++i) {
      const double mid = round(0.5 * (lo + hi));
      if (mid <= lo || mid >= hi) break;
      (holds(r, mid) ? lo : hi) = mid;
    }
    return lo;
  }

  const ScenarioSource& source_;
  const std::vector<Slo>& slo_;
  const CapacityOptions& opt_;
  CapacityResult& res_;
  const int reps_;
  const bool integer_;
  const double cap_;
  const std::string cap_why_;
  std::atomic<int> runs_{0};
  std::mutex mu_;
  CancelToken stop_;  // a run failed: the others stop (between events) and their seeds end
  std::vector<std::string> extra_;  // the step-time scaling of a sensitivity search
  // Per replicate: the failing targets at the lowest load that failed (for not_met).
  std::vector<std::pair<double, std::string>> lowest_fail_;
  const PointRunnerOptions ro_;
};

double mean_of(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0.0 : sum / static_cast<double>(v.size());
}

// The mean over the seeds, its 95% interval, and the band the expected TPOT error gives through
// the sensitivity searches.
void finish_statistics(CapacityResult& res, int reps) {
  double sum = 0;
  for (double v : res.per_seed) sum += v;
  res.mean = sum / reps;
  double var = 0;
  for (double v : res.per_seed) var += (v - res.mean) * (v - res.mean);
  const double sd = reps > 1 ? std::sqrt(var / (reps - 1)) : 0;
  const double half = reps > 1 ? t95(reps - 1) * sd / std::sqrt(static_cast<double>(reps)) : 0;
  res.ci95_low = res.mean - half;
  res.ci95_high = res.mean + half;
  if (res.sensitivity > 0 && res.expected.runs > 0 && res.mean > 0 && res.slower_steps > 0 &&
      res.faster_steps > 0) {
    // d ln(capacity) / d ln(step time), from the two sensitivity searches (negative: slower steps
    // hold less).
    const double slope = (std::log(res.slower_steps) - std::log(res.faster_steps)) /
                         (std::log1p(res.sensitivity) - std::log1p(-res.sensitivity));
    if (std::isfinite(slope)) {
      const double band = std::fabs(slope) * res.expected.tpot;
      res.expected_low = res.mean * (1 - band);
      res.expected_high = res.mean * (1 + band);
    }
  }
}

}  // namespace

CapacityResult find_capacity(const ScenarioSource& source, const std::vector<Slo>& slo,
                             const CapacityOptions& opt) {
  check_capacity_options(opt);
  CapacityResult res;
  const Scenario base = source.load(opt.sets);
  const YAML::Node resolved = YAML::Load(base.resolved_yaml);
  res.key = load_key(base, opt.load, opt.key, &res.start);
  if (!(res.start > 0)) res.start = 1;
  {
    YAML::Emitter e;
    e << resolved["workload"];
    res.workload_yaml = e.c_str();
  }
  const int reps = std::max(1, opt.replicates);
  res.per_seed.assign(reps, 0);
  for (int r = 0; r < reps; ++r) res.seeds.push_back(base.config.seed + r);
  CapacitySearch search(source, slo, opt, base, res);
  res.per_seed = search.search_all();
  // Every seed found no load at which the SLO holds: say what failed at the lowest load.
  bool none = !res.per_seed.empty();
  for (double v : res.per_seed) none = none && v == 0;
  if (none) res.not_met = search.lowest_failure();
  if (opt.step_time_sensitivity > 0 && res.not_met.empty()) {
    res.sensitivity = opt.step_time_sensitivity;
    for (const double f : {1 + opt.step_time_sensitivity, 1 - opt.step_time_sensitivity}) {
      search.extra().clear();
      for (std::size_t p = 0; p < base.config.pools.size(); ++p)
        search.extra().push_back("pools[" + std::to_string(p) + "].step_time_scale=" +
                                 config::format_double(base.config.pools[p].step_time_scale * f));
      (f > 1 ? res.slower_steps : res.faster_steps) = mean_of(search.search_all());
    }
    search.extra().clear();
  }
  // The cost model's expected error: the pool whose TPOT is least certain.
  for (std::size_t p = 0; p < base.config.pools.size(); ++p) {
    const ExpectedError e =
        expected_error(base.config.pools[p].cost_model.impl, base.pools[p].model.moe());
    if (p == 0 || (e.runs > 0 && (res.expected.runs == 0 || e.tpot > res.expected.tpot)))
      res.expected = e;
  }
  res.runs = search.runs();
  finish_statistics(res, reps);
  return res;
}

}  // namespace kvfleet::sim
