#include "sim/replay/vllm_defaults.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <regex>
#include <tuple>

#include "sim/core/error.h"

namespace kvfleet::sim {

bool VllmVersion::operator<(const VllmVersion& o) const {
  return std::tie(major, minor, patch) < std::tie(o.major, o.minor, o.patch);
}

VllmVersion parse_vllm_version(const std::string& text, const std::string& where) {
  static const std::regex re(
      R"(^\s*v?(\d{1,3})\.(\d{1,3})(?:\.(\d{1,4}))?(?:\.\d+)*(?:(?:rc|\.post|post|a|b|\.dev|dev)\d*)?(?:\+[\w.]+)?\s*$)");
  std::smatch m;
  if (!std::regex_match(text, m, re))
    throw InputError(where, "",
                     "'" + text + "' is not a vLLM version (like 0.11.0, v0.15.1 or 0.10.1.1)");
  VllmVersion v;
  v.major = std::stoi(m[1].str());
  v.minor = std::stoi(m[2].str());
  v.patch = m[3].matched ? std::stoi(m[3].str()) : 0;
  v.text = std::to_string(v.major) + "." + std::to_string(v.minor) + "." + std::to_string(v.patch);
  return v;
}

const VllmDefault* VllmDefaults::find(const std::string& key) const {
  for (const auto& v : values)
    if (v.key == key) return &v;
  return nullptr;
}

namespace {

VllmVersion v(int a, int b, int c) {
  return {a, b, c, std::to_string(a) + "." + std::to_string(b) + "." + std::to_string(c)};
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string gib(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.0f GiB", x);
  return b;
}

}  // namespace

VllmVersion oldest_known_vllm() { return v(0, 8, 0); }
VllmVersion newest_known_vllm() { return v(0, 34, 0); }

namespace {

// Async scheduling's default in release `ver` and why.
bool async_scheduling_default(const VllmVersion& ver, const VllmServerContext& ctx,
                              std::string& async_why) {
  const bool async_default = !(ver < v(0, 14, 0));
  bool async_on = async_default;
  if (ver < v(0, 10, 0)) {
    async_why = "no async scheduling before 0.10.0";
  } else if (!async_default) {
    async_why = "async scheduling is opt-in (--async-scheduling) from 0.10.0 to 0.13.x";
  } else if (ctx.pipeline_parallel > 1 && ver < v(0, 15, 0)) {
    async_on = false;
    async_why = "on by default from 0.14.0, but not with pipeline parallelism before 0.15.0";
  } else if (ctx.pipeline_parallel > 1 && !(ver < v(0, 31, 0)) && ver < v(0, 34, 0)) {
    async_on = false;
    async_why =
        "on by default, but not with pipeline parallelism without the V2 model runner "
        "(0.31-0.33)";
  } else {
    async_why = "on by default from 0.14.0 (vllm-project/vllm PR 27614)";
  }
  return async_on;
}

}  // namespace

// Every rule below was read from the release's own source (vllm/engine/arg_utils.py,
// vllm/config/*.py) in the PyPI sdists 0.8.0 ... 0.34.0; docs/calibration.md ("vLLM's defaults
// by release") lists the files.
VllmDefaults vllm_defaults(const VllmVersion& ver, const VllmServerContext& ctx) {
  VllmDefaults d;
  d.release = ver.text;
  const std::string name = lower(ctx.gpu_name);
  const bool h100_h200 =
      name.find("h100") != std::string::npos || name.find("h200") != std::string::npos;
  const bool a100 = name.find("a100") != std::string::npos;
  const double mem = ctx.device_gib;

  // Scheduler limits of the OpenAI API server (usage context OPENAI_API_SERVER), V1 engine.
  long long seqs = 256, tokens = 2048;
  std::string why;
  if (ver < v(0, 8, 4)) {
    seqs = 1024;
    tokens = h100_h200 ? 8192 : 2048;
    why = h100_h200 ? "an H100/H200 by name: 1024 sequences, 8192 tokens (0.8.0-0.8.3)"
                    : "not an H100/H200 by name: 1024 sequences, 2048 tokens (0.8.0-0.8.3)";
  } else if (ver < v(0, 8, 5)) {
    const bool big = h100_h200;
    seqs = big ? 1024 : 256, tokens = big ? 8192 : 2048;
    why = big ? "an H100/H200 by name: 1024 sequences, 8192 tokens (0.8.4)"
              : "not an H100/H200 by name: 256 sequences, 2048 tokens (0.8.4)";
  } else if (ver < v(0, 9, 0)) {
    const bool big = mem >= 70;
    seqs = big ? 1024 : 256, tokens = big ? 8192 : 2048;
    why = std::string(big ? "GPU memory " + gib(mem) + " >= 70 GiB: 1024 sequences, 8192 tokens"
                          : "GPU memory " + gib(mem) + " < 70 GiB: 256 sequences, 2048 tokens") +
          " (0.8.5)";
  } else if (ver < v(0, 28, 0)) {
    const bool big = mem >= 70 && !a100;
    seqs = big ? 1024 : 256, tokens = big ? 8192 : 2048;
    why = big ? "GPU memory " + gib(mem) +
                    " >= 70 GiB, not an A100: 1024 sequences, 8192 tokens "
                    "(0.9.0-0.27)"
              : std::string(a100 ? "an A100" : "GPU memory " + gib(mem) + " < 70 GiB") +
                    ": 256 sequences, 2048 tokens (0.9.0-0.27)";
  } else {
    if (mem >= 160) {
      seqs = 1024, tokens = 16384;
      why = "GPU memory " + gib(mem) + " >= 160 GiB: 1024 sequences, 16384 tokens (0.28+)";
    } else if (mem >= 70) {
      seqs = 1024, tokens = 8192;
      why = "GPU memory " + gib(mem) + " >= 70 GiB: 1024 sequences, 8192 tokens (0.28+)";
    } else {
      why = "GPU memory " + gib(mem) + " < 70 GiB: 256 sequences, 2048 tokens (0.28+)";
    }
  }

  std::string async_why;
  const bool async_on = async_scheduling_default(ver, ctx, async_why);

  const bool gmu92 = !(ver < v(0, 20, 0));
  const bool block64 = !(ver < v(0, 34, 0));
  d.values = {
      {"tensor_parallel", "1", "one GPU"},
      {"pipeline_parallel", "1", "one stage"},
      {"data_parallel", "1", "one engine"},
      {"expert_parallel", "false", "enable_expert_parallel is off"},
      {"engine.max_num_seqs", std::to_string(seqs), why},
      {"engine.max_num_batched_tokens", std::to_string(tokens), why},
      {"engine.max_model_len", "0", "the model's context length"},
      {"engine.block_size", block64 ? "64" : "16",
       block64 ? "64 from 0.34.0" : "16 (CUDA attention backends) before 0.34.0"},
      {"engine.gpu_memory_utilization", gmu92 ? "0.92" : "0.9",
       gmu92 ? "0.92 from 0.20.0" : "0.9 before 0.20.0"},
      {"engine.enable_prefix_caching", "true",
       "on in the V1 engine (off for hybrid/Mamba models 0.11.1-0.28, which kvfleet does not "
       "model)"},
      {"engine.enable_chunked_prefill", "true", "always on in the V1 engine"},
      {"engine.async_scheduling", async_on ? "true" : "false", async_why},
      {"engine.kv_cache_dtype", "auto", "the model's precision"},
      {"engine.preemption_mode", "recompute", "the V1 engine preempts by recompute"},
  };
  return d;
}

std::vector<long long> vllm_cuda_graph_sizes(const VllmVersion& ver, long long max_num_seqs) {
  std::vector<long long> s = {1, 2, 4};
  if (ver < v(0, 11, 1)) {
    for (long long x = 8; x <= 512; x += 8) s.push_back(x);
    return s;
  }
  const long long top = std::min<long long>(2 * std::max<long long>(max_num_seqs, 1), 512);
  for (long long x = 8; x < 256; x += 8) s.push_back(x);
  for (long long x = 256; x <= 512; x += 16) s.push_back(x);
  while (s.size() > 1 && s.back() > top) s.pop_back();
  return s;
}

}  // namespace kvfleet::sim
