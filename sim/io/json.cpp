#include "sim/io/json.h"

#include <cmath>
#include <set>
#include <vector>

#include "sim/core/error.h"

namespace kvfleet::sim {

using json = nlohmann::json;

namespace {

// The library's message without its "[json.exception.parse_error.101] " tag: the user needs
// what is wrong and where, not the library's error number.
std::string untagged(std::string what) {
  if (what.rfind("[json.exception.", 0) == 0 && what.find("] ") != std::string::npos)
    what = what.substr(what.find("] ") + 2);
  return what;
}

// Raised inside the parser's callback; turned into an InputError once parsing has unwound.
struct Refused {
  std::string key, problem;
};

}  // namespace

std::string quote_python_nonfinite(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      out += c;
      continue;
    }
    bool replaced = false;
    for (std::string_view w :
         {std::string_view("-Infinity"), std::string_view("Infinity"), std::string_view("NaN")}) {
      if (text.compare(i, w.size(), w) == 0) {
        out += '"';
        out += w;
        out += '"';
        i += w.size() - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += c;
  }
  return out;
}

nlohmann::json parse_json(std::string_view text_in, const std::string& where,
                          const JsonLimits& limits) {
  std::string quoted;
  if (limits.python_nonfinite) quoted = quote_python_nonfinite(text_in);
  const std::string_view text = limits.python_nonfinite ? std::string_view(quoted) : text_in;
  // One frame per open object or array: the keys seen (objects), and the key or index path.
  struct Frame {
    bool object;
    std::set<std::string> keys;
    std::string path;
    std::string last_key;
    std::size_t index = 0;
  };
  std::vector<Frame> stack;
  auto here = [&]() -> std::string {
    if (stack.empty()) return "";
    const Frame& f = stack.back();
    const std::string elem = f.object ? f.last_key : "[" + std::to_string(f.index) + "]";
    if (f.path.empty()) return elem;
    return f.object ? f.path + "." + elem : f.path + elem;
  };
  json::parser_callback_t cb = [&](int depth, json::parse_event_t ev, json& parsed) {
    switch (ev) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (depth >= limits.max_depth)
          throw Refused{here(), "nested more than " + std::to_string(limits.max_depth) +
                                    " levels deep (refused)"};
        stack.push_back({ev == json::parse_event_t::object_start, {}, here(), "", 0});
        break;
      case json::parse_event_t::key: {
        Frame& f = stack.back();
        const std::string k = parsed.get<std::string>();
        f.last_key = k;
        if (!f.keys.insert(k).second) throw Refused{here(), "given twice in the same object"};
        break;
      }
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!stack.empty()) stack.pop_back();
        if (!stack.empty() && !stack.back().object) ++stack.back().index;
        break;
      case json::parse_event_t::value:
        if (!stack.empty() && !stack.back().object) ++stack.back().index;
        break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), cb, /*allow_exceptions=*/true,
                       /*ignore_comments=*/false);
  } catch (const Refused& r) {
    throw InputError(where, r.key, r.problem);
  } catch (const json::parse_error& e) {
    throw InputError(
        where, "",
        "not valid JSON: " + untagged(e.what()) + " (byte " + std::to_string(e.byte) + ")");
  } catch (const json::out_of_range& e) {  // a number too large to hold
    throw InputError(where, here(),
                     "not valid JSON: a number out of range (" + untagged(e.what()) + ")");
  }
}

std::string json_type_name(const json& j) {
  switch (j.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "an array";
    case json::value_t::string:
      return "a string";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      return "a number";
    default:
      return "a value of another kind";
  }
}

JsonObject::JsonObject(const json& j, std::string where, std::string path)
    : j_(j), where_(std::move(where)), path_(std::move(path)) {
  if (!j_.is_object())
    throw InputError(where_, path_, "must be an object, not " + json_type_name(j_));
}

void JsonObject::fail(const std::string& key, const std::string& problem) const {
  throw InputError(where_, key_path(key), problem);
}

bool JsonObject::has(const std::string& key) const { return find(key) != nullptr; }

const json* JsonObject::find(const std::string& key) const {
  const auto it = j_.find(key);
  if (it == j_.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<std::int64_t> JsonObject::integer(const std::string& key, std::int64_t min,
                                                std::int64_t max) const {
  const json* v = find(key);
  if (!v) return std::nullopt;
  std::int64_t x = 0;
  if (v->is_number_integer()) {
    x = v->get<std::int64_t>();
  } else if (v->is_number_unsigned()) {
    const auto u = v->get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(INT64_MAX)) fail(key, "is too large");
    x = static_cast<std::int64_t>(u);
  } else if (v->is_number_float() && std::isfinite(v->get<double>()) &&
             v->get<double>() == std::floor(v->get<double>()) &&
             std::fabs(v->get<double>()) < 9e18) {
    x = static_cast<std::int64_t>(v->get<double>());  // 2048.0
  } else {
    fail(key, "must be an integer, not " +
                  (v->is_number() ? "the number " + v->dump() : json_type_name(*v)));
  }
  if (x < min || x > max)
    fail(key, "must be between " + std::to_string(min) + " and " + std::to_string(max) + " (got " +
                  std::to_string(x) + ")");
  return x;
}

std::optional<double> JsonObject::number(const std::string& key, double min, double max) const {
  const json* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_number()) fail(key, "must be a number, not " + json_type_name(*v));
  const double x = v->get<double>();
  if (!std::isfinite(x)) fail(key, "must be a finite number");
  if (x < min || x > max)
    fail(key, "must be between " + nlohmann::json(min).dump() + " and " +
                  nlohmann::json(max).dump() + " (got " + v->dump() + ")");
  return x;
}

std::optional<std::string> JsonObject::string(const std::string& key) const {
  const json* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_string()) fail(key, "must be a string, not " + json_type_name(*v));
  return v->get<std::string>();
}

std::optional<bool> JsonObject::boolean(const std::string& key) const {
  const json* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) fail(key, "must be true or false, not " + json_type_name(*v));
  return v->get<bool>();
}

std::int64_t JsonObject::need_integer(const std::string& key, std::int64_t min,
                                      std::int64_t max) const {
  const auto v = integer(key, min, max);
  if (!v) fail(key, "missing (required)");
  return *v;
}

double JsonObject::need_number(const std::string& key, double min, double max) const {
  const auto v = number(key, min, max);
  if (!v) fail(key, "missing (required)");
  return *v;
}

std::string JsonObject::need_string(const std::string& key) const {
  const auto v = string(key);
  if (!v) fail(key, "missing (required)");
  return *v;
}

std::optional<JsonObject> JsonObject::object(const std::string& key) const {
  const json* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_object()) fail(key, "must be an object, not " + json_type_name(*v));
  return JsonObject(*v, where_, key_path(key));
}

}  // namespace kvfleet::sim
