#pragma once
// A study saved with its scenario: the GUI's SLO line, refused share, compared quantity,
// comparison and pins, kept in the scenario file itself as a block of YAML comments, so that the
// file stays one scenario for kvfleet (which ignores comments: no run, golden output or
// --set changes) while the window reopens it as it was. The block sits at the end of the file
// between two marker lines; Save replaces it and keeps every other line.
#include <string>
#include <vector>

namespace kvfleet::gui {

struct Study {
  double slo_s = 2.0;
  double refused_pct = 1.0;
  std::string metric = "TTFT p99";
  std::string compare_key;
  std::vector<std::string> compare_values;
  struct Pin {
    std::string name;  // empty: named by what differs
    bool visible = true;
    std::vector<std::string> overrides;  // --set lines
  };
  std::vector<Pin> pins;
};

// Whether `s` says nothing beyond the window's defaults (SLO 2 s, 1% refused, TTFT p99, no
// comparison, no pins): Save then adds no block to a file that has none.
bool is_default(const Study& s);

// The study block of a scenario file's text, if it has one (`found` false otherwise). Throws
// std::runtime_error naming the line when the block is not a study (a damaged file).
Study read_study(const std::string& text, bool* found);
// The text with its study block replaced by (or extended with) `s`.
std::string with_study(const std::string& text, const Study& s);
// The text without a study block.
std::string without_study(const std::string& text);

}  // namespace kvfleet::gui
