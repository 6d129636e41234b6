// The column declarations of the run's per-request, per-replica and time-series tables: one
// TableSpec each, which writes HDF5 and CSV and documents the columns (docs/outputs.md).
#include "sim/output/run_tables.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace kvfleet::sim {

namespace {

const double kNaN = std::nan("");
double sec(SimTime x) { return x >= 0 ? to_seconds(x) : kNaN; }
double pos(double x) { return x >= 0 ? x : kNaN; }

// A declaration's fields (FieldList) as columns of `q`, each read from the record `of(row)`;
// `after(name)` adds the table's own columns that follow the field `name`.
template <class Columns, class Rec, class Of, class After>
void declared_columns(Columns& q, const FieldList<Rec>& fields, Of of, After after) {
  for (const auto& f : fields.fields) {
    auto get = [g = f.get, of](const auto& row) { return g(of(row)); };
    if (f.integer)
      q.i(f.name.c_str(), f.decl.unit, f.decl.desc, get);
    else
      q.f(f.name.c_str(), f.decl.unit, f.decl.desc, get);
    after(f.name);
  }
}

// The request table's columns, by kind, over the request records.
struct RequestColumns {
  using R = RequestRecord;
  TableSpec<RunResult>& t;
  template <class F>
  static auto row(F f) {
    return [f](const RunResult& v, std::size_t k) { return f(v.requests[k]); };
  }
  template <class F>
  void i(const char* n, const char* u, const char* d, F f) {
    t.integer(n, u, d, row([f](const R& r) { return static_cast<std::int64_t>(f(r)); }));
  }
  template <class F>
  void f(const char* n, const char* u, const char* d, F g) {
    t.number(n, u, d, row([g](const R& r) { return static_cast<double>(g(r)); }));
  }
  // A categorical column: names from the run, each row's code (kNoCategory: none).
  template <class Names, class Code>
  void c(const char* n, const char* d, Names names, Code code) {
    t.category(n, "", d, names, row([code](const R& r) {
                 return static_cast<std::int32_t>(code(r) < 0 ? kNoCategory : code(r));
               }));
  }
};

// Which attempt it was, where it went, how it ended and when.
void request_identity_columns(RequestColumns& q) {
  using R = RequestRecord;
  q.i("id", "", "attempt id, in arrival order", [](const R& r) { return r.id; });
  q.c(
      "replica",
      "the replica that served or refused it, by name as in /replicas (none: refused before "
      "reaching one)",
      [](const RunResult& v) {
        std::vector<std::string> n;
        for (const auto& x : v.replicas) n.push_back(x.name);
        return n;
      },
      [](const R& r) { return r.replica; });
  q.t.text("outcome", "", "ok, rejected, timed_out, cancelled, failed or unfinished",
           RequestColumns::row([](const R& r) { return std::string(outcome_name(r.outcome)); }));
  q.t.text("reject_reason", "", "why it was refused (empty when not)",
           RequestColumns::row(
               [](const R& r) { return std::string(reject_reason_name(r.reject_reason)); }));
  q.f("arrival_s", "s", "when it reached the gateway", [](const R& r) { return sec(r.arrival); });
  q.f("first_scheduled_s", "s", "first step that computed any of its tokens (NaN: never)",
      [](const R& r) { return sec(r.first_scheduled); });
  q.f("first_token_s", "s", "when its first output token was emitted (NaN: never)",
      [](const R& r) { return sec(r.first_token); });
  q.f("finish_s", "s", "when it ended (completion, refusal or stop)",
      [](const R& r) { return sec(r.finish); });
}

// Its tenant, session, priority, purpose, load stage and turn (in /requests after
// recomputed_tokens).
void request_conversation_columns(RequestColumns& q) {
  using R = RequestRecord;
  q.i("tenant", "", "tenant id (content of different tenants never matches)",
      [](const R& r) { return r.tenant; });
  q.i("session", "", "conversation id (0: not a conversation)",
      [](const R& r) { return r.session; });
  q.i("priority", "", "priority class, lower is more urgent",
      [](const R& r) { return r.priority; });
  q.c(
      "purpose", "turn: a user's turn; summary: a summarisation request (summarize policy)",
      [](const RunResult&) {
        return std::vector<std::string>{"turn", "summary"};
      },
      [](const R& r) { return r.purpose; });
  q.i("stage", "", "load stage it was sent in, from 0 (workload.load.stages; -1: none)",
      [](const R& r) { return r.stage; });
  q.i("turn", "", "turn of its conversation, from 1 (0: not a conversation)",
      [](const R& r) { return r.turn; });
}

// Its tokens, its conversation and its treatment in the engine.
void request_token_columns(RequestColumns& q) {
  using R = RequestRecord;
  FieldList<R> counters;
  R::declare_counters(counters);
  declared_columns(
      q, counters, [](const R& r) -> const R& { return r; },
      [&](const std::string& f) {
        if (f == "recomputed_tokens") request_conversation_columns(q);
      });
}

// Its latencies, pool, retries and costs.
void request_latency_columns(RequestColumns& q) {
  using R = RequestRecord;
  q.f("queue_s", "s", "arrival to first scheduled (NaN: never scheduled)",
      [](const R& r) { return pos(r.queue_s()); });
  q.f("ttft_s", "s", "time to first token of a completed request (NaN otherwise)",
      [](const R& r) { return r.outcome == Outcome::kOk ? pos(r.ttft_s()) : kNaN; });
  q.f("tpot_s", "s", "time per output token after the first, completed requests (NaN otherwise)",
      [](const R& r) { return r.outcome == Outcome::kOk ? pos(r.tpot_s()) : kNaN; });
  q.f("e2e_s", "s", "arrival to completion, completed requests (NaN otherwise)",
      [](const R& r) { return r.outcome == Outcome::kOk ? pos(r.e2e_s()) : kNaN; });
  q.c(
      "pool", "the pool that served or refused it, by name",
      [](const RunResult& v) {
        std::vector<std::string> n;
        for (const auto& x : v.pools) n.push_back(x.name);
        return n;
      },
      [](const R& r) { return r.pool; });
  q.i("origin", "", "id of its first attempt (itself for a first attempt)",
      [](const R& r) { return r.origin; });
  q.i("attempt", "", "0 for a first attempt, then 1, 2, ...", [](const R& r) { return r.attempt; });
  q.i("retried", "", "1 when a later attempt followed this one",
      [](const R& r) { return r.retried; });
  q.f("gpu_s", "GPU-s", "its share of the GPU-seconds of the steps it took part in",
      [](const R& r) { return r.gpu_s; });
  q.f("frontend_s", "s",
      "time the serving frontend (API server) added to its E2E: HTTP and tokenisation before "
      "the engine saw it, streaming its last token and closing the stream",
      [](const R& r) { return r.frontend_s; });
}

}  // namespace

