#include "sim/config/yaml_edit.h"

#include <yaml-cpp/yaml.h>

#include <cstddef>

#include "sim/config/params.h"
#include "sim/core/error.h"

namespace kvfleet::sim::config {

namespace {

struct Token {
  std::string key;  // a mapping key, or
  long index = -1;  // a list index
};

// "a.b[2].c" (canonical spelling) -> a, b, [2], c.
std::vector<Token> tokens(const std::string& canon) {
  std::vector<Token> out;
  std::size_t i = 0;
  while (i < canon.size()) {
    if (canon[i] == '.') {
      ++i;
      continue;
    }
    if (canon[i] == '[') {
      const std::size_t end = canon.find(']', i);
      out.push_back({"", std::stol(canon.substr(i + 1, end - i - 1))});
      i = end + 1;
      continue;
    }
    const std::size_t end = canon.find_first_of(".[", i);
    out.push_back({canon.substr(i, end == std::string::npos ? end : end - i)});
    i = end == std::string::npos ? canon.size() : end;
  }
  return out;
}

bool block(const YAML::Node& n) { return n.Style() != YAML::EmitterStyle::Flow; }

// The end of a scalar's characters starting at `pos`: a quoted one to its closing quote, a plain
// one to the end of its line or a comment. npos where the value is not one line of plain or
// quoted text (block scalars, anchors, aliases, tags).
std::size_t scalar_end(const std::string& t, std::size_t pos, bool in_flow) {
  if (pos >= t.size()) return std::string::npos;
  const char c = t[pos];
  if (c == '|' || c == '>' || c == '&' || c == '*' || c == '!' || c == '\n')
    return std::string::npos;
  if (c == '"' || c == '\'') {
    for (std::size_t i = pos + 1; i < t.size() && t[i] != '\n'; ++i) {
      if (c == '"' && t[i] == '\\') {
        ++i;
      } else if (t[i] == c) {
        if (c == '\'' && i + 1 < t.size() && t[i + 1] == '\'') {
          ++i;  // '' inside single quotes
          continue;
        }
        return i + 1;
      }
    }
    return std::string::npos;  // the closing quote is on another line
  }
  std::size_t end = pos;
  while (end < t.size() && t[end] != '\n' && !(t[end] == '#' && end > pos && t[end - 1] == ' ') &&
         !(in_flow && (t[end] == ',' || t[end] == '}' || t[end] == ']')))
    ++end;
  while (end > pos && (t[end - 1] == ' ' || t[end - 1] == '\t')) --end;
  // A plain scalar continued on the next, deeper line would be folded into this one.
  return end;
}

// Where lines under the block mapping `map` (its keys at column `col`, first key on `line`) can
// be added: after its last line that is neither blank nor a comment.
std::size_t block_end(const std::string& t, int line, int col) {
  std::size_t pos = 0;
  for (int l = 0; l < line && pos != std::string::npos; ++l) {
    pos = t.find('\n', pos);
    if (pos != std::string::npos) ++pos;
  }
  if (pos == std::string::npos) return t.size();
  // The first line holds the first key: content.
  std::size_t insert = t.find('\n', pos);
  if (insert == std::string::npos) return t.size();
  ++insert;
  for (std::size_t at = insert; at < t.size();) {
    std::size_t eol = t.find('\n', at);
    if (eol == std::string::npos) eol = t.size();
    const std::size_t first = t.find_first_not_of(" \t", at);
    const bool blank = first == std::string::npos || first >= eol || t[first] == '#';
    if (!blank) {
      if (static_cast<int>(first - at) < col || t.compare(first, 3, "---") == 0 ||
          t.compare(first, 3, "...") == 0)
        break;
      insert = eol < t.size() ? eol + 1 : t.size();
    }
    at = eol + 1;
  }
  return insert;
}

// The position of the '}' closing the flow mapping whose '{' is at `open` (quoted text and
// nested collections skipped); npos when the text ends first.
std::size_t flow_close(const std::string& t, std::size_t open) {
  int depth = 0;
  for (std::size_t i = open; i < t.size(); ++i) {
    const char c = t[i];
    if (c == '"' || c == '\'') {
      for (++i; i < t.size() && t[i] != c; ++i)
        if (c == '"' && t[i] == '\\') ++i;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return c == '}' ? i : std::string::npos;
    }
  }
  return std::string::npos;
}

std::optional<std::string> edit_one(const std::string& text, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) return std::nullopt;
  const std::string canon = canonical_key(assignment.substr(0, eq), "--set");
  std::string value = assignment.substr(eq + 1);
  const auto first = value.find_first_not_of(" \t"), last = value.find_last_not_of(" \t");
  if (first == std::string::npos || value.find('\n') != std::string::npos) return std::nullopt;
  value = value.substr(first, last - first + 1);
  if (!parse_yaml(value, "--set " + assignment).IsScalar()) return std::nullopt;
  const std::vector<Token> toks = tokens(canon);
  if (toks.empty()) return std::nullopt;

