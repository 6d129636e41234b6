#include "sim/io/h5.h"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <stdexcept>

#include "sim/core/error.h"
#include "sim/io/checked_file.h"
#include "sim/io/input_file.h"
#include "sim/io/output_set.h"
#include "sim/io/temp_files.h"

namespace kvfleet::sim::h5 {

void check(herr_t e, const char* what) {
  if (e < 0) throw std::runtime_error(std::string("HDF5: ") + what + " failed");
}
hid_t check_id(hid_t id, const char* what) {
  if (id < 0) throw std::runtime_error(std::string("HDF5: ") + what + " failed");
  return id;
}

namespace {
// Creation properties without object modification times (HDF5 stamps datasets and groups by
// default, so that two runs with the same results would differ in a few bytes).
H5 untimed(hid_t cls) {
  H5 p{check_id(H5Pcreate(cls), "property list"), H5Pclose};
  check(H5Pset_obj_track_times(p.id, false), "track times");
  return p;
}
}  // namespace

namespace {
// A variable-length UTF-8 string type.
H5 vlen_utf8() {
  H5 t{check_id(H5Tcopy(H5T_C_S1), "string type"), H5Tclose};
  check(H5Tset_size(t.id, H5T_VARIABLE), "string size");
  check(H5Tset_cset(t.id, H5T_CSET_UTF8), "string charset");
  return t;
}
}  // namespace

void set_text_attribute(hid_t obj, const char* name, const std::string& text) {
  const H5 type = vlen_utf8();
  H5 space{check_id(H5Screate(H5S_SCALAR), "scalar space"), H5Sclose};
  H5 a{check_id(H5Acreate2(obj, name, type.id, space.id, H5P_DEFAULT, H5P_DEFAULT), name),
       H5Aclose};
  const char* p = text.c_str();
  check(H5Awrite(a.id, type.id, &p), name);
}

void set_texts_attribute(hid_t obj, const char* name, const std::vector<std::string>& texts) {
  const H5 type = vlen_utf8();
  const hsize_t dims[1] = {texts.size()};
  H5 space{check_id(H5Screate_simple(1, dims, nullptr), "dataspace"), H5Sclose};
  H5 a{check_id(H5Acreate2(obj, name, type.id, space.id, H5P_DEFAULT, H5P_DEFAULT), name),
       H5Aclose};
  std::vector<const char*> p;
  for (const auto& t : texts) p.push_back(t.c_str());
  if (!p.empty()) check(H5Awrite(a.id, type.id, p.data()), name);
}

H5 create_group(hid_t loc, const char* name) {
  const H5 gcpl = untimed(H5P_GROUP_CREATE);
  return H5{check_id(H5Gcreate2(loc, name, H5P_DEFAULT, gcpl.id, H5P_DEFAULT), name), H5Gclose};
}

void write_string_dataset(hid_t loc, const char* name, const std::string& text,
                          const std::string& desc) {
  H5 type{check_id(H5Tcopy(H5T_C_S1), "string type"), H5Tclose};
  check(H5Tset_size(type.id, H5T_VARIABLE), "string size");
  check(H5Tset_cset(type.id, H5T_CSET_UTF8), "string charset");
  H5 space{check_id(H5Screate(H5S_SCALAR), "scalar space"), H5Sclose};
  const H5 dcpl = untimed(H5P_DATASET_CREATE);
  H5 ds{check_id(H5Dcreate2(loc, name, type.id, space.id, H5P_DEFAULT, dcpl.id, H5P_DEFAULT), name),
        H5Dclose};
  const char* p = text.c_str();
  check(H5Dwrite(ds.id, type.id, H5S_ALL, H5S_ALL, H5P_DEFAULT, &p), name);
  if (!desc.empty()) set_text_attribute(ds.id, "description", desc);
}

namespace {

// A scalar string of `type` (variable or fixed length, as kvfleet and h5py write them), read by
// `read(memory type, buffer)` (H5Dread or H5Aread); nullopt when `type` is no such string or a
// fixed length is 0 or above `max_width`.
std::optional<std::string> read_scalar_text(hid_t type, hid_t space, std::size_t max_width,
                                            const char* what,
                                            const std::function<herr_t(hid_t, void*)>& read) {
  if (H5Tget_class(type) != H5T_STRING || H5Sget_simple_extent_type(space) != H5S_SCALAR)
    return std::nullopt;
  H5 mt{check_id(H5Tcopy(H5T_C_S1), "string type"), H5Tclose};
  check(H5Tset_cset(mt.id, H5Tget_cset(type)), "string charset");
  if (H5Tis_variable_str(type) > 0) {
    check(H5Tset_size(mt.id, H5T_VARIABLE), "string size");
    char* p = nullptr;
    check(read(mt.id, &p), what);
    std::string s = p ? p : "";
    H5free_memory(p);
    return s;
  }
  const std::size_t w = H5Tget_size(type);
  if (w == 0 || w > max_width) return std::nullopt;
  check(H5Tset_size(mt.id, w), "string size");
  std::string s(w, '\0');
  check(read(mt.id, s.data()), what);
  s.resize(strnlen(s.data(), w));
  return s;
}

}  // namespace

std::string read_string_dataset(hid_t loc, const char* name) {
  H5 ds{check_id(H5Dopen2(loc, name, H5P_DEFAULT), name), H5Dclose};
  H5 type{check_id(H5Dget_type(ds.id), name), H5Tclose};
  H5 space{check_id(H5Dget_space(ds.id), name), H5Sclose};
  // What write_string_dataset writes (a scalar variable-length string) or a fixed-length one,
  // as h5py writes either; anything else is refused before reading.
  if (H5Tget_class(type.id) != H5T_STRING || H5Sget_simple_extent_type(space.id) != H5S_SCALAR)
    throw std::runtime_error(std::string("dataset '") + name + "' is not a text (scalar string)");
  auto text = read_scalar_text(
      type.id, space.id, std::size_t{64} << 20, name,
      [&](hid_t mt, void* buf) { return H5Dread(ds.id, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf); });
  if (!text) throw std::runtime_error(std::string("dataset '") + name + "': text of unusable size");
  return *text;
}

H5 open_for_reading(const std::string& path, const std::string& kind) {
  // A regular file only: HDF5 would block on a fifo. No size cap: result files may be large.
  check_input_file(path, kind, std::numeric_limits<std::uintmax_t>::max());
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const hid_t fid = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (fid < 0) throw InputError(path, "", "not an HDF5 file");
  return H5{fid, H5Fclose};
}

namespace {

// An enum of a categorical column's names, coded 0, 1, ..., and kNoCategoryName for a row
// without one.
H5 category_type(const Column& c, const Categorical& cat) {
  H5 mt{check_id(H5Tenum_create(H5T_NATIVE_INT32), "enum type"), H5Tclose};
  std::int32_t none = kNoCategory;
  check(H5Tenum_insert(mt.id, kNoCategoryName, &none), "enum member");
  for (std::size_t k = 0; k < cat.names.size(); ++k) {
    const auto code = static_cast<std::int32_t>(k);
    if (cat.names[k] == kNoCategoryName || cat.names[k].empty())
      throw std::runtime_error("column '" + c.name + "': category name '" + cat.names[k] +
                               "' is reserved");
    check(H5Tenum_insert(mt.id, cat.names[k].c_str(), &code),
          ("enum member '" + cat.names[k] + "' (names must be distinct)").c_str());
  }
  return mt;
}

// The rows packed as the compound type lays them out.
std::vector<unsigned char> pack_rows(const Table& t, const std::vector<std::size_t>& offsets,
                                     std::size_t row_bytes) {
  const std::size_t n = t.rows();
  std::vector<unsigned char> buf(std::max<std::size_t>(1, n * row_bytes), 0);
  for (std::size_t i = 0; i < t.columns.size(); ++i) {
    const auto& c = t.columns[i];
    for (std::size_t r = 0; r < n; ++r) {
      unsigned char* dst = buf.data() + r * row_bytes + offsets[i];
      if (auto* v = std::get_if<std::vector<std::int64_t>>(&c.data)) {
        std::memcpy(dst, &(*v)[r], 8);
      } else if (auto* d = std::get_if<std::vector<double>>(&c.data)) {
        std::memcpy(dst, &(*d)[r], 8);
      } else if (auto* cat = std::get_if<Categorical>(&c.data)) {
        std::memcpy(dst, &cat->codes[r], 4);
      } else {
        const auto& s = std::get<std::vector<std::string>>(c.data)[r];
        std::memcpy(dst, s.data(), s.size());
      }
    }
  }
  return buf;
}

}  // namespace

void write_table(hid_t loc, const char* name, const Table& t) {
  std::size_t row_bytes = 0;
  std::vector<std::size_t> offsets, widths;
  for (const auto& c : t.columns) {
    std::size_t w = 8;
    if (auto* s = std::get_if<std::vector<std::string>>(&c.data)) {
      w = 1;
      for (const auto& x : *s) w = std::max(w, x.size());
    } else if (std::holds_alternative<Categorical>(c.data)) {
      w = 4;
    }
    offsets.push_back(row_bytes);
    widths.push_back(w);
    row_bytes += w;
  }
  if (row_bytes == 0) row_bytes = 1;
  H5 type{check_id(H5Tcreate(H5T_COMPOUND, row_bytes), "compound type"), H5Tclose};
  std::vector<H5> str_types;
  str_types.reserve(t.columns.size());
  for (std::size_t i = 0; i < t.columns.size(); ++i) {
    const auto& c = t.columns[i];
    hid_t mt;
    if (std::holds_alternative<std::vector<std::int64_t>>(c.data)) {
      mt = H5T_NATIVE_INT64;
    } else if (std::holds_alternative<std::vector<double>>(c.data)) {
      mt = H5T_NATIVE_DOUBLE;
    } else if (auto* cat = std::get_if<Categorical>(&c.data)) {
      str_types.push_back(category_type(c, *cat));
      mt = str_types.back().id;
    } else {
      str_types.emplace_back(check_id(H5Tcopy(H5T_C_S1), "string type"), H5Tclose);
      check(H5Tset_size(str_types.back().id, widths[i]), "string size");
      check(H5Tset_strpad(str_types.back().id, H5T_STR_NULLPAD), "string pad");
      mt = str_types.back().id;
    }
    check(H5Tinsert(type.id, c.name.c_str(), offsets[i], mt), "compound member");
  }
  const std::size_t n = t.rows();
  const std::vector<unsigned char> buf = pack_rows(t, offsets, row_bytes);
  hsize_t dims[1] = {n};
  H5 space{check_id(H5Screate_simple(1, dims, nullptr), "dataspace"), H5Sclose};
  const H5 dcpl = untimed(H5P_DATASET_CREATE);
  H5 ds{check_id(H5Dcreate2(loc, name, type.id, space.id, H5P_DEFAULT, dcpl.id, H5P_DEFAULT), name),
        H5Dclose};
  if (n > 0) check(H5Dwrite(ds.id, type.id, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()), name);
  // What the table and each column mean, with the columns' units (docs/outputs.md).
  if (!t.desc.empty()) set_text_attribute(ds.id, "description", t.desc);
  std::vector<std::string> units, descs;
  for (const auto& c : t.columns) {
    units.push_back(c.unit);
    descs.push_back(c.desc);
  }
  set_texts_attribute(ds.id, "units", units);
  set_texts_attribute(ds.id, "descriptions", descs);
}

bool has_link(hid_t loc, const char* name) { return H5Lexists(loc, name, H5P_DEFAULT) > 0; }

std::vector<std::string> group_members(hid_t loc, const char* group) {
  H5 g{check_id(H5Gopen2(loc, group, H5P_DEFAULT), group), H5Gclose};
  H5G_info_t info;
  check(H5Gget_info(g.id, &info), group);
  if (info.nlinks > 1'000'000)
    throw std::runtime_error(std::string("group '") + group + "' has too many members");
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t n =
        H5Lget_name_by_idx(g.id, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (n < 0 || n > 65536) throw std::runtime_error(std::string("group '") + group + "': member");
    std::string name(static_cast<std::size_t>(n) + 1, '\0');
    check(static_cast<herr_t>(H5Lget_name_by_idx(g.id, ".", H5_INDEX_NAME, H5_ITER_INC, i,
                                                 name.data(), name.size(), H5P_DEFAULT)),
          group);
    name.resize(static_cast<std::size_t>(n));
    names.push_back(name);
  }
  return names;
}

std::string read_text_attribute(hid_t loc, const char* object, const char* attribute,
                                const std::string& fallback) {
  if (H5Aexists_by_name(loc, object, attribute, H5P_DEFAULT) <= 0) return fallback;
  H5 a{check_id(H5Aopen_by_name(loc, object, attribute, H5P_DEFAULT, H5P_DEFAULT), attribute),
       H5Aclose};
  H5 type{check_id(H5Aget_type(a.id), attribute), H5Tclose};
  H5 space{check_id(H5Aget_space(a.id), attribute), H5Sclose};
  return read_scalar_text(type.id, space.id, 65536, attribute,
                          [&](hid_t mt, void* buf) { return H5Aread(a.id, mt, buf); })
      .value_or(fallback);
}

namespace {

// Reads one member (column) of a compound dataset of n rows.
struct MemberReader {
  hid_t ds;
  const char* name;
  hssize_t n;
  void read(const std::string& col, hid_t mem_type, std::size_t size, void* buf) const {
    H5 one{check_id(H5Tcreate(H5T_COMPOUND, size), "member type"), H5Tclose};
    check(H5Tinsert(one.id, col.c_str(), 0, mem_type), "member insert");
    if (n > 0) check(H5Dread(ds, one.id, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf), name);
  }
  [[noreturn]] void fail(const std::string& col, const std::string& what) const {
    throw std::runtime_error(std::string("dataset '") + name + "': column '" + col + "'" + what);
  }
};

// A fixed-length string member.
void read_text_column(const MemberReader& mr, hid_t type, int m, const std::string& col, Table& t) {
  H5 st{check_id(H5Tget_member_type(type, static_cast<unsigned>(m)), "member type"), H5Tclose};
  if (H5Tis_variable_str(st.id) > 0)
    mr.fail(col, " holds variable-length strings (fixed-length expected)");
  const std::size_t w = H5Tget_size(st.id);
  if (w == 0 || w > 65536 || static_cast<double>(w) * static_cast<double>(mr.n) > 4e9)
    mr.fail(col, " holds text of unusable width");
  H5 mt{check_id(H5Tcopy(H5T_C_S1), "string type"), H5Tclose};
  check(H5Tset_size(mt.id, w), "string size");
  check(H5Tset_strpad(mt.id, H5T_STR_NULLPAD), "string pad");
  std::vector<char> buf(std::max<std::size_t>(1, w * static_cast<std::size_t>(mr.n)));
  mr.read(col, mt.id, w, buf.data());
  auto& v = t.str(col);
  for (hssize_t r = 0; r < mr.n; ++r) {
    const char* p = buf.data() + static_cast<std::size_t>(r) * w;
    v.emplace_back(p, strnlen(p, w));
  }
}

// An enum member's names by code (0, 1, ...; kNoCategory unnamed), `mt` receiving the members
// as an int32 enum.
std::vector<std::string> enum_names(const MemberReader& mr, hid_t et, hid_t mt,
                                    const std::string& col) {
  const int k = H5Tget_nmembers(et);  // enum members
  if (k < 0 || k > 1'000'000) mr.fail(col, " has an unusable enum");
  std::vector<std::pair<std::int32_t, std::string>> named;
  for (int j = 0; j < k; ++j) {
    char* raw_name = H5Tget_member_name(et, static_cast<unsigned>(j));
    std::string member = raw_name ? raw_name : "";
    H5free_memory(raw_name);
    std::int64_t value = 0;
    H5 vt{check_id(H5Tget_super(et), "enum base"), H5Tclose};
    std::vector<unsigned char> bytes(std::max<std::size_t>(8, H5Tget_size(vt.id)));
    check(H5Tget_member_value(et, static_cast<unsigned>(j), bytes.data()), "enum value");
    check(H5Tconvert(vt.id, H5T_NATIVE_INT64, 1, bytes.data(), nullptr, H5P_DEFAULT), "enum value");
    std::memcpy(&value, bytes.data(), 8);
    if (value < kNoCategory || value >= k)
      mr.fail(col, ": enum code " + std::to_string(value) + " out of range");
    const auto code = static_cast<std::int32_t>(value);
    check(H5Tenum_insert(mt, member.c_str(), &code), "enum member");
    if (code != kNoCategory) named.emplace_back(code, member);
  }
  std::vector<std::string> names(named.size());
  for (auto& [code, member] : named) {
    if (static_cast<std::size_t>(code) >= names.size())
      mr.fail(col, ": enum codes are not 0, 1, ...");
    names[code] = member;
  }
  return names;
}

// An enum member as a categorical column.
void read_enum_column(const MemberReader& mr, hid_t type, int m, const std::string& col, Table& t) {
  H5 et{check_id(H5Tget_member_type(type, static_cast<unsigned>(m)), "member type"), H5Tclose};
  // Names by code, read as the enum's own members converted to int32.
  H5 mt{check_id(H5Tenum_create(H5T_NATIVE_INT32), "enum type"), H5Tclose};
  const std::vector<std::string> names = enum_names(mr, et.id, mt.id, col);
  // Codes as stored when the enum is a 4-byte integer (a value outside the members would fail
  // HDF5's enum conversion); else converted member by member.
  H5 base{check_id(H5Tget_super(et.id), "enum base"), H5Tclose};
  H5 native{check_id(H5Tget_native_type(et.id, H5T_DIR_ASCEND), "enum type"), H5Tclose};
  const bool as_stored =
      H5Tget_size(base.id) == 4 && H5Tget_sign(base.id) == H5T_SGN_2 && H5Tget_size(native.id) == 4;
  auto& v = t.cat(col, names);
  v.resize(static_cast<std::size_t>(mr.n));
  mr.read(col, as_stored ? native.id : mt.id, 4, v.data());
  for (const std::int32_t code : v)
    if (code < kNoCategory || code >= static_cast<std::int32_t>(names.size()))
      mr.fail(col, ": code " + std::to_string(code) + " is none of its names");
}

}  // namespace

Table read_table(hid_t loc, const char* name) {
  if (!has_link(loc, name))
    throw std::runtime_error(std::string("dataset '") + name + "' is missing");
  H5 ds{check_id(H5Dopen2(loc, name, H5P_DEFAULT), name), H5Dclose};
  H5 type{check_id(H5Dget_type(ds.id), name), H5Tclose};
  if (H5Tget_class(type.id) != H5T_COMPOUND) {
    throw std::runtime_error(std::string("dataset '") + name + "' is not a table (compound)");
  }
  H5 space{check_id(H5Dget_space(ds.id), name), H5Sclose};
  if (H5Sget_simple_extent_ndims(space.id) != 1)
    throw std::runtime_error(std::string("dataset '") + name + "' is not a table (one dimension)");
  hssize_t n = H5Sget_simple_extent_npoints(space.id);
  if (n < 0 || n > 500'000'000)
    throw std::runtime_error(std::string("dataset '") + name + "': " + std::to_string(n) +
                             " rows is beyond what kvfleet writes (500,000,000)");
  Table t;
  const MemberReader mr{ds.id, name, n};
  const int members = H5Tget_nmembers(type.id);
  for (int m = 0; m < members; ++m) {
    char* raw = H5Tget_member_name(type.id, static_cast<unsigned>(m));
    std::string col(raw);
    H5free_memory(raw);
    const H5T_class_t cls = H5Tget_member_class(type.id, static_cast<unsigned>(m));
    if (cls == H5T_INTEGER) {
      auto& v = t.i64(col);
      v.resize(static_cast<std::size_t>(n));
      mr.read(col, H5T_NATIVE_INT64, 8, v.data());
    } else if (cls == H5T_FLOAT) {
      auto& v = t.f64(col);
      v.resize(static_cast<std::size_t>(n));
      mr.read(col, H5T_NATIVE_DOUBLE, 8, v.data());
    } else if (cls == H5T_STRING) {
      read_text_column(mr, type.id, m, col, t);
    } else if (cls == H5T_ENUM) {
      read_enum_column(mr, type.id, m, col, t);
    } else {
      mr.fail(col, " is neither number, string nor enum");
    }
  }
  return t;
}

void write_file_atomically(const std::string& path, const std::function<void(hid_t)>& fill) {
  check_output_file("output file", path);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  // The file is built in memory (HDF5's core driver, no backing store) and written out by
  // io/checked_file: HDF5 never writes to the disk itself, so a full disk is an error naming the
  // file rather than a failed close that HDF5 1.10 crashes on when the process exits.
  std::vector<unsigned char> image;
  {
    H5 fapl{check_id(H5Pcreate(H5P_FILE_ACCESS), "file access list"), H5Pclose};
    check(H5Pset_fapl_core(fapl.id, 16 << 20, 0), "in-memory file");
    H5 file{check_id(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.id),
                     ("create " + path + " in memory").c_str()),
            H5Fclose};
    fill(file.id);
    check(H5Fflush(file.id, H5F_SCOPE_GLOBAL), "flush");
    const ssize_t size = H5Fget_file_image(file.id, nullptr, 0);
    if (size <= 0) throw std::runtime_error("HDF5: file image failed");
    image.resize(static_cast<std::size_t>(size));
    if (H5Fget_file_image(file.id, image.data(), image.size()) != size)
      throw std::runtime_error("HDF5: file image failed");
  }
  write_bytes_atomically(path, image.data(), image.size());
}

}  // namespace kvfleet::sim::h5
