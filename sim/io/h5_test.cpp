// HDF5 tables: every column kind written by write_table reads back as written, categories as
// enums with their names; a crafted enum column whose codes are none of its names is refused by
// name, not read as garbage.
#include "sim/io/h5.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace kvfleet::sim {
namespace {

std::string scratch(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) / name).string();
}

TEST(H5Table, EveryColumnKindRoundTrips) {
  Table t;
  t.i64("i").assign({1, -2, 3});
  t.f64("f", "s", "a time").assign({0.5, std::nan(""), 1e300});
  t.str("s").assign({"a", "", "ccc"});
  t.cat("c", {"h100/0", "h100/1"}).assign({1, kNoCategory, 0});
  const std::string path = scratch("roundtrip.h5");
  h5::write_file_atomically(path, [&](hid_t f) { h5::write_table(f, "t", t); });
  const h5::H5 file = h5::open_for_reading(path, "test");
  const Table back = h5::read_table(file.id, "t");
  ASSERT_EQ(back.columns.size(), 4u);
  EXPECT_EQ(std::get<std::vector<std::int64_t>>(back.columns[0].data),
            (std::vector<std::int64_t>{1, -2, 3}));
  EXPECT_TRUE(std::isnan(std::get<std::vector<double>>(back.columns[1].data)[1]));
  EXPECT_EQ(std::get<std::vector<std::string>>(back.columns[2].data),
            (std::vector<std::string>{"a", "", "ccc"}));
  const auto& c = std::get<Categorical>(back.columns[3].data);
  EXPECT_EQ(c.names, (std::vector<std::string>{"h100/0", "h100/1"}));
  EXPECT_EQ(c.codes, (std::vector<std::int32_t>{1, kNoCategory, 0}));
  EXPECT_EQ(c.name(0), "h100/1");
  EXPECT_EQ(c.name(1), "");
}

TEST(H5Table, EnumCodesOutsideTheNamesAreRefused) {
  Table t;
  t.cat("replica", {"a"}).assign({0, 7});  // 7 names nothing: a crafted file
  const std::string path = scratch("bad_enum.h5");
  h5::write_file_atomically(path, [&](hid_t f) { h5::write_table(f, "t", t); });
  const h5::H5 file = h5::open_for_reading(path, "test");
  try {
    h5::read_table(file.id, "t");
    FAIL() << "read a code that names nothing";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("'replica': code 7"), std::string::npos) << e.what();
  }
}

TEST(H5Table, ReservedOrRepeatedCategoryNamesAreNotWritten) {
  for (const std::vector<std::string>& names :
       {std::vector<std::string>{"(none)"}, std::vector<std::string>{"a", "a"},
        std::vector<std::string>{""}}) {
    Table t;
    t.cat("c", names).push_back(0);
    EXPECT_THROW(h5::write_file_atomically(scratch("names.h5"),
                                           [&](hid_t f) { h5::write_table(f, "t", t); }),
                 std::runtime_error);
    EXPECT_FALSE(std::filesystem::exists(scratch("names.h5")));
  }
}

}  // namespace
}  // namespace kvfleet::sim
