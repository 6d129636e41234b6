#pragma once
// Text files written atomically: under a temporary name, every write checked, fsynced and closed,
// then renamed, so a reader (or an interrupted run, or a full disk) sees either the old file or
// the complete new one (io/checked_file.h).
#include <functional>
#include <ostream>
#include <string>

namespace kvfleet::sim {

// Throws InputError naming the file when it cannot be written (or exists as anything but a
// regular file); removes the temporary file on any exception from `fill` and on SIGINT/SIGTERM.
void write_text_atomically(const std::string& path, const std::function<void(std::ostream&)>& fill);

// `text` made safe to follow "# " on one line of a generated file (YAML, CSV): every control
// character (a newline in a file name, say) written as \xNN, so that no input can add a line.
std::string comment_line(const std::string& text);

}  // namespace kvfleet::sim