const TableSpec<RunResult>& requests_spec() {
  static const TableSpec<RunResult> spec = [] {
    TableSpec<RunResult> t("requests",
                           "one row per attempt of a request (retries are rows of their own)",
                           [](const RunResult& v) { return v.requests.size(); });
    RequestColumns q{t};
    request_identity_columns(q);
    request_token_columns(q);
    request_latency_columns(q);
    return t;
  }();
  return spec;
}

const TableSpec<TimeSeries>& timeseries_spec() {
  using T = TimeSeries;
  static const TableSpec<TimeSeries> spec = [] {
    TableSpec<TimeSeries> t(
        "timeseries/<replica>",
        "one replica's state every simulation.timeseries_interval_s (counters cumulative; an "
        "idle stretch of the whole fleet longer than 10,000 intervals keeps its first and last "
        "rows)",
        [](const T& ts) { return ts.t_s.size(); });
    auto col = [](auto T::*field) {
      return [field](const T& ts, std::size_t r) { return (ts.*field)[r]; };
    };
    t.number("t_s", "s", "simulated time of the sample", col(&T::t_s));
    t.integer("num_requests_running", "requests", "requests in the running batch (vLLM's name)",
              col(&T::num_requests_running));
    t.integer("num_requests_waiting", "requests", "requests in the engine's waiting queue",
              col(&T::num_requests_waiting));
    t.number("kv_cache_usage_perc", "fraction", "KV blocks in use (vLLM's kv_cache_usage_perc)",
             col(&T::kv_cache_usage));
    t.integer("kv_tokens_held", "tokens", "token states held by requests", col(&T::kv_tokens_held));
    t.integer("kv_tokens_allocated", "tokens", "KV memory given to requests, in tokens",
              col(&T::kv_tokens_allocated));
    t.integer("num_preemptions_total", "preemptions", "preemptions so far",
              col(&T::num_preemptions));
    t.integer("available", "", "1 while it takes requests (up, not draining)", col(&T::available));
    t.integer("prompt_tokens_total", "tokens", "prefill tokens computed so far",
              col(&T::prompt_tokens));
    t.integer("generation_tokens_total", "tokens", "tokens emitted so far",
              col(&T::generation_tokens));
    t.number("busy_fraction", "fraction", "share of the interval spent in steps",
             col(&T::busy_fraction));
    t.number("compute_utilization", "fraction", "achieved over peak FLOP/s per GPU in the interval",
             col(&T::compute_utilization));
    t.number("memory_bandwidth_utilization", "fraction",
             "achieved over peak device-memory bandwidth per GPU in the interval",
             col(&T::memory_bandwidth_utilization));
    t.number("kv_used_bytes", "bytes", "KV memory given to requests, per GPU",
             col(&T::kv_used_bytes));
    return t;
  }();
  return spec;
}

