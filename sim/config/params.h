#pragma once
// Parameters are declared where they are used (CONVENTIONS.md): each configuration struct has
//
//   template <class V> void visit(V& v) {
//     v.param("max_num_seqs", max_num_seqs, {.unit = "sequences", .desc = "...", .min = 1});
//   }
//
// and three visitors walk that one declaration: Reader (YAML -> struct, with type and range
// checks and unknown-key detection, errors naming file, line and key), Writer (struct -> resolved
// YAML, defaults filled in) and Documenter (the scenario reference in docs/scenarios.md). The
// default of each parameter is the value the struct's default constructor gives it.
//
// Components chosen by name (`impl:`) are held as ImplSpec and built through a Registry: adding an
// implementation is one new class plus one registration line.
#include <yaml-cpp/yaml.h>

#include <concepts>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/error.h"

namespace kvfleet::sim::config {

// Attributes of one parameter. Designated initializers keep declarations readable:
// {.unit = "s", .desc = "...", .positive = true}.
struct Attr {
  std::string_view unit = "";
  std::string_view desc = "";
  std::optional<double> min = std::nullopt;    // inclusive lower bound (numbers)
  std::optional<double> max = std::nullopt;    // inclusive upper bound (numbers)
  bool positive = false;                       // strictly greater than zero (numbers)
  std::vector<std::string_view> choices = {};  // allowed values (strings)
  bool path = false;          // a file path, resolved relative to the scenario file's folder
  bool required = false;      // must be given (no usable default)
  std::string_view why = "";  // why min/max are what they are (said when a value is refused)
  // A short name for screens (the GUI's panel, legends and tables): "Max running sequences" for
  // max_num_seqs. Empty: screens show the key. It may name the unit's noun ("Concurrent users"),
  // and then screens do not repeat the unit.
  std::string_view label = "";
};

// A parameter's range as checked: its own min and max, else the range every parameter of its
// unit has (unit_range), with the reason.
struct Range {
  std::optional<double> min, max;
  std::string_view why_min, why_max;
};
Range effective_range(const Attr& a);

// The range every parameter of a unit has unless its declaration narrows it: seconds end where
// the simulated clock does, token counts fit the engine's 32-bit counters, hardware numbers stay
// within a thousand times today's largest parts, and so on (docs/scenarios.md lists them).
struct UnitRange {
  std::string_view unit;
  std::optional<double> min, max;
  std::string_view why;
};
const std::vector<UnitRange>& unit_ranges();

// A component chosen by name. `params` is the component's resolved map (with `impl` and every
// default filled in) once a Reader has checked it.
struct ImplSpec {
  std::string impl;
  YAML::Node params;
};

// Where keys come from: the scenario file, or --set overrides on the command line.
struct Source {
  std::string file;                              // as given by the user
  std::string base_dir;                          // folder for relative paths
  std::map<std::string, std::string> overrides;  // canonical key path -> "--set key=value"

  // "file:line" for a node at `path`, or the --set text that put it there.
  std::string where(const YAML::Node& node, const std::string& path) const;
};

class Reader;
class Writer;
class Documenter;

template <class T>
concept Visitable = requires(T t, Reader& r) {
  t.visit(r);
};

// Named implementations of one interface. `Args` are what the simulation passes to constructors.
class RegistryBase {
 public:
  struct Entry {
    std::string name;
    std::string description;
    // Checks `node` (a map holding `impl`) and returns it resolved, defaults filled in.
    std::function<YAML::Node(const YAML::Node&, const std::string&, const Source&)> resolve;
    std::function<void(Documenter&)> document;
  };

  RegistryBase(std::string interface_name, std::string default_impl)
      : interface_(std::move(interface_name)), default_(std::move(default_impl)) {}
  virtual ~RegistryBase() = default;

  const std::string& interface_name() const { return interface_; }
  const std::string& default_impl() const { return default_; }
  const Entry* find(std::string_view name) const;
  std::vector<std::string> names() const;
  const std::vector<Entry>& entries() const { return entries_; }

 protected:
  std::vector<Entry> entries_;

