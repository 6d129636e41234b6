#pragma once
// A column table: the common shape of every result (requests, time series, summary) so that one
// writer serves HDF5 compound datasets and CSV files alike. Each column carries its unit and a
// description, which the HDF5 writer stores as attributes and docs/outputs.md lists.
//
// Tables are declared once (TableSpec): each column's name, unit, description and how its value
// is read from the source. That declaration builds the table for HDF5 and CSV and documents it,
// so adding an output column is one line beside the code that counts it.
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "sim/core/error.h"

namespace kvfleet::sim {

// A categorical column: each row a code into `names`, or kNoCategory (a request that reached no
// replica). HDF5 stores it as an enum (the names with their codes, kNoCategoryName for the
// missing code), CSV as the name ("" for none), the Python package as a pandas Categorical.
inline constexpr std::int32_t kNoCategory = -1;
inline constexpr const char* kNoCategoryName = "(none)";
struct Categorical {
  std::vector<std::int32_t> codes;
  std::vector<std::string> names;
  std::size_t size() const { return codes.size(); }
  // The row's name, "" for none.
  const std::string& name(std::size_t row) const {
    static const std::string none;
    const std::int32_t c = codes[row];
    return c >= 0 && static_cast<std::size_t>(c) < names.size() ? names[c] : none;
  }
  bool operator==(const Categorical&) const = default;
};

struct Column {
  std::string name;
  std::variant<std::vector<std::int64_t>, std::vector<double>, std::vector<std::string>,
               Categorical>
      data;
  std::string unit;  // "s", "tokens", "fraction", ... ("" for names and plain counts of things)
  std::string desc;  // one line
  std::size_t size() const {
    return std::visit([](const auto& v) { return v.size(); }, data);
  }
};

struct Table {
  std::deque<Column> columns;  // deque: references returned by i64() etc. stay valid
  std::string desc;            // what a row is
  std::size_t rows() const { return columns.empty() ? 0 : columns.front().size(); }
  // The column named `name`, or null.
  const Column* find(const std::string& name) const {
    for (const auto& c : columns)
      if (c.name == name) return &c;
    return nullptr;
  }
  std::vector<std::int64_t>& i64(const std::string& name, std::string unit = "",
                                 std::string what = "") {
    columns.push_back({name, std::vector<std::int64_t>{}, std::move(unit), std::move(what)});
    return std::get<0>(columns.back().data);
  }
  std::vector<double>& f64(const std::string& name, std::string unit = "", std::string what = "") {
    columns.push_back({name, std::vector<double>{}, std::move(unit), std::move(what)});
    return std::get<1>(columns.back().data);
  }
  std::vector<std::string>& str(const std::string& name, std::string unit = "",
                                std::string what = "") {
    columns.push_back({name, std::vector<std::string>{}, std::move(unit), std::move(what)});
    return std::get<2>(columns.back().data);
  }
  // A categorical column with these names; push the rows' codes (kNoCategory for none).
  std::vector<std::int32_t>& cat(const std::string& name, std::vector<std::string> names,
                                 std::string unit = "", std::string what = "") {
    columns.push_back({name, Categorical{{}, std::move(names)}, std::move(unit), std::move(what)});
    return std::get<3>(columns.back().data).codes;
  }
};

// A numeric column of a table read from a file (`where`, dataset `ds`), as doubles: integer
// columns are converted. Throws InputError naming ds.name when it is missing or not numeric.
inline std::vector<double> column_numbers(const Table& t, const std::string& name,
                                          const std::string& where, const std::string& ds) {
  const Column* c = t.find(name);
  if (!c) throw InputError(where, ds + "." + name, "column is missing");
  if (auto* v = std::get_if<std::vector<double>>(&c->data)) return *v;
  if (auto* v = std::get_if<std::vector<std::int64_t>>(&c->data))
    return std::vector<double>(v->begin(), v->end());
  throw InputError(where, ds + "." + name, "is not numeric");
}

// How one column of an output table is documented (docs/outputs.md).
struct ColumnDoc {
  std::string name, type, unit, desc;  // type: integer, number, text or category
};
struct TableDoc {
  std::string name, desc;
  std::vector<ColumnDoc> columns;
};

// The declaration of an output table whose rows are read from a source `Src` (a vector of
// records, a struct of columns, ...): each column's name, unit, description and a getter
// (source, row index) -> value.
template <class Src>
class TableSpec {
 public:
  TableSpec(std::string name, std::string desc, std::function<std::size_t(const Src&)> rows)
      : name_(std::move(name)), desc_(std::move(desc)), rows_(std::move(rows)) {}

