// kvfleet replay of a `vllm bench serve` result (JSON): its requests, rate and measured
// latencies as a scenario and a comparison.
#include "sim/replay/bench_detail.h"

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
#include "sim/replay/bench_files.h"
#include "sim/replay/replay.h"
#include "sim/simulation/scenario.h"

namespace kvfleet::sim::bench_detail {

using json = nlohmann::json;

namespace {

// The array `key` of finite numbers from 0 to 1e9 (empty when absent), of `n` entries unless n is
// 0.
std::vector<double> number_array(const JsonObject& r, const char* key, std::size_t n) {
  std::vector<double> v;
  const json* a = r.find(key);
  if (a == nullptr) return v;
  if (!a->is_array()) r.fail(key, "must be an array");
  if (n && a->size() != n)
    r.fail(key, "has " + std::to_string(a->size()) + " entries, input_lens " + std::to_string(n));
  for (std::size_t i = 0; i < a->size(); ++i) {
    const json& x = (*a)[i];
    if (!x.is_number())
      r.fail(std::string(key) + "[" + std::to_string(i) + "]",
             "must be a number, not " + json_type_name(x));
    const double d = x.get<double>();
    if (!std::isfinite(d) || d < 0 || d > 1e9)
      r.fail(std::string(key) + "[" + std::to_string(i) + "]",
             "must be a finite number from 0 to 1e9");
    v.push_back(d);
  }
  return v;
}

double request_rate(const JsonObject& r) {
  const json* v = r.find("request_rate");
  if (v == nullptr || (v->is_string() && v->get<std::string>() == "inf")) return INFINITY;
  if (v->is_string() && v->get<std::string>() == "Infinity") return INFINITY;
  if (!v->is_number()) r.fail("request_rate", "must be a number or \"inf\"");
  const double rate = v->get<double>();
  // vllm bench sends at a positive rate or all at once; a rate below one request a year (or
  // NaN) would place arrivals beyond any clock.
  if (!(rate >= 3.2e-8) || rate > 1e9)
    r.fail("request_rate", "must be from 3.2e-8 (one a year) to 1e9 requests/s, or \"inf\"");
  return rate;
}

MeasuredStats stats_of(std::vector<double> v) {
  MeasuredStats s;
  if (v.empty()) return s;
  const LatencyStats l = latency_stats(std::move(v));
  s.mean = l.mean, s.p50 = l.p50, s.p90 = l.p90, s.p99 = l.p99;
  return s;
}

// The per-request arrays, checked: lengths, and what the latencies need.
struct PerRequest {
  std::vector<double> il, ol, tt, st, qt, lat;
  const json* itls = nullptr;
  const json* errors = nullptr;
};

PerRequest read_per_request(const JsonObject& r) {
  // The summary's counts are not used beside the requests' own data, but a file is checked
  // whole: a count written as text is a damaged file.
  (void)r.integer("completed", 0, 1ll << 40);
  (void)r.integer("num_prompts", 1, 1ll << 40);
  (void)r.number("duration", 0, 1e9);
  PerRequest d;
  d.il = number_array(r, "input_lens", 0);
  d.ol = number_array(r, "output_lens", d.il.size());
  for (std::size_t i = 0; i < d.il.size(); ++i) {
    if (d.il[i] < 1 || d.il[i] != std::floor(d.il[i]))
      r.fail("input_lens[" + std::to_string(i) + "]", "must be a whole number of tokens >= 1");
    if (d.ol[i] != std::floor(d.ol[i]))
      r.fail("output_lens[" + std::to_string(i) + "]", "must be a whole number of tokens");
  }
  const std::size_t n = d.il.size();
  d.tt = number_array(r, "ttfts", n);
  d.st = number_array(r, "start_times", n);
  d.qt = number_array(r, "queue_times", n);
  d.lat = number_array(r, "latencies", n);
  d.itls = r.find("itls");
  d.errors = r.find("errors");
  if (d.errors && (!d.errors->is_array() || d.errors->size() != n))
    r.fail("errors", "must be an array of " + std::to_string(n) + " strings, one per request");
  if (d.itls && (!d.itls->is_array() || d.itls->size() != n))
    r.fail("itls", "must be an array of " + std::to_string(n) + " arrays, one per request");
  for (std::size_t i = 0; d.itls && i < d.itls->size(); ++i) {
    const json& gaps = (*d.itls)[i];
    if (!gaps.is_array()) r.fail("itls[" + std::to_string(i) + "]", "must be an array");
    for (const auto& x : gaps)
      if (!x.is_number() || !std::isfinite(x.get<double>()) || x.get<double>() < 0)
        r.fail("itls[" + std::to_string(i) + "]", "must hold finite non-negative numbers");
  }
  return d;
}

// Which requests failed (an error that is not empty, or, in files without errors, no output and no
// latency), and the latencies of the others into `g`.
std::vector<bool> measure_requests(const JsonObject& r, const PerRequest& d, MeasuredGroup& g) {
  const std::size_t n = d.il.size();
  std::vector<double> ttft, tpot, e2e;
  std::vector<bool> failed(n, false);
  std::size_t n_failed = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (d.errors) {
      const json& e = (*d.errors)[i];
      if (!e.is_string() && !e.is_null())
        r.fail("errors[" + std::to_string(i) + "]", "must be a string, not " + json_type_name(e));
      failed[i] = e.is_string() && !e.get<std::string>().empty();
    }
    if (d.ol[i] < 1 && (d.lat.empty() || d.lat[i] == 0)) failed[i] = true;
    n_failed += failed[i];
    if (failed[i]) continue;
    double lat_i = d.lat.empty() ? NAN : d.lat[i];
    if (d.lat.empty() && d.itls && !d.tt.empty()) {
      const json& gaps = (*d.itls)[i];
      if (!gaps.is_array()) r.fail("itls[" + std::to_string(i) + "]", "must be an array");
      lat_i = d.tt[i];
      for (const auto& x : gaps) {
        if (!x.is_number()) r.fail("itls[" + std::to_string(i) + "]", "must hold numbers");
        lat_i += x.get<double>();
      }
    }
    if (!d.tt.empty()) ttft.push_back(d.tt[i]);
    if (std::isfinite(lat_i)) e2e.push_back(lat_i);
    if (!d.tt.empty() && std::isfinite(lat_i) && d.ol[i] > 1)
      tpot.push_back((lat_i - d.tt[i]) / (d.ol[i] - 1));
  }
  if (n_failed == n) r.fail("errors", "every request failed: nothing to compare");
  g.ttft = stats_of(ttft);
  g.tpot = stats_of(tpot);
  g.e2e = stats_of(e2e);
  g.requests = static_cast<std::int64_t>(n - n_failed);
  return failed;
}

// The requests as a trace: arrivals recorded, or drawn as vllm bench draws them (gamma gaps of
// mean 1/rate and shape burstiness, the first after one gap; all at once for an unlimited rate).
// Versions that record `failed` (late 2025 on) scale the offsets so that the last falls at
// num_prompts / rate. Failed requests are not replayed: a refused request put no load on the GPUs.
void trace_requests(const JsonObject& r, const PerRequest& d, const std::vector<bool>& failed,
                    double rate_in, double burst, BenchReplay& plan, YAML::Node& sc) {
  const std::size_t n = d.il.size();
  const bool recorded = !d.st.empty() && !d.qt.empty();
  std::vector<double> at(n, 0.0);
  if (recorded) {
    double t0 = INFINITY;
    for (std::size_t i = 0; i < n; ++i) t0 = std::min(t0, d.st[i] - d.qt[i]);
    for (std::size_t i = 0; i < n; ++i) at[i] = d.st[i] - d.qt[i] - t0;
  } else if (std::isfinite(rate_in) && rate_in > 0) {
    RngStream rng(1, "replay.vllm_bench.arrivals");
    double t = 0;
    for (double& a : at) a = t += rng.gamma(burst, 1.0 / (rate_in * burst));
    if (r.has("failed") && t > 0)
      for (double& a : at) a *= static_cast<double>(n) / rate_in / t;
  }
  // The trace's clock: a run of more than 116 days is no benchmark (and beyond the simulator's).
  for (std::size_t i = 0; i < n; ++i)
    if (!(at[i] <= 1e7))
      r.fail(recorded ? "start_times" : "request_rate",
             "places request " + std::to_string(i) + " " + fmt("%g", at[i]) +
                 " s after the first: a benchmark of more than 116 days is not replayed");
  std::size_t n_failed = 0;
  for (std::size_t i = 0; i < n; ++i) {
    n_failed += failed[i];
    if (!failed[i]) plan.trace.push_back({at[i], std::max(1.0, d.il[i]), std::max(1.0, d.ol[i])});
  }
  if (n_failed > 0)
    plan.notes.push_back(std::to_string(n_failed) +
                         " failed request(s) (errors) neither replayed nor compared");
  std::stable_sort(plan.trace.begin(), plan.trace.end(),
                   [](const auto& a, const auto& b) { return a[0] < b[0]; });
  YAML::Node wl;
  wl["impl"] = "trace";
  wl["format"] = "vidur";
  wl["path"] = "";  // written by the caller beside the scenario
  sc["workload"] = wl;
  plan.notes.push_back(std::string("workload: the ") + std::to_string(n) +
                       " requests' lengths (input_lens, output_lens), " +
                       (recorded ? "sent when they were (start_times − queue_times)"
                        : std::isfinite(rate_in)
                            ? "sent at " + fmt("%g", rate_in) +
                                  " requests/s with gamma gaps of shape " + fmt("%g", burst) +
                                  " (request_rate, burstiness)"
                            : "all sent at once (request_rate inf)"));
}

// Aggregates only: every request at the mean lengths, the summary's latencies measured.
void replay_aggregates(const JsonObject& r, double rate_in, double burst, BenchReplay& plan,
                       MeasuredGroup& g, YAML::Node& sc) {
  const double big = 1e7;
  const double n = static_cast<double>(r.need_integer("completed", 1, 1ll << 40));
  const double tin = r.need_number("total_input_tokens", 1, 1e15) / n;
  const double tout = r.need_number("total_output_tokens", 1, 1e15) / n;
  const std::int64_t prompts =
      r.integer("num_prompts", 1, 1ll << 40).value_or(static_cast<std::int64_t>(n));
  YAML::Node wl;
  wl["impl"] = "synthetic";
  wl["num_requests"] = prompts;
  wl["input_tokens"]["impl"] = "fixed";
  wl["input_tokens"]["value"] = std::max(1.0, std::round(tin));
  wl["output_tokens"]["impl"] = "fixed";
  wl["output_tokens"]["value"] = std::max(1.0, std::round(tout));
  if (std::isfinite(rate_in)) {
    wl["arrival"]["impl"] = burst == 1.0 ? "poisson" : "gamma";
    wl["arrival"]["rate_per_s"] = rate_in;
    if (burst != 1.0) wl["arrival"]["cv"] = 1.0 / std::sqrt(burst);
  } else {
    wl["arrival"]["impl"] = "constant";
    wl["arrival"]["rate_per_s"] = 1e6;
  }
  sc["workload"] = wl;
  plan.notes.push_back(
      "workload: no per-request data (--save-detailed): " + std::to_string(prompts) +
      " requests of the mean lengths " + fmt("%.0f", tin) + " in, " + fmt("%.0f", tout) + " out");
  auto ms = [&](const char* stat) {
    return r.number(std::string(stat), 0, big * 1e3).value_or(NAN) / 1e3;
  };
  g.ttft = {ms("mean_ttft_ms"), ms("median_ttft_ms"), ms("p90_ttft_ms"), ms("p99_ttft_ms")};
  g.tpot = {ms("mean_tpot_ms"), ms("median_tpot_ms"), ms("p90_tpot_ms"), ms("p99_tpot_ms")};
  g.e2e = {ms("mean_e2el_ms"), ms("median_e2el_ms"), ms("p90_e2el_ms"), ms("p99_e2el_ms")};
  g.requests = static_cast<std::int64_t>(n);
}

}  // namespace

