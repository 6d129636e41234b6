#include "sim/io/csv.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>

#include "sim/core/error.h"
#include "sim/io/input_file.h"

namespace kvfleet::sim {
namespace {
std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}
}  // namespace

std::vector<std::string> split_csv(const std::string& line, const std::string& where) {
  // RFC 4180: a field may be quoted ("a,b"), a quote inside doubled (""); spaces around a field
  // are trimmed. A quoted field cannot span lines here (one row per line).
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false, was_quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"' && cur.find_first_not_of(" \t") == std::string::npos && !was_quoted) {
      quoted = was_quoted = true;
      cur.clear();
    } else if (c == ',') {
      out.push_back(trim(cur));
      cur.clear();
      was_quoted = false;
    } else if (c != '\r' && !(was_quoted && (c == ' ' || c == '\t'))) {
      if (was_quoted) throw InputError(where, "", "text after a closing quote");
      cur += c;
    }
  }
  if (quoted) throw InputError(where, "", "a quoted field is not closed on its line");
  out.push_back(trim(cur));
  return out;
}

long CsvFile::column(std::string_view name) const {
  auto it = std::find(header.begin(), header.end(), name);
  return it == header.end() ? -1 : it - header.begin();
}

long CsvFile::require(std::string_view name) const {
  long c = column(name);
  if (c < 0)
    throw InputError(path + ": row 1", std::string(name), "column missing from the header");
  return c;
}

double CsvFile::number(std::size_t row, long col) const {
  const std::string& s = rows[row][col];
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size()) {
    throw InputError(path + ": row " + std::to_string(lines[row]), header[col],
                     "not a number: '" + s + "'");
  }
  // nan and inf parse, but are never a measurement (a nan token count once merged its row into
  // another point of the curve).
  if (!std::isfinite(v))
    throw InputError(path + ": row " + std::to_string(lines[row]), header[col],
                     "not a finite number: '" + s + "'");
  return v;
}

CsvFile read_csv_file(const std::string& path) {
  std::ifstream in = open_input_file(path, "CSV");
  CsvFile f;
  f.path = path;
  std::string line;
  if (!read_line(in, line, path, 1)) throw InputError(path, "", "empty file (no header row)");
  f.header = split_csv(line, path + ": row 1");
  std::size_t lineno = 1;
  while (read_line(in, line, path, lineno + 1)) {
    ++lineno;
    if (line.empty() || line == "\r") continue;
    auto row = split_csv(line, path + ": row " + std::to_string(lineno));
    if (row.size() != f.header.size()) {
      throw InputError(path + ": row " + std::to_string(lineno), "",
                       "expected " + std::to_string(f.header.size()) + " columns, found " +
                           std::to_string(row.size()));
    }
    f.rows.push_back(std::move(row));
    f.lines.push_back(lineno);
  }
  return f;
}

}  // namespace kvfleet::sim
