#include "gui/app/words.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "sim/simulation/scenario.h"

namespace kvfleet::gui {

namespace {

// A --set key as the declarations spell it: list indices dropped (pools[1].x -> pools[].x).
std::string doc_key(std::string key) {
  for (std::size_t at = 0; (at = key.find('[', at)) != std::string::npos;) {
    const std::size_t end = key.find(']', at);
    if (end == std::string::npos) break;
    key.replace(at + 1, end - at - 1, "");
    at += 2;
  }
  if (key.ends_with(".impl")) key.resize(key.size() - 5);
  return key;
}

const std::map<std::string, sim::config::Documenter::Row>& rows() {
  static const std::map<std::string, sim::config::Documenter::Row> m = [] {
    std::map<std::string, sim::config::Documenter::Row> r;
    // Several implementations may declare a key of the same name: the first with a label wins.
    for (const auto& row : sim::scenario_parameters()) {
      auto [it, fresh] = r.emplace(row.key, row);
      if (!fresh && it->second.label.empty() && !row.label.empty()) it->second = row;
    }
    return r;
  }();
  return m;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

const sim::config::Documenter::Row* declaration(const std::string& key) {
  const auto it = rows().find(doc_key(key));
  return it == rows().end() ? nullptr : &it->second;
}

std::string key_label(const std::string& key) {
  const auto* row = declaration(key);
  if (row && !row->label.empty()) return row->label;
  const std::string k = doc_key(key);
  const auto dot = k.find_last_of('.');
  if (dot != std::string::npos) {
    const auto* parent = declaration(k.substr(0, dot));
    if (parent && !parent->label.empty()) {
      std::string own = k.substr(dot + 1);
      std::replace(own.begin(), own.end(), '_', ' ');
      return parent->label + ", " + own;
    }
  }
  return key;
}

namespace {

// A unit that is a word (users, turns, GPUs) may be named by the label; a symbol (s, $/hour,
// requests/s) never is.
bool label_names_unit(const std::string& label, const std::string& unit) {
  const bool word = unit.size() >= 3 && std::all_of(unit.begin(), unit.end(), [](unsigned char c) {
                      return std::isalpha(c);
                    });
  if (!word) return false;
  std::string noun = lower(unit);
  if (noun.back() == 's') noun.pop_back();  // "users" in "Concurrent users", "user" alike
  return lower(label).find(noun) != std::string::npos;
}

}  // namespace

std::string with_unit(const std::string& label, const std::string& unit) {
  if (unit.empty() || label_names_unit(label, unit)) return label;
  return label + " (" + unit + ")";
}

std::string quantity(const std::string& key, const std::string& value) {
  const auto* row = declaration(key);
  if (!row || key.ends_with(".impl")) return value;
  const std::string& unit = row->unit;
  // Dimensionless units read better bare: "GPU memory utilization 0.9".
  if (unit.empty() || unit == "fraction" || unit == "probability" || unit == "factor" ||
      label_names_unit(key_label(key), unit))
    return value;
  return value + " " + unit;
}

std::string inline_label(const std::string& key) {
  std::string l = key_label(key);
  if (l.size() > 1 && std::isupper(static_cast<unsigned char>(l[0])) &&
      !std::isupper(static_cast<unsigned char>(l[1])))
    l[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(l[0])));
  return l;
}

std::string value_label(const std::string& key, const std::string& value) {
  if (key.ends_with(".impl")) return value;
  return key_label(key) + " " + quantity(key, value);
}

std::string setting_label(const std::string& key, const std::string& value) {
  const bool impl = key.ends_with(".impl");
  const std::string k = impl ? key.substr(0, key.size() - 5) : key;
  std::string label = key_label(k);
  if (label == k) {  // undeclared or unlabelled: its own name, in words ("max model len")
    const auto dot = k.find_last_of('.');
    label = dot == std::string::npos ? k : k.substr(dot + 1);
    std::replace(label.begin(), label.end(), '_', ' ');
  }
  return label + " " + (impl || value == "unset" ? value : quantity(key, value));
}

}  // namespace kvfleet::gui
