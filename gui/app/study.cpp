#include "gui/app/study.h"

#include <yaml-cpp/yaml.h>

#include <sstream>
#include <stdexcept>

namespace kvfleet::gui {
namespace {

constexpr const char* kBegin =
    "# --- kvfleet-gui study (SLO, comparison, pins): kept by the GUI, a comment to kvfleet ---";
constexpr const char* kEnd = "# --- end of kvfleet-gui study ---";

// [begin, end) line indices of the block, or {-1, -1}.
std::pair<long, long> block(const std::vector<std::string>& lines) {
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i] != kBegin) continue;
    for (std::size_t j = i + 1; j < lines.size(); ++j)
      if (lines[j] == kEnd) return {static_cast<long>(i), static_cast<long>(j) + 1};
    return {static_cast<long>(i), static_cast<long>(lines.size())};
  }
  return {-1, -1};
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);) out.push_back(l);
  return out;
}

}  // namespace

Study read_study(const std::string& text, bool* found) {
  Study s;
  *found = false;
  const auto lines = split_lines(text);
  const auto [b, e] = block(lines);
  if (b < 0) return s;
  std::string yaml;
  for (long i = b + 1; i < e; ++i) {
    const std::string& l = lines[static_cast<std::size_t>(i)];
    if (l == kEnd) break;
    if (l.rfind("# ", 0) == 0) {
      yaml += l.substr(2) + "\n";
    } else if (l != "#") {
      throw std::runtime_error("line " + std::to_string(i + 1) +
                               ": the kvfleet-gui study block holds a line that is not a comment");
    } else {
      yaml += "\n";
    }
  }
  try {
    const YAML::Node n = YAML::Load(yaml);
    if (n["slo_s"]) s.slo_s = n["slo_s"].as<double>();
    if (n["refused_pct"]) s.refused_pct = n["refused_pct"].as<double>();
    // The ranges of the window's fields (a NaN or negative SLO would draw nothing, silently).
    if (!(s.slo_s >= 0.001 && s.slo_s <= 3600))
      throw std::runtime_error("line " + std::to_string(b + 1) +
                               ": the kvfleet-gui study's slo_s must be from 0.001 to 3600 s");
    if (!(s.refused_pct >= 0 && s.refused_pct <= 99))
      throw std::runtime_error("line " + std::to_string(b + 1) +
                               ": the kvfleet-gui study's refused_pct must be from 0 to 99");
    if (n["metric"]) s.metric = n["metric"].as<std::string>();
    if (n["compare"]) {
      if (n["compare"]["key"]) s.compare_key = n["compare"]["key"].as<std::string>();
      if (n["compare"]["values"])
        s.compare_values = n["compare"]["values"].as<std::vector<std::string>>();
    }
    for (const auto& p : n["pins"]) {
      Study::Pin pin;
      if (p["name"]) pin.name = p["name"].as<std::string>();
      if (p["visible"]) pin.visible = p["visible"].as<bool>();
      if (p["overrides"]) pin.overrides = p["overrides"].as<std::vector<std::string>>();
      s.pins.push_back(pin);
    }
  } catch (const YAML::Exception& ex) {
    throw std::runtime_error("line " + std::to_string(b + 1) +
                             ": the kvfleet-gui study block is not a study: " + ex.what());
  }
  *found = true;
  return s;
}

bool is_default(const Study& s) {
  const Study d;
  return s.slo_s == d.slo_s && s.refused_pct == d.refused_pct && s.metric == d.metric &&
         s.compare_key.empty() && s.pins.empty();
}

std::string without_study(const std::string& text) {
  auto lines = split_lines(text);
  const auto [b, e] = block(lines);
  if (b < 0) return text;
  lines.erase(lines.begin() + b, lines.begin() + e);
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

std::string with_study(const std::string& text, const Study& s) {
  std::string out = without_study(text);
  if (!out.empty() && out.back() != '\n') out += "\n";
  YAML::Emitter em;
  em << YAML::BeginMap;
  em << YAML::Key << "slo_s" << YAML::Value << s.slo_s;
  em << YAML::Key << "refused_pct" << YAML::Value << s.refused_pct;
  em << YAML::Key << "metric" << YAML::Value << s.metric;
  if (!s.compare_key.empty()) {
    em << YAML::Key << "compare" << YAML::Value << YAML::BeginMap;
    em << YAML::Key << "key" << YAML::Value << s.compare_key;
    em << YAML::Key << "values" << YAML::Value << YAML::Flow << s.compare_values;
    em << YAML::EndMap;
  }
  if (!s.pins.empty()) {
    em << YAML::Key << "pins" << YAML::Value << YAML::BeginSeq;
    for (const auto& p : s.pins) {
      em << YAML::BeginMap;
      em << YAML::Key << "name" << YAML::Value << p.name;
      em << YAML::Key << "visible" << YAML::Value << p.visible;
      em << YAML::Key << "overrides" << YAML::Value << YAML::Flow << p.overrides;
      em << YAML::EndMap;
    }
    em << YAML::EndSeq;
  }
  em << YAML::EndMap;
  out += std::string(kBegin) + "\n";
  for (const auto& l : split_lines(em.c_str())) out += (l.empty() ? "#" : "# " + l) + "\n";
  out += std::string(kEnd) + "\n";
  return out;
}

}  // namespace kvfleet::gui
