// YAML as kvfleet reads it: one document, bounded in depth and size, keys checked; key paths
// ("pools[0].engine.block_size") and --set overrides applied to a parsed scenario.
#include "sim/config/params.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <sstream>

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>

#include "sim/config/params_detail.h"
#include "sim/io/input_file.h"

namespace kvfleet::sim::config {

namespace {

std::string at_line(const std::string& name, const YAML::Mark& m) {
  return m.line >= 0 ? name + ":" + std::to_string(m.line + 1) : name;
}

// Checks keys (plain scalars, each once per map), depth and size of a parsed tree. `visits`
// counts nodes as reached, an alias once per use, so that a few nested anchors that expand to
// billions of nodes (the "billion laughs") are refused instead of walked.
void check_tree(const YAML::Node& n, const std::string& name, const std::string& path, int depth,
                std::size_t& visits) {
  if (++visits > kMaxYamlNodes) {
    throw InputError(at_line(name, n.Mark()), path,
                     "the document expands to more than " + std::to_string(kMaxYamlNodes) +
                         " values (aliases of aliases?); a scenario needs a few hundred");
  }
  if (depth > kMaxYamlDepth) {
    throw InputError(at_line(name, n.Mark()), path,
                     "nested deeper than " + std::to_string(kMaxYamlDepth) +
                         " levels (a scenario needs fewer than ten)");
  }
  if (n.IsSequence()) {
    for (std::size_t i = 0; i < n.size(); ++i)
      check_tree(n[i], name, path + "[" + std::to_string(i) + "]", depth + 1, visits);
  } else if (n.IsMap()) {
    std::map<std::string, int> lines;
    for (auto it = n.begin(); it != n.end(); ++it) {
      const YAML::Node k = it->first;  // a copy: the iterator yields a temporary pair
      if (!k.IsScalar()) {
        throw InputError(at_line(name, k.Mark()), path,
                         "a key must be a plain name, not " + scalar_text(k));
      }
      const std::string key = k.Scalar();
      const std::string kp = path.empty() ? key : path + "." + key;
      const auto [seen, fresh] = lines.emplace(key, k.Mark().line + 1);
      if (!fresh) {
        throw InputError(at_line(name, k.Mark()), kp,
                         "duplicate key (first given at line " + std::to_string(seen->second) +
                             "; a key may appear once in a map)");
      }
      check_tree(it->second, name, kp, depth + 1, visits);
    }
  }
}

}  // namespace

namespace {

// Counts the documents of `text` up to two, noting where the second starts. yaml-cpp 0.7's LoadAll
// loops forever, allocating, when the parser stops at a token no node can start with (a ',' in
// block context: ", a", "-\n,"): each call of HandleNextDocument then reports one more empty
// document without consuming anything (fixed upstream in yaml-cpp 0.8.0, PR #1319). Asking for
// two documents at most keeps that bounded.
class DocumentCounter final : public YAML::EventHandler {
 public:
  int documents = 0;
  YAML::Mark second;
  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents == 2) second = mark;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// Refuses a stream of more than one document, or one the parser cannot read to its end.
void check_single_document(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentCounter count;
  while (count.documents < 2 && parser.HandleNextDocument(count)) {
  }
  if (count.documents < 2) return;
  const bool marker = text.starts_with("---") || text.find("\n---") != std::string::npos ||
                      text.find("\n...") != std::string::npos;
  if (marker)
    throw InputError(name, "",
                     "holds more than one YAML document (separated by ---); one is expected");
  throw InputError(at_line(name, count.second), "",
                   "YAML syntax: unexpected text at column " +
                       std::to_string(count.second.column + 1) +
                       " (a ',' outside [ ] or { }, or a value the parser cannot place)");
}

}  // namespace

YAML::Node parse_yaml(const std::string& text, const std::string& name) {
  YAML::Node root;
  try {
    check_single_document(text, name);
    root = YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    throw InputError(at_line(name, e.mark), "",
                     "nested deeper than " + std::to_string(kMaxYamlDepth) +
                         " levels (a scenario needs fewer than ten)");
  } catch (const YAML::Exception& e) {
    throw InputError(at_line(name, e.mark), "", "YAML syntax: " + e.msg);
  }
  std::size_t visits = 0;
  check_tree(root, name, "", 0, visits);
  return root;
}

YAML::Node load_yaml_file(const std::string& path, const std::string& kind) {
  return parse_yaml(read_input_file(path, kind, kMaxYamlFileBytes), path);
}

namespace {

struct KeyTok {
  std::string key;
  long index = -1;
};

// Tokenises "a.b[2].c" or "a.b.2.c" into keys and indices; `canon` is the canonical spelling
// ("a.b[2].c"). Throws InputError(where, path, ...) on an empty key, an unclosed '[' or a list
// index that is not a (small) number.
std::vector<KeyTok> parse_key_path(const std::string& path, const std::string& where,
                                   std::string& canon) {
  auto index = [&](const std::string& digits) -> long {
    if (digits.size() > 6)
      throw InputError(where, path, "list index " + digits + " is out of range");
    return std::stol(digits);
  };
  std::vector<KeyTok> toks;
  canon.clear();
  std::size_t i = 0;
  while (i < path.size()) {
    std::size_t j = path.find_first_of(".[", i);
    std::string part = path.substr(i, j == std::string::npos ? std::string::npos : j - i);
    if (part.empty() && !(j != std::string::npos && path[j] == '[' && !toks.empty()))
      throw InputError(where, path, "empty key in the path (two dots, or a dot at an end)");
    if (!part.empty()) {
      const bool numeric = std::all_of(part.begin(), part.end(), ::isdigit);
      if (numeric && !toks.empty()) {
        toks.push_back({"", index(part)});
        canon += "[" + std::to_string(toks.back().index) + "]";
      } else {
        toks.push_back({part, -1});
        canon += (canon.empty() ? "" : ".") + part;
      }
    }
    if (j == std::string::npos) break;
    if (path[j] == '[') {
      std::size_t k = path.find(']', j);
      if (k == std::string::npos) throw InputError(where, path, "unclosed '['");
      std::string idx = path.substr(j + 1, k - j - 1);
      if (idx.empty() || !std::all_of(idx.begin(), idx.end(), ::isdigit))
        throw InputError(where, path, "list index must be a number");
      toks.push_back({"", index(idx)});
      canon += "[" + std::to_string(toks.back().index) + "]";
      i = k + 1;
      if (i < path.size() && path[i] == '.') {
        ++i;
        if (i == path.size()) throw InputError(where, path, "empty key at the end of the path");
      }
    } else {
      i = j + 1;
      if (i == path.size()) throw InputError(where, path, "empty key at the end of the path");
    }
  }
  if (toks.empty() || toks.front().index >= 0) throw InputError(where, path, "empty key path");
  return toks;
}

}  // namespace

std::string canonical_key(const std::string& path, const std::string& where) {
  std::string canon;
  parse_key_path(path, where, canon);
  return canon;
}

namespace {

// `--set section.impl=NEW` where the section names another implementation: the old one's
// parameters go (the new one takes its defaults) except those that --set itself put there.
void clear_for_new_impl(YAML::Node& section, const std::string& section_path,
                        const YAML::Node& new_impl, const Source& src) {
  if (!section.IsMap() || !section["impl"].IsDefined() || !section["impl"].IsScalar()) return;
  if (!new_impl.IsScalar() || section["impl"].Scalar() == new_impl.Scalar()) return;
  std::vector<std::string> drop;
  for (const auto& kv : section) {
    const std::string k = kv.first.Scalar();
    if (k == "impl") continue;
    const std::string path = section_path + "." + k;
    const bool set_here = std::any_of(src.overrides.begin(), src.overrides.end(),
                                      [&](const auto& o) { return covers(path, o.first); });
    if (!set_here) drop.push_back(k);
  }
  for (const auto& k : drop) section.remove(k);
}

}  // namespace

void apply_override(YAML::Node& root, const std::string& assignment, Source& src) {
  const std::string text = "--set " + assignment;
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) throw InputError(text, "", "expected key.path=value");
  const std::string path = assignment.substr(0, eq);
  const std::string value = assignment.substr(eq + 1);
  if (value.find_first_not_of(" \t") == std::string::npos)
    throw InputError(text, path, "no value after '=' (write the value, e.g. " + path + "=64)");
  std::string canon;
  const std::vector<KeyTok> toks = parse_key_path(path, text, canon);
  // A quoted value is the quoted text and nothing after it (yaml-cpp would ignore the rest).
  const auto vfirst = value.find_first_not_of(" \t"), vlast = value.find_last_not_of(" \t");
  if ((value[vfirst] == '"' || value[vfirst] == '\'') &&
      (vlast == vfirst || value[vlast] != value[vfirst]))
    throw InputError(text, canon,
                     "a quoted value must end with its quote and hold nothing after it");

