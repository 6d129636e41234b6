#include "sim/replay/bench_files.h"

#include <regex>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdlib>

#include "sim/config/params.h"
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
      if (prefix.find("adapter_") != std::string::npos ||
          prefix.find("session") != std::string::npos)
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

namespace {

bool yaml_ext(const std::string& path) {
  std::string e = fs::path(path).extension().string();
  for (char& c : e) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return e == ".yaml" || e == ".yml";
}

// A plain YAML scalar as the JSON value YAML 1.2's core schema reads it.
json yaml_scalar(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  static const std::regex integer(R"(^[-+]?[0-9]+$)");
  static const std::regex decimal(R"(^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$)");
  if (std::regex_match(s, integer)) {
    errno = 0;
    const long long v = std::strtoll(s.c_str(), nullptr, 10);
    if (errno == 0) return v;
  }
  if (std::regex_match(s, decimal)) return std::strtod(s.c_str(), nullptr);
  // Non-finite numbers are kept as the words Python's json writes, as read_result_json does.
  if (s == ".inf" || s == "+.inf" || s == ".Inf" || s == ".INF") return "Infinity";
  if (s == "-.inf" || s == "-.Inf" || s == "-.INF") return "-Infinity";
  if (s == ".nan" || s == ".NaN" || s == ".NAN") return "NaN";
  return s;
}

json yaml_to_json(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Sequence: {
      json a = json::array();
      for (const auto& e : n) a.push_back(yaml_to_json(e));
      return a;
    }
    case YAML::NodeType::Map: {
      json o = json::object();
      for (const auto& kv : n) o[kv.first.Scalar()] = yaml_to_json(kv.second);
      return o;
    }
    case YAML::NodeType::Scalar:
      // A quoted scalar ("!" tag) is text whatever it spells.
      return n.Tag() == "!" ? json(n.Scalar()) : yaml_scalar(n.Scalar());
    default:
      return nullptr;
  }
}

}  // namespace

json read_report_json(const std::string& path) {
  if (!yaml_ext(path)) return read_result_json(path, std::size_t{1} << 30);
  const std::string text = read_input_file(path, "benchmark report", std::size_t{1} << 30);
  // config::parse_yaml refuses duplicate keys, non-scalar keys and deep nesting.
  return yaml_to_json(config::parse_yaml(text, path));
}

BenchJsonKind bench_json_kind(const std::string& path) {
  json j;
  try {
    j = read_report_json(path);
  } catch (const InputError&) {
    return BenchJsonKind::kNone;
  } catch (const YAML::Exception&) {
    return BenchJsonKind::kNone;
  }
  if (!j.is_object()) return BenchJsonKind::kNone;
  // vllm bench writes JSON only; a YAML report is GuideLLM's.
  if (yaml_ext(path))
    return j.contains("benchmarks") && j["benchmarks"].is_array() ? BenchJsonKind::kGuideLlm
                                                                  : BenchJsonKind::kNone;
  const bool vllm = j.contains("ttfts") || j.contains("mean_ttft_ms") ||
                    (j.contains("request_throughput") && j.contains("completed"));
  if (vllm) return BenchJsonKind::kVllmBench;
  if (j.contains("benchmarks") && j["benchmarks"].is_array()) return BenchJsonKind::kGuideLlm;
  return BenchJsonKind::kNone;
}

}  // namespace kvfleet::sim
