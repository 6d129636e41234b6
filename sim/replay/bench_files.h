#pragma once
// The files of benchmark clients' results, found and read by their structure: an
// inference-perf folder's reports grouped by their file-name prefix, and result JSON told apart by
// its keys after a real parse (Python's NaN and Infinity allowed, `--append-result` files of one
// object per line).
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace kvfleet::sim {

// One set of inference-perf lifecycle reports: those written with one report_file_prefix.
struct IpReports {
  std::string prefix;                           // "" when written without one
  std::map<int, std::filesystem::path> stages;  // stage_N_lifecycle_metrics.json
  std::filesystem::path summary, per_request;   // empty when absent
  bool empty() const { return stages.empty() && summary.empty(); }
};

// Every set of reports in `dir`, by prefix (stage files of sessions and adapters left out).
std::vector<IpReports> inference_perf_reports(const std::filesystem::path& dir);

enum class BenchJsonKind { kNone, kVllmBench, kGuideLlm };
// What a result file holds, by its keys (a file that does not parse is kNone).
BenchJsonKind bench_json_kind(const std::string& path);

// A benchmark result file's JSON: the whole file, or for a file of one JSON object per line
// (`vllm bench serve --append-result`) the last; `appended` receives how many objects it held.
// Python's NaN and Infinity are read as strings. Throws InputError naming the file.
nlohmann::json read_result_json(const std::string& path, std::size_t max_bytes,
                                int* appended = nullptr);

// A benchmark report that may be JSON or YAML (GuideLLM writes both; .yaml/.yml files are read
// as YAML, strictly: config::parse_yaml), as JSON. YAML scalars take the type they are written
// as: null/~, true/false, integers, decimals (.inf, .nan), quoted or other text a string.
nlohmann::json read_report_json(const std::string& path);

}  // namespace kvfleet::sim
