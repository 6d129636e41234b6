#include "sim/replay/bench_files.h"

#include <regex>
#include <sstream>

#include "sim/core/error.h"
#include "sim/io/input_file.h"
#include "sim/io/json.h"

namespace kvfleet::sim {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::vector<IpReports> inference_perf_reports(const fs::path& dir) {
  std::map<std::string, IpReports> by_prefix;
  static const std::regex stage_re(R"(^(.*)stage_(\d{1,6})_lifecycle_metrics\.json$)");
  static const std::regex summary_re(R"(^(.*)summary_lifecycle_metrics\.json$)");
  static const std::regex per_request_re(R"(^(.*)per_request_lifecycle_metrics\.json$)");
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    std::error_code ec2;
    if (!it->is_regular_file(ec2)) continue;
    const std::string n = it->path().filename().string();
    std::smatch m;
    if (std::regex_match(n, m, stage_re)) {
      const std::string prefix = m[1].str();
      // Per-adapter and per-session stage reports are breakdowns of the same requests.
      if (prefix.find("adapter_") != std::string::npos || prefix.find("session") != std::string::npos)
        continue;
      by_prefix[prefix].stages[std::stoi(m[2].str())] = it->path();
    } else if (std::regex_match(n, m, summary_re)) {
      if (m[1].str().find("session") != std::string::npos) continue;
      by_prefix[m[1].str()].summary = it->path();
    } else if (std::regex_match(n, m, per_request_re)) {
      by_prefix[m[1].str()].per_request = it->path();
    }
  }
  std::vector<IpReports> out;
  for (auto& [prefix, r] : by_prefix) {
    r.prefix = prefix;
    if (!r.empty()) out.push_back(std::move(r));
  }
  return out;
}

json read_result_json(const std::string& path, std::size_t max_bytes, int* appended) {
  const std::string text = read_input_file(path, "benchmark result", max_bytes);
  JsonLimits lim;
  lim.python_nonfinite = true;
  if (appended) *appended = 1;
  try {
    return parse_json(text, path, lim);
  } catch (const InputError& whole) {
    // --append-result: one object per line. Every line must be one; the last is the result.
    std::istringstream in(text);
    std::vector<std::pair<std::size_t, std::string>> lines;
    std::string line;
    for (std::size_t n = 1; std::getline(in, line); ++n)
      if (line.find_first_not_of(" \t\r") != std::string::npos) lines.emplace_back(n, line);
    if (lines.size() < 2) throw;
    json last;
    for (const auto& [n, l] : lines) {
      last = parse_json(l, path + ": line " + std::to_string(n), lim);
      if (!last.is_object())
        throw InputError(path + ": line " + std::to_string(n), "",
                         "must be a JSON object (a file of appended results holds one per line)");
    }
    if (appended) *appended = static_cast<int>(lines.size());
    return last;
  }
}

BenchJsonKind bench_json_kind(const std::string& path) {
  json j;
  try {
    j = read_result_json(path, std::size_t{1} << 30);
  } catch (const InputError&) {
    return BenchJsonKind::kNone;
  }
  if (!j.is_object()) return BenchJsonKind::kNone;
  const bool vllm = j.contains("ttfts") || j.contains("mean_ttft_ms") ||
                    (j.contains("request_throughput") && j.contains("completed"));
  if (vllm) return BenchJsonKind::kVllmBench;
  if (j.contains("benchmarks") && j["benchmarks"].is_array()) return BenchJsonKind::kGuideLlm;
  return BenchJsonKind::kNone;
}

}  // namespace kvfleet::sim
