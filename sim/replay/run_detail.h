#pragma once
// Shared by the run-folder replay's files (replay.cpp, run_gpu.cpp): reading a run's JSON files
// with their types checked, and matching names to presets. Not part of the replay's interface.
#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include <cctype>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/params.h"
#include "sim/core/error.h"
#include "sim/io/input_file.h"
#include "sim/io/json.h"
#include "sim/model/presets.h"
#include "sim/replay/replay.h"

namespace kvfleet::sim::run_detail {

namespace fs = std::filesystem;
using json = nlohmann::json;

inline json read_json(const fs::path& p) {
  // Strict: nesting depth limited while parsing, duplicate keys refused (sim/io/json.h).
  return parse_json(read_input_file(p.string(), "JSON", kMaxYamlFileBytes), p.string());
}

// Lower-case letters and digits only: "Qwen/Qwen3-30B-A3B-Instruct-2507" → "qwenqwen330ba3b...".
inline std::string squash(const std::string& s) {
  std::string o;
  for (unsigned char c : s)
    if (std::isalnum(c)) o += static_cast<char>(std::tolower(c));
  return o;
}

// The names a preset is known by: its name, and for a GPU named FAMILY-VARIANT (H100-SXM,
// A100-80GB) its family when that holds a digit, as drivers name the device ("NVIDIA H100 80GB
// HBM3", "NVIDIA A100-SXM4-80GB").
template <class T>
std::vector<std::string> keys_of(const T& p, bool family) {
  std::vector<std::string> k{squash(p.name)};
  const auto dash = p.name.rfind('-');
  if (family && dash != std::string::npos) {
    const std::string f = squash(p.name.substr(0, dash));
    if (f.find_first_of("0123456789") != std::string::npos) k.push_back(f);
  }
  return k;
}

// The preset one of whose names the squashed text contains, the longest such name winning.
template <class T>
const T* match(const std::vector<T>& presets, const std::string& text, bool family = false) {
  const std::string t = squash(text);
  const T* best = nullptr;
  std::size_t best_len = 0;
  for (const auto& p : presets) {
    for (const std::string& n : keys_of(p, family)) {
      if (!n.empty() && t.find(n) != std::string::npos && n.size() > best_len) {
        best = &p;
        best_len = n.size();
      }
    }
  }
  return best;
}

template <class T>
const T* named(const std::vector<T>& presets, const std::string& name) {
  for (const auto& p : presets)
    if (p.name == name) return &p;
  return nullptr;
}

template <class T>
std::string names(const std::vector<T>& presets) {
  std::string s;
  for (const auto& p : presets) s += (s.empty() ? "" : ", ") + p.name;
  return s;
}

// meta[a][b]... or a null json when a key is absent.
inline const json& at(const json& j, std::initializer_list<const char*> path) {
  static const json null;
  const json* cur = &j;
  for (const char* k : path) {
    if (!cur->is_object() || !cur->contains(k)) return null;
    cur = &(*cur)[k];
  }
  return *cur;
}

// A dotted key path for messages: {"kv_cache", "block_size"} -> "kv_cache.block_size".
inline std::string dotted(std::initializer_list<const char*> path) {
  std::string k;
  for (const char* p : path) k += (k.empty() ? "" : ".") + std::string(p);
  return k;
}

// Typed members of a run's file: absent or null -> nullopt; present with another JSON type or out
// of range -> InputError naming the file and the key (a boolean written "no" or 1, a count written
// as a string, are refused, never read as a default).
struct RunFile {
  std::string file;
  std::optional<bool> boolean(const json& root, std::initializer_list<const char*> path) const {
    const json& j = at(root, path);
    if (j.is_null()) return std::nullopt;
    if (!j.is_boolean())
      throw InputError(file, dotted(path), "must be true or false, not " + j.dump());
    return j.get<bool>();
  }
  std::optional<long long> integer(const json& root, std::initializer_list<const char*> path,
                                   long long lo, long long hi) const {
    const json& j = at(root, path);
    if (j.is_null()) return std::nullopt;
    if (!j.is_number_integer() || j.get<long long>() < lo || j.get<long long>() > hi)
      throw InputError(file, dotted(path),
                       "must be a whole number from " + std::to_string(lo) + " to " +
                           std::to_string(hi) + ", not " + j.dump());
    return j.get<long long>();
  }
  std::optional<double> number(const json& root, std::initializer_list<const char*> path, double lo,
                               double hi) const {
    const json& j = at(root, path);
    if (j.is_null()) return std::nullopt;
    if (!j.is_number() || !(j.get<double>() >= lo && j.get<double>() <= hi))
      throw InputError(file, dotted(path),
                       "must be a number from " + config::format_double(lo) + " to " +
                           config::format_double(hi) + ", not " + j.dump());
    return j.get<double>();
  }
  std::optional<std::string> string(const json& root,
                                    std::initializer_list<const char*> path) const {
    const json& j = at(root, path);
    if (j.is_null()) return std::nullopt;
    if (!j.is_string()) throw InputError(file, dotted(path), "must be text, not " + j.dump());
    return j.get<std::string>();
  }
};

// The run's GPU: --gpu, else the preset its hardware names (with its memory), else, with a
// profile, a GPU entry with the run's memory (`custom`). A preset whose memory is not the run's
// (a 40 GB card named A100-80GB with --gpu) lends its datasheet to a GPU with the run's memory.
// `run_gpu` receives the GPU's name as the run (or --gpu) gives it.
const GpuSpec* choose_gpu(const ReplayOptions& o, const json& meta, const json& cluster,
                          YAML::Node& custom_gpu, std::string& run_gpu,
                          const std::function<void(std::string)>& note);

// A profile measured on another GPU prices this run's steps wrongly, and its error bars do
// not hold: said, not refused (a user may mean it, as a what-if).
void check_profile_gpu(const std::string& profile, const std::string& run_gpu,
                       const std::function<void(std::string)>& note);

}  // namespace kvfleet::sim::run_detail