  TableSpec& integer(std::string name, std::string unit, std::string desc,
                     std::function<std::int64_t(const Src&, std::size_t)> get) {
    cols_.push_back(
        {std::move(name), std::move(unit), std::move(desc), std::move(get), {}, {}, {}, {}});
    return *this;
  }
  TableSpec& number(std::string name, std::string unit, std::string desc,
                    std::function<double(const Src&, std::size_t)> get) {
    cols_.push_back(
        {std::move(name), std::move(unit), std::move(desc), {}, std::move(get), {}, {}, {}});
    return *this;
  }
  TableSpec& text(std::string name, std::string unit, std::string desc,
                  std::function<std::string(const Src&, std::size_t)> get) {
    cols_.push_back(
        {std::move(name), std::move(unit), std::move(desc), {}, {}, std::move(get), {}, {}});
    return *this;
  }
  // A categorical column: its names (from the source) and each row's code (kNoCategory: none).
  TableSpec& category(std::string name, std::string unit, std::string desc,
                      std::function<std::vector<std::string>(const Src&)> names,
                      std::function<std::int32_t(const Src&, std::size_t)> code) {
    cols_.push_back({std::move(name),
                     std::move(unit),
                     std::move(desc),
                     {},
                     {},
                     {},
                     std::move(names),
                     std::move(code)});
    return *this;
  }

  const std::string& name() const { return name_; }

  Table make(const Src& src) const {
    Table t;
    t.desc = desc_;
    const std::size_t n = rows_(src);
    for (const auto& c : cols_) {
      if (c.i) {
        auto& v = t.i64(c.name, c.unit, c.desc);
        v.reserve(n);
        for (std::size_t r = 0; r < n; ++r) v.push_back(c.i(src, r));
      } else if (c.f) {
        auto& v = t.f64(c.name, c.unit, c.desc);
        v.reserve(n);
        for (std::size_t r = 0; r < n; ++r) v.push_back(c.f(src, r));
      } else if (c.s) {
        auto& v = t.str(c.name, c.unit, c.desc);
        v.reserve(n);
        for (std::size_t r = 0; r < n; ++r) v.push_back(c.s(src, r));
      } else {
        auto& v = t.cat(c.name, c.names(src), c.unit, c.desc);
        v.reserve(n);
        for (std::size_t r = 0; r < n; ++r) v.push_back(c.code(src, r));
      }
    }
    return t;
  }

  TableDoc doc() const {
    TableDoc d{name_, desc_, {}};
    for (const auto& c : cols_)
      d.columns.push_back({c.name,
                           c.i   ? "integer"
                           : c.f ? "number"
                           : c.s ? "text"
                                 : "category",
                           c.unit, c.desc});
    return d;
  }

 private:
  struct Col {
    std::string name, unit, desc;
    std::function<std::int64_t(const Src&, std::size_t)> i;
    std::function<double(const Src&, std::size_t)> f;
    std::function<std::string(const Src&, std::size_t)> s;
    std::function<std::vector<std::string>(const Src&)> names;
    std::function<std::int32_t(const Src&, std::size_t)> code;
  };
  std::string name_, desc_;
  std::function<std::size_t(const Src&)> rows_;
  std::vector<Col> cols_;
};

// The documentation of a table built by hand (columns with their units and descriptions).
inline TableDoc doc_of(const std::string& name, const Table& t) {
  TableDoc d{name, t.desc, {}};
  for (const auto& c : t.columns) {
    const char* type = std::holds_alternative<std::vector<std::int64_t>>(c.data) ? "integer"
                       : std::holds_alternative<std::vector<double>>(c.data)     ? "number"
                       : std::holds_alternative<Categorical>(c.data)             ? "category"
                                                                                 : "text";
    d.columns.push_back({c.name, type, c.unit, c.desc});
  }
  return d;
}

}  // namespace kvfleet::sim
