#pragma once
// A vLLM server's engine arguments read from the file a team keeps them in, its form decided by
// its structure, never by substrings:
//  - a JSON object, or a YAML mapping (vLLM's `--config` file, a run record): the arguments at
//    the top level or under `engine_kwargs`, `engine_args`, `vllm_args`, `vllm` or `args`;
//  - a Kubernetes manifest or Helm values (YAML whose containers' `command`/`args` lists hold
//    the `vllm serve` command or its flags);
//  - a launch script or command line (shell words: quotes, comments, continuations), from which
//    the one command that starts vLLM (`vllm serve`, `python -m
//    vllm.entrypoints.openai.api_server`, `docker run … vllm/vllm-openai…`) is read; a file of bare
//    flags is read as that command's flags.
// Every argument keeps where it was written (file and line) for the replay's list of settings.
#include <optional>
#include <string>
#include <vector>

#include "sim/replay/vllm_args.h"

namespace kvfleet::sim {

struct EngineArg {
  std::string key;    // vLLM's name when kvfleet knows it (tensor_parallel_size), else normalised
  std::string given;  // as written: -tp, tensor_parallelism, --tensor-parallel-size
  std::string value;  // text; a list or mapping as JSON; a bare boolean flag "true"
  std::string where;  // file:line, or file: key path
  const VllmArg* spec = nullptr;  // nullptr: not known to kvfleet
};

struct EngineArgs {
  std::string file;
  std::string form;  // "a JSON mapping", "a YAML mapping", "a command line", ...
  std::vector<EngineArg> args;
  // A vLLM version the file states (a docker image tag vllm/vllm-openai:v0.11.0, a
  // `pip install vllm==0.11.0` line, a vllm_version key), and where.
  std::string vllm_version, vllm_version_where;
  // The last argument with this vLLM name, or nullptr.
  const EngineArg* find(const std::string& key) const;
};

// Throws InputError naming the file (and line or key) when it cannot be read as any form above
// or when a launch script starts vLLM more than once. An argument given twice is kept twice (the
// last counts, as in vLLM; apply_engine_settings names the repetition).
EngineArgs read_engine_args(const std::string& path);

// The same from text (tests, fuzzing); `where` names it in messages.
EngineArgs parse_engine_args(const std::string& text, const std::string& where);

// A whole number as vLLM reads it, human-readable suffixes included ("32k" = 32000, "32K" = 32768,
// "1m" = 1000000, "1M" = 1048576); nullopt when the text is not one.
std::optional<long long> parse_vllm_int(const std::string& text);

}  // namespace kvfleet::sim
