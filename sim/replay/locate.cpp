#include "sim/replay/locate.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>

#include "sim/core/error.h"
#include "sim/replay/bench_files.h"

namespace kvfleet::sim {

namespace fs = std::filesystem;

const char* result_kind_name(ResultKind k) {
  switch (k) {
    case ResultKind::kRunFolder:
      return "measured run folder (meta.json, requests.jsonl)";
    case ResultKind::kInferencePerf:
      return "inference-perf result folder";
    case ResultKind::kVllmBench:
      return "vllm bench serve result";
    case ResultKind::kGuideLlm:
      return "GuideLLM benchmark report";
    case ResultKind::kNone:
      break;
  }
  return "nothing kvfleet replays";
}

namespace {

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}
bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// The folders below `dir`, breadth first, down to `depth` levels (symbolic links to folders are
// not followed: a loop must not trap the search). Unreadable folders are skipped.
std::vector<fs::path> folders_below(const fs::path& dir, int depth) {
  std::vector<fs::path> out, level{dir};
  for (int d = 0; d < depth && !level.empty(); ++d) {
    std::vector<fs::path> next;
    for (const fs::path& p : level) {
      std::error_code ec;
      fs::directory_iterator it(p, ec), end;
      std::vector<fs::path> subs;
      for (; !ec && it != end; it.increment(ec)) {
        std::error_code ec2;
        if (it->is_directory(ec2) && !it->is_symlink(ec2)) subs.push_back(it->path());
      }
      std::sort(subs.begin(), subs.end());
      for (auto& s : subs) next.push_back(s), out.push_back(s);
    }
    level = std::move(next);
  }
  return out;
}

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec))
    if (is_file(it->path())) out.push_back(it->path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

ResultKind result_kind(const std::string& path) {
  const fs::path p(path);
  if (is_dir(p)) {
    if (is_file(p / "meta.json") && is_file(p / "requests.jsonl")) return ResultKind::kRunFolder;
    if (!inference_perf_reports(p).empty()) return ResultKind::kInferencePerf;
    return ResultKind::kNone;
  }
  if (!is_file(p)) return ResultKind::kNone;
  const std::string ext = lower(p.extension().string());
  if (ext != ".json" && ext != ".yaml" && ext != ".yml") return ResultKind::kNone;
  switch (bench_json_kind(path)) {
    case BenchJsonKind::kVllmBench:
      return ResultKind::kVllmBench;
    case BenchJsonKind::kGuideLlm:
      return ResultKind::kGuideLlm;
    case BenchJsonKind::kNone:
      break;
  }
  return ResultKind::kNone;
}

LocatedResult locate_result(const std::string& given) {
  LocatedResult r;
  r.given = given;
  const fs::path g(given);
  std::error_code ec;
  if (!fs::exists(g, ec)) throw InputError(given, "", "not found");
  if (const ResultKind k = result_kind(given); k != ResultKind::kNone) {
    r.kind = k, r.path = given;
    return r;
  }
  // A file of a result folder (a stage file, config.yaml, requests.jsonl): its folder.
  if (is_file(g)) {
    const fs::path parent = g.parent_path().empty() ? fs::path(".") : g.parent_path();
    if (const ResultKind k = result_kind(parent.string()); k != ResultKind::kNone) {
      r.kind = k, r.path = parent.string();
      r.note = "the " + std::string(result_kind_name(k)) + " " + r.path + " (which holds " +
               g.filename().string() + ")";
      return r;
    }
    throw InputError(given, "",
                     "is not a result kvfleet replays (a vllm bench serve or GuideLLM result "
                     "file, or a file of an inference-perf or measured-run folder)");
  }
  // A folder above results: the one result below it.
  std::vector<std::pair<fs::path, ResultKind>> found;
  for (const fs::path& d : folders_below(g, 3))
    if (const ResultKind k = result_kind(d.string()); k != ResultKind::kNone)
      found.emplace_back(d, k);
  for (const fs::path& d : std::vector<fs::path>{g}) {
    for (const fs::path& f : files_in(d))
      if (const ResultKind k = result_kind(f.string()); k != ResultKind::kNone)
        found.emplace_back(f, k);
  }
  for (const fs::path& d : folders_below(g, 2))
    for (const fs::path& f : files_in(d))
      if (const ResultKind k = result_kind(f.string()); k != ResultKind::kNone)
        found.emplace_back(f, k);
  // A file inside a result folder found is that folder's, not a result of its own.
  std::vector<std::pair<fs::path, ResultKind>> results;
  for (const auto& [p, k] : found) {
    bool inside = false;
    for (const auto& [q, kq] : found)
      if (is_dir(q) && p != q && p.parent_path() == q) inside = true;
    if (!inside) results.emplace_back(p, k);
  }
  if (results.empty())
    throw InputError(given, "",
                     "holds no result kvfleet replays (searched three folder levels for a "
                     "measured run's meta.json and requests.jsonl, an inference-perf "
                     "config.yaml with its lifecycle metrics, a vllm bench serve or a GuideLLM "
                     "result)");
  if (results.size() > 1) {
    std::string list;
    for (std::size_t i = 0; i < results.size() && i < 12; ++i)
      list += "\n  " + results[i].first.string() + " (" + result_kind_name(results[i].second) + ")";
    if (results.size() > 12) list += "\n  …";
    throw InputError(
        given, "",
        "holds " + std::to_string(results.size()) + " results; name the one to replay:" + list);
  }
  r.kind = results.front().second;
  r.path = results.front().first.string();
  r.note = "the " + std::string(result_kind_name(r.kind)) + " " + r.path + " (the one result in " +
           given + ")";
  return r;
}

bool engine_args_name(const std::string& filename) {
  const std::string n = lower(filename);
  const auto dot = n.rfind('.');
  const std::string stem = dot == std::string::npos ? n : n.substr(0, dot);
  const std::string ext = dot == std::string::npos ? "" : n.substr(dot);
  static const char* const exts[] = {"", ".json", ".yaml", ".yml", ".txt", ".sh", ".args", ".cmd"};
  if (std::find(std::begin(exts), std::end(exts), ext) == std::end(exts)) return false;
  static const std::regex name(
      R"((^|[_\-.])(engine[_\-]?(args|kwargs|arguments|config)|(vllm|server|serve)[_\-]?(args|arguments|cmd|command)|vllm[_\-]serve|serve[_\-]vllm|launch[_\-]vllm|vllm[_\-]launch|start[_\-]vllm|run[_\-]vllm)([_\-.]|$))");
  return std::regex_search(stem, name);
}

std::string find_engine_args(const LocatedResult& r) {
  const fs::path result = fs::absolute(r.path).lexically_normal();
  const fs::path given = fs::absolute(r.given).lexically_normal();
  fs::path dir = is_dir(result) ? result : result.parent_path();
  // How far up: to the folder the user named (it holds the result), else two levels.
  const fs::path top = is_dir(given) && given != result ? given : fs::path();
  for (int level = 0; level < 8; ++level) {
    std::vector<fs::path> cands;
    for (const fs::path& f : files_in(dir))
      if (engine_args_name(f.filename().string())) cands.push_back(f);
    if (cands.size() == 1) return cands.front().string();
    if (cands.size() > 1) {
      std::string list;
      for (const auto& c : cands) list += (list.empty() ? "" : ", ") + c.filename().string();
      throw InputError(dir.string(), "",
                       "holds several files that may be the server's engine arguments (" + list +
                           "): name the one the measured server ran with --engine-args");
    }
    if (!top.empty() ? dir == top : level >= 2) break;
    if (!dir.has_parent_path() || dir.parent_path() == dir) break;
    dir = dir.parent_path();
  }
  return "";
}

}  // namespace kvfleet::sim
