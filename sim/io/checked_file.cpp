#include "sim/io/checked_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <streambuf>
#include <vector>

#include "sim/core/error.h"
#include "sim/io/output_set.h"
#include "sim/io/temp_files.h"

namespace kvfleet::sim {

void throw_io_error(const std::string& path, const std::string& doing, int err) {
  std::string why = std::strerror(err);
  if (err == ENOSPC) why += " (the disk is full)";
  if (err == EDQUOT) why += " (over the disk quota)";
  if (err == EFBIG) why += " (over the file-size limit, ulimit -f)";
  throw InputError(path, "", "cannot " + doing + ": " + why);
}

// A 64 KiB buffer over the file's write(); the first failure is kept, later output dropped.
class CheckedFile::Buf final : public std::streambuf {
 public:
  explicit Buf(CheckedFile& f) : file_(f), data_(1 << 16) {
    setp(data_.data(), data_.data() + data_.size());
  }
  bool drain() {
    const std::size_t n = static_cast<std::size_t>(pptr() - pbase());
    if (n > 0 && !failed_) {
      try {
        file_.write(pbase(), n);
      } catch (const InputError& e) {
        failed_ = true;
        message_ = e.what();
      }
    }
    setp(data_.data(), data_.data() + data_.size());
    return !failed_;
  }
  const std::string& message() const { return message_; }
  bool failed() const { return failed_; }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  CheckedFile& file_;
  std::vector<char> data_;
  bool failed_ = false;
  std::string message_;
};

CheckedFile::CheckedFile(std::string path) : path_(std::move(path)) {
  do {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  } while (fd_ < 0 && errno == EINTR);
  if (fd_ < 0) throw_io_error(path_, "create the file", errno);
}

CheckedFile::~CheckedFile() {
  stream_.reset();
  buf_.reset();
  if (fd_ >= 0) ::close(fd_);
}

void CheckedFile::write(const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t k = ::write(fd_, p, n);
    if (k < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      throw_io_error(path_, "write", err);
    }
    if (k == 0) throw_io_error(path_, "write", EIO);
    p += k;
    n -= static_cast<std::size_t>(k);
  }
}

std::ostream& CheckedFile::stream() {
  if (!stream_) {
    buf_ = std::make_unique<Buf>(*this);
    stream_ = std::make_unique<std::ostream>(buf_.get());
  }
  return *stream_;
}

void CheckedFile::finish() {
  if (buf_) {
    buf_->drain();
    if (buf_->failed()) throw InputError(path_, "", buf_->message());
  }
  if (::fsync(fd_) != 0 && errno != EINVAL && errno != EROFS) {
    // EINVAL/EROFS: a file that cannot be synced (a pipe, some special files) has nothing to lose.
    const int err = errno;
    throw_io_error(path_, "sync to disk", err);
  }
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0 && errno != EINTR) {
    const int err = errno;
    throw_io_error(path_, "close", err);
  }
}

void rename_file(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) {
    const int err = errno;
    throw_io_error(to, "put the new file in place (rename from " + from + ")", err);
  }
}

void write_file_atomically(const std::string& path, const std::function<void(CheckedFile&)>& fill) {
  check_output_file("output file", path);
  const std::string tmp = temp_name(path);
  track_temp(tmp);
  try {
    CheckedFile f(tmp);
    fill(f);
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

void write_bytes_atomically(const std::string& path, const void* data, std::size_t n) {
  write_file_atomically(path, [&](CheckedFile& f) { f.write(data, n); });
}

}  // namespace kvfleet::sim
