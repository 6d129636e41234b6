#include "sim/io/output_set.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "sim/core/error.h"
#include "sim/io/checked_file.h"
#include "sim/io/temp_files.h"

namespace kvfleet::sim {
namespace {

namespace fs = std::filesystem;

// The name of the temporary folder made inside an existing output folder.
constexpr const char* kInsideTemp = ".kvfleet";

// What a path is, in words, when it is not a plain file or folder.
std::string kind_of(const fs::file_status& st) {
  switch (st.type()) {
    case fs::file_type::directory:
      return "a directory";
    case fs::file_type::symlink:
      return "a symbolic link";
    case fs::file_type::fifo:
      return "a fifo";
    case fs::file_type::character:
      return "a character device";
    case fs::file_type::block:
      return "a block device";
    case fs::file_type::socket:
      return "a socket";
    default:
      return "not a regular file";
  }
}

// Whether two output paths name the same file: absolute and canonical as far as they exist
// (weakly_canonical leaves a relative path of files that do not exist yet relative).
bool same_output(const std::string& a, const std::string& b) {
  std::error_code ea, eb;
  const fs::path x = fs::weakly_canonical(fs::absolute(a), ea);
  const fs::path y = fs::weakly_canonical(fs::absolute(b), eb);
  return !ea && !eb && x == y;
}

fs::path parent_of(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

void check_parent(const std::string& option, const std::string& path) {
  std::error_code ec;
  const fs::path parent = parent_of(path);
  if (!fs::is_directory(parent, ec))
    throw InputError(option, "", "folder does not exist: " + parent.string());
}

}  // namespace

void check_output_file(const std::string& option, const std::string& path) {
  if (path.empty()) throw InputError(option, "", "the path is empty");
  if (path.back() == '/')
    throw InputError(option, "", "'" + path + "' names a folder; give a file name");
  check_parent(option, path);
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(path, ec);
  if (!ec && fs::exists(st) && !fs::is_regular_file(st)) {
    throw InputError(option, "",
                     path + " is " + kind_of(st) +
                         ": kvfleet writes a new file there and replaces only regular files");
  }
}

void check_output_folder(const std::string& option, const std::string& path) {
  if (path.empty()) throw InputError(option, "", "the path is empty");
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);  // a link to a folder is a folder
  if (!ec && fs::exists(st)) {
    if (!fs::is_directory(st))
      throw InputError(option, "",
                       path + " is " +
                           (fs::is_regular_file(st) ? std::string("a file") : kind_of(st)) +
                           ", not a folder: give a folder's path");
    return;
  }
  check_parent(option, path.back() == '/' ? path.substr(0, path.size() - 1) : path);
}

void check_writable(const std::string& option, const std::string& path) {
  const std::string probe = temp_name(path) + "-probe";
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) {
    throw InputError(option, "",
                     "cannot write beside " + path + ": " + std::string(std::strerror(errno)));
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

OutputLock::OutputLock(const std::string& option, const std::string& path) : path_(path + ".lock") {
  for (int attempt = 0; attempt < 10; ++attempt) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw InputError(option, "", "cannot create " + path_ + ": " + std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      char buf[32] = {};
      const ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
      ::close(fd_);
      fd_ = -1;
      const std::string pid = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "?";
      throw InputError(option, "",
                       path + " is being written by another kvfleet (process " +
                           pid.substr(0, pid.find('\n')) + ", holding " + path_ +
                           "); wait for it to finish or choose another path");
    }
    // Locked; make sure the file is still the one at the path (a releasing process may have
    // removed it between our open and flock).
    struct stat a {
    }, b{};
    if (::fstat(fd_, &a) == 0 && ::stat(path_.c_str(), &b) == 0 && a.st_ino == b.st_ino &&
        a.st_dev == b.st_dev) {
      const std::string pid = std::to_string(::getpid()) + "\n";
      if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) < 0) {
        // The lock holds without the note of who holds it.
      }
      track_temp(path_);  // removed on SIGINT/SIGTERM too
      return;
    }
    ::close(fd_);
    fd_ = -1;
  }
  throw InputError(option, "", "cannot lock " + path_ + " (it keeps being replaced)");
}

OutputLock::~OutputLock() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());
  forget_temp(path_);
  ::close(fd_);
}

OutputSet::~OutputSet() {
  if (published_) return;
  for (const auto& e : entries_) {
    std::error_code ec;
    fs::remove_all(e.temp, ec);
    forget_temp(e.temp);
  }
}

std::string OutputSet::add_file(const std::string& option, const std::string& path) {
  check_output_file(option, path);
  remove_stale_temps(path);
  check_writable(option, path);
  for (const auto& e : entries_)
    if (same_output(e.path, path))
      throw InputError(option, "", path + " is also the path of " + e.option);
  auto lock = std::make_unique<OutputLock>(option, path);
  entries_.push_back({option, path, temp_name(path), false, std::move(lock)});
  track_temp(entries_.back().temp);
  return entries_.back().temp;
}

