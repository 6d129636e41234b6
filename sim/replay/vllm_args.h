#pragma once
// vLLM's engine and server arguments as kvfleet knows them: each argument's name (vLLM's own,
// underscored), the other spellings launch scripts and run records use for it, its type, and
// what it does to a replay. Read by the engine-argument files of every replay (engine_args.cpp),
// so that no argument is silently dropped: each is used, named as having no effect on latency,
// named as not modelled, or named as unknown.
#include <string>
#include <vector>

namespace kvfleet::sim {

enum class VllmArgType { kInt, kReal, kBool, kText, kAny };

enum class VllmArgEffect {
  kModelled,     // sets a scenario key (or the model, its weights, CUDA graphs)
  kNoEffect,     // changes nothing kvfleet simulates (ports, logging, tokenizer, API options)
  kNotModelled,  // changes latency or capacity in ways kvfleet does not simulate
};

struct VllmArg {
  const char* name;  // vLLM's name: tensor_parallel_size
  VllmArgType type;
  VllmArgEffect effect;
  std::vector<const char*> aliases;  // other spellings, normalised: tp, tensor_parallelism
  const char* what = "";             // for kNotModelled: what kvfleet leaves out
};

// Every argument kvfleet knows.
const std::vector<VllmArg>& vllm_args();

// The argument a spelling names: "--tensor-parallel-size", "-tp", "tensor_parallelism",
// "TENSOR_PARALLEL_SIZE" all name tensor_parallel_size; nullptr for one kvfleet does not know.
const VllmArg* find_vllm_arg(const std::string& spelling);

// A spelling normalised: leading dashes dropped, '-' as '_', lower case.
std::string normalise_arg_key(const std::string& spelling);

}  // namespace kvfleet::sim