 private:
  std::string interface_;
  std::string default_;
};

// A registry's names as the choices of a plain string parameter (a component without parameters
// chosen by name, such as engine.scheduling_policy).
std::vector<std::string_view> choices_of(const RegistryBase& reg);

// ---------------------------------------------------------------------------------------------
// Reader: YAML map -> struct.
class Reader {
 public:
  Reader(const YAML::Node& node, std::string path, const Source& src);

  void param(std::string_view name, std::int64_t& v, const Attr& a = {});
  void param(std::string_view name, int& v, const Attr& a = {});
  void param(std::string_view name, double& v, const Attr& a = {});
  void param(std::string_view name, bool& v, const Attr& a = {});
  void param(std::string_view name, std::string& v, const Attr& a = {});
  void param(std::string_view name, std::vector<double>& v, const Attr& a = {});
  // A list of scalars as their text (numbers as written).
  void param(std::string_view name, std::vector<std::string>& v, const Attr& a = {});
  template <Visitable T>
  void param(std::string_view name, T& v, const Attr& a = {});
  template <Visitable T>
  void param(std::string_view name, std::vector<T>& v, const Attr& a = {});
  void impl(std::string_view name, ImplSpec& v, const RegistryBase& reg, const Attr& a = {});

  // Throws InputError for any key of the map that no param() asked for.
  void finish() const;

  // Reads a whole struct from `node` (a map), checking unknown keys.
  template <Visitable T>
  static void read(const YAML::Node& node, const std::string& path, const Source& src, T& out) {
    Reader r(node, path, src);
    out.visit(r);
    r.finish();
  }

  [[noreturn]] void fail(const YAML::Node& at, const std::string& key_path,
                         const std::string& problem) const;
  // Fails naming key `name` of this map (its line when present, else the map's).
  [[noreturn]] void fail_key(std::string_view name, const std::string& problem) const;
  const Source& source() const { return src_; }
  const YAML::Node& node() const { return node_; }
  std::string child_path(std::string_view name) const;

 private:
  // The child node, or an undefined node when absent or null. Records the key as known.
  YAML::Node child(std::string_view name);
  // The same for a value (number, text, list of numbers): a key given with no value is an error,
  // not the default.
  YAML::Node value_child(std::string_view name);
  void check_number(const YAML::Node& n, const std::string& path, double v, const Attr& a) const;

  YAML::Node node_;
  std::string path_;
  const Source& src_;
  std::vector<std::string> seen_;
};

// ---------------------------------------------------------------------------------------------
// Writer: struct -> YAML map (the resolved scenario stored in every result file).
class Writer {
 public:
  Writer() : node_(YAML::NodeType::Map) {}
  void param(std::string_view name, const std::int64_t& v, const Attr& = {});
  void param(std::string_view name, const int& v, const Attr& = {});
  void param(std::string_view name, const double& v, const Attr& = {});
  void param(std::string_view name, const bool& v, const Attr& = {});
  void param(std::string_view name, const std::string& v, const Attr& = {});
  void param(std::string_view name, const std::vector<double>& v, const Attr& = {});
  void param(std::string_view name, const std::vector<std::string>& v, const Attr& = {});
  template <Visitable T>
  void param(std::string_view name, const T& v, const Attr& = {}) {
    node_[std::string(name)] = write(v);
  }
  template <Visitable T>
  void param(std::string_view name, const std::vector<T>& v, const Attr& = {}) {
    YAML::Node seq(YAML::NodeType::Sequence);
    for (const auto& e : v) seq.push_back(write(e));
    node_[std::string(name)] = seq;
  }
  void impl(std::string_view name, const ImplSpec& v, const RegistryBase&, const Attr& = {}) {
    node_[std::string(name)] = YAML::Clone(v.params);
  }

  template <Visitable T>
  static YAML::Node write(const T& v) {
    Writer w;
    const_cast<T&>(v).visit(w);  // visit() does not modify under a Writer
    return w.node_;
  }

 private:
  YAML::Node node_;
};

// ---------------------------------------------------------------------------------------------
// Documenter: the scenario reference, generated from the declarations.
class Documenter {
 public:
  struct Row {
    std::string key, type, unit, default_value, description;
    std::string label;                 // Attr::label ("" when the declaration has none)
    std::string kind;                  // integer, number, boolean, string, list...
    std::vector<std::string> choices;  // allowed values, when the declaration names them
  };
  struct Section {
    std::string title;  // e.g. "workload.arrival: impl poisson"
    std::string description;
    std::vector<Row> rows;
  };

