// A measured run's latencies (requests.jsonl) and their comparison with a simulated run's.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "sim/replay/run_detail.h"

namespace kvfleet::sim {

using namespace run_detail;

MeasuredLatencies read_measured(const std::string& path) { return read_measured(path, {}); }

std::string ScoreWindow::text() const {
  return "requests " + std::to_string(from) + " to " +
         (to < 0 ? std::string("the end") : std::to_string(to - 1)) + " in arrival order";
}

ScoreWindow parse_score_window(const std::string& text, const std::string& option) {
  const auto colon = text.find(':');
  auto number = [&](const std::string& t, std::int64_t empty) -> std::int64_t {
    if (t.empty()) return empty;
    if (t.find_first_not_of("0123456789") != std::string::npos || t.size() > 12)
      throw InputError(option, "",
                       "'" + text +
                           "' is not FROM:TO (request numbers in arrival order, from 0; "
                           "either may be left out)");
    return std::stoll(t);
  };
  if (colon == std::string::npos)
    throw InputError(option, "", "'" + text + "' is not FROM:TO (e.g. 150: or 0:150)");
  ScoreWindow w;
  w.from = number(text.substr(0, colon), 0);
  w.to = number(text.substr(colon + 1), -1);
  if (w.to >= 0 && w.to <= w.from)
    throw InputError(option, "", "'" + text + "' holds no request (TO must exceed FROM)");
  return w;
}

RunResult window_of(const RunResult& r, const ScoreWindow& w) {
  // Everything but the requests as it is (the summary reads the pools and replicas); the
  // requests of the window, counted by first attempts in arrival order (a measured row is one
  // request, whatever the client retried), with their retries; each attempt's origin renumbered
  // (itself where the origin is out).
  RunResult out = r;
  out.requests.clear();
  std::unordered_map<std::uint64_t, std::size_t> index_of;  // a first attempt's id -> index
  for (std::size_t i = 0; i < r.requests.size(); ++i)
    if (r.requests[i].attempt == 0) index_of[r.requests[i].id] = i;
  const auto first_of = [&](std::size_t i) {
    if (r.requests[i].attempt == 0) return i;
    const auto it = index_of.find(r.requests[i].origin);
    return it != index_of.end() ? it->second : i;
  };
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < r.requests.size(); ++i)
    if (first_of(i) == i) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return r.requests[a].arrival < r.requests[b].arrival;
  });
  const auto n = static_cast<std::int64_t>(order.size());
  const std::int64_t to = w.to < 0 ? n : std::min(w.to, n);
  std::vector<char> in(r.requests.size(), 0);
  for (std::int64_t i = w.from; i < to; ++i) in[order[static_cast<std::size_t>(i)]] = 1;
  std::vector<std::int64_t> renumber(r.requests.size(), -1);
  for (std::size_t i = 0; i < r.requests.size(); ++i) {
    if (!in[first_of(i)]) continue;
    renumber[i] = static_cast<std::int64_t>(out.requests.size());
    out.requests.push_back(r.requests[i]);
  }
  for (std::size_t i = 0; i < r.requests.size(); ++i) {
    if (renumber[i] < 0) continue;
    const std::int64_t first = renumber[first_of(i)];
    auto& q = out.requests[static_cast<std::size_t>(renumber[i])];
    q.origin = static_cast<decltype(q.origin)>(first >= 0 ? first : renumber[i]);
  }
  return out;
}

MeasuredLatencies read_measured(const std::string& path, const ScoreWindow& w) {
  std::ifstream in = open_input_file(path, "requests.jsonl");
  MeasuredLatencies m;
  // Every row's queue time and latencies, to be put in arrival order when a window is scored.
  struct Row {
    double queued;
    double ttft, e2e, tpot;  // tpot NaN: one token
    bool aborted;
  };
  std::vector<Row> rows;
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
      // Its place in arrival order: its queue time, as the replay's trace takes it.
      const double q = row.need_number("queued_ts", -1e10, 1e10);
      rows.push_back({q, NAN, NAN, NAN, true});
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
    rows.push_back(
        {q, f - q, l - q, out > 1 ? (l - f) / static_cast<double>(out - 1) : NAN, false});
  }
  if (!w.all())
    std::stable_sort(rows.begin(), rows.end(),
                     [](const Row& a, const Row& b) { return a.queued < b.queued; });
  const auto count = static_cast<std::int64_t>(rows.size());
  const std::int64_t to = w.to < 0 ? count : std::min(w.to, count);
  for (std::int64_t i = w.from; i < to; ++i) {
    const Row& r = rows[static_cast<std::size_t>(i)];
    if (r.aborted) {
      ++m.aborted;
      continue;
    }
    m.ttft.push_back(r.ttft);
    m.e2e.push_back(r.e2e);
    if (std::isfinite(r.tpot)) m.tpot.push_back(r.tpot);
  }
  if (!w.all() && m.ttft.empty())
    throw InputError(
        path, "",
        "holds no measured request in " + w.text() + " (it has " + std::to_string(n) + " rows)");
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
