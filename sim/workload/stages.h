#pragma once
// Load stages as a load generator runs them (inference-perf's `load.stages`): a list of (rate,
// duration) stages run one after another. Stage k sends floor(rate × duration) requests over
// `duration` seconds after a lead-in, waits until every one of them has ended (drain), pauses
// `interval_s`, and only then starts stage k + 1. Arrivals within a stage are
//  - constant: the gaps drawn exponential and scaled so that the last request is sent exactly
//    `duration` after the lead-in (inference-perf's ConstantLoadTimer);
//  - poisson: the stage's time cut into one-second buckets, each holding a Poisson(rate) number
//    of requests spread the same way within its second, the first floor(rate × duration) kept.
// A workload with stages asks StagedArrivals for each arrival and tells it when a request of a
// stage ends; while a stage drains no arrival is known (Workload::peek returns false).
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "sim/config/params.h"
#include "sim/core/rng.h"
#include "sim/core/time.h"

namespace kvfleet::sim {

struct LoadStage {
  double rate_per_s = 1;
  double duration_s = 60;
  int max_concurrency = 0;
  template <class V>
  void visit(V& v) {
    v.param("rate_per_s", rate_per_s,
            {.unit = "requests/s",
             .desc = "the stage's request rate",
             .max = 1e7,
             .positive = true,
             .why = "ten million requests a second is beyond any fleet"});
    v.param("duration_s", duration_s,
            {.unit = "s",
             .desc = "the stage's sending window: floor(rate × duration) requests are sent",
             .max = 1e7,
             .positive = true,
             .why = "a stage of 116 days is no benchmark stage"});
    v.param("max_concurrency", max_concurrency,
            {.unit = "requests",
             .desc = "most requests in flight while this stage sends: one due while that "
                     "many are sent and unanswered waits at the client, unsent (inference-perf's "
                     "concurrent load, concurrency_level); every stage's requests count, which "
                     "differs from the stage's own only with drain: false; 0 = no cap beyond "
                     "client.max_concurrency",
             .min = 0,
             .max = 1e7,
             .why = "ten million requests in flight is beyond any fleet"});
  }
};

struct StagesConfig {
  std::vector<LoadStage> stages;  // empty = no stages (the workload's own arrivals)
  std::string type = "poisson";
  double interval_s = 1;
  double lead_in_s = 1;
  bool drain = true;
  template <class V>
  void visit(V& v) {
    v.param("stages", stages,
            {.desc = "load stages run one after another (inference-perf's load.stages); empty = "
                     "none, the workload's own arrival process"});
    v.param("type", type,
            {.desc = "arrivals within a stage: constant (exponential gaps scaled so the last "
                     "falls at the end of the window) or poisson (per-second Poisson counts), "
                     "as inference-perf sends them",
             .choices = {"constant", "poisson"}});
    v.param("interval_s", interval_s,
            {.unit = "s",
             .desc = "pause after a stage has drained",
             .min = 0,
             .max = 1e6,
             .why = "eleven days between stages is no benchmark"});
    v.param("lead_in_s", lead_in_s,
            {.unit = "s",
             .desc = "from a stage's start to its sending window",
             .min = 0,
             .max = 1e6,
             .why = "eleven days of lead-in is no benchmark"});
    v.param("drain", drain,
            {.desc = "a stage starts only when every request of the one before has ended "
                     "(inference-perf's behaviour); false = stages back to back in time"});
  }
  void check(config::Reader& r) const;
  bool enabled() const { return !stages.empty(); }
  std::int64_t total_requests() const;
};

class StagedArrivals {
 public:
  StagedArrivals(const StagesConfig& c, std::uint64_t seed);
  // The next request's arrival and stage. False when none is known now: the current stage's
  // requests are all sent and it is draining (`done` false), or every stage is over (`done`).
  bool next(SimTime& arrival, int& stage, bool& done);
  // A request of `stage` ended at `now`.
  void ended(int stage, SimTime now);
  double nominal_rate_per_s() const;
  // The cap on requests in flight of `stage` (0: none).
  int max_concurrency(int stage) const {
    return stage >= 0 && stage < static_cast<int>(cfg_.stages.size())
               ? cfg_.stages[static_cast<std::size_t>(stage)].max_concurrency
               : 0;
  }
  bool any_concurrency_cap() const {
    for (const LoadStage& s : cfg_.stages)
      if (s.max_concurrency > 0) return true;
    return false;
  }

 private:
  void plan(int stage, SimTime start);
  StagesConfig cfg_;
  RngStream rng_;
  int stage_ = -1;                // the stage whose arrivals are planned
  std::deque<SimTime> times_;     // its arrivals not yet taken
  std::int64_t outstanding_ = 0;  // its requests sent and not ended (and not yet sent)
  SimTime last_arrival_ = 0;
  SimTime drained_at_ = 0;  // when the current stage's last request ended
};

// A Poisson(mean) count (Knuth's product of uniforms below 10, Hörmann's PTRS rejection above).
std::int64_t poisson_count(RngStream& rng, double mean);

}  // namespace kvfleet::sim
