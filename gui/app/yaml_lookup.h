#pragma once
// Reading a dotted key (pools[0].engine.max_num_seqs) out of a resolved scenario's YAML: the
// window's panel, comparisons and pins share it.
#include <yaml-cpp/yaml.h>

#include <sstream>
#include <string>

namespace kvfleet::gui {

// The node of a dotted key (pools[0].engine) in resolved YAML; an undefined node if absent.
inline YAML::Node lookup_node(const YAML::Node& root, const std::string& key) {
  YAML::Node n = root;
  std::stringstream ss(key);
  for (std::string part; std::getline(ss, part, '.');) {
    const auto br = part.find('[');
    if (br != std::string::npos) {
      const int idx = std::stoi(part.substr(br + 1));
      n.reset(n[part.substr(0, br)]);
      if (!n || !n.IsSequence() || idx >= static_cast<int>(n.size()))
        return YAML::Node(YAML::NodeType::Undefined);
      n.reset(n[idx]);
    } else {
      n.reset(n[part]);
    }
    if (!n) return YAML::Node(YAML::NodeType::Undefined);
  }
  return n;
}

// The value of a dotted key (pools[0].engine.max_num_seqs) in resolved YAML, as text.
inline std::string lookup(const YAML::Node& root, const std::string& key) {
  const YAML::Node n = lookup_node(root, key);
  return n.IsDefined() && n.IsScalar() ? n.Scalar() : "";
}

}  // namespace kvfleet::gui
