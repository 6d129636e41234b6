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

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string join(const std::vector<std::string>& v, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? std::string(sep) : "") + v[i];
  return out;
}

}  // namespace

std::string describe_choices(const std::vector<std::string_view>& c) {
  std::string s;
  for (std::size_t i = 0; i < c.size(); ++i) s += (i ? ", " : "") + std::string(c[i]);
  return s;
}

std::string format_double(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, r.ptr);
  // Keep a number that YAML reads as a float recognisably numeric ("1e+20" is fine as is).
  return s;
}

std::string Source::where(const YAML::Node& node, const std::string& path) const {
  // A key set (or inside a map set) from the command line is reported as that --set: the most
  // specific one when several cover it (pools[0].engine={...} and pools[0].engine.block_size=0).
  const std::string* best = nullptr;
  std::size_t best_len = 0;
  for (const auto& [k, text] : overrides) {
    if (covers(k, path) && k.size() >= best_len) {
      best = &text;
      best_len = k.size();
    }
  }
  if (best) return *best;
  std::string w = file.empty() ? std::string("<scenario>") : file;
  if (node.IsDefined() && node.Mark().line >= 0) w += ":" + std::to_string(node.Mark().line + 1);
  return w;
}

const RegistryBase::Entry* RegistryBase::find(std::string_view name) const {
  for (const auto& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

std::vector<std::string_view> choices_of(const RegistryBase& reg) {
  std::vector<std::string_view> v;
  for (const auto& e : reg.entries()) v.emplace_back(e.name);
  return v;
}

std::vector<std::string> RegistryBase::names() const {
  std::vector<std::string> v;
  for (const auto& e : entries_) v.push_back(e.name);
  return v;
}

// ---------------------------------------------------------------------------------------------
Reader::Reader(const YAML::Node& node, std::string path, const Source& src)
    : node_(node), path_(std::move(path)), src_(src) {}

std::string Reader::child_path(std::string_view name) const {
  return path_.empty() ? std::string(name) : path_ + "." + std::string(name);
}

void Reader::fail(const YAML::Node& at, const std::string& key_path,
                  const std::string& problem) const {
  throw InputError(src_.where(at, key_path), key_path, problem);
}

void Reader::fail_key(std::string_view name, const std::string& problem) const {
  YAML::Node at = node_;
  if (node_.IsDefined() && node_.IsMap()) {
    const YAML::Node& cn = node_;
    YAML::Node c = cn[std::string(name)];
    if (c.IsDefined()) at.reset(c);
  }
  fail(at, child_path(name), problem);
}

YAML::Node Reader::child(std::string_view name) {
  seen_.emplace_back(name);
  if (!node_.IsDefined() || !node_.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  const YAML::Node& cn = node_;
  YAML::Node n = cn[std::string(name)];
  if (!n.IsDefined() || n.IsNull()) return YAML::Node(YAML::NodeType::Undefined);
  return n;
}

YAML::Node Reader::value_child(std::string_view name) {
  if (node_.IsDefined() && node_.IsMap()) {
    const YAML::Node& cn = node_;
    const YAML::Node n = cn[std::string(name)];
    if (n.IsDefined() && n.IsNull()) {
      seen_.emplace_back(name);
      YAML::Node at = n;  // a missing value has no place of its own: name the key's line
      for (auto it = cn.begin(); it != cn.end(); ++it)
        if (it->first.IsScalar() && it->first.Scalar() == name) at.reset(it->first);
      fail(at, child_path(name), "has no value (write one, or leave the key out for its default)");
    }
  }
  return child(name);
}

const std::vector<UnitRange>& unit_ranges() {
  static const std::vector<UnitRange> r = {
      {"s", std::nullopt, 1e9,
       "the simulated clock counts nanoseconds in 64 bits; times up to 1e9 s (31 years) keep "
       "every sum of them inside it"},
      {"requests/s", 1e-6, 1e7,
       "arrivals more than 1e6 s apart would leave the clock's range within a few thousand "
       "requests, and more than 1e7 per second fall below its resolution"},
      {"tokens", std::nullopt, 1e8,
       "token counts are 32-bit in the engine, and no model's context is near 1e8 tokens"},
      {"requests", std::nullopt, 1e8,
       "every request keeps a record of about 150 bytes; 1e8 requests need 15 GB"},
      {"sessions", std::nullopt, 1e7,
       "every session keeps its conversation's state; 1e7 sessions need gigabytes"},
      {"users", std::nullopt, 1e7, "every user keeps a session open"},
      {"$/hour", std::nullopt, 1e6, "a million dollars an hour per GPU"},
      {"replicas", std::nullopt, 10000,
       "each replica holds its own KV-cache tables and time series; simulate a representative "
       "slice of a larger fleet"},
      {"bytes", std::nullopt, 1e13, "10 TB: a thousand times today's largest GPU memory"},
      {"bytes/s", std::nullopt, 1e14, "100 TB/s: a thousand times today's fastest memory"},
      {"GB/s", std::nullopt, 1e5, "100 TB/s: a thousand times today's fastest link"},
      {"GiB", std::nullopt, 1e5, "100 TiB"},
      {"FLOP/s", std::nullopt, 1e18, "1 EFLOP/s: a thousand times today's largest GPU"},
      {"OP/s", std::nullopt, 1e18, "1 EOP/s: a thousand times today's largest GPU"},
      {"parameters", std::nullopt, 1e14, "a hundred times today's largest models"},
      {"elements", std::nullopt, 1e6, "model dimensions beyond 1e6 exceed any model"},
      {"heads", std::nullopt, 1e5, "beyond any model"},
      {"layers", std::nullopt, 1e5, "beyond any model"},
  };
  return r;
}

Range effective_range(const Attr& a) {
  Range r{a.min, a.max, a.min ? a.why : "", a.max ? a.why : ""};
  for (const auto& u : unit_ranges()) {
    if (u.unit != a.unit) continue;
    if (!r.min && u.min) r.min = u.min, r.why_min = u.why;
    if (!r.max && u.max) r.max = u.max, r.why_max = u.why;
  }
  return r;
}

void Reader::check_number(const YAML::Node& n, const std::string& p, double v,
                          const Attr& a) const {
  if (!std::isfinite(v)) fail(n, p, "must be a finite number");
  auto show = [](double x) { return format_double(x); };
  const Range r = effective_range(a);
  auto why = [](std::string_view w) { return w.empty() ? std::string() : ": " + std::string(w); };
  if (a.positive && !(v > 0)) fail(n, p, "must be > 0 (got " + show(v) + ")");
  if (r.min && v < *r.min)
    fail(n, p, "must be >= " + show(*r.min) + " (got " + show(v) + ")" + why(r.why_min));
  if (r.max && v > *r.max)
    fail(n, p, "must be <= " + show(*r.max) + " (got " + show(v) + ")" + why(r.why_max));
}

void Reader::param(std::string_view name, std::int64_t& v, const Attr& a) {
  YAML::Node n = value_child(name);
  const std::string p = child_path(name);
  if (!n.IsDefined()) {
    if (a.required) fail(node_, p, "missing (required)");
    return;
  }
  std::int64_t x = 0;
  bool ok = n.IsScalar();
  if (ok) {
    const std::string& s = n.Scalar();
    auto r = std::from_chars(s.data(), s.data() + s.size(), x);
    ok = r.ec == std::errc() && r.ptr == s.data() + s.size();
    if (!ok) {
      // Accept integral values written as floats ("1e6", "2048.0").
      try {
        double d = n.as<double>();
        if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e18) {
          x = static_cast<std::int64_t>(d);
          ok = true;
        }
      } catch (const YAML::Exception&) {
      }
    }
  }
  if (!ok) fail(n, p, "expected an integer, got " + scalar_text(n));
  check_number(n, p, static_cast<double>(x), a);
  v = x;
}

void Reader::param(std::string_view name, int& v, const Attr& a) {
  std::int64_t x = v;
  param(name, x, a);
  if (x > INT32_MAX || x < INT32_MIN) {
    const std::string p = child_path(name);
    fail(node_, p, "must be between -2147483648 and 2147483647 (got " + std::to_string(x) + ")");
  }
  v = static_cast<int>(x);
}

void Reader::param(std::string_view name, double& v, const Attr& a) {
  YAML::Node n = value_child(name);
  const std::string p = child_path(name);
  if (!n.IsDefined()) {
    if (a.required) fail(node_, p, "missing (required)");
    return;
  }
  double x = 0;
  bool ok = n.IsScalar();
  if (ok) {
    try {
      x = n.as<double>();
    } catch (const YAML::Exception&) {
      ok = false;
    }
  }
  if (!ok) fail(n, p, "expected a number, got " + scalar_text(n));
  check_number(n, p, x, a);
  v = x == 0 ? 0.0 : x;  // -0 reads as 0
}

void Reader::param(std::string_view name, bool& v, const Attr& a) {
  YAML::Node n = value_child(name);
  const std::string p = child_path(name);
  if (!n.IsDefined()) {
    if (a.required) fail(node_, p, "missing (required)");
    return;
  }
  bool ok = n.IsScalar();
  bool x = false;
  if (ok) {
    try {
      x = n.as<bool>();
    } catch (const YAML::Exception&) {
      ok = false;
    }
  }
  if (!ok) fail(n, p, "expected true or false, got " + scalar_text(n));
  v = x;
}

void Reader::param(std::string_view name, std::string& v, const Attr& a) {
  YAML::Node n = value_child(name);
  const std::string p = child_path(name);
  if (!n.IsDefined()) {
    if (a.required) fail(node_, p, "missing (required)");
    return;
  }
  if (!n.IsScalar()) fail(n, p, "expected a string, got " + scalar_text(n));
  std::string x = n.Scalar();
  if (!a.choices.empty() &&
      std::find(a.choices.begin(), a.choices.end(), std::string_view(x)) == a.choices.end())
    fail(n, p, "'" + x + "' is not one of: " + describe_choices(a.choices));
  if (a.path && !x.empty()) {
    std::filesystem::path fp(x);
    if (fp.is_relative() && !src_.base_dir.empty()) fp = std::filesystem::path(src_.base_dir) / fp;
    x = fp.lexically_normal().string();
  }
  v = x;
}

void Reader::param(std::string_view name, std::vector<double>& v, const Attr& a) {
  YAML::Node n = value_child(name);
  const std::string p = child_path(name);
  if (!n.IsDefined()) {
    if (a.required) fail(node_, p, "missing (required)");
    return;
  }
  if (!n.IsSequence()) fail(n, p, "expected a list of numbers");
  std::vector<double> x;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const std::string ep = p + "[" + std::to_string(i) + "]";
    double d = 0;
    try {
      d = n[i].as<double>();
    } catch (const YAML::Exception&) {
      fail(n[i], ep, "expected a number, got " + scalar_text(n[i]));
    }
    check_number(n[i], ep, d, a);
    x.push_back(d);
  }
  if (a.required && x.empty()) fail(n, p, "must not be empty");
  v = std::move(x);
}

void Reader::param(std::string_view name, std::vector<std::string>& v, const Attr& a) {
  YAML::Node n = value_child(name);
  const std::string p = child_path(name);
  if (!n.IsDefined()) {
    if (a.required) fail(node_, p, "missing (required)");
    return;
  }
  if (!n.IsSequence()) fail(n, p, "expected a list");
  std::vector<std::string> x;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const std::string ep = p + "[" + std::to_string(i) + "]";
    if (!n[i].IsScalar()) fail(n[i], ep, "expected a value, got " + scalar_text(n[i]));
    if (!a.choices.empty() && std::find(a.choices.begin(), a.choices.end(),
                                        std::string_view(n[i].Scalar())) == a.choices.end())
      fail(n[i], ep, "'" + n[i].Scalar() + "' is not one of: " + describe_choices(a.choices));
    x.push_back(n[i].Scalar());
  }
  if (a.required && x.empty()) fail(n, p, "must not be empty");
  v = std::move(x);
}

