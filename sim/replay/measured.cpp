// A measured run's latencies (requests.jsonl) and their comparison with a simulated run's.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

#include "sim/replay/run_detail.h"

namespace kvfleet::sim {

using namespace run_detail;

MeasuredLatencies read_measured(const std::string& path) {
  std::ifstream in = open_input_file(path, "requests.jsonl");
  MeasuredLatencies m;
  std::string line;
  long n = 0;
  while (read_line(in, line, path, static_cast<std::size_t>(n) + 1)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ": line " + std::to_string(n);
    const json j = parse_json(line, where);
    const JsonObject row(j, where);
    // A request aborted before its first (or last) token has no latency: counted, not compared
    // (the simulation serves it as the engine would have).
    if (row.has("queued_ts") && j.is_object() &&
        ((j.contains("first_token_ts") && j["first_token_ts"].is_null()) ||
         (j.contains("last_token_ts") && j["last_token_ts"].is_null()))) {
      ++m.aborted;
      continue;
    }
    // Monotonic seconds of the engine's clock: finite, within +-1e10 s, and in order.
    const double q = row.need_number("queued_ts", -1e10, 1e10);
    const double f = row.need_number("first_token_ts", -1e10, 1e10);
    const double l = row.need_number("last_token_ts", -1e10, 1e10);
    const std::int64_t out = row.need_integer("output_toks", 0, 100'000'000);
    if (f < q)
      throw InputError(where, "first_token_ts",
                       "is before queued_ts (" + config::format_double(f) + " < " +
                           config::format_double(q) + "): a first token before its request");
    if (l < f)
      throw InputError(where, "last_token_ts",
                       "is before first_token_ts (" + config::format_double(l) + " < " +
                           config::format_double(f) + ")");
    m.ttft.push_back(f - q);
    m.e2e.push_back(l - q);
    if (out > 1) m.tpot.push_back((l - f) / static_cast<double>(out - 1));
  }
  if (m.ttft.empty())
    throw InputError(path, "",
                     m.aborted > 0 ? "holds no measured request (every one of its " +
                                         std::to_string(m.aborted) + " has a null token time)"
                                   : std::string("holds no measured request"));
  return m;
}

std::string comparison_table(const MeasuredLatencies& m, const Summary& s, double* mae,
                             int* compared) {
  const auto fmt4 = [](double x) {
    char b[32];
    std::snprintf(b, sizeof b, "%.4g", x);
    return std::string(b);
  };
  std::ostringstream o;
  o << "| metric | statistic | measured | simulated | error |\n|---|---|---|---|---|\n";
  double sum = 0;
  int k = 0;
  struct Row {
    const char* name;
    double scale;
    LatencyStats real, sim;
  };
  for (const Row& r : {Row{"TTFT (s)", 1, latency_stats(m.ttft), s.ttft},
                       Row{"TPOT (ms)", 1e3, latency_stats(m.tpot), s.tpot},
                       Row{"E2E (s)", 1, latency_stats(m.e2e), s.e2e}}) {
    const std::pair<const char*, std::pair<double, double>> stats[] = {
        {"mean", {r.real.mean, r.sim.mean}},
        {"p50", {r.real.p50, r.sim.p50}},
        {"p90", {r.real.p90, r.sim.p90}},
        {"p99", {r.real.p99, r.sim.p99}}};
    for (const auto& [name, v] : stats) {
      const double err = (v.second - v.first) / v.first;
      char buf[160];
      if (!std::isfinite(err)) {  // no simulated (or measured) request to compare
        const std::string real = std::isfinite(v.first) ? fmt4(v.first * r.scale) : "n/a";
        const std::string sim = std::isfinite(v.second) ? fmt4(v.second * r.scale) : "n/a";
        o << "| " << r.name << " | " << name << " | " << real << " | " << sim << " | n/a |\n";
        continue;
      }
      std::snprintf(buf, sizeof buf, "| %s | %s | %.4g | %.4g | %+.1f%% |\n", r.name, name,
                    v.first * r.scale, v.second * r.scale, 100 * err);
      o << buf;
      sum += std::fabs(err);
      ++k;
    }
  }
  if (mae) *mae = k > 0 ? sum / k : std::numeric_limits<double>::quiet_NaN();
  if (compared) *compared = k;
  if (s.ok == 0) o << "\nNo simulated request completed: see the run's report for why.\n";
  return o.str();
}

}  // namespace kvfleet::sim
