#pragma once
// Reading CSV files with a header row (traces, other simulators' profiles). Errors are InputErrors
// naming the file, the row and the column.
#include <string>
#include <string_view>
#include <vector>

namespace kvfleet::sim {

// Splits one CSV line at commas (RFC 4180 quoting: "a,b" is one field, "" a quote inside one),
// trimming spaces around (and inside the quotes of) each field. Throws InputError(where) for a
// quote left open.
std::vector<std::string> split_csv(const std::string& line, const std::string& where);

struct CsvFile {
  std::string path;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;  // each as long as the header
  std::vector<std::size_t> lines;              // the file line of each row (1-based)

  long column(std::string_view name) const;        // −1 when absent
  long require(std::string_view name) const;       // throws naming the missing column
  double number(std::size_t row, long col) const;  // throws naming row and column
  const std::string& text(std::size_t row, long col) const { return rows[row][col]; }
};

// Throws InputError when the file cannot be opened, is empty, or a row has the wrong width.
CsvFile read_csv_file(const std::string& path);

}  // namespace kvfleet::sim
