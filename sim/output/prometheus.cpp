#include "sim/output/prometheus.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <stdexcept>

#include "sim/io/text_file.h"

namespace kvfleet::sim {

namespace {

// vLLM v1's histogram boundaries (vllm/v1/metrics/loggers.py).
const std::vector<double> kTtftBuckets = {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                          0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                          20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kItlBuckets = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                         0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
const std::vector<double> kE2eBuckets = {0.3,  0.5,   0.8,   1.0,   1.5,   2.0,    2.5,
                                         5.0,  10.0,  15.0,  20.0,  30.0,  40.0,   50.0,
                                         60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

std::string num(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}
std::string bound(double v) {  // bucket boundaries as written in vLLM (0.005, not 0.00500…01)
  char b[64];
  std::snprintf(b, sizeof b, "%.15g", v);
  return b;
}
std::string ts(double epoch_s, double t_s) {
  char b[64];
  std::snprintf(b, sizeof b, "%.3f", epoch_s + t_s);
  return b;
}
std::string escape(std::string s) {
  std::string o;
  for (char c : s) {
    if (c == '\\' || c == '"') o += '\\';
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    o += c;
  }
  return o;
}

// HELP text as OpenMetrics escapes it: backslash and line feed.
std::string help_text(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '\\')
      o += "\\\\";
    else if (c == '\n')
      o += "\\n";
    else
      o += c;
  }
  return o;
}

// One finished request's latencies, by replica, in finishing order.
struct Done {
  double finish_s, ttft_s, tpot_s, e2e_s;
  std::int64_t gaps;
};

// Each replica's completed requests in order of finish.
std::vector<std::vector<Done>> finished_by_replica(const RunResult& r) {
  std::vector<std::vector<Done>> done(r.replicas.size());
  for (const auto& q : r.requests) {
    if (q.outcome != Outcome::kOk || q.replica < 0 ||
        static_cast<std::size_t>(q.replica) >= done.size()) {
      continue;
    }
    done[q.replica].push_back({to_seconds(q.finish), q.ttft_s(), q.tpot_s(), q.e2e_s(),
                               std::max<std::int64_t>(0, q.generated_tokens - 1)});
  }
  for (auto& d : done)
    std::sort(d.begin(), d.end(),
              [](const Done& a, const Done& b) { return a.finish_s < b.finish_s; });
  return done;
}

// One run's families, each series a replica's.
class OpenMetricsWriter {
 public:
  OpenMetricsWriter(std::ostream& o, const Scenario& sc, const RunResult& r, double epoch_s)
      : o_(o), r_(r), epoch_s_(epoch_s), done_(finished_by_replica(r)) {
    for (const auto& rep : r.replicas) {
      for (std::size_t p = 0; p < sc.config.pools.size(); ++p) {
        if (sc.config.pools[p].name != rep.pool) continue;
        model_of_[rep.name] = sc.pools[p].model.name;
        gpu_of_[rep.name] = sc.pools[p].gpu.name;
      }
    }
  }

  // A gauge or counter sampled at every time-series row; `dcgm` adds DCGM exporter's labels.
  template <class Value>
  void family(const char* name, const char* type, const char* help, Value value,
              bool dcgm = false) {
    o_ << "# TYPE " << name << " " << type << "\n# HELP " << name << " " << help << "\n";
    const std::string sample = std::string(name) + (std::string(type) == "counter" ? "_total" : "");
    for (std::size_t i = 0; i < r_.timeseries.size(); ++i) {
      const auto& t = r_.timeseries[i];
      const std::string l = dcgm ? dcgm_labels(i) : labels(i);
      for (std::size_t k = 0; k < t.t_s.size(); ++k) {
        o_ << sample << "{" << l << "} " << num(value(t, k)) << " " << ts(epoch_s_, t.t_s[k])
           << "\n";
      }
    }
  }

  // Every replica counter declared with a Total (EngineStats::declare, summary_totals()), as
  // kvfleet:<name>: its value at the end of the run, one sample per replica (counters add up
  // across replicas; the others are gauges). A new counter needs no line here.
  void declared_counters(SimTime end) {
    FieldList<EngineStats> fields;
    EngineStats::declare(fields);
    for (const auto& f : fields.fields) {
      if (f.decl.total == Total::kNone) continue;
      const bool counter = f.decl.total == Total::kSum;
      const std::string name = std::string("kvfleet:") + f.name;
      o_ << "# TYPE " << name << (counter ? " counter" : " gauge") << "\n# HELP " << name << " "
         << help_text(std::string(f.decl.desc) + " (" + f.decl.unit + ", kvfleet's /replicas)")
         << "\n";
      for (std::size_t i = 0; i < r_.replicas.size() && i < r_.timeseries.size(); ++i)
        o_ << name << (counter ? "_total" : "") << "{" << labels(i) << "} "
           << num(f.get(r_.replicas[i].stats)) << " " << ts(epoch_s_, to_seconds(end)) << "\n";
    }
  }

