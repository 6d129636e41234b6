#include "sim/io/csv.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "sim/core/error.h"
#include "sim/io/input_file.h"

namespace kvfleet::sim {

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : line) {
    if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  out.push_back(cur);
  for (auto& s : out) {
    auto b = s.find_first_not_of(" \t\"");
    auto e = s.find_last_not_of(" \t\"");
    s = b == std::string::npos ? "" : s.substr(b, e - b + 1);
  }
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
  return v;
}

CsvFile read_csv_file(const std::string& path) {
  std::ifstream in = open_input_file(path, "CSV");
  CsvFile f;
  f.path = path;
  std::string line;
  if (!std::getline(in, line)) throw InputError(path, "", "empty file (no header row)");
  f.header = split_csv(line);
  std::size_t lineno = 1;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line == "\r") continue;
    auto row = split_csv(line);
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