void Reader::impl(std::string_view name, ImplSpec& v, const RegistryBase& reg, const Attr& a) {
  YAML::Node n = child(name);
  const std::string p = child_path(name);
  YAML::Node m(YAML::NodeType::Map);
  if (!n.IsDefined()) {
    if (a.required) fail(node_, p, "missing (required)");
    if (v.impl.empty()) v.impl = reg.default_impl();
    m["impl"] = v.impl;
    n.reset(m);
  } else if (!n.IsMap()) {
    fail(n, p, "expected a map with 'impl: <name>' (one of: " + join(reg.names(), ", ") + ")");
  }
  std::string impl_name = v.impl.empty() ? reg.default_impl() : v.impl;
  const YAML::Node& cn = n;
  if (cn["impl"].IsDefined()) {
    if (!cn["impl"].IsScalar()) fail(cn["impl"], p + ".impl", "expected a name");
    impl_name = cn["impl"].Scalar();
  } else if (impl_name.empty()) {
    fail(n, p + ".impl", "missing: choose one of " + join(reg.names(), ", "));
  } else {
    YAML::Node copy = YAML::Clone(n);
    copy["impl"] = impl_name;
    n.reset(copy);
  }
  const auto* e = reg.find(impl_name);
  if (!e)
    fail(cn["impl"].IsDefined() ? cn["impl"] : n, p + ".impl",
         "unknown " + reg.interface_name() + " '" + impl_name +
             "' (one of: " + join(reg.names(), ", ") + ")");
  v.impl = impl_name;
  v.params = e->resolve(n, p, src_);
}

