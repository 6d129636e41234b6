#pragma once
// A column table: the common shape of every result (requests, time series, summary) so that one
// writer serves HDF5 compound datasets and CSV files alike.
#include <cstdint>
#include <deque>
#include <string>
#include <variant>
#include <vector>

namespace kvfleet::sim {

struct Column {
  std::string name;
  std::variant<std::vector<std::int64_t>, std::vector<double>, std::vector<std::string>> data;
  std::size_t size() const {
    return std::visit([](const auto& v) { return v.size(); }, data);
  }
};

struct Table {
  std::deque<Column> columns;  // deque: references returned by i64() etc. stay valid
  std::size_t rows() const { return columns.empty() ? 0 : columns.front().size(); }
  std::vector<std::int64_t>& i64(const std::string& name) {
    columns.push_back({name, std::vector<std::int64_t>{}});
    return std::get<0>(columns.back().data);
  }
  std::vector<double>& f64(const std::string& name) {
    columns.push_back({name, std::vector<double>{}});
    return std::get<1>(columns.back().data);
  }
  std::vector<std::string>& str(const std::string& name) {
    columns.push_back({name, std::vector<std::string>{}});
    return std::get<2>(columns.back().data);
  }
};

}  // namespace kvfleet::sim
