#include "sim/io/text_file.h"

#include "sim/io/checked_file.h"

namespace kvfleet::sim {

void write_text_atomically(const std::string& path,
                           const std::function<void(std::ostream&)>& fill) {
  write_file_atomically(path, [&](CheckedFile& f) { fill(f.stream()); });
}

}  // namespace kvfleet::sim