void Reader::finish() const {
  if (!node_.IsDefined() || !node_.IsMap()) return;
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    const std::string k = it->first.as<std::string>();
    if (std::find(seen_.begin(), seen_.end(), k) != seen_.end()) continue;
    std::string best;
    std::size_t best_d = 3;
    for (const auto& s : seen_) {
      std::size_t d = edit_distance(k, s);
      if (d < best_d) best_d = d, best = s;
    }
    std::string msg = "unknown key";
    if (!best.empty()) msg += "; did you mean '" + best + "'?";
    msg += " (known keys here: " + join(seen_, ", ") + ")";
    fail(it->first, child_path(k), msg);
  }
}

// ---------------------------------------------------------------------------------------------
void Writer::param(std::string_view name, const std::int64_t& v, const Attr&) {
  node_[std::string(name)] = v;
}
void Writer::param(std::string_view name, const int& v, const Attr&) {
  node_[std::string(name)] = v;
}
void Writer::param(std::string_view name, const double& v, const Attr&) {
  node_[std::string(name)] = format_double(v);
}
void Writer::param(std::string_view name, const bool& v, const Attr&) {
  node_[std::string(name)] = v;
}
void Writer::param(std::string_view name, const std::string& v, const Attr&) {
  node_[std::string(name)] = v;
}
void Writer::param(std::string_view name, const std::vector<double>& v, const Attr&) {
  YAML::Node seq(YAML::NodeType::Sequence);
  for (double d : v) seq.push_back(format_double(d));
  seq.SetStyle(YAML::EmitterStyle::Flow);
  node_[std::string(name)] = seq;
}

