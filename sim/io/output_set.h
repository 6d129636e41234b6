#pragma once
// Where a command writes: output paths checked before any work starts, and a set of outputs
// published together. Every output goes to a temporary beside its final path; publish() renames
// them all into place only when every one is complete, so that after a failure (or SIGINT,
// SIGTERM) no output is left complete at its final name beside one that is missing. kvfleet
// replaces only regular files: a final path that is a directory, a symbolic link, a fifo or a
// device is refused before the run (exit 2), never overwritten.
#include <memory>
#include <string>
#include <vector>

namespace kvfleet::sim {

// Throws InputError naming `option` unless `path` can take a file that kvfleet writes: a
// non-empty path whose folder exists, and which is absent or a regular file (not a symbolic
// link).
void check_output_file(const std::string& option, const std::string& path);
// The same for a folder of files: absent (its parent folder exists), or an existing folder.
void check_output_folder(const std::string& option, const std::string& path);

// Proves that a file can be created beside `path` (a probe file, removed at once); throws
// InputError naming `option` and the reason when it cannot (read-only folder, /proc, ...).
void check_writable(const std::string& option, const std::string& path);

// An advisory lock (flock) on "PATH.lock" held while a command writes PATH over a long time (a
// sweep and its checkpoints): a second command on the same PATH is refused (InputError naming
// `option` and the other process). The lock file is removed when released; one left by a
// killed process is taken over.
class OutputLock {
 public:
  OutputLock(const std::string& option, const std::string& path);
  ~OutputLock();
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;

 private:
  std::string path_;
  int fd_ = -1;
};

class OutputSet {
 public:
  OutputSet() = default;
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;
  // Removes every temporary not published.
  ~OutputSet();

  // Registers an output and returns where to write it: a file (written whole to the returned
  // temporary path) or a folder (files written into the returned temporary folder, which
  // exists; inside an existing folder, so that a mount point works). Checks the path first
  // (check_output_file / check_output_folder, writability), takes its lock (OutputLock: a sweep
  // writing the same path refuses, and is refused) and removes stale temporaries of dead
  // processes beside it. Throws InputError naming `option`.
  std::string add_file(const std::string& option, const std::string& path);
  std::string add_folder(const std::string& option, const std::string& path);

  // Renames every output into place: first checks that no final name has become something
  // other than a regular file (or folder), then renames. When a rename fails, the outputs
  // already renamed are taken back (a file that existed is restored from a hard link made
  // before it was replaced) and InputError names the path: all or nothing.
  void publish();

 private:
  struct Entry {
    std::string option, path, temp;
    bool folder;
    std::unique_ptr<OutputLock> lock;  // held from add_* until this set is destroyed
  };
  struct Published {
    std::string path, backup;  // backup: the previous file's second name, empty when none
    bool folder;               // a new folder, removed whole on the way back
  };
  static void publish_file(const std::string& option, const std::string& from,
                           const std::string& to, std::vector<Published>& done);
  static void rename_into_place(const std::string& option, const std::string& from,
                                const std::string& to);
  std::vector<Entry> entries_;
  bool published_ = false;
};

}  // namespace kvfleet::sim
