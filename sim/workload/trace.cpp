#include "sim/workload/trace.h"

#include "sim/io/csv.h"
#include "sim/io/input_file.h"
#include "sim/io/json.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

#include "sim/core/error.h"

namespace kvfleet::sim {

const std::vector<std::string_view> kTraceFormats = {"azure", "vidur", "vllm_jsonl", "mooncake"};

namespace {

std::string row_where(const std::string& path, std::size_t line) {
  return path + ": row " + std::to_string(line);
}

std::ifstream open_or_throw(const std::string& path) { return open_input_file(path, "trace"); }

// A request has at least one prompt token (vLLM refuses an empty prompt); a recorded output of 0
// tokens is replayed as one (vLLM's max_tokens is at least 1: the prefill emits a token). At most
// kMaxTraceTokens of either.
constexpr double kMaxTraceTokens = 100'000'000;
void check_tokens(double v, const std::string& where, const std::string& col,
                  const std::string& text, bool prompt) {
  if (v < 0) throw InputError(where, col, "token count " + text + " is negative");
  if (prompt && v < 1)
    throw InputError(where, col,
                     "a prompt of 0 tokens: a request needs at least one (vLLM refuses an empty "
                     "prompt)");
  if (v > kMaxTraceTokens)
    throw InputError(where, col, "token count " + text + " is above the limit of 100,000,000");
}

// Timestamps in seconds since the epoch (or since the trace's start) that a double resolves to the
// microsecond: up to 1e10 s (the year 2286). Larger values, such as 1e308 or the year 9999 in
// seconds, would squeeze the trace's gaps into rounding error.
constexpr double kMaxTimestampS = 1e10;
double check_timestamp(double t_s, const std::string& where, const std::string& col) {
  if (!(std::fabs(t_s) <= kMaxTimestampS)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", t_s);
    throw InputError(where, col,
                     std::string("timestamp ") + buf +
                         " s is outside +-1e10 s (up to the year 2286), where a double no longer "
                         "resolves microseconds");
  }
  return t_s;
}

std::int32_t parse_tokens(const std::string& s, const std::string& where, const std::string& col,
                          bool prompt) {
  std::int64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) {
    double d = 0;
    auto r2 = std::from_chars(s.data(), s.data() + s.size(), d);
    if (r2.ec != std::errc() || r2.ptr != s.data() + s.size() || d != std::floor(d))
      throw InputError(where, col, "not a whole number of tokens: '" + s + "'");
    check_tokens(d, where, col, s, prompt);  // in range before it is converted
    v = static_cast<std::int64_t>(d);
  }
  check_tokens(static_cast<double>(v), where, col, s, prompt);
  return static_cast<std::int32_t>(v);
}

double parse_seconds(const std::string& s, const std::string& where, const std::string& col) {
  double d = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), d);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || !std::isfinite(d))
    throw InputError(where, col, "not a number: '" + s + "'");
  return d;
}

