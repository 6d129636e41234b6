#pragma once
// JSON read strictly: the files a user hands in (a model's config.json, benchmark results, a
// run's meta.json) are refused with an InputError naming the file, the key path and what is
// wrong, never read loosely. Beyond RFC 8259 syntax:
//  - nesting deeper than JsonLimits::max_depth is refused while parsing (a document nested a
//    hundred thousand levels must not exhaust the stack);
//  - a key given twice in one object is refused (which value would count is not the user's
//    choice to leave to a parser);
//  - the typed getters below refuse a value of another JSON type (a number written as a string,
//    a boolean written as 0 or 1) and numbers out of the caller's range.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kvfleet::sim {

struct JsonLimits {
  int max_depth = 64;
  // Python's json module writes the non-finite floats as the bare words NaN, Infinity and
  // -Infinity, which JSON does not have. When set, those words (outside strings only) are read
  // as the strings "NaN", "Infinity" and "-Infinity"; a reader that expects a number refuses
  // or interprets them by key.
  bool python_nonfinite = false;
};

// `text` with Python's bare NaN, Infinity and -Infinity outside strings quoted (see JsonLimits);
// text inside strings is never touched.
std::string quote_python_nonfinite(std::string_view text);

// Parses `text`; `where` names it in errors (a file, or "file: row 12").
nlohmann::json parse_json(std::string_view text, const std::string& where,
                          const JsonLimits& limits = {});

// A JSON object read with its location: typed access to its members that names `where` and the
// key path in every error. `path` is the object's own path ("" for the root, "kv_cache").
class JsonObject {
 public:
  JsonObject(const nlohmann::json& j, std::string where, std::string path = "");
  bool has(const std::string& key) const;
  // The member, or nullptr when absent (a JSON null counts as absent).
  const nlohmann::json* find(const std::string& key) const;
  // Typed members: absent -> std::nullopt; present with another type, or out of range -> error.
  std::optional<std::int64_t> integer(const std::string& key, std::int64_t min = INT64_MIN,
                                      std::int64_t max = INT64_MAX) const;
  std::optional<double> number(const std::string& key, double min = -1e308,
                               double max = 1e308) const;
  std::optional<std::string> string(const std::string& key) const;
  std::optional<bool> boolean(const std::string& key) const;
  // Required versions: absent is an error too.
  std::int64_t need_integer(const std::string& key, std::int64_t min = INT64_MIN,
                            std::int64_t max = INT64_MAX) const;
  double need_number(const std::string& key, double min = -1e308, double max = 1e308) const;
  std::string need_string(const std::string& key) const;
  // A member object (absent -> nullopt; not an object -> error).
  std::optional<JsonObject> object(const std::string& key) const;
  const nlohmann::json& raw() const { return j_; }
  const std::string& where() const { return where_; }
  std::string key_path(const std::string& key) const {
    return path_.empty() ? key : path_ + "." + key;
  }
  [[noreturn]] void fail(const std::string& key, const std::string& problem) const;

 private:
  const nlohmann::json& j_;
  std::string where_, path_;
};

// The JSON type of `j` in words ("a string", "a number", "an object", ...).
std::string json_type_name(const nlohmann::json& j);

}  // namespace kvfleet::sim
