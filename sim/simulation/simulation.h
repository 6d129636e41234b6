#pragma once
// Runs one scenario: the arrival source feeds the router, the router picks replicas, replicas
// step through their batches, and a sampler records each replica's state at fixed intervals.
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "sim/core/cancel.h"
#include "sim/core/event_queue.h"
#include "sim/core/rng.h"
#include "sim/engine/replica.h"
#include "sim/fleet/client.h"
#include "sim/fleet/disaggregation.h"
#include "sim/fleet/gateway.h"
#include "sim/fleet/lifecycle.h"
#include "sim/fleet/router.h"
#include "sim/results/run_result.h"
#include "sim/simulation/scenario.h"
#include "sim/workload/workload.h"

namespace kvfleet::sim {

// The time series of a run holds at most this many rows (all replicas together): about 2 GB.
inline constexpr std::size_t kMaxTimeseriesRows = 20'000'000;
// An idle stretch of the whole fleet longer than this many sampling intervals keeps only its
// first and last rows in the time series (the rows between would repeat them).
inline constexpr std::size_t kIdleRowsWritten = 10'000;

// Simulation's own events.
// The setup of engine `r` of pool `p` (rank r % dp of replica r / dp) as the scenario declares it
// (replica_setup.cpp).
ReplicaSetup replica_setup(const Scenario& sc, std::size_t p, int r, const CostContext& ctx);

enum class SimulationEvent : std::uint32_t {
  kArrival,   // the workload's next arrival is due
  kSample,    // the time series' next row
  kScrape,    // routers' and gateways' signals refresh
  kWake,      // the next event is due: periodic events paused while idle resume
  kFrontend,  // a request leaves its replica's API server for the engine (arg: its id)
  kSlotFree,  // a request's reply reached the client: one of client.max_concurrency is free
  kCount
};

class Simulation final : public EventHandlerOf<SimulationEvent>,
                         public RequestObserver,
                         private LifecycleHost,
                         private ClientHost,
                         private DisaggregationHost {
 public:
  explicit Simulation(const Scenario& scenario);
  ~Simulation() override;
  RunResult run();
  // Called at every time-series sample with the simulated time and the attempts so far (the CLI
  // shows progress with it).
  using Progress = std::function<void(SimTime now, std::size_t requests)>;
  void on_progress(Progress p) { progress_ = std::move(p); }
  // When `token` is cancelled, the run stops at its next time-series sample and run() returns
  // what it has, with RunResult::cancelled set.
  void set_cancel(const CancelToken* token) { cancel_ = token; }
  // While nothing is queued, running or in transit, the periodic scrape and sample events pause
  // until the next event (on by default; results are the same either way, tests compare).
  void fast_forward_idle(bool on) { fast_forward_idle_ = on; }
  // Records up to `max_steps` engine steps per replica into RunResult::steps (for traces).
  void record_steps(std::size_t max_steps);
  // Records up to `max_steps` batches per replica into RunResult::batches (step-by-step checks).
  void record_batches(std::size_t max_steps);

  void on_request_end(RequestId request, SimTime now) override;
  void on_first_token(RequestId request, SimTime now) override;
  void on_handoff(RequestId request, SimTime now) override;

 private:
  using Kind = SimulationEvent;
  using enum SimulationEvent;
  void handle(SimulationEvent kind, std::uint64_t arg, SimTime now) override;
  const char* handler_name() const override { return "Simulation"; }
  // A request in its replica's API server (HTTP, tokenisation: FrontendConfig), not yet seen by
  // the engine.
  struct InFrontend {
    std::size_t node;   // its replica's (first rank's) engine
    std::size_t local;  // the same, within its pool
    RequestSpec spec;
    bool cancelled = false;  // the client left and its cancellation reached the API server
  };
  struct Pool {
    std::unique_ptr<Router> router;
    std::unique_ptr<PoolGateway> gateway;
    std::vector<std::size_t> nodes;  // global replica indices (every data-parallel rank)
    int data_parallel = 1;           // consecutive nodes form one replica's ranks
    std::vector<ReplicaLoad> signals;
    PoolResult result;
  };
  class Probe;

  void scrape(std::size_t pool);  // refreshes the load signals routers see
  std::span<const ReplicaLoad> signals(PoolId pool) override;
  // LifecycleHost.
  void stop_replica(NodeId node, SimTime now) override;
  bool replica_idle(NodeId node) const override;
  void membership_changed(PoolId pool) override;
  void replica_came_up(PoolId pool, SimTime now) override;
  double gateway_queued(PoolId pool) const override;
  // ClientHost.
  void request_done(const RequestRecord& seen, SimTime now) override;
  void cancel_at_replica(NodeId replica, RequestId id, SimTime now) override;
  void forget_at_gateway(PoolId pool) override;
  double retry_after_s(PoolId pool) const override;
  // DisaggregationHost.
  LocalId pick(PoolId pool, const RequestSpec& spec, std::span<const ReplicaLoad> loads) override;
  std::int64_t cached_blocks_if_up(PoolId pool, LocalId local,
                                   std::span<const std::uint64_t> hashes) const override;
  std::size_t pool_size(PoolId pool) const override;
  NodeId node_of(PoolId pool, LocalId local) const override;
  bool replica_up(NodeId node) const override;
  void release_handoff(NodeId node, RequestId request, SimTime now) override;
  void submit_decode(PoolId pool, NodeId node, RequestId request, RequestSpec&& spec,
                     SimTime now) override;
  void client_end(RequestId request, SimTime now) override;
  // A request (first attempt or retry) reaches the gateway.
  void deliver(RequestSpec& spec, SimTime now, std::uint64_t origin, std::int16_t attempt) override;
  void dispatch(std::uint32_t id, RequestSpec&& spec, std::size_t pool, SimTime now);
  // The engine rank of replica `local` of `pool` (its first rank's index) a request goes to.
  std::size_t pick_rank(std::size_t pool, std::size_t local) const;
  // The request's API server hands it to the engine of its replica (or, if the client left or
  // the replica went down meanwhile, it ends there).
  void leave_frontend(std::uint32_t id, SimTime now);
  void drain_gateway(std::size_t pool, SimTime now);
  double start_delay_s(std::size_t pool) const;
  // The constructor's parts: pool `p`'s router, gateway, engines and probe; the disaggregation
  // of prefill and decode.
  void build_pool(std::size_t p, std::uint64_t seed);
  void build_disaggregation();
  // Makes sure an arrival event stands at the workload's earliest known arrival.
  void arm_arrival();
  bool slot_free() const;  // below client.max_concurrency (or no cap)
  void sample(SimTime now);
  void promote_when_paid();
  // Moves the run's records, series and counters into `res` (at the end of run()).
  void collect(RunResult& res);
  bool active() const override;
  struct Paused {
    SimTime due = kTimeNever;  // when it was next due (kTimeNever: not paused)
    // Taken out of the queue (not paused by itself): its event, to go back unchanged when it is
    // still due at resumption; its first row (a sample) or first refresh (a scrape) is owed.
    std::optional<EventQueue::Event> cancelled;
  };
  // The scrape's and the sample's pending event (invalid while paused or delivered).
  EventId scrape_event_, sample_event_;
  EventId& periodic_event(Kind kind) { return kind == kScrape ? scrape_event_ : sample_event_; }
  // Nothing is queued, running or in transit anywhere: until the next event, no state changes.
  bool quiet() const;
  // Schedules the periodic event `kind` (kScrape or kSample) at `next`, or, while the fleet is
  // quiet, pauses it: idle time costs no events. resume_periodic() takes the paused ones up
  // again where they would have been: the skipped scrapes would have changed nothing, and the
  // skipped samples' rows are written then (catch_up_samples).
  void schedule_periodic(Kind kind, SimTime next);
  void resume_periodic(SimTime now);
  // Samples paused while quiet: writes the rows due before `until` (see kIdleRowsWritten).
  void catch_up_samples(Paused& p, SimTime until);
  // Throws InputError when `more_samples` samples more would pass kMaxTimeseriesRows.
  void check_timeseries_rows(std::size_t more_samples, SimTime at) const;

  const Scenario& scenario_;
  EventQueue queue_;
  RequestLog log_;
  std::unique_ptr<Workload> workload_;
  std::vector<Pool> pools_;
  std::vector<std::unique_ptr<Probe>> probes_;
  std::unique_ptr<Lifecycle> lifecycle_;  // failures, deploys, autoscaler: every replica's state
  SimTime scrape_interval_ = 0;           // 0: signals always current
  std::vector<std::vector<StepTrace>> steps_;
  std::vector<std::vector<BatchTrace>> batches_;
  std::vector<std::unique_ptr<LockstepGroup>> groups_;  // data-parallel MoE ranks
  std::vector<std::unique_ptr<Replica>> replicas_;
  absl::flat_hash_map<std::uint32_t, InFrontend> in_frontend_;  // by request id
  std::vector<std::int32_t> frontend_count_;                    // by node: requests in it
  std::vector<TimeSeries> series_;
  struct Cumulative {  // a replica's counters at the previous sample
    double t_s = 0, busy_s = 0, compute_s = 0, memory_s = 0;
  };
  std::vector<Cumulative> last_sample_;
  std::unique_ptr<Client> client_;                  // timeouts, cancellations, retries
  std::unique_ptr<Disaggregation> disaggregation_;  // prefill and decode pools, or null
  std::int64_t released_blocks_ = 0;                // KV blocks dropped for idle sessions
  SimTime armed_at_ = kTimeNever;                   // time of the live arrival event, if any
  bool capped_ = false;       // a client or load-stage cap on requests in flight applies
  std::int64_t sending_ = 0;  // user requests sent and not yet over (client.max_concurrency)
  EventId arrival_event_;     // the live arrival event, cancelled when an earlier one is armed
  SimTime sample_interval_;
  // Periodic events paused while the fleet is quiet: when each is next due (kTimeNever: running).
  Paused paused_scrape_, paused_sample_;
  bool fast_forward_idle_ = true;
  std::size_t timeseries_rows_ = 0;  // rows written so far, all replicas
  Progress progress_;
  const CancelToken* cancel_ = nullptr;
  // When run() started (wall clock), for moving the memory pool to huge pages (core/huge_pages.h).
  std::chrono::steady_clock::time_point started_;
  std::int32_t long_pool_ = -1;  // gateway: the pool for long prompts
};

}  // namespace kvfleet::sim