  explicit Documenter(std::string prefix = "") : prefix_(std::move(prefix)) {}

  void param(std::string_view name, const std::int64_t& v, const Attr& a = {});
  void param(std::string_view name, const int& v, const Attr& a = {});
  void param(std::string_view name, const double& v, const Attr& a = {});
  void param(std::string_view name, const bool& v, const Attr& a = {});
  void param(std::string_view name, const std::string& v, const Attr& a = {});
  void param(std::string_view name, const std::vector<double>& v, const Attr& a = {});
  void param(std::string_view name, const std::vector<std::string>& v, const Attr& a = {});
  template <Visitable T>
  void param(std::string_view name, const T& v, const Attr& a = {}) {
    add(name, "map", a, "");
    Documenter sub(key(name) + ".");
    const_cast<T&>(v).visit(sub);
    merge(sub);
  }
  template <Visitable T>
  void param(std::string_view name, const std::vector<T>& v, const Attr& a = {}) {
    add(name, "list of maps", a, v.empty() ? "[]" : "");
    Documenter sub(key(name) + "[].");
    T element{};
    element.visit(sub);
    merge(sub);
  }
  void impl(std::string_view name, const ImplSpec& v, const RegistryBase& reg, const Attr& a = {});

  // All rows of the top-level struct, then one section per implementation of each interface met.
  const std::vector<Row>& rows() const { return rows_; }
  const std::vector<Section>& sections() const { return sections_; }

 private:
  std::string key(std::string_view name) const { return prefix_ + std::string(name); }
  void add(std::string_view name, std::string type, const Attr& a, std::string def);
  void merge(const Documenter& sub);

  std::string prefix_;
  std::vector<Row> rows_;
  std::vector<Section> sections_;
  // The documenter whose impl() made this one, and the registry it was expanding: a registry
  // whose implementations take one of its own kind (a mix of length distributions) is expanded
  // once, not forever.
  const Documenter* parent_ = nullptr;
  const RegistryBase* expanding_ = nullptr;
};

// Markdown for a struct's documentation (the scenario reference).
std::string to_markdown(const Documenter& d);

// Shortest decimal text that reads back as the same double ("0.1", not "0.10000000000000001").
std::string format_double(double v);
// A parameter's choices as its messages list them: "a, b, c".
std::string describe_choices(const std::vector<std::string_view>& choices);

// ---------------------------------------------------------------------------------------------
// Registry of named implementations of `Iface`, each constructed as Impl(const Impl::Config&,
// Args...). Impl::Config is Visitable.
template <class Iface, class... Args>
class Registry : public RegistryBase {
 public:
  using RegistryBase::RegistryBase;

  template <class Impl>
  void add(std::string name, std::string description) {
    Entry e;
    e.name = name;
    e.description = std::move(description);
    e.resolve = [name](const YAML::Node& node, const std::string& path, const Source& src) {
      typename Impl::Config cfg;
      Reader r(node, path, src);
      std::string impl_name;
      r.param("impl", impl_name);
      cfg.visit(r);
      r.finish();
      if constexpr (requires { cfg.check(r); }) cfg.check(r);
      YAML::Node out = Writer::write(cfg);
      YAML::Node resolved(YAML::NodeType::Map);
      resolved["impl"] = name;
      for (auto it = out.begin(); it != out.end(); ++it) resolved[it->first] = it->second;
      return resolved;
    };
    e.document = [](Documenter& d) {
      typename Impl::Config cfg;
      cfg.visit(d);
    };
    entries_.push_back(std::move(e));
    makers_.push_back([](const YAML::Node& resolved, Args... args) -> std::unique_ptr<Iface> {
      typename Impl::Config cfg;
      Source src;
      Reader r(resolved, "", src);
      std::string impl_name;
      r.param("impl", impl_name);
      cfg.visit(r);
      return std::make_unique<Impl>(cfg, args...);
    });
  }

