#include "sim/sweep/sizing.h"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "sim/config/params.h"
#include "sim/core/cancel.h"
#include "sim/core/error.h"
#include "sim/metrics/summary.h"
#include "sim/simulation/scenario.h"
#include "sim/sweep/point_runner.h"

namespace kvfleet::sim {

namespace {

// The request arrival rate that offers `opt.target` output tokens per second: the target over
// the workload's mean output tokens per request, measured on one run of the scenario at its own
// settings (the requests that completed). Only a workload whose requests arrive at a rate has
// one; conversations (users, sessions) are sized in their own units.
double arrival_rate_for_tokens(const ScenarioSource& source, const Scenario& base,
                               const SizingOptions& opt, SizingResult& res) {
  const std::string rate = "workload.arrival.rate_per_s";
  try {
    res.load_key = load_key(base, "arrival_rate", opt.key);
  } catch (const InputError&) {
    if (!opt.key.empty()) throw;  // the key itself is wrong: said as such
  }
  if (res.load_key != rate) {
    double users = 0;
    try {
      load_key(base, "users", "", &users);
    } catch (const InputError&) {
    }
    throw InputError("--metric", "output_tokens_per_s",
                     "needs a workload whose requests arrive at a rate (" + rate + "); " +
                         (res.load_key.empty() ? std::string("this one has none")
                                               : "this one's load is " + res.load_key) +
                         ": give --target in its own units (--metric " +
                         (users > 0 ? "users" : "arrival_rate") + ")");
  }
  const SloCheck run = check_slo(source, opt.sets, {});
  const Summary& s = *run.summary;
  const double tokens = s.output_tokens_per_s * s.duration_s;
  if (s.ok < 1 || !(tokens > 0))
    throw InputError("--metric", "output_tokens_per_s",
                     "no request completed in a run of the scenario at its own settings, so its "
                     "output tokens per request are unknown: size it in requests/s");
  res.target_output_tokens_per_s = opt.target;
  res.output_tokens_per_request = tokens / static_cast<double>(s.ok);
  res.measured_completed = s.ok;
  res.measured_arrived = s.requests;
  return opt.target / res.output_tokens_per_request;
}

void check_sizing_options(const SizingOptions& opt) {
  if (!(opt.target > 0) || !std::isfinite(opt.target))
    throw InputError("--target", "", "must be a load above 0");
  if (opt.replicates < 1 || opt.replicates > 1000)
    throw InputError("--replicates", "", "must be between 1 and 1000");
  if (opt.max_replicas < 1 || opt.max_replicas > 100000)
    throw InputError("--max-replicas", "", "must be between 1 and 100000");
}

// The pool to size (--pool, else the first); one that autoscales is refused.
std::size_t sized_pool(const Scenario& base, const SizingOptions& opt) {
  std::size_t pi = 0;
  if (!opt.pool.empty()) {
    std::string names;
    for (pi = 0; pi < base.config.pools.size(); ++pi) {
      if (base.config.pools[pi].name == opt.pool) break;
      names += (names.empty() ? "" : ", ") + base.config.pools[pi].name;
    }
    if (pi == base.config.pools.size())
      throw InputError("--pool", opt.pool, "no pool of this name (the scenario's: " + names + ")");
  }
  const PoolConfig& pool = base.config.pools[pi];
  if (pool.autoscale.enabled)
    throw InputError("--pool", pool.name,
                     "autoscales: sizing sets its replica count, so turn autoscale off "
                     "(--set pools[" +
                         std::to_string(pi) + "].autoscale.enabled=false)");
  return pi;
}

// The price: the option, else the scenario's, else the GPU preset's list price, said as such.
void set_price(const Scenario& base, std::size_t pi, const SizingOptions& opt, SizingResult& res) {
  const PoolConfig& pool = base.config.pools[pi];
  if (opt.price_per_hour >= 0) {
    res.price_per_hour = opt.price_per_hour;
    res.price_source = "--price-per-hour";
  } else if (pool.price_per_hour > 0) {
    res.price_per_hour = pool.price_per_hour;
    res.price_source = "pools[" + std::to_string(pi) + "].price_per_hour";
  } else if (const GpuListPrice* list = gpu_list_price(base.pools[pi].gpu.name)) {
    res.price_per_hour = list->usd_per_hour;
    res.price_source = "list price of the " + list->gpu + " preset: " + list->source;
  }
  if (!(res.price_per_hour > 0)) res.price_source.clear();
}

// The load key must be one the search does not set, and the target a load the scenario takes.
void check_target(const ScenarioSource& source, const Scenario& base, const SizingOptions& opt,
                  const std::string& replicas_key, const SizingResult& res) {
  if (res.load_key == replicas_key || res.load_key == "seed")
    throw InputError("--key", res.load_key,
                     "is what the search itself sets: give the key of the load to serve");
  if (const double cap = load_cap(base, res.load_key); res.target > cap)
    throw InputError("--target", "",
                     config::format_double(res.target) + " users exceed the workload's " +
                         config::format_double(cap) +
                         " conversations (workload.num_sessions): the extra users would have "
                         "nothing to send, so fewer replicas would seem to hold them; raise "
                         "num_sessions (--set workload.num_sessions=...)");
  // The target must be a load the scenario takes (in its key's range): refused here, by the
  // key, rather than reported as a replica count that could not be built.
  std::vector<std::string> sets = opt.sets;
  sets.push_back(res.load_key + "=" + config::format_double(res.target));
  source.load(sets);
}

// One seed's answer: the fewest replicas that hold the SLO.
struct Answer {
  int replicas = 0;
  std::string fewer_failed;  // at replicas - 1
  std::shared_ptr<const Summary> summary;
  std::string not_met;
};

// Every seed's search for the fewest replicas, run in parallel.
class ReplicaSearch {
 public:
  ReplicaSearch(const ScenarioSource& source, const std::vector<Slo>& slo, const SizingOptions& opt,
                const SizingResult& res, std::string replicas_key, int start)
      : source_(source),
        slo_(slo),
        opt_(opt),
        res_(res),
        replicas_key_(std::move(replicas_key)),
        start_(start) {}