  YAML::Node parsed;
  try {
    parsed = parse_yaml(value, text);
  } catch (const InputError& e) {
    throw InputError(text, canon, "value does not parse as YAML: " + e.problem());
  }

  YAML::Node cur;
  cur.reset(root);
  std::string so_far;
  for (std::size_t t = 0; t < toks.size(); ++t) {
    const bool last = t + 1 == toks.size();
    const KeyTok& tk = toks[t];
    if (tk.index >= 0) {
      if (!cur.IsSequence() || static_cast<std::size_t>(tk.index) >= cur.size())
        throw InputError(text, so_far + "[" + std::to_string(tk.index) + "]",
                         "no such list element (the list has " +
                             std::to_string(cur.IsSequence() ? cur.size() : 0) + ")");
      so_far += "[" + std::to_string(tk.index) + "]";
      if (last) {
        cur[tk.index] = parsed;
      } else {
        YAML::Node next = cur[tk.index];
        cur.reset(next);
      }
    } else {
      so_far += (so_far.empty() ? "" : ".") + tk.key;
      if (cur.IsDefined() && !cur.IsMap() && !cur.IsNull())
        throw InputError(text, so_far, "cannot set a key inside a value that is not a map");
      if (last) {
        if (tk.key == "impl" && t > 0) {
          clear_for_new_impl(cur, so_far.substr(0, so_far.size() - std::string(".impl").size()),
                             parsed, src);
        }
        cur[tk.key] = parsed;
      } else {
        if (!cur[tk.key].IsDefined() || cur[tk.key].IsNull())
          cur[tk.key] = YAML::Node(YAML::NodeType::Map);
        YAML::Node next = cur[tk.key];
        cur.reset(next);
      }
    }
  }
  src.overrides[canon] = text;
}

}  // namespace kvfleet::sim::config
