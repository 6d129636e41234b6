#pragma once
// Files written through checked system calls: every write, the fsync and the close are checked,
// so that a full disk, a quota, a file-size limit or an I/O error is an error naming the file
// (InputError, exit 2) and never a file published short. The buffered std::ostream a writer fills
// keeps the first error and reports it at finish(); nothing after it is written.
#include <cstddef>
#include <functional>
#include <memory>
#include <ostream>
#include <string>

namespace kvfleet::sim {

// Throws InputError naming `path`: "cannot <doing>: <strerror(err)>", with a hint for a full disk,
// a quota or a file-size limit.
[[noreturn]] void throw_io_error(const std::string& path, const std::string& doing, int err);

class CheckedFile {
 public:
  // Creates (or truncates) `path` for writing; throws InputError naming it when it cannot.
  explicit CheckedFile(std::string path);
  ~CheckedFile();  // closes a file not finished (its contents are then incomplete)
  CheckedFile(const CheckedFile&) = delete;
  CheckedFile& operator=(const CheckedFile&) = delete;

  void write(const void* data, std::size_t n);  // all n bytes, or throws
  std::ostream& stream();                       // buffered; errors surface at finish()
  // Flushes the stream, fsyncs and closes: the file is complete on disk, or this throws.
  void finish();

 private:
  class Buf;
  std::string path_;
  int fd_ = -1;
  std::unique_ptr<Buf> buf_;
  std::unique_ptr<std::ostream> stream_;
};

// rename(2), throwing InputError naming `to` when it fails.
void rename_file(const std::string& from, const std::string& to);

// Writes `path` atomically: `fill` writes into "PATH.tmp-PID", which is then fsynced, closed and
// renamed; the temporary is removed on any failure (and on SIGINT/SIGTERM), and errors name
// `path`.
void write_file_atomically(const std::string& path, const std::function<void(CheckedFile&)>& fill);

// Writes `n` bytes as the whole of `path`, atomically: into "PATH.tmp-PID", fsynced and closed,
// then renamed; the temporary is removed on any failure (and on SIGINT/SIGTERM).
void write_bytes_atomically(const std::string& path, const void* data, std::size_t n);

}  // namespace kvfleet::sim
