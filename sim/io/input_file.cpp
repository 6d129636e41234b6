#include "sim/io/input_file.h"

#include <filesystem>
#include <sstream>

#include "sim/core/error.h"

namespace kvfleet::sim {
namespace {

std::string mib(std::uintmax_t bytes) {
  std::ostringstream o;
  o << (bytes >> 20) << " MiB";
  return o.str();
}

}  // namespace

void check_input_file(const std::string& path, const std::string& kind, std::uintmax_t max_bytes) {
  namespace fs = std::filesystem;
  if (path.empty()) throw InputError("<empty path>", "", kind + " file: the path is empty");
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) throw InputError(path, "", kind + " file not found");
  if (fs::is_directory(st)) throw InputError(path, "", "is a directory, not a " + kind + " file");
  if (!fs::is_regular_file(st))
    throw InputError(path, "", "is not a regular file (a " + kind + " file is expected)");
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) throw InputError(path, "", "cannot read " + kind + " file: " + ec.message());
  if (size > max_bytes)
    throw InputError(
        path, "",
        kind + " file of " + mib(size) + " is larger than the limit of " + mib(max_bytes));
}

void strip_bom(std::string& text) {
  if (text.size() >= 3 && static_cast<unsigned char>(text[0]) == 0xEF &&
      static_cast<unsigned char>(text[1]) == 0xBB && static_cast<unsigned char>(text[2]) == 0xBF)
    text.erase(0, 3);
}

std::string read_input_file(const std::string& path, const std::string& kind,
                            std::uintmax_t max_bytes) {
  std::ifstream in = open_input_file(path, kind, max_bytes);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw InputError(path, "", "cannot read " + kind + " file");
  return ss.str();
}

std::ifstream open_input_file(const std::string& path, const std::string& kind,
                              std::uintmax_t max_bytes) {
  check_input_file(path, kind, max_bytes);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open " + kind + " file");
  char bom[3];
  if (!in.read(bom, 3) || static_cast<unsigned char>(bom[0]) != 0xEF ||
      static_cast<unsigned char>(bom[1]) != 0xBB || static_cast<unsigned char>(bom[2]) != 0xBF) {
    in.clear();
    in.seekg(0);
  }
  return in;
}

bool read_line(std::istream& in, std::string& line, const std::string& path, std::size_t lineno) {
  line.clear();
  std::streambuf* sb = in.rdbuf();
  if (!in.good() || sb == nullptr) return false;
  for (;;) {
    const int c = sb->sbumpc();
    if (c == std::char_traits<char>::eof()) {
      in.setstate(std::ios::eofbit);
      return !line.empty();
    }
    if (c == '\n') return true;
    if (line.size() >= kMaxLineBytes)
      throw InputError(path + ": line " + std::to_string(lineno), "",
                       "longer than " + std::to_string(kMaxLineBytes >> 20) +
                           " MiB: not a line of this format (a file without line breaks?)");
    line.push_back(static_cast<char>(c));
  }
}

}  // namespace kvfleet::sim
