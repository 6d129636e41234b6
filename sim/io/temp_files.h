#pragma once
// Temporary files and folders: every output is written under a temporary name beside its final
// path (NAME.tmp-PID) and renamed into place when complete. This file keeps the list of the
// temporaries this process holds, so that SIGINT and SIGTERM remove them before the process
// exits (status 130 and 143), and removes the temporaries that a process killed outright
// (SIGKILL, power loss) left behind, once that process is gone.
#include <string>

namespace kvfleet::sim {

// The temporary name `path` is written under by this process: "PATH.tmp-PID".
std::string temp_name(const std::string& path);

// Records a temporary (a file, or a folder whose files are removed with it) for removal on
// SIGINT/SIGTERM; forget_temp() when it has been renamed or removed. Thread-safe, and the
// signal handler reads the list without locks. At most a few dozen are held at once.
void track_temp(const std::string& path, bool folder = false);
void forget_temp(const std::string& path);

// Installs the SIGINT and SIGTERM handlers that remove the tracked temporaries and exit with
// 128 + the signal's number.
void install_temp_cleanup_on_signals();

// Removes "PATH.tmp-PID" files and folders beside `path` whose process no longer runs.
void remove_stale_temps(const std::string& path);

// A folder of this process's own in the temporary directory (TMPDIR, else /tmp), "NAME.tmp-PID"
// (mode 0700), tracked for removal on SIGINT and
// SIGTERM: stale ones of dead processes removed first; one an earlier process of this PID left
// is removed and made afresh, one this process made is reused (made again, and tracked again,
// if it was removed since). A link or another user's entry at that name is refused
// (InputError naming it), as is a TMPDIR that is no folder or where none can be made.
std::string private_temp_folder(const std::string& name);

}  // namespace kvfleet::sim
