#include "sim/io/output_set.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "sim/core/error.h"
#include "sim/io/temp_files.h"

namespace kvfleet::sim {
namespace {

namespace fs = std::filesystem;

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
      throw InputError(option, "", path + " is " + kind_of(st) + ", not a folder");
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
    if (fs::weakly_canonical(e.path) == fs::weakly_canonical(path))
      throw InputError(option, "", path + " is also the path of " + e.option);
  entries_.push_back({option, path, temp_name(path), false});
  track_temp(entries_.back().temp);
  return entries_.back().temp;
}

std::string OutputSet::add_folder(const std::string& option, const std::string& path_in) {
  std::string path = path_in;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  check_output_folder(option, path);
  remove_stale_temps(path);
  for (const auto& e : entries_)
    if (fs::weakly_canonical(e.path) == fs::weakly_canonical(path))
      throw InputError(option, "", path + " is also the path of " + e.option);
  const std::string temp = temp_name(path);
  track_temp(temp, true);  // before it exists: a signal between would leave it behind
  std::error_code ec;
  fs::create_directory(temp, ec);
  if (ec) {
    forget_temp(temp);
    throw InputError(option, "", "cannot create a folder beside " + path + ": " + ec.message());
  }
  entries_.push_back({option, path, temp, true});
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
  for (const auto& e : entries_) {
    std::error_code ec;
    if (e.folder && fs::is_directory(e.path, ec)) {
      // Into an existing folder: file by file (replacing same-named files), then drop the
      // temporary folder.
      for (const auto& f : fs::directory_iterator(e.temp))
        fs::rename(f.path(), fs::path(e.path) / f.path().filename());
      fs::remove(e.temp);
    } else {
      fs::rename(e.temp, e.path);
    }
    forget_temp(e.temp);
  }
  published_ = true;
}

}  // namespace kvfleet::sim