  // A histogram of the completed requests, cumulative at every time-series row; `observe` gives
  // a request's value and how many observations it counts for.
  template <class Observe>
  void histogram(const char* name, const char* help, const std::vector<double>& bounds,
                 Observe observe) {
    o_ << "# TYPE " << name << " histogram\n# HELP " << name << " " << help << "\n";
    for (std::size_t i = 0; i < r_.timeseries.size() && i < done_.size(); ++i) {
      const auto& t = r_.timeseries[i];
      std::vector<double> counts(bounds.size() + 1, 0.0);  // per bucket, last = +Inf only
      double sum = 0, count = 0;
      std::size_t next = 0;
      for (std::size_t k = 0; k < t.t_s.size(); ++k) {
        for (; next < done_[i].size() && done_[i][next].finish_s <= t.t_s[k]; ++next) {
          double v = 0, n = 0;
          observe(done_[i][next], &v, &n);
          if (n <= 0) continue;
          const std::size_t b = std::lower_bound(bounds.begin(), bounds.end(), v) - bounds.begin();
          counts[b] += n;
          sum += v * n;
          count += n;
        }
        double cum = 0;
        const std::string stamp = ts(epoch_s_, t.t_s[k]);
        for (std::size_t b = 0; b <= bounds.size(); ++b) {
          cum += counts[b];
          o_ << name << "_bucket{" << labels(i) << ",le=\""
             << (b < bounds.size() ? bound(bounds[b]) : "+Inf") << "\"} " << num(cum) << " "
             << stamp << "\n";
        }
        o_ << name << "_count{" << labels(i) << "} " << num(count) << " " << stamp << "\n";
        o_ << name << "_sum{" << labels(i) << "} " << num(sum) << " " << stamp << "\n";
      }
    }
  }

 private:
  std::string labels(std::size_t i) {
    const auto& name = r_.timeseries[i].replica;
    return "model_name=\"" + escape(model_of_[name]) + "\",engine=\"" + escape(name) + "\"";
  }
  // DCGM exporter's labels as well, for GPU dashboards: the replica stands for its host; its GPUs
  // share one series (they do the same work).
  std::string dcgm_labels(std::size_t i) {
    const auto& name = r_.timeseries[i].replica;
    return labels(i) + ",gpu=\"0\",Hostname=\"" + escape(name) + "\",modelName=\"" +
           escape(gpu_of_[name]) + "\"";
  }

  std::ostream& o_;
  const RunResult& r_;
  const double epoch_s_;
  std::map<std::string, std::string> model_of_, gpu_of_;  // replica -> model, GPU name
  const std::vector<std::vector<Done>> done_;
};

}  // namespace

void write_openmetrics(const std::string& path, const Scenario& sc, const RunResult& r,
                       double epoch_s) {
  write_text_atomically(path, [&](std::ostream& o) {
    OpenMetricsWriter w(o, sc, r, epoch_s);
    w.family("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.",
             [](const TimeSeries& t, std::size_t k) { return double(t.num_requests_running[k]); });
    w.family("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.",
             [](const TimeSeries& t, std::size_t k) { return double(t.num_requests_waiting[k]); });
    w.family("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.",
             [](const TimeSeries& t, std::size_t k) { return t.kv_cache_usage[k]; });
    w.family("vllm:num_preemptions", "counter", "Cumulative number of preemptions.",
             [](const TimeSeries& t, std::size_t k) { return double(t.num_preemptions[k]); });
    w.family("vllm:prompt_tokens", "counter", "Number of prefill tokens processed.",
             [](const TimeSeries& t, std::size_t k) { return double(t.prompt_tokens[k]); });
    w.family("vllm:generation_tokens", "counter", "Number of generation tokens processed.",
             [](const TimeSeries& t, std::size_t k) { return double(t.generation_tokens[k]); });
    // Utilisation under DCGM's profiling names (ratios over the scrape interval): achieved over
    // peak tensor FLOP/s, and over peak device-memory bandwidth.
    w.family(
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge",
        "Ratio of cycles the tensor (HMMA) pipe is active (simulated: achieved / peak FLOP/s).",
        [](const TimeSeries& t, std::size_t k) { return t.compute_utilization[k]; }, true);
    w.family(
        "DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
        "Ratio of cycles the device memory interface is active (simulated: achieved / peak "
        "bandwidth).",
        [](const TimeSeries& t, std::size_t k) { return t.memory_bandwidth_utilization[k]; }, true);
    w.histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
                kTtftBuckets, [](const Done& d, double* v, double* n) { *v = d.ttft_s, *n = 1; });
    w.histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
                kItlBuckets, [](const Done& d, double* v, double* n) {
                  *v = d.tpot_s;
                  *n = d.tpot_s >= 0 ? static_cast<double>(d.gaps) : 0;
                });
    w.histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
                kE2eBuckets, [](const Done& d, double* v, double* n) { *v = d.e2e_s, *n = 1; });
    w.declared_counters(r.end_time);
    o << "# EOF\n";
  });
}

}  // namespace kvfleet::sim
