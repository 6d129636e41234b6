#pragma once
// inference-perf's config and reports, the parts apart from the plan (inference_perf.cpp): its
// booleans, the lengths the client measured, the client's timeout.
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "sim/replay/bench_results.h"

namespace kvfleet::sim::bench_detail {

// A YAML boolean as inference-perf's pydantic config reads it (true/false, yes/no, on/off, 1/0,
// any case); `dflt` when absent or null. Throws InputError naming `where` and `key` otherwise.
bool yaml_bool(const YAML::Node& n, const std::string& where, const std::string& key, bool dflt);

// The number at `n` (config key `key`), from lo to hi; InputError naming `where` and `key`
// otherwise.
double number_at(const std::string& where, const YAML::Node& n, const std::string& key, double lo,
                 double hi);

// Sets the workload's prompt and output lengths to what the run measured: the server's counts
// (prompt_tokens, output_tokens) where the files have them, else the client tokenizer's
// (prompt_len, BOS and re-tokenisation included, which the server sees too). `prompt_parts`
// are the workload keys that make up a prompt, scaled together.
void measured_lengths(const nlohmann::json& report, const std::string& where, const YAML::Node& cfg,
                      const std::string& cfg_where, YAML::Node wl,
                      const std::vector<std::string>& prompt_parts, const std::string& output_key,
                      BenchReplay& plan);

// The client's timeout: load.request_timeout, where null or 0 and an inference-perf without the
// key leave aiohttp's default total timeout of 300 s.
void client_timeout(const YAML::Node& cfg, const std::string& cfg_where, YAML::Node& sc,
                    BenchReplay& plan);

}  // namespace kvfleet::sim::bench_detail
