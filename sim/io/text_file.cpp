#include "sim/io/text_file.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "sim/io/h5.h"

namespace kvfleet::sim {

void write_text_atomically(const std::string& path,
                           const std::function<void(std::ostream&)>& fill) {
  const std::string tmp = h5::temp_name(path);
  try {
    {
      std::ofstream o(tmp);
      if (!o) throw std::runtime_error("cannot write " + path);
      fill(o);
      if (!o.flush()) throw std::runtime_error("write failed: " + path);
    }
    std::filesystem::rename(tmp, path);
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    throw;
  }
}

}  // namespace kvfleet::sim
