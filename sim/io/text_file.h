#pragma once
// Text files written atomically: under a temporary name, flushed, then renamed, so a reader (or an
// interrupted run) sees either the old file or the complete new one.
#include <functional>
#include <ostream>
#include <string>

namespace kvfleet::sim {

// Throws InputError naming the file when it cannot be written (or exists as anything but a
// regular file); removes the temporary file on any exception from `fill` and on SIGINT/SIGTERM.
void write_text_atomically(const std::string& path, const std::function<void(std::ostream&)>& fill);

}  // namespace kvfleet::sim