  std::vector<Answer> run() {
    std::vector<Answer> answers(static_cast<std::size_t>(opt_.replicates));
    const PointRunnerOptions ro = searching_options(opt_.threads, &stop_, opt_.poll);
    // A seed's error cancels the others (run_points: the token) and is rethrown here; a run that
    // was stopped by that cancel ends its seed quietly.
    run_points(
        answers.size(),
        [&](std::size_t r) {
          try {
            search(r, answers[r]);
          } catch (const Stopped&) {
          }
        },
        ro);
    return answers;
  }
  int runs() const { return runs_.load(); }

 private:
  struct Stopped {};
  struct Tried {
    bool ok;
    std::string failed;
    std::shared_ptr<const Summary> summary;
  };

  Tried holds(std::size_t r, int n) {
    if (stop_.cancelled()) throw Stopped{};
    std::vector<std::string> sets = opt_.sets;
    sets.push_back(res_.load_key + "=" + config::format_double(res_.target));
    sets.push_back(replicas_key_ + "=" + std::to_string(n));
    sets.push_back("seed=" + std::to_string(res_.seeds[r]));
    const SloCheck c = check_slo(source_, sets, slo_, &stop_);
    if (c.cancelled) throw Stopped{};
    ++runs_;
    return {c.ok, c.failed, c.summary};
  }