// "2023-11-16 18:17:03.9799600" -> seconds since the epoch (UTC, proleptic Gregorian).
double parse_datetime(const std::string& s, const std::string& where, const std::string& col) {
  int Y, M, D, h, m;
  double sec;
  char tail = 0;
  if (std::sscanf(s.c_str(), "%d-%d-%d %d:%d:%lf%c", &Y, &M, &D, &h, &m, &sec, &tail) != 6 ||
      Y < 1 || Y > 9999 || M < 1 || M > 12 || h < 0 || h > 23 || m < 0 || m > 59 ||
      !(sec >= 0 && sec < 60))
    throw InputError(where, col, "not a timestamp 'YYYY-MM-DD hh:mm:ss.frac': '" + s + "'");
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (Y % 4 == 0 && Y % 100 != 0) || Y % 400 == 0;
  if (D < 1 || D > kDays[M - 1] + (M == 2 && leap))
    throw InputError(where, col, "'" + s + "': no such day");
  // Days from civil (Howard Hinnant's algorithm).
  Y -= M <= 2;
  const int era = (Y >= 0 ? Y : Y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(Y - era * 400);
  const unsigned doy = (153 * (M + (M > 2 ? -3 : 9)) + 2) / 5 + D - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const double days = era * 146097.0 + doe - 719468.0;
  return days * 86400.0 + h * 3600.0 + m * 60.0 + sec;
}

std::vector<TraceRow> read_csv(const std::string& path, const std::string& format,
                               bool need_arrivals) {
  auto in = open_or_throw(path);
  std::string line;
  if (!read_line(in, line, path, 1)) throw InputError(path, "", "empty trace file (no header row)");
  const auto header = split_csv(line, path + ": row 1");
  auto col = [&](std::string_view name) -> long {
    auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? -1 : it - header.begin();
  };
  std::string c_time, c_in, c_out;
  if (format == "azure") {
    c_time = "TIMESTAMP", c_in = "ContextTokens", c_out = "GeneratedTokens";
  } else {
    c_time = "arrived_at", c_in = "num_prefill_tokens", c_out = "num_decode_tokens";
  }
  const long i_time = col(c_time), i_in = col(c_in), i_out = col(c_out);
  for (auto [i, name] : {std::pair{i_in, c_in}, std::pair{i_out, c_out}})
    if (i < 0) throw InputError(path + ": row 1", name, "column missing from the header");
  if (need_arrivals && i_time < 0)
    throw InputError(path + ": row 1", c_time, "column missing from the header");

  std::vector<TraceRow> rows;
  std::size_t lineno = 1;
  double t0 = 0;
  while (read_line(in, line, path, lineno + 1)) {
    ++lineno;
    if (line.empty() || line == "\r") continue;
    const std::string w = row_where(path, lineno);
    const auto f = split_csv(line, w);
    const long need = std::max({i_time, i_in, i_out});
    if (static_cast<long>(f.size()) <= need)
      throw InputError(w, "",
                       "expected " + std::to_string(header.size()) + " columns, found " +
                           std::to_string(f.size()));
    TraceRow r;
    r.input_tokens = parse_tokens(f[i_in], w, c_in, true);
    r.output_tokens = parse_tokens(f[i_out], w, c_out, false);
    if (i_time >= 0) {
      double t = check_timestamp(format == "azure" ? parse_datetime(f[i_time], w, c_time)
                                                   : parse_seconds(f[i_time], w, c_time),
                                 w, c_time);
      if (rows.empty()) t0 = t;
      r.arrival_s = t - t0;
      if (!rows.empty() && r.arrival_s < rows.back().arrival_s)
        throw InputError(w, c_time, "arrival time goes backwards");
    }
    rows.push_back(std::move(r));
  }
  if (rows.empty()) throw InputError(path, "", "trace has a header but no rows");
  return rows;
}

std::vector<TraceRow> read_jsonl(const std::string& path, const std::string& format,
                                 bool need_arrivals) {
  auto in = open_or_throw(path);
  const bool vllm = format == "vllm_jsonl";
  const std::string c_time = vllm ? "arrival_time" : "timestamp";
  const std::string c_in = vllm ? "input_toks" : "input_length";
  const std::string c_out = vllm ? "output_toks" : "output_length";
  const double time_unit = vllm ? 1.0 : 1e-3;  // mooncake timestamps are milliseconds
  std::vector<TraceRow> raw;
  std::vector<double> t;
  std::string line;
  std::size_t lineno = 0;
  while (read_line(in, line, path, lineno + 1)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string w = row_where(path, lineno);
    // Strict (sim/io/json.h): syntax, nesting depth and duplicate keys checked while parsing.
    const nlohmann::json j = parse_json(line, w);
    if (!j.is_object()) throw InputError(w, "", "expected a JSON object");
    auto get_int = [&](const std::string& k, bool prompt) -> std::int32_t {
      if (!j.contains(k)) throw InputError(w, k, "missing");
      const auto& v = j[k];
      if (!v.is_number_integer() &&
          !(v.is_number() && v.get<double>() == std::floor(v.get<double>())))
        throw InputError(w, k, "expected a whole number of tokens, got " + v.dump());
      const double d = v.get<double>();
      check_tokens(d, w, k, v.dump(), prompt);
      return static_cast<std::int32_t>(d);
    };
    TraceRow r;
    r.input_tokens = get_int(c_in, true);
    r.output_tokens = get_int(c_out, false);
    double ts = 0;
    // vLLM measures latencies from the engine's queued_ts; replay arrivals at that instant when
    // the file has it (the client-side arrival_time differs by HTTP and tokenisation delays).
    if (vllm && j.contains("queued_ts") && j["queued_ts"].is_number()) {
      ts = check_timestamp(j["queued_ts"].get<double>(), w, "queued_ts");
    } else if (j.contains(c_time)) {
      if (!j[c_time].is_number())
        throw InputError(w, c_time, "expected a number, got " + j[c_time].dump());
      ts = check_timestamp(j[c_time].get<double>() * time_unit, w, c_time);
    } else if (need_arrivals) {
      throw InputError(w, c_time, "missing");
    }
    if (!vllm && j.contains("hash_ids")) {
      if (!j["hash_ids"].is_array()) throw InputError(w, "hash_ids", "expected a list of ids");
      for (const auto& h : j["hash_ids"]) {
        if (!h.is_number_integer() || h.get<std::int64_t>() < 0 ||
            h.get<std::uint64_t>() > UINT32_MAX)
          throw InputError(w, "hash_ids",
                           "expected integer ids from 0 to 4294967295, got " + h.dump());
        r.hash_ids.push_back(static_cast<std::uint32_t>(h.get<std::uint64_t>()));
      }
    }
    raw.push_back(std::move(r));
    t.push_back(ts);
  }
  if (raw.empty()) throw InputError(path, "", "trace has no rows");
  // vLLM benchmark files are written in completion order; sort by arrival, stable.
  std::vector<std::size_t> order(raw.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return t[a] < t[b]; });
  std::vector<TraceRow> rows;
  rows.reserve(raw.size());
  const double t0 = t[order.front()];
  for (auto i : order) {
    raw[i].arrival_s = t[i] - t0;
    rows.push_back(std::move(raw[i]));
  }
  return rows;
}

}  // namespace

std::vector<TraceRow> read_trace(const std::string& format, const std::string& path,
                                 bool need_arrivals) {
  if (format == "azure" || format == "vidur") return read_csv(path, format, need_arrivals);
  if (format == "vllm_jsonl" || format == "mooncake")
    return read_jsonl(path, format, need_arrivals);
  throw InputError(path, "format", "unknown trace format '" + format + "'");
}

}  // namespace kvfleet::sim
