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

std::string detect_bench_format(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    const IpFiles f = ip_files(path);
    if (!f.stages.empty() || !f.summary.empty()) return "inference-perf";
    return "";
  }
  if (fs::is_regular_file(path, ec) && fs::path(path).extension() == ".json") {
    // The keys may come after long values (a model id, a list of prompts): up to 64 MiB read.
    std::ifstream in(path);
    std::string head(std::min<std::uintmax_t>(fs::file_size(path, ec), 64u << 20), '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(in.gcount()));
    if (head.find("ttft_ms") != std::string::npos || head.find("\"ttfts\"") != std::string::npos ||
        head.find("request_throughput") != std::string::npos)
      return "vllm bench serve";
  }
  return "";
}

BenchReplay plan_bench_replay(const BenchOptions& o) {
  const std::string f = detect_bench_format(o.path);
  try {
    if (f == "inference-perf") return plan_inference_perf(o);
    if (f == "vllm bench serve") return plan_vllm_bench(o);
  } catch (const YAML::Exception& e) {
    throw InputError(o.path, "", std::string("a value has an unexpected form: ") + e.what());
  }
  throw InputError(o.path, "",
                   "is neither an inference-perf result folder nor a vllm bench serve result JSON");
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
    for (const auto& q : res.requests) {
      if (q.outcome != Outcome::kOk || q.purpose != kPurposeTurn) continue;
      if (g.stage >= 0 && q.stage != g.stage) continue;
      ttft.push_back(q.ttft_s());
      e2e.push_back(q.e2e_s());
      if (q.generated_tokens > 1) {
        const SimTime last = plan.tpot == TpotRule::kToLastToken ? q.finish - closing : q.finish;
        tpot.push_back(to_seconds(last - q.first_token) / (q.generated_tokens - 1));
      }
    }
    const std::size_t simulated = ttft.size();
    const LatencyStats st = latency_stats(std::move(ttft)), sp = latency_stats(std::move(tpot)),
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
