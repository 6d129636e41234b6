#include "sim/io/text_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "sim/core/error.h"
#include "sim/io/output_set.h"
#include "sim/io/temp_files.h"

namespace kvfleet::sim {

void write_text_atomically(const std::string& path,
                           const std::function<void(std::ostream&)>& fill) {
  check_output_file("output file", path);
  const std::string tmp = temp_name(path);
  track_temp(tmp);
  try {
    {
      std::ofstream o(tmp);
      if (!o) throw InputError(path, "", "cannot write: " + std::string(std::strerror(errno)));
      fill(o);
      if (!o.flush()) throw InputError(path, "", "write failed (disk full?)");
    }
    std::filesystem::rename(tmp, path);
    forget_temp(tmp);
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    forget_temp(tmp);
    throw;
  }
}

}  // namespace kvfleet::sim