  const YAML::Node root = parse_yaml(text, "text");
  YAML::Node node;
  node.reset(root);
  std::size_t t = 0;
  bool in_flow = false;  // a flow collection on the path: plain values end at , } ]
  for (; t < toks.size(); ++t) {
    in_flow = in_flow || !block(node);
    if (toks[t].index >= 0) {
      if (!node.IsSequence() || static_cast<std::size_t>(toks[t].index) >= node.size())
        return std::nullopt;
      YAML::Node next = node[toks[t].index];
      node.reset(next);
      continue;
    }
    if (!node.IsMap() || (node.size() == 0 && block(node))) return std::nullopt;
    const YAML::Node child = node[toks[t].key];
    if (!child.IsDefined()) break;  // missing from here on: added below
    YAML::Node next = child;
    node.reset(next);
  }
  if (t == toks.size()) {  // the key is there: its value replaced
    if (!node.IsScalar()) return std::nullopt;
    const std::size_t pos = static_cast<std::size_t>(node.Mark().pos);
    const std::size_t end = scalar_end(text, pos, in_flow || !block(node));
    if (end == std::string::npos) return std::nullopt;
    return text.substr(0, pos) + value + text.substr(end);
  }
  for (std::size_t r = t; r < toks.size(); ++r)
    if (toks[r].index >= 0) return std::nullopt;  // a list the text lacks
  if (!block(node)) {
    // A flow mapping ({a: 1}): the missing keys go before its '}', nested in flow style.
    const std::size_t open = static_cast<std::size_t>(node.Mark().pos);
    if (open >= text.size() || text[open] != '{') return std::nullopt;
    const std::size_t close = flow_close(text, open);
    if (close == std::string::npos) return std::nullopt;
    std::string add = value;
    for (std::size_t r = toks.size(); r-- > t;)
      add = toks[r].key + ": " + (r + 1 == toks.size() ? add : "{" + add + "}");
    return text.substr(0, close) + (node.size() > 0 ? ", " : "") + add + text.substr(close);
  }
  // `node` is the deepest block mapping on the path: the missing keys go at its end, at its
  // keys' column, each further one two spaces deeper.
  const YAML::Mark m = node.begin()->first.Mark();
  if (m.line < 0 || m.column < 0) return std::nullopt;
  const std::size_t at = block_end(text, m.line, m.column);
  std::string lines;
  for (std::size_t r = t; r < toks.size(); ++r) {
    lines += std::string(static_cast<std::size_t>(m.column) + 2 * (r - t), ' ') + toks[r].key + ":";
    lines += r + 1 == toks.size() ? " " + value + "\n" : "\n";
  }
  std::string prefix = text.substr(0, at);
  if (!prefix.empty() && prefix.back() != '\n') prefix += '\n';
  return prefix + lines + text.substr(at);
}

}  // namespace

std::optional<std::string> edit_yaml_text(std::string text, const std::vector<std::string>& sets) {
  try {
    for (const auto& s : sets) {
      auto edited = edit_one(text, s);
      if (!edited) return std::nullopt;
      text = std::move(*edited);
    }
  } catch (const InputError&) {
    return std::nullopt;
  } catch (const YAML::Exception&) {
    return std::nullopt;
  }
  return text;
}

}  // namespace kvfleet::sim::config