  // Builds the implementation named in a resolved ImplSpec.
  std::unique_ptr<Iface> make(const ImplSpec& spec, Args... args) const {
    for (std::size_t i = 0; i < entries_.size(); ++i)
      if (entries_[i].name == spec.impl) return makers_[i](spec.params, args...);
    throw std::logic_error("registry " + interface_name() + ": no implementation '" + spec.impl +
                           "' (the spec was not resolved by a Reader)");
  }
  // Builds the implementation `name` of a component without parameters, chosen by a plain
  // string parameter (see choices_of).
  std::unique_ptr<Iface> make(const std::string& name, Args... args) const {
    ImplSpec spec;
    spec.impl = name;
    spec.params["impl"] = name;
    return make(spec, args...);
  }

 private:
  std::vector<std::function<std::unique_ptr<Iface>(const YAML::Node&, Args...)>> makers_;
};

// ---------------------------------------------------------------------------------------------
template <Visitable T>
void Reader::param(std::string_view name, T& v, const Attr& a) {
  YAML::Node n = child(name);
  const std::string p = child_path(name);
  if (!n.IsDefined()) {
    if (a.required) fail(node_, p, "missing (required)");
    YAML::Node empty(YAML::NodeType::Map);
    read(empty, p, src_, v);
    return;
  }
  if (!n.IsMap()) fail(n, p, "expected a map of keys");
  read(n, p, src_, v);
  if constexpr (requires { v.check(*this); }) {
    Reader sub(n, p, src_);
    v.check(sub);
  }
}

template <Visitable T>
void Reader::param(std::string_view name, std::vector<T>& v, const Attr& a) {
  YAML::Node n = child(name);
  const std::string p = child_path(name);
  if (!n.IsDefined()) {
    if (a.required) fail(node_, p, "missing (required)");
    return;
  }
  if (!n.IsSequence()) fail(n, p, "expected a list");
  v.clear();
  for (std::size_t i = 0; i < n.size(); ++i) {
    const std::string ep = p + "[" + std::to_string(i) + "]";
    if (!n[i].IsMap()) fail(n[i], ep, "expected a map of keys");
    T e{};
    read(n[i], ep, src_, e);
    if constexpr (requires { e.check(*this); }) {
      Reader sub(n[i], ep, src_);
      e.check(sub);
    }
    v.push_back(std::move(e));
  }
  if (a.required && v.empty()) fail(n, p, "must not be empty");
}

// Reads a whole YAML document into a Visitable struct, checking every key.
template <Visitable T>
T read_document(const YAML::Node& root, const Source& src) {
  T out{};
  if (!root.IsMap()) throw InputError(src.file, "", "expected a YAML map at the top level");
  Reader::read(root, "", src, out);
  if constexpr (requires(Reader & r) { out.check(r); }) {
    Reader r(root, "", src);
    out.check(r);
  }
  return out;
}

// Parses YAML text from a file or the command line (`name` is how messages call it) into a tree
// that the visitors can trust: InputError names file:line for a syntax error, a duplicated key in
// a map (YAML says keys are unique; yaml-cpp would keep the first silently), a key that is not a
// plain scalar (`? [1, 2]`), and nesting deeper than kMaxYamlDepth.
inline constexpr int kMaxYamlDepth = 64;
inline constexpr std::size_t kMaxYamlNodes = 1'000'000;
YAML::Node parse_yaml(const std::string& text, const std::string& name);
// Reads and parses a YAML file (a regular file of at most 16 MiB; see io/input_file.h).
YAML::Node load_yaml_file(const std::string& path, const std::string& kind);

// The canonical spelling of a key path ("pools.0.replicas" -> "pools[0].replicas"); throws
// InputError(where, path, ...) for an empty key, an unclosed '[' or a bad list index.
std::string canonical_key(const std::string& path, const std::string& where);

// Applies one "--set key.path=value" override to a YAML tree. Key paths use dots and either
// `name[2]` or `name.2` for list elements. Records the canonical path in `src.overrides`.
// Setting a component's `impl` to another implementation than the one its section names drops
// the section's other parameters (they belong to the old implementation; the new one takes its
// defaults), except those set by earlier --set overrides: `--set a.impl=window --set a.turns=4`
// and `--set a.turns=4 --set a.impl=window` both give a window of 4 turns.
void apply_override(YAML::Node& root, const std::string& assignment, Source& src);

}  // namespace kvfleet::sim::config