void Writer::param(std::string_view name, const std::vector<std::string>& v, const Attr&) {
  YAML::Node seq(YAML::NodeType::Sequence);
  for (const auto& x : v) seq.push_back(x);
  seq.SetStyle(YAML::EmitterStyle::Flow);
  node_[std::string(name)] = seq;
}

// ---------------------------------------------------------------------------------------------
void Documenter::add(std::string_view name, std::string type, const Attr& a, std::string def) {
  Row r;
  r.key = key(name);
  r.kind = type;
  for (const auto& c : a.choices) r.choices.emplace_back(c);
  if (!a.choices.empty()) type = "one of: " + describe_choices(a.choices);
  std::vector<std::string> cons;
  const Range range = effective_range(a);
  if (a.positive) cons.push_back("> 0");
  if (range.min) cons.push_back(">= " + format_double(*range.min));
  if (range.max) cons.push_back("<= " + format_double(*range.max));
  if (!cons.empty()) type += " (" + join(cons, ", ") + ")";
  if (a.path) type += ", path";
  r.type = std::move(type);
  r.unit = std::string(a.unit);
  r.default_value = a.required ? "required" : std::move(def);
  r.description = std::string(a.desc);
  r.label = std::string(a.label);
  rows_.push_back(std::move(r));
}

