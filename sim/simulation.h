#pragma once
// Runs one scenario: the arrival source feeds the router, the router picks replicas, replicas
// step through their batches, and a sampler records each replica's state at fixed intervals.
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "sim/core/event_queue.h"
#include "sim/engine/replica.h"
#include "sim/fleet/router.h"
#include "sim/metrics/request_log.h"
#include "sim/scenario.h"
#include "sim/workload/workload.h"

namespace kvfleet::sim {

// One replica's state sampled every simulation.timeseries_interval_s. Counters are cumulative.
struct TimeSeries {
  std::string replica;
  std::vector<double> t_s;
  std::vector<std::int32_t> num_requests_running;
  std::vector<std::int32_t> num_requests_waiting;
  std::vector<double> kv_cache_usage;             // fraction of blocks in use
  std::vector<std::int64_t> kv_tokens_held;       // token states held by requests
  std::vector<std::int64_t> kv_tokens_allocated;  // KV memory given to requests, in tokens
  std::vector<std::int64_t> num_preemptions;
  std::vector<std::int64_t> prompt_tokens;
  std::vector<std::int64_t> generation_tokens;
};

struct ReplicaResult {
  std::string name;
  std::string pool;
  EngineStats stats;
  MemoryBudget memory;
  // Prefix-cache lookups by tenant: (tenant, queried tokens, hit tokens), by tenant id.
  std::vector<std::tuple<std::uint32_t, std::int64_t, std::int64_t>> tenant_prefix;
  struct Tier {
    std::string name;
    std::int64_t blocks = 0;  // held at the end
    double bytes_written = 0, bytes_read = 0;
    std::int64_t evictions = 0;
  };
  std::vector<Tier> tiers;
};

struct RunResult {
  RequestLog requests;
  std::vector<TimeSeries> timeseries;
  std::vector<ReplicaResult> replicas;
  SimTime end_time = 0;                                        // when the last event ran
  std::uint64_t events = 0;                                    // events processed
  bool stopped_early = false;                                  // simulation.max_time_s cut the run
  std::vector<std::pair<std::string, double>> workload_stats;  // e.g. sessions gone idle
};

class Simulation final : public EventHandler, public RequestObserver {
 public:
  explicit Simulation(const Scenario& scenario);
  ~Simulation() override;
  RunResult run();

  void on_event(std::uint32_t kind, std::uint64_t arg, SimTime now) override;
  void on_request_end(std::uint32_t request, SimTime now) override;

 private:
  enum Kind : std::uint32_t { kArrival = 0, kSample = 1, kCancel = 2, kScrape = 3 };
  void scrape(std::size_t pool);  // refreshes the load signals routers see
  void deliver(RequestSpec& spec, SimTime now);
  // Makes sure an arrival event stands at the workload's earliest known arrival.
  void arm_arrival();
  void sample(SimTime now);
  bool active() const;

  const Scenario& scenario_;
  EventQueue queue_;
  RequestLog log_;
  std::unique_ptr<Workload> workload_;
  std::vector<std::unique_ptr<Router>> routers_;      // one per pool
  std::vector<std::vector<Replica*>> pool_replicas_;  // replicas of each pool
  std::vector<std::vector<ReplicaLoad>> signals_;     // per pool: last scraped load signals
  SimTime scrape_interval_ = 0;                       // 0: signals always current
  std::vector<std::unique_ptr<Replica>> replicas_;
  std::vector<Replica*> replica_ptrs_;
  std::vector<std::string> replica_pool_;
  std::vector<TimeSeries> series_;
  std::int64_t released_blocks_ = 0;      // KV blocks dropped for idle sessions
  SimTime armed_at_ = kTimeNever;         // time of the live arrival event, if any
  std::uint64_t arrival_generation_ = 0;  // events of older generations are stale
  SimTime sample_interval_;
};

}  // namespace kvfleet::sim
