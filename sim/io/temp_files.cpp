#include "sim/io/temp_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>

#include "sim/core/error.h"

namespace kvfleet::sim {
namespace {

// A fixed table the signal handler can walk without locks or allocation. A slot is free (0),
// being written (1) or holds a path (2: file, 3: folder).
struct Slot {
  std::atomic<int> state{0};
  char path[4096];
};
constexpr std::size_t kSlots = 256;
std::array<Slot, kSlots> g_slots;

// Async-signal-safe removal of a folder's entries (one level: what kvfleet writes) and the
// folder itself, through raw getdents64 (opendir may allocate).
void remove_folder_signal_safe(const char* path) {
  const int fd = ::open(path, O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    alignas(8) char buf[8192];
    for (;;) {
      const long n = ::syscall(SYS_getdents64, fd, buf, sizeof buf);
      if (n <= 0) break;
      for (long off = 0; off < n;) {
        const auto* d = reinterpret_cast<const struct dirent64*>(buf + off);
        if (std::strcmp(d->d_name, ".") != 0 && std::strcmp(d->d_name, "..") != 0)
          ::unlinkat(fd, d->d_name, 0);
        off += d->d_reclen;
      }
    }
    ::close(fd);
  }
  ::rmdir(path);
}

extern "C" void on_terminating_signal(int sig) {
  for (auto& s : g_slots) {
    const int st = s.state.load(std::memory_order_acquire);
    if (st == 2) ::unlink(s.path);
    if (st == 3) remove_folder_signal_safe(s.path);
  }
  ::_exit(128 + sig);
}

// A process that runs. A killed process whose parent has not reaped it yet (a zombie: an
// orphan in a container whose PID 1 does not reap, or a child of a busy parent) still answers
// kill(pid, 0) but holds no files and will never finish its temporaries: it counts as gone.
bool process_alive(long pid) {
  if (pid <= 0) return false;
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM) return false;
  const std::string stat = "/proc/" + std::to_string(pid) + "/stat";
  const int fd = ::open(stat.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;  // no /proc: kill's answer stands
  char buf[512];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return true;
  buf[n] = '\0';
  // "PID (COMM) STATE ...": COMM may hold spaces and parentheses; the state follows the last ')'.
  const char* close_paren = std::strrchr(buf, ')');
  if (close_paren == nullptr || close_paren[1] != ' ') return true;
  const char state = close_paren[2];
  return state != 'Z' && state != 'X';
}

}  // namespace

std::string temp_name(const std::string& path) {
  return path + ".tmp-" + std::to_string(::getpid());
}

void track_temp(const std::string& path, bool folder) {
  if (path.size() >= sizeof(Slot::path)) return;  // cannot be named: left to the stale sweep
  for (auto& s : g_slots) {
    int expected = 0;
    if (!s.state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) continue;
    std::memcpy(s.path, path.c_str(), path.size() + 1);
    s.state.store(folder ? 3 : 2, std::memory_order_release);
    return;
  }
}

void forget_temp(const std::string& path) {
  for (auto& s : g_slots) {
    const int st = s.state.load(std::memory_order_acquire);
    if ((st == 2 || st == 3) && path == s.path) {
      s.state.store(0, std::memory_order_release);
      return;
    }
  }
}

void install_temp_cleanup_on_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_terminating_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

void remove_stale_temps(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  const std::string prefix = p.filename().string() + ".tmp-";
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string digits = name.substr(prefix.size());
    if (digits.empty() || digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      continue;
    const long pid = std::stol(digits);
    if (pid == ::getpid() || process_alive(pid)) continue;
    std::error_code rm;
    fs::remove_all(it->path(), rm);
  }
}

std::string private_temp_folder(const std::string& name) {
  std::error_code tec;
  const std::filesystem::path tmp = std::filesystem::temp_directory_path(tec);
  if (tec) {
    const char* env = std::getenv("TMPDIR");
    throw InputError("TMPDIR", "",
                     "'" + std::string(env ? env : "") + "' is no folder for temporary files (" +
                         tec.message() + "): point TMPDIR at one, or unset it for /tmp");
  }
  const std::string base = (tmp / name).string();
  static std::mutex m;
  static std::set<std::string> made;  // by this process
  const std::lock_guard<std::mutex> lock(m);
  const std::string folder = temp_name(base);
  if (made.count(folder) == 0) remove_stale_temps(base);
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (::mkdir(folder.c_str(), 0700) == 0) {
      made.insert(folder);
      track_temp(folder, true);
      return folder;
    }
    if (errno != EEXIST)
      throw InputError(folder, "",
                       std::string("cannot be created (TMPDIR): ") + std::strerror(errno));
    struct stat st {};
    if (::lstat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid())
      throw InputError(folder, "",
                       "is in the way: a link, a file or another user's folder where this "
                       "process's temporary folder goes (remove it, or set TMPDIR elsewhere)");
    if (made.count(folder)) return folder;
    // Left by an earlier process that had this PID: not this one's to reuse.
    std::error_code ec;
    std::filesystem::remove_all(folder, ec);
  }
  throw InputError(folder, "", "cannot be made afresh (TMPDIR): it reappears when removed");
}

}  // namespace kvfleet::sim
