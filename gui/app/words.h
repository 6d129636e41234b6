#pragma once
// Screen words for scenario keys, from the parameter declarations (sim::scenario_parameters():
// each parameter's Attr::label, unit and description). The panel's labels, the Compare box, the
// legends of compared variants and refusals all say a key the same way, and a new parameter with
// a label in its declaration is named on screen without touching the GUI.
#include <string>

#include "sim/config/params.h"

namespace kvfleet::gui {

// The declaration of a --set key (list indices allowed: pools[1].x); a component's `a.b.impl` is
// its section's row (a.b). nullptr when nothing declares it.
const sim::config::Documenter::Row* declaration(const std::string& key);

// "Max running sequences" for pools[0].engine.max_num_seqs. Without a label of its own, the label
// of the section it belongs to and its own name ("Turns per conversation, mean"); else the key.
std::string key_label(const std::string& key);

// The label with its unit in parentheses, unless the label already names the unit's noun
// ("KV block size (tokens)", but "Concurrent users", not "Concurrent users (users)").
std::string with_unit(const std::string& label, const std::string& unit);

// A value with its unit unless the label names it or it has none worth saying: "4000 tokens",
// "20 s", "32" (for Max running sequences), "0.9" (a fraction).
std::string quantity(const std::string& key, const std::string& value);

// The label inside a sentence: its first letter in lower case unless it begins an acronym ("turns
// kept", "KV block size").
std::string inline_label(const std::string& key);

// A compared value as a legend says it: "Max running sequences 32"; an implementation by its
// name ("window").
std::string value_label(const std::string& key, const std::string& value);

// A setting as a list of differences says it: "Max running sequences 64", "Context policy
// window" (an implementation under its section's label), "Client timeout unset". Keys nothing
// labels are named by their last part in words ("max model len 4096").
std::string setting_label(const std::string& key, const std::string& value);

}  // namespace kvfleet::gui
