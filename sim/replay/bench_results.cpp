#include "sim/replay/bench_results.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>

#include "sim/config/params.h"
#include "sim/core/error.h"
#include "sim/core/rng.h"
#include "sim/io/input_file.h"
#include "sim/io/json.h"
#include "sim/model/presets.h"
#include "sim/replay/bench_detail.h"
#include "sim/replay/replay.h"
#include "sim/simulation/scenario.h"

namespace kvfleet::sim {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace bench_detail;

bool MeasuredStats::any() const {
  return std::isfinite(mean) || std::isfinite(p50) || std::isfinite(p90) || std::isfinite(p99);
}

namespace {

// Mean and percentiles of values weighted as GuideLLM weights them: the mean Σ(v·w)/Σw, a
// percentile the first value (in order) whose cumulative weight reaches it.
LatencyStats weighted_stats(std::vector<std::pair<double, double>> vw) {
  LatencyStats s;
  s.count = static_cast<std::int64_t>(vw.size());
  double sw = 0, svw = 0;
  for (const auto& [v, w] : vw) sw += w, svw += v * w;
  if (vw.empty() || !(sw > 0)) {
    s.mean = s.p50 = s.p90 = s.p99 = s.max = NAN;
    return s;
  }
  std::sort(vw.begin(), vw.end());
  auto at = [&](double p) {
    double c = 0;
    for (const auto& [v, w] : vw)
      if ((c += w / sw) >= p - 1e-12) return v;
    return vw.back().first;
  };
  s.mean = svw / sw, s.p50 = at(0.5), s.p90 = at(0.9), s.p99 = at(0.99), s.max = vw.back().first;
  return s;
}

}  // namespace

std::string trace_row(const std::array<double, 3>& row) {
  char buf[128];  // three %.17g numbers take at most 3 x 24 characters
  std::snprintf(buf, sizeof buf, "%.17g,%.17g,%.17g\n", row[0], row[1], row[2]);
  return buf;
}

BenchReplay plan_bench_replay(const BenchOptions& opts) {
  const LocatedResult where = locate_result(opts.path);
  BenchOptions o = opts;
  o.path = where.path;
  if (o.benchmark >= 0 && where.kind != ResultKind::kGuideLlm)
    throw InputError("--benchmark", "",
                     "picks one benchmark of a GuideLLM report; " + where.path + " is a " +
                         result_kind_name(where.kind));
  try {
    BenchReplay plan;
    if (where.kind == ResultKind::kInferencePerf) {
      plan = plan_inference_perf(o, where);
    } else if (where.kind == ResultKind::kVllmBench) {
      plan = plan_vllm_bench(o, where);
    } else if (where.kind == ResultKind::kGuideLlm) {
      plan = plan_guidellm(o, where);
    } else {
      throw InputError(opts.path, "",
                       std::string("is a ") + result_kind_name(where.kind) +
                           ", not a benchmark client's result");
    }
    if (!where.note.empty()) plan.notes.insert(plan.notes.begin(), "result: " + where.note);
    return plan;
  } catch (const YAML::Exception& e) {
    throw InputError(o.path, "", std::string("a value has an unexpected form: ") + e.what());
  }
}

std::string bench_comparison(const BenchReplay& plan, const Scenario& sc, const RunResult& res,
                             double* mae) {
  // What the client saw end its stream this long after the last token (the frontend's finish).
  const SimTime closing = sc.config.pools.empty() ? 0 : sc.config.pools[0].frontend.finish_delay();
  std::ostringstream o;
  double sum = 0;
  int k = 0;
  for (const MeasuredGroup& g : plan.groups) {
    std::vector<double> ttft, tpot, e2e;
    std::vector<std::pair<double, double>> tpot_w;  // (TPOT, output tokens)
    for (const auto& q : res.requests) {
      if (q.outcome != Outcome::kOk || q.purpose != kPurposeTurn) continue;
      if (g.stage >= 0 && q.stage != g.stage) continue;
      ClientTimes t;
      t.first_chunk = to_seconds(q.first_token - q.arrival);
      t.end = to_seconds(q.finish - q.arrival);
      t.last_token = to_seconds(q.finish - closing - q.arrival);
      t.chunks = t.tokens = q.generated_tokens;
      ttft.push_back(t.first_chunk);
      e2e.push_back(client_e2e(plan.latency, t));
      if (plan.latency.tpot_weighted_by_tokens) {
        // GuideLLM takes a one-token request's TPOT too, weighted by its one token.
        const double v = client_tpot(plan.latency, t);
        if (std::isfinite(v)) tpot_w.emplace_back(v, static_cast<double>(q.generated_tokens));
      } else if (q.generated_tokens > 1) {
        const double v = client_tpot(plan.latency, t);
        if (std::isfinite(v)) tpot.push_back(v);
      }
    }
    const std::size_t simulated = ttft.size();
    const LatencyStats st = latency_stats(std::move(ttft)),
                       sp = plan.latency.tpot_weighted_by_tokens ? weighted_stats(std::move(tpot_w))
                                                                 : latency_stats(std::move(tpot)),
                       se = latency_stats(std::move(e2e));
    o << "\n"
      << g.name << ": " << g.requests << " requests measured, " << simulated << " simulated\n\n";
    o << "| metric | statistic | measured | simulated | error |\n|---|---|---|---|---|\n";
    struct Row {
      const char* name;
      double scale;
      const MeasuredStats& m;
      const LatencyStats& s;
    };
    for (const Row& r : {Row{"TTFT (s)", 1, g.ttft, st}, Row{"TPOT (ms)", 1e3, g.tpot, sp},
                         Row{"E2E (s)", 1, g.e2e, se}}) {
      const std::pair<const char*, std::pair<double, double>> stats[] = {
          {"mean", {r.m.mean, r.s.mean}},
          {"p50", {r.m.p50, r.s.p50}},
          {"p90", {r.m.p90, r.s.p90}},
          {"p99", {r.m.p99, r.s.p99}}};
      for (const auto& [name, v] : stats) {
        if (!std::isfinite(v.first)) continue;  // not measured
        const double err = (v.second - v.first) / v.first;
        char buf[160];
        if (!std::isfinite(err)) {
          std::snprintf(buf, sizeof buf, "| %s | %s | %.4g | n/a | n/a |\n", r.name, name,
                        v.first * r.scale);
        } else {
          std::snprintf(buf, sizeof buf, "| %s | %s | %.4g | %.4g | %+.1f%% |\n", r.name, name,
                        v.first * r.scale, v.second * r.scale, 100 * err);
          sum += std::fabs(err);
          ++k;
        }
        o << buf;
      }
    }
  }
  if (mae) *mae = k > 0 ? sum / k : NAN;
  return o.str();
}

}  // namespace kvfleet::sim
