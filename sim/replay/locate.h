#pragma once
// Which measured result a path names, from any level of the folder a team keeps it in: the
// result file or folder itself, a file inside a result folder (a stage file, config.yaml), or a
// folder above it (an experiment folder holding results/ and the server's engine arguments
// beside it). Decided by the files' structure (names for folders of reports, keys for JSON), not
// by the path's spelling.
#include <string>
#include <vector>

namespace kvfleet::sim {

enum class ResultKind {
  kNone,
  kRunFolder,      // meta.json + requests.jsonl (engine timestamps)
  kInferencePerf,  // config.yaml + *lifecycle_metrics.json
  kVllmBench,      // a `vllm bench serve` result JSON
  kGuideLlm,       // a GuideLLM benchmark report (JSON or YAML)
};
const char* result_kind_name(ResultKind k);

struct LocatedResult {
  ResultKind kind = ResultKind::kNone;
  std::string path;   // the result folder or file
  std::string given;  // what the user named
  std::string note;   // how it was found, when not named directly ("" otherwise)
};

// What `path` itself is, without looking below it (kNone when it is no result).
ResultKind result_kind(const std::string& path);

// The one result `given` names or holds (searched up to three folder levels below it). Throws
// InputError naming `given` when it does not exist, holds no result, or holds several (listed:
// the user names one).
LocatedResult locate_result(const std::string& given);

// The server's engine-arguments file kept with a result: in the result's folder, else in each
// folder above it up to the folder the user named (at most two levels above the result when the
// user named the result itself). "" when none. Throws InputError naming the folder when it holds
// several candidates (the user picks one with --engine-args).
std::string find_engine_args(const LocatedResult& r);

// Whether a file name looks like a server's engine arguments (engine_args.yaml, serve_args.txt,
// vllm_serve.sh, launch-vllm.sh, server-args.json, ...).
bool engine_args_name(const std::string& filename);

}  // namespace kvfleet::sim
