#pragma once
// What built this program and how it was started: for the provenance every result file keeps
// (simulation/provenance.h).
#include <string>

namespace kvfleet::sim {

// kvfleet's version (CMake's project version).
const std::string& kvfleet_version();
// The git commit the build was configured from ("<hash>", "<hash>+modified" when tracked files
// differed from it, "unknown" outside a git checkout). Taken when CMake configures; CMake
// reconfigures when HEAD moves.
const std::string& kvfleet_commit();

// The command line of this process, as programs record it at start (set_command_line); "" when
// none was recorded (a library caller: Python records its own).
void set_command_line(int argc, const char* const* argv);
void set_command_line(const std::string& text);
const std::string& command_line();

}  // namespace kvfleet::sim
