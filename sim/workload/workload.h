#pragma once
// The source of requests (DESIGN.md: Workload -> Client -> ...). Chosen by `workload.impl`.
// Open-loop workloads know every arrival in advance; closed-loop ones (conversations) learn when a
// reply ends and schedule the next turn after a think time: completions are the one thing that
// flows back up the data flow.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/config/params.h"
#include "sim/request/request.h"
#include "sim/request/request_log.h"
#include "sim/workload/stages.h"

namespace kvfleet::sim {

class Workload {
 public:
  virtual ~Workload() = default;
  // Arrival time of the earliest request not yet taken, if one is known now.
  virtual bool peek(SimTime& arrival) = 0;
  // Takes that request (peek must have returned true).
  virtual RequestSpec pop() = 0;
  // No request will ever come again (nothing pending, nothing that a completion could start).
  virtual bool finished() = 0;
  // A request of this workload ended (any outcome): `r` holds what happened to it.
  virtual void on_request_end(const RequestRecord& r, SimTime now) {}
  // Mean arrival rate where the workload has one (for reports), else 0.
  virtual double nominal_rate_per_s() const = 0;
  // The cap on requests in flight that the next arrival (the one peek() gave) is held to: a load
  // stage's max_concurrency; 0 = none. `caps_concurrency`: whether any arrival may be capped.
  virtual int concurrency_cap() const { return 0; }
  virtual bool caps_concurrency() const { return false; }
  // Counters the workload keeps itself (name, value), for the summary.
  virtual std::vector<std::pair<std::string, double>> stats() const { return {}; }
};

// An open-loop workload: generates its requests in arrival order, one ahead.
class StreamWorkload : public Workload {
 public:
  bool peek(SimTime& arrival) override {
    if (!primed_) {
      has_ = generate(next_);
      primed_ = true;
    }
    if (has_) arrival = next_.arrival;
    return has_;
  }
  RequestSpec pop() override {
    primed_ = false;
    return std::move(next_);
  }
  bool finished() override {
    SimTime t;
    return !peek(t);
  }

 protected:
  // The next request in arrival order; false when there are no more.
  virtual bool generate(RequestSpec& out) = 0;

 private:
  RequestSpec next_;
  bool primed_ = false, has_ = false;
};

// An open-loop workload that may run in load stages (workload/stages.h): without stages it
// generates requests in arrival order from its own arrival process (next_arrival); with stages
// the stage plan times them and a stage starts only when the one before has drained.
class OpenLoopWorkload : public Workload {
 public:
  OpenLoopWorkload(const StagesConfig& stages, std::uint64_t seed);
  bool peek(SimTime& arrival) override;
  RequestSpec pop() override;
  bool finished() override;
  void on_request_end(const RequestRecord& r, SimTime now) override;
  int concurrency_cap() const override { return has_ ? stage_cap(next_.stage) : 0; }
  bool caps_concurrency() const override { return staged_ && staged_->any_concurrency_cap(); }

 protected:
  // Without stages: the next arrival time (seconds from the start); false when arrivals end.
  virtual bool next_arrival_s(double& t_s) = 0;
  // The request sent as number `index` (from 0) of `stage` (-1 without stages); its arrival is
  // set by the caller. False: no more requests (without stages).
  virtual bool make(RequestSpec& out, int stage, std::int64_t index) = 0;
  bool staged() const { return staged_.has_value(); }
  // A load stage's max_concurrency (0: none, or no stages).
  int stage_cap(int stage) const { return staged_ ? staged_->max_concurrency(stage) : 0; }
  double staged_rate_per_s() const { return staged_ ? staged_->nominal_rate_per_s() : 0; }

 private:
  bool fill();
  std::optional<StagedArrivals> staged_;
  bool stages_done_ = false;
  RequestSpec next_;
  bool primed_ = false, has_ = false;
  int stage_ = -1;
  std::int64_t index_ = 0;
};

// Constructed with the scenario seed (each workload derives its own named streams from it) and
// the fleet's pool names, in order (a request may name the pool that serves it).
using WorkloadRegistry = config::Registry<Workload, std::uint64_t, const std::vector<std::string>&>;
const WorkloadRegistry& workload_registry();

}  // namespace kvfleet::sim
