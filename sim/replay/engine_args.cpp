#include "sim/replay/engine_args.h"

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <regex>

#include "sim/config/params.h"
#include "sim/core/error.h"
#include "sim/io/input_file.h"
#include "sim/io/json.h"
#include "sim/replay/shell_words.h"

namespace kvfleet::sim {

using json = nlohmann::json;

const EngineArg* EngineArgs::find(const std::string& key) const {
  for (auto it = args.rbegin(); it != args.rend(); ++it)
    if (it->key == key) return &*it;
  return nullptr;
}

std::optional<long long> parse_vllm_int(const std::string& text) {
  static const std::regex plain(R"(^\s*([+-]?\d{1,18})\s*$)");
  static const std::regex suffixed(R"(^\s*(\d+(?:\.\d+)?)([kKmMgG])\s*$)");
  std::smatch m;
  if (std::regex_match(text, m, plain)) return std::stoll(m[1].str());
  if (!std::regex_match(text, m, suffixed)) return std::nullopt;
  const std::string num = m[1].str();
  const char s = m[2].str()[0];
  if (num.size() > 15) return std::nullopt;
  if (s == 'k' || s == 'm' || s == 'g') {  // decimal multipliers; decimals allowed
    const double mult = s == 'k' ? 1e3 : s == 'm' ? 1e6 : 1e9;
    return static_cast<long long>(std::stod(num) * mult);
  }
  if (num.find('.') != std::string::npos) return std::nullopt;  // binary: whole numbers only
  const long long mult = s == 'K' ? 1ll << 10 : s == 'M' ? 1ll << 20 : 1ll << 30;
  return std::stoll(num) * mult;
}

namespace {

// ---- mappings (JSON objects, YAML maps)
// ----------------------------------------------------------

std::string yaml_to_json_text(const YAML::Node& n);

json yaml_to_json(const YAML::Node& n) {
  if (n.IsMap()) {
    json o = json::object();
    for (const auto& kv : n) o[kv.first.Scalar()] = yaml_to_json(kv.second);
    return o;
  }
  if (n.IsSequence()) {
    json a = json::array();
    for (const auto& x : n) a.push_back(yaml_to_json(x));
    return a;
  }
  if (!n.IsScalar() || n.IsNull()) return nullptr;
  const std::string& s = n.Scalar();
  if (n.Tag() != "!") {  // a plain scalar: a number or boolean where YAML reads one
    if (const auto i = parse_vllm_int(s); i && s.find_first_of("kKmMgG") == std::string::npos)
      return *i;
    try {
      std::size_t used = 0;
      const double d = std::stod(s, &used);
      if (used == s.size() && std::isfinite(d)) return d;
    } catch (const std::exception&) {
    }
    bool b = false;
    if (YAML::convert<bool>::decode(n, b)) return b;
  }
  return s;
}

std::string yaml_to_json_text(const YAML::Node& n) { return yaml_to_json(n).dump(); }

// A JSON value as an argument's text: strings as they are, booleans and numbers as JSON writes
// them, lists and mappings as JSON.
std::string value_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

void add_arg(EngineArgs& a, const std::string& given, const std::string& value,
             const std::string& where) {
  EngineArg arg;
  arg.given = given;
  arg.value = value;
  arg.where = where;
  arg.spec = find_vllm_arg(given);
  arg.key = arg.spec ? arg.spec->name : normalise_arg_key(given);
  a.args.push_back(std::move(arg));
}

// The keys under which run records and harnesses nest a server's arguments.
const char* const kSections[] = {"engine_kwargs", "engine_args", "vllm_args",
                                 "vllm",          "args",        "server_args"};

void read_mapping(const json& root, const std::string& where, EngineArgs& a) {
  const json* args = &root;
  std::string prefix;
  for (const char* s : kSections)
    if (root.contains(s) && root[s].is_object()) {
      args = &root[s];
      prefix = std::string(s) + ".";
      break;
    }
  for (const auto& [k, v] : args->items()) {
    if (v.is_null()) continue;  // null: vLLM's default
    add_arg(a, k, value_text(v), where + ": " + prefix + k);
  }
  // A record's version, and its model beside a nested section.
  for (const char* k : {"vllm_version", "vllm_ver"})
    if (root.contains(k) && root[k].is_string())
      a.vllm_version = root[k].get<std::string>(), a.vllm_version_where = where + ": " + k;
  if (args != &root && !a.find("model") && root.contains("model") && root["model"].is_string())
    add_arg(a, "model", root["model"].get<std::string>(), where + ": model");
}

// ---- command lines
// ---------------------------------------------------------------------------------

bool is_bool_literal(const std::string& w) {
  static const char* const lits[] = {"true", "false", "True", "False", "TRUE", "FALSE",
                                     "1",    "0",     "yes",  "no",    "on",   "off"};
  for (const char* l : lits)
    if (w == l) return true;
  return false;
}

bool is_flag(const std::string& w) {
  if (w.size() < 2 || w[0] != '-') return false;
  try {  // a negative number is a value
    std::size_t used = 0;
    (void)std::stod(w, &used);
    return used != w.size();
  } catch (const std::exception&) {
    return true;
  }
}

std::string line_of(const std::string& where, const ShellWord& w) {
  return where + ":" + std::to_string(w.line);
}

// The flags (and a positional model) of one command's words from `from` on.
void read_flags(const ShellCommand& c, std::size_t from, bool model_positional,
                const std::string& where, EngineArgs& a) {
  for (std::size_t i = from; i < c.size(); ++i) {
    const std::string& w = c[i].text;
    if (w == "--") continue;
    if (!is_flag(w)) {
      if (model_positional && !a.find("model")) {
        add_arg(a, "model", w, line_of(where, c[i]));
      } else {
        add_arg(a, w, "", line_of(where, c[i]));  // a stray word: reported as not understood
        a.args.back().key = "(word) " + w;
      }
      continue;
    }
    std::string key = w, value;
    bool has_value = false;
    if (const auto eq = w.find('='); eq != std::string::npos)
      key = w.substr(0, eq), value = w.substr(eq + 1), has_value = true;
    // -O3, -O.level=3: the compilation level (vLLM's -O flag).
    if (key.size() >= 2 && key[0] == '-' && key[1] == 'O') {
      add_arg(a, "compilation_config", has_value ? key.substr(2) + "=" + value : key.substr(2),
              line_of(where, c[i]));
      a.args.back().given = key;
      continue;
    }
    const VllmArg* spec = find_vllm_arg(key);
    const std::string norm = normalise_arg_key(key);
    if (spec == nullptr && norm.rfind("no_", 0) == 0) {  // --no-enable-prefix-caching
      const VllmArg* pos = find_vllm_arg(norm.substr(3));
      if (pos != nullptr && pos->type == VllmArgType::kBool && !has_value) {
        add_arg(a, norm.substr(3), "false", line_of(where, c[i]));
        a.args.back().given = key;
        continue;
      }
    }
    if (!has_value) {
      const bool next_is_value = i + 1 < c.size() && !is_flag(c[i + 1].text);
      if (spec != nullptr && spec->type == VllmArgType::kBool) {
        if (next_is_value && is_bool_literal(c[i + 1].text)) value = c[++i].text, has_value = true;
      } else if (next_is_value) {
        value = c[++i].text, has_value = true;
      }
    }
    add_arg(a, key, has_value ? value : "true", line_of(where, c[i]));
  }
}

// Where a command starts vLLM: the index of its first argument, or npos.
struct VllmStart {
  std::size_t first_arg = std::string::npos;
  bool model_positional = false;
  std::string version;  // from a docker image tag
};

VllmStart vllm_start(const ShellCommand& c) {
  static const std::regex image(R"(^(?:[\w.\-:]+/)*vllm/vllm-openai(?::v?([0-9][\w.\-+]*))?$)");
  VllmStart s;
  for (std::size_t i = 0; i < c.size(); ++i) {
    const std::string& w = c[i].text;
    const std::string base = w.substr(w.rfind('/') == std::string::npos ? 0 : w.rfind('/') + 1);
    std::smatch m;
    if (base == "vllm" && i + 1 < c.size() && c[i + 1].text == "serve") {
      s.first_arg = i + 2, s.model_positional = true;
      return s;
    }
    if (w == "vllm.entrypoints.openai.api_server" || w == "vllm.entrypoints.api_server") {
      s.first_arg = i + 1;
      return s;
    }
    if (std::regex_match(w, m, image)) {
      s.first_arg = i + 1, s.version = m[1].str();
      return s;
    }
  }
  return s;
}

// `pip install vllm==0.11.0` (or uv pip, pip3) in a script.
std::string pip_version(const ShellCommand& c) {
  static const std::regex pinned(R"(^vllm==v?([0-9][\w.\-+]*)$)");
  std::smatch m;
  for (const ShellWord& w : c)
    if (std::regex_match(w.text, m, pinned)) return m[1].str();
  return "";
}

bool read_commands(const std::vector<ShellCommand>& cmds, const std::string& where,
                   const std::string& form, EngineArgs& a) {
  std::vector<std::pair<const ShellCommand*, VllmStart>> starts;
  for (const ShellCommand& c : cmds) {
    const VllmStart s = vllm_start(c);
    if (s.first_arg != std::string::npos) starts.emplace_back(&c, s);
    if (const std::string v = pip_version(c); !v.empty())
      a.vllm_version = v, a.vllm_version_where = line_of(where, c.front()) + " (pip install)";
  }
  if (starts.size() > 1) {
    std::string lines;
    for (const auto& [c, s] : starts)
      lines += (lines.empty() ? "" : ", ") + std::to_string(c->front().line);
    throw InputError(where, "",
                     "starts vLLM " + std::to_string(starts.size()) + " times (lines " + lines +
                         "): keep the command the measured server ran, or give it with "
                         "--engine-args");
  }
  a.form = form;
  if (starts.size() == 1) {
    const auto& [c, s] = starts.front();
    if (!s.version.empty())
      a.vllm_version = s.version,
      a.vllm_version_where = line_of(where, c->front()) + " (the vllm/vllm-openai image's tag)";
    read_flags(*c, s.first_arg, s.model_positional, where, a);
    return true;
  }
  // A file of flags alone (the arguments a harness appends to `vllm serve MODEL`).
  bool only_flags = !cmds.empty();
  for (const ShellCommand& c : cmds) only_flags = only_flags && is_flag(c.front().text);
  if (!only_flags) return false;
  for (const ShellCommand& c : cmds) read_flags(c, 0, false, where, a);
  a.form = form + " (flags only)";
  return true;
}

// Kubernetes manifests and Helm values: a container's command and args lists.
void find_container_words(const YAML::Node& n, std::vector<ShellCommand>& out, int depth) {
  if (depth > 32) return;
  if (n.IsSequence()) {
    for (const auto& x : n) find_container_words(x, out, depth + 1);
    return;
  }
  if (!n.IsMap()) return;
  ShellCommand words;
  for (const char* k : {"command", "args"}) {
    const YAML::Node l = n[k];
    if (!l || !l.IsSequence()) continue;
    for (const auto& x : l)
      if (x.IsScalar()) {
        // A `sh -c "vllm serve …"` container: the script is one word; its words are split.
        for (const ShellCommand& c : shell_commands(x.Scalar(), "manifest"))
          for (const ShellWord& w : c) words.push_back({w.text, x.Mark().line + 1});
      }
  }
  if (!words.empty()) out.push_back(words);
  for (const auto& kv : n) find_container_words(kv.second, out, depth + 1);
}

}  // namespace

EngineArgs parse_engine_args(const std::string& text, const std::string& where) {
  EngineArgs a;
  a.file = where;
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos)
    throw InputError(where, "", "is empty: no engine arguments in it");
  if (text[first] == '{') {
    const json j = parse_json(text, where);
    if (!j.is_object()) throw InputError(where, "", "must be a JSON object of engine arguments");
    a.form = "a JSON mapping";
    read_mapping(j, where, a);
    return a;
  }
  std::string yaml_problem;
  try {
    const YAML::Node y = config::parse_yaml(text, where);
    if (y.IsMap()) {
      std::vector<ShellCommand> containers;
      find_container_words(y, containers, 0);
      if (!containers.empty() &&
          read_commands(containers, where, "a Kubernetes manifest's container command", a))
        return a;
      a.form = "a YAML mapping";
      read_mapping(yaml_to_json(y), where, a);
      return a;
    }
  } catch (const InputError& e) {
    yaml_problem = e.what();
  } catch (const YAML::Exception& e) {
    yaml_problem = e.what();
  }
  if (read_commands(shell_commands(text, where), where, "a command line", a)) return a;
  throw InputError(where, "",
                   "is neither a mapping of engine arguments (JSON or YAML" +
                       (yaml_problem.empty() ? std::string() : ": " + yaml_problem) +
                       ") nor a command line or script that starts vLLM (`vllm serve MODEL "
                       "--flag value`, `python -m vllm.entrypoints.openai.api_server`, "
                       "`docker run … vllm/vllm-openai`) or holds only its flags");
}

EngineArgs read_engine_args(const std::string& path) {
  return parse_engine_args(read_input_file(path, "engine arguments", 1u << 20), path);
}

}  // namespace kvfleet::sim
