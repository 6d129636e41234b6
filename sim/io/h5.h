#pragma once
// Small HDF5 helpers shared by the result files (io/results.*) and calibration profiles
// (cost/profile_data.*): an owning handle, checked calls, column tables as compound datasets (one
// member per column) and back, text datasets, and files written under a temporary name and
// renamed when complete.
#include <hdf5.h>

#include <functional>
#include <string>
#include <vector>

#include "sim/io/table.h"

namespace kvfleet::sim::h5 {

// Throw std::runtime_error naming `what` when an HDF5 call failed.
void check(herr_t e, const char* what);
hid_t check_id(hid_t id, const char* what);

// Owns an HDF5 identifier (move-only).
struct H5 {
  hid_t id;
  herr_t (*close)(hid_t);
  H5(hid_t i, herr_t (*c)(hid_t)) : id(i), close(c) {}
  H5(H5&& o) noexcept : id(o.id), close(o.close) { o.id = -1; }
  H5(const H5&) = delete;
  H5& operator=(const H5&) = delete;
  ~H5() {
    if (id >= 0) close(id);
  }
};

// A new group (without modification times, as every object written here).
H5 create_group(hid_t loc, const char* name);
// A text dataset (variable-length UTF-8 string), with a "description" attribute when given.
void write_string_dataset(hid_t loc, const char* name, const std::string& text,
                          const std::string& desc = "");
// Attributes: one text, or a list of texts.
void set_text_attribute(hid_t obj, const char* name, const std::string& text);
void set_texts_attribute(hid_t obj, const char* name, const std::vector<std::string>& texts);
// Reads a text dataset written by write_string_dataset (variable-length string).
std::string read_string_dataset(hid_t loc, const char* name);
// A table as one compound dataset: one member per column, one element per row. Strings are
// fixed-length (the longest value), so h5py and pandas read them directly. Attributes:
// "description" (the table's, when set), "units" and "descriptions" (one per column, in order).
void write_table(hid_t loc, const char* name, const Table& t);

// Reads a compound dataset written by write_table (or by h5py/pandas with numeric and
// fixed-length string members) back into a Table: integer members as int64, floating members as
// double, strings as strings. Throws std::runtime_error naming the dataset when it is absent or
// not a compound of those.
Table read_table(hid_t loc, const char* name);
bool has_link(hid_t loc, const char* name);
// The names of a group's members, in name order (at most 1,000,000).
std::vector<std::string> group_members(hid_t loc, const char* group);
// A text attribute of an object (scalar string, fixed or variable length); `fallback` when the
// object has none.
std::string read_text_attribute(hid_t loc, const char* object, const char* attribute,
                                const std::string& fallback);

// Opens an input file read-only, HDF5's own error printing off. Throws InputError naming `path`:
// "<kind> file not found" or "not an HDF5 file".
H5 open_for_reading(const std::string& path, const std::string& kind);

// Creates `path` atomically: `fill(file)` writes into a new file under a temporary name, which is
// renamed to `path` only when fill returns; on any exception (or SIGINT/SIGTERM, io/temp_files.h)
// the temporary file is removed. Refuses (InputError) a `path` that exists as anything but a
// regular file. Objects carry no modification times: the same content gives the same bytes.
void write_file_atomically(const std::string& path, const std::function<void(hid_t)>& fill);

}  // namespace kvfleet::sim::h5