BenchReplay plan_vllm_bench(const BenchOptions& o, const LocatedResult& where) {
  BenchReplay plan;
  plan.format = "vllm bench serve";
  plan.source = o.path;
  plan.latency =
      !o.tool_version.empty()
          ? latency_definition_for("vllm bench serve", o.tool_version)
          : latency_definition_id("vllm-bench",
                                  "assumed: the result records no client version; vllm bench "
                                  "0.7 on (--tool-version 0.6 for older)");
  int appended = 1;
  const json j = read_result_json(o.path, std::size_t{1} << 30, &appended);
  if (appended > 1)
    plan.notes.push_back(o.path + " holds " + std::to_string(appended) +
                         " appended results (--append-result): the last is replayed");
  const JsonObject r(j, o.path);
  // The endpoint: newer results record endpoint_type, older ones backend.
  const char* ep_key = r.has("endpoint_type") ? "endpoint_type" : "backend";
  const std::string endpoint = r.has(ep_key) ? r.string(ep_key).value_or("") : "";
  plan.latency.chat = endpoint.find("chat") != std::string::npos;
  plan.settings.push_back(
      {"client endpoint", endpoint.empty() ? "completions" : endpoint,
       endpoint.empty() ? "assumed: the result records no endpoint_type" : o.path + ": " + ep_key});
  YAML::Node sc = base_scenario(o, "replay-" + fs::path(o.path).stem().string(), plan);
  std::string model = r.string("model_id").value_or("");
  server_settings(o, where, model, "", "", sc, plan);
  // Per-request data (--save-detailed): the lengths in dispatch order, and the arrivals where the
  // newest versions record them (start_times − queue_times).
  MeasuredGroup g;
  g.name = "all requests";
  const double rate_in = request_rate(r);
  const double burst = r.number("burstiness", 1e-6, 1e6).value_or(1.0);
  if (r.find("input_lens") && r.find("output_lens")) {
    const PerRequest d = read_per_request(r);
    const std::vector<bool> failed = measure_requests(r, d, g);
    trace_requests(r, d, failed, rate_in, burst, plan, sc);
  } else {
    replay_aggregates(r, rate_in, burst, plan, g, sc);
  }
  if (const auto mc = r.find("max_concurrency"); mc != nullptr && !mc->is_null()) {
    const std::int64_t cap = r.need_integer("max_concurrency", 1, 100'000'000);
    sc["client"]["max_concurrency"] = cap;
    plan.settings.push_back({"client.max_concurrency", std::to_string(cap),
                             o.path + " max_concurrency (--max-concurrency: a request waits for "
                                      "a free slot, its latencies start when it is sent)"});
  } else {
    plan.settings.push_back({"client.max_concurrency", "none",
                             o.path + " max_concurrency is " +
                                 (mc ? std::string("null") : std::string("absent")) +
                                 " (no --max-concurrency)"});
  }
  // vllm bench's client: aiohttp with a total timeout of 6 hours.
  sc["client"]["timeout_s"] = 6 * 3600;
  plan.settings.push_back(
      {"client.timeout_s", "21600", "vllm bench's aiohttp timeout (6 hours, AIOHTTP_TIMEOUT)"});
  plan.groups.push_back(g);
  plan.scenario = sc;
  return plan;
}

}  // namespace kvfleet::sim::bench_detail
