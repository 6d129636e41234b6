#include "sim/io/text_file.h"

#include <unistd.h>

#include "sim/core/error.h"
#include "sim/io/checked_file.h"
#include "sim/io/output_set.h"
#include "sim/io/temp_files.h"

namespace kvfleet::sim {

void write_text_atomically(const std::string& path,
                           const std::function<void(std::ostream&)>& fill) {
  check_output_file("output file", path);
  const std::string tmp = temp_name(path);
  track_temp(tmp);
  try {
    CheckedFile f(tmp);
    fill(f.stream());
    f.finish();
    rename_file(tmp, path);
    forget_temp(tmp);
  } catch (const InputError& e) {
    ::unlink(tmp.c_str());
    forget_temp(tmp);
    if (e.where() != tmp) throw;
    throw InputError(path, "", e.problem());  // named by the file asked for
  } catch (...) {
    ::unlink(tmp.c_str());
    forget_temp(tmp);
    throw;
  }
}

}  // namespace kvfleet::sim
