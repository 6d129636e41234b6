#include "sim/io/text_file.h"

#include "sim/io/checked_file.h"

namespace kvfleet::sim {

void write_text_atomically(const std::string& path,
                           const std::function<void(std::ostream&)>& fill) {
  write_file_atomically(path, [&](CheckedFile& f) { fill(f.stream()); });
}

std::string comment_line(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) {
      static const char* const hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += ch;
    }
  }
  return out;
}

}  // namespace kvfleet::sim