void Documenter::merge(const Documenter& sub) {
  rows_.insert(rows_.end(), sub.rows_.begin(), sub.rows_.end());
  for (const auto& s : sub.sections_) {
    if (std::none_of(sections_.begin(), sections_.end(),
                     [&](const Section& x) { return x.title == s.title; }))
      sections_.push_back(s);
  }
}

void Documenter::param(std::string_view name, const std::int64_t& v, const Attr& a) {
  add(name, "integer", a, std::to_string(v));
}
void Documenter::param(std::string_view name, const int& v, const Attr& a) {
  add(name, "integer", a, std::to_string(v));
}
void Documenter::param(std::string_view name, const double& v, const Attr& a) {
  add(name, "number", a, format_double(v));
}
void Documenter::param(std::string_view name, const bool& v, const Attr& a) {
  add(name, "boolean", a, v ? "true" : "false");
}
void Documenter::param(std::string_view name, const std::string& v, const Attr& a) {
  add(name, "string", a, v.empty() ? "\"\"" : v);
}
void Documenter::param(std::string_view name, const std::vector<double>& v, const Attr& a) {
  std::string def = "[";
  for (std::size_t i = 0; i < v.size(); ++i) def += (i ? ", " : "") + format_double(v[i]);
  add(name, "list of numbers", a, def + "]");
}

void Documenter::param(std::string_view name, const std::vector<std::string>& v, const Attr& a) {
  std::string def = "[";
  for (std::size_t i = 0; i < v.size(); ++i) def += (i ? ", " : "") + v[i];
  add(name, "list", a, def + "]");
}

void Documenter::impl(std::string_view name, const ImplSpec& v, const RegistryBase& reg,
                      const Attr& a) {
  Attr ca = a;
  add(name, "map: impl = " + join(reg.names(), " | "), ca,
      "impl: " + (v.impl.empty() ? reg.default_impl() : v.impl));
  rows_.back().kind = "impl";
  rows_.back().choices = reg.names();
  for (const Documenter* d = this; d; d = d->parent_)
    if (d->expanding_ == &reg) return;  // documented where it first appears
  for (const auto& e : reg.entries()) {
    Documenter sub(key(name) + ".");
    sub.parent_ = this;
    sub.expanding_ = &reg;
    e.document(sub);
    Section s;
    s.title = key(name) + " — impl: " + e.name;
    s.description = e.description;
    s.rows = sub.rows_;
    if (std::none_of(sections_.begin(), sections_.end(),
                     [&](const Section& x) { return x.title == s.title; }))
      sections_.push_back(std::move(s));
    for (const auto& ss : sub.sections_)
      if (std::none_of(sections_.begin(), sections_.end(),
                       [&](const Section& x) { return x.title == ss.title; }))
        sections_.push_back(ss);
  }
}

namespace {
std::string md_escape(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else
      out += c;
  }
  return out;
}
void table(std::ostringstream& o, const std::vector<Documenter::Row>& rows) {
  o << "| key | type | unit | default | description |\n|---|---|---|---|---|\n";
  for (const auto& r : rows)
    o << "| `" << r.key << "` | " << md_escape(r.type) << " | " << md_escape(r.unit) << " | `"
      << md_escape(r.default_value) << "` | " << md_escape(r.description) << " |\n";
}
}  // namespace

std::string to_markdown(const Documenter& d) {
  std::ostringstream o;
  table(o, d.rows());
  for (const auto& s : d.sections()) {
    o << "\n### `" << s.title.substr(0, s.title.find(" — ")) << "`"
      << s.title.substr(s.title.find(" — ")) << "\n\n"
      << s.description << "\n\n";
    if (s.rows.empty())
      o << "No parameters.\n";
    else
      table(o, s.rows);
  }
  return o.str();
}

}  // namespace kvfleet::sim::config