namespace {

// The replica table's columns, by kind, over the replicas' results.
struct ReplicaColumns {
  TableSpec<RunResult>& t;
  template <class F>
  void i(const char* n, const char* u, const char* d, F f) {
    t.integer(n, u, d, [f](const RunResult& r, std::size_t k) {
      return static_cast<std::int64_t>(f(r.replicas[k]));
    });
  }
  template <class F>
  void f(const char* n, const char* u, const char* d, F g) {
    t.number(n, u, d, [g](const RunResult& r, std::size_t k) {
      return static_cast<double>(g(r.replicas[k]));
    });
  }
};

// Its memory budget (in /replicas after busy_s).
void replica_memory_columns(ReplicaColumns& q) {
  using X = ReplicaResult;
  q.i("num_gpu_blocks", "blocks", "KV blocks (the same on every GPU of the replica)",
      [](const X& x) { return x.memory.num_blocks; });
  q.f("kv_pool_bytes", "bytes", "KV pool per GPU",
      [](const X& x) { return x.memory.kv_pool_bytes; });
  q.f("weights_bytes", "bytes", "weights per GPU",
      [](const X& x) { return x.memory.weights_bytes; });
  q.f("activation_peak_bytes", "bytes", "activation peak per GPU",
      [](const X& x) { return x.memory.activation_peak_bytes; });
  q.f("runtime_overhead_bytes", "bytes", "runtime overhead per GPU",
      [](const X& x) { return x.memory.runtime_overhead_bytes; });
}

// Its KV tiers' traffic (in /replicas after tier_hit_tokens).
void replica_tier_columns(ReplicaColumns& q) {
  using X = ReplicaResult;
  q.f("tier_bytes_written", "bytes", "bytes written to its KV tiers", [](const X& x) {
    double w = 0;
    for (const auto& tier : x.tiers) w += tier.bytes_written;
    return w;
  });
  q.f("tier_bytes_read", "bytes", "bytes read from its KV tiers", [](const X& x) {
    double rd = 0;
    for (const auto& tier : x.tiers) rd += tier.bytes_read;
    return rd;
  });
}

// Its counters (EngineStats::declare), with the memory budget and tier columns at their places.
void replica_stats_columns(ReplicaColumns& q) {
  using X = ReplicaResult;
  FieldList<EngineStats> stats;
  EngineStats::declare(stats);
  declared_columns(
      q, stats, [](const X& x) -> const EngineStats& { return x.stats; },
      [&](const std::string& f) {
        if (f == "busy_s") replica_memory_columns(q);
        if (f == "tier_hit_tokens") replica_tier_columns(q);
      });
}

}  // namespace

const TableSpec<RunResult>& replicas_spec() {
  static const TableSpec<RunResult> spec = [] {
    TableSpec<RunResult> t("replicas", "one row per replica: its memory budget and counters",
                           [](const RunResult& r) { return r.replicas.size(); });
    t.text("replica", "", "replica name: pool/index (the pool's name when it has one replica)",
           [](const RunResult& r, std::size_t k) { return r.replicas[k].name; });
    t.text("pool", "", "its pool",
           [](const RunResult& r, std::size_t k) { return r.replicas[k].pool; });
    ReplicaColumns q{t};
    replica_stats_columns(q);
    return t;
  }();
  return spec;
}

}  // namespace kvfleet::sim
