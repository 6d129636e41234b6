#pragma once
// What params.cpp (declarations read, written and documented) and yaml_input.cpp (YAML parsed,
// keys and --set overrides) share: not part of the interface.
#include <yaml-cpp/yaml.h>

#include <string>

namespace kvfleet::sim::config {

// A node as an error message names it: 'text', a list, a map, nothing.
inline std::string scalar_text(const YAML::Node& n) {
  if (n.IsScalar()) return "'" + n.Scalar() + "'";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a map";
  return "nothing";
}

// Whether key path `inner` is `outer` or lies inside it (pools[0].engine covers
// pools[0].engine.block_size and pools[0].engine.kv_tiers[1]).
inline bool covers(const std::string& outer, const std::string& inner) {
  return inner == outer || inner.rfind(outer + ".", 0) == 0 || inner.rfind(outer + "[", 0) == 0;
}

}  // namespace kvfleet::sim::config