  void search(std::size_t r, Answer& a) {
    int lo = 0;  // the most replicas known to fail (0: none tried)
    std::string lo_failed;
    int hi = 0;  // the fewest known to hold
    Tried at_hi{false, "", nullptr};
    int n = start_;
    // Bracket: double until it holds, or halve until it fails.
    for (;;) {
      Tried t{false, "", nullptr};
      try {
        t = holds(r, n);
      } catch (const InputError& e) {
        // A fleet this large cannot be built (memory, limits): the search ends below it.
        a.not_met = "at " + std::to_string(n) + " replicas the scenario is refused: " + e.what();
        return;
      }
      if (t.ok) {
        hi = n, at_hi = t;
        if (n == 1 || (lo > 0 && n == lo + 1)) break;
        if (lo > 0) break;
        n = std::max(1, n / 2);
      } else {
        lo = n, lo_failed = t.failed;
        if (hi > 0) break;
        if (n >= opt_.max_replicas) {
          a.not_met = "with " + std::to_string(n) + " replicas (--max-replicas), " + t.failed;
          return;
        }
        n = std::min(opt_.max_replicas, n * 2);
      }
    }
    // Bisect between lo (fails) and hi (holds).
    while (hi - lo > 1) {
      const int mid = lo + (hi - lo) / 2;
      const Tried t = holds(r, mid);
      if (t.ok)
        hi = mid, at_hi = t;
      else
        lo = mid, lo_failed = t.failed;
    }
    a.replicas = hi;
    a.summary = at_hi.summary;
    a.fewer_failed = lo > 0 ? "with " + std::to_string(lo) + " replicas, " + lo_failed : "";
  }

  const ScenarioSource& source_;
  const std::vector<Slo>& slo_;
  const SizingOptions& opt_;
  const SizingResult& res_;
  const std::string replicas_key_;
  const int start_;
  std::atomic<int> runs_{0};
  CancelToken stop_;
};

// The answer: the most replicas any seed needed, with what it costs and serves.
void take_answers(const std::vector<Answer>& answers, SizingResult& res) {
  const Answer* most = nullptr;
  for (std::size_t r = 0; r < answers.size(); ++r) {
    res.per_seed[r] = answers[r].replicas;
    if (!answers[r].not_met.empty() && res.not_met.empty())
      res.not_met = "seed " + std::to_string(res.seeds[r]) + ": " + answers[r].not_met;
    if (!most || answers[r].replicas > most->replicas) most = &answers[r];
  }
  if (!res.not_met.empty() || !most || !most->summary) return;
  res.replicas = most->replicas;
  res.limited_by = most->fewer_failed;
  res.gpus = res.replicas * res.gpus_per_replica;
  res.output_tokens_per_s = most->summary->output_tokens_per_s;
  res.requests_per_s = most->summary->requests_per_s;
  res.duration_s = most->summary->duration_s;
  res.cost_per_hour = res.gpus * res.price_per_hour;
  res.cost_per_month = res.cost_per_hour * 730;
  if (res.price_per_hour > 0 && res.output_tokens_per_s > 0)
    res.usd_per_million_output_tokens = res.cost_per_hour / (res.output_tokens_per_s * 3600) * 1e6;
}

}  // namespace

SizingResult find_replicas(const ScenarioSource& source, const std::vector<Slo>& slo,
                           const SizingOptions& opt) {
  check_sizing_options(opt);
  SizingResult res;
  const Scenario base = source.load(opt.sets);
  res.target = opt.target;
  if (opt.load == "output_tokens_per_s") {
    res.target = arrival_rate_for_tokens(source, base, opt, res);
  } else {
    res.load_key = load_key(base, opt.load, opt.key);
  }
  const std::size_t pi = sized_pool(base, opt);
  const PoolConfig& pool = base.config.pools[pi];
  res.pool = pool.name;
  res.gpus_per_replica = pool.gpus_per_replica() * pool.data_parallel;
  set_price(base, pi, opt, res);
  res.expected = expected_error(pool.cost_model.impl, base.pools[pi].model.moe());
  const std::string replicas_key = "pools[" + std::to_string(pi) + "].replicas";
  check_target(source, base, opt, replicas_key, res);
  for (int r = 0; r < opt.replicates; ++r) res.seeds.push_back(base.config.seed + r);
  res.per_seed.assign(static_cast<std::size_t>(opt.replicates), 0);
  ReplicaSearch search(source, slo, opt, res, replicas_key,
                       std::clamp(pool.replicas, 1, opt.max_replicas));
  const std::vector<Answer> answers = search.run();
  res.runs = search.runs();
  take_answers(answers, res);
  return res;
}

}  // namespace kvfleet::sim
