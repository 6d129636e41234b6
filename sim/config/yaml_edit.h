#pragma once
// Editing a YAML document's text in place, keeping its comments and layout: what the GUI's Save
// writes (a scenario with the fields the user changed), instead of the resolved document with
// every comment lost.
#include <optional>
#include <string>
#include <vector>

namespace kvfleet::sim::config {

// Applies each assignment (`key.path=value`, as --set spells it; the value a single-line
// scalar) to `text`: where the text has that key with a scalar value, the value's characters are
// replaced; where the key is missing, it is added as block-style lines (the missing mappings
// too) at the end of the deepest block mapping the text has on its path. Returns nullopt where
// it cannot edit in place: a flow-style collection, an anchor, alias, tag, multi-line or empty
// value on the path, a list index the text lacks, a value that is not a scalar. The caller then
// writes the whole document. It does not check the result against a schema (the scenario loader
// does: sim::scenario_text_with_sets).
std::optional<std::string> edit_yaml_text(std::string text, const std::vector<std::string>& sets);

}  // namespace kvfleet::sim::config