std::string OutputSet::add_folder(const std::string& option, const std::string& path_in) {
  std::string path = path_in;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  check_output_folder(option, path);
  remove_stale_temps(path);
  for (const auto& e : entries_)
    if (same_output(e.path, path))
      throw InputError(option, "", path + " is also the path of " + e.option);
  // Into an existing folder, the temporary folder goes inside it, so that its files are renamed
  // within one file system even when the folder is a mount point; a new folder is made beside.
  std::error_code ec;
  const bool exists = fs::is_directory(path, ec);
  const std::string inside = path + "/" + kInsideTemp;
  if (exists) remove_stale_temps(inside);
  auto lock = std::make_unique<OutputLock>(option, path);
  const std::string temp = temp_name(exists ? inside : path);
  track_temp(temp, true);  // before it exists: a signal between would leave it behind
  if (::mkdir(temp.c_str(), 0755) != 0) {
    const int err = errno;
    forget_temp(temp);
    throw_io_error(option, "create a folder in " + (exists ? path : parent_of(path).string()), err);
  }
  entries_.push_back({option, path, temp, true, std::move(lock)});
  return temp;
}

void OutputSet::publish() {
  // Nothing is renamed unless everything can be.
  for (const auto& e : entries_) {
    if (!e.folder) {
      check_output_file(e.option, e.path);
      continue;
    }
    check_output_folder(e.option, e.path);
    std::error_code ec;
    if (!fs::is_directory(e.path, ec)) continue;
    for (const auto& f : fs::directory_iterator(e.temp)) {
      const fs::path target = fs::path(e.path) / f.path().filename();
      const fs::file_status st = fs::symlink_status(target, ec);
      if (!ec && fs::exists(st) && !fs::is_regular_file(st))
        throw InputError(
            e.option, "",
            target.string() + " is " + kind_of(st) + ": kvfleet replaces only regular files");
    }
  }
  // Each rename is recorded with the way back: a file that existed keeps a second name (a hard
  // link) until every output is in place, so that a rename that fails half-way through the set
  // puts back the previous files and removes the new ones.
  std::vector<Published> done;
  try {
    for (auto& e : entries_) {
      std::error_code ec;
      if (e.folder && fs::is_directory(e.path, ec) && e.temp.rfind(e.path + "/", 0) == 0) {
        // Into an existing folder: file by file (replacing same-named files), then drop the
        // temporary folder inside it.
        std::vector<fs::path> files;
        for (const auto& f : fs::directory_iterator(e.temp)) files.push_back(f.path());
        for (const auto& f : files)
          publish_file(e.option, f.string(), (fs::path(e.path) / f.filename()).string(), done);
        ::rmdir(e.temp.c_str());
      } else if (e.folder) {
        rename_into_place(e.option, e.temp, e.path);
        done.push_back({e.path, "", true});
      } else {
        publish_file(e.option, e.temp, e.path, done);
      }
      forget_temp(e.temp);
    }
  } catch (const InputError& failure) {
    std::string lost;
    for (auto it = done.rbegin(); it != done.rend(); ++it) {
      std::error_code ec;
      if (it->folder) {
        fs::remove_all(it->path, ec);
      } else if (it->backup.empty()) {
        ::unlink(it->path.c_str());
      } else if (::rename(it->backup.c_str(), it->path.c_str()) != 0) {
        lost += (lost.empty() ? "" : ", ") + it->path + " (kept as " + it->backup + ")";
        continue;
      }
      if (!it->backup.empty()) forget_temp(it->backup);
    }
    if (!lost.empty())
      throw InputError(failure.where(), failure.key(),
                       failure.problem() + "; the previous version could not be put back: " + lost);
    throw;
  }
  for (const auto& d : done) {
    if (d.backup.empty()) continue;
    ::unlink(d.backup.c_str());
    forget_temp(d.backup);
  }
  published_ = true;
}

void OutputSet::publish_file(const std::string& option, const std::string& from,
                             const std::string& to, std::vector<Published>& done) {
  std::string backup;
  struct stat st {};
  if (::lstat(to.c_str(), &st) == 0) {
    backup = temp_name(to + ".previous");
    ::unlink(backup.c_str());
    track_temp(backup);
    if (::link(to.c_str(), backup.c_str()) != 0) {
      const int err = errno;
      forget_temp(backup);
      throw_io_error(option, "keep the previous " + to + " until the new one is in place", err);
    }
  }
  try {
    rename_into_place(option, from, to);
  } catch (...) {
    if (!backup.empty()) {
      ::unlink(backup.c_str());
      forget_temp(backup);
    }
    throw;
  }
  done.push_back({to, backup, false});
}

void OutputSet::rename_into_place(const std::string& option, const std::string& from,
                                  const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) {
    const int err = errno;
    throw_io_error(option, "put " + to + " in place", err);
  }
}

}  // namespace kvfleet::sim
