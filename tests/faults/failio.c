// An I/O layer that fails on purpose (in the spirit of SQLite's I/O-error tests and LevelDB's
// fault-injection environment), loaded into an unchanged kvfleet binary with LD_PRELOAD. It
// counts the I/O calls a process makes on files under one folder and fails the Nth of them, so
// that a test can loop N over every call of a command (tests/faults/io_faults.py).
//
// Environment:
//   FAILIO_DIR     only calls on paths under this folder count (outputs; not stdout, not inputs)
//   FAILIO_NTH     the call that fails, 1-based; 0 or unset: none fails (counting only)
//   FAILIO_PERSIST 1: every later call that takes space fails too (a disk that stays full: opens
//                  for writing, writes, truncates, allocations, fsync, mkdir); a rename or a
//                  close fails only as the Nth
//   FAILIO_ERRNO   the error: ENOSPC (default), EIO, EDQUOT or EFBIG
//   FAILIO_COUNT   a file the number of counted calls is written to at exit
//   FAILIO_LOG     a file each counted call is appended to ("N op path")
//
// Calls counted: opening a file for writing (open, openat, creat, fopen for w/a/+), write,
// pwrite, writev, pwritev, ftruncate, fallocate, fsync, fdatasync, close, fclose, rename, renameat,
// renameat2, mkdir. A failed close still closes the descriptor (as Linux does). Removing files is
// never failed: clean-up after a failure must be able to run.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static long g_count;
static long g_nth;
static int g_persist;
static int g_errno = ENOSPC;
static char g_dir[PATH_MAX];
static size_t g_dir_len;
static int g_ready;
static __thread int g_inside;  // our own calls (logging, realpath) are not counted

static void init(void) {
  if (g_ready) return;
  const char* d = getenv("FAILIO_DIR");
  if (d && *d) {
    if (!realpath(d, g_dir)) snprintf(g_dir, sizeof g_dir, "%s", d);
    g_dir_len = strlen(g_dir);
  }
  const char* n = getenv("FAILIO_NTH");
  g_nth = n ? atol(n) : 0;
  const char* p = getenv("FAILIO_PERSIST");
  g_persist = p && *p == '1';
  const char* e = getenv("FAILIO_ERRNO");
  if (e && strcmp(e, "EIO") == 0) g_errno = EIO;
  if (e && strcmp(e, "EDQUOT") == 0) g_errno = EDQUOT;
  if (e && strcmp(e, "EFBIG") == 0) g_errno = EFBIG;
  g_ready = 1;
}

static int under_dir(const char* path) {
  if (!g_dir_len || !path) return 0;
  char abs[PATH_MAX];
  if (path[0] == '/') {
    snprintf(abs, sizeof abs, "%s", path);
  } else {
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return 0;
    snprintf(abs, sizeof abs, "%s/%s", cwd, path);
  }
  return strncmp(abs, g_dir, g_dir_len) == 0 && (abs[g_dir_len] == '/' || abs[g_dir_len] == 0);
}

static int fd_under_dir(int fd) {
  if (!g_dir_len || fd < 0) return 0;
  char link[64], target[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, target, sizeof target - 1);
  if (n <= 0) return 0;
  target[n] = 0;
  return under_dir(target);
}

static void log_call(long n, const char* op, const char* path) {
  const char* f = getenv("FAILIO_LOG");
  if (!f) return;
  FILE* out = fopen(f, "a");
  if (!out) return;
  fprintf(out, "%ld %s %s\n", n, op, path ? path : "");
  fclose(out);
}

// Counts a call on a path or descriptor under the folder; returns 1 when it must fail.
static int takes_space(const char* op) {
  return strncmp(op, "rename", 6) != 0 && strcmp(op, "close") != 0 && strcmp(op, "fclose") != 0;
}

static int should_fail(const char* op, const char* path, int fd) {
  if (g_inside) return 0;
  g_inside = 1;
  init();
  int counted = path ? under_dir(path) : fd_under_dir(fd);
  int fail = 0;
  if (counted) {
    const long n = __atomic_add_fetch(&g_count, 1, __ATOMIC_SEQ_CST);
    fail = g_nth > 0 && (n == g_nth || (g_persist && n > g_nth && takes_space(op)));
    if (getenv("FAILIO_LOG")) {
      char desc[PATH_MAX + 32];
      if (path) {
        snprintf(desc, sizeof desc, "%s", path);
      } else {
        char link[64];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        const ssize_t k = readlink(link, desc, sizeof desc - 1);
        desc[k > 0 ? k : 0] = 0;
      }
      log_call(n, op, desc);
    }
  }
  g_inside = 0;
  return fail;
}

#define REAL(name, ret, ...)                                 \
  static ret (*real_##name)(__VA_ARGS__);                    \
  static void load_##name(void) {                            \
    if (!real_##name) real_##name = dlsym(RTLD_NEXT, #name); \
  }

REAL(open, int, const char*, int, ...)
REAL(open64, int, const char*, int, ...)
REAL(openat, int, int, const char*, int, ...)
REAL(openat64, int, int, const char*, int, ...)
REAL(creat, int, const char*, mode_t)
REAL(fopen, FILE*, const char*, const char*)
REAL(fopen64, FILE*, const char*, const char*)
REAL(write, ssize_t, int, const void*, size_t)
REAL(pwrite, ssize_t, int, const void*, size_t, off_t)
REAL(pwrite64, ssize_t, int, const void*, size_t, off64_t)
REAL(writev, ssize_t, int, const struct iovec*, int)
REAL(pwritev, ssize_t, int, const struct iovec*, int, off_t)
REAL(ftruncate, int, int, off_t)
REAL(ftruncate64, int, int, off64_t)
REAL(fallocate, int, int, int, off_t, off_t)
REAL(fsync, int, int)
REAL(fdatasync, int, int)
REAL(close, int, int)
REAL(fclose, int, FILE*)
REAL(rename, int, const char*, const char*)
REAL(renameat, int, int, const char*, int, const char*)
REAL(renameat2, int, int, const char*, int, const char*, unsigned)
REAL(mkdir, int, const char*, mode_t)

static int writes(int flags) { return (flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC)) != 0; }

#define FAIL_WITH(ret) \
  do {                 \
    errno = g_errno;   \
    return ret;        \
  } while (0)

#define OPEN_LIKE(name, path_arg)                                         \
  int name(const char* path, int flags, ...) {                            \
    mode_t mode = 0;                                                      \
    if (flags & (O_CREAT | __O_TMPFILE)) {                                \
      va_list ap;                                                         \
      va_start(ap, flags);                                                \
      mode = va_arg(ap, mode_t);                                          \
      va_end(ap);                                                         \
    }                                                                     \
    load_##name();                                                        \
    if (writes(flags) && should_fail(#name, path_arg, -1)) FAIL_WITH(-1); \
    return real_##name(path, flags, mode);                                \
  }
OPEN_LIKE(open, path)
OPEN_LIKE(open64, path)

#define OPENAT_LIKE(name)                                                                       \
  int name(int dirfd, const char* path, int flags, ...) {                                       \
    mode_t mode = 0;                                                                            \
    if (flags & (O_CREAT | __O_TMPFILE)) {                                                      \
      va_list ap;                                                                               \
      va_start(ap, flags);                                                                      \
      mode = va_arg(ap, mode_t);                                                                \
      va_end(ap);                                                                               \
    }                                                                                           \
    load_##name();                                                                              \
    if (writes(flags) && (dirfd == AT_FDCWD || path[0] == '/') && should_fail(#name, path, -1)) \
      FAIL_WITH(-1);                                                                            \
    return real_##name(dirfd, path, flags, mode);                                               \
  }
OPENAT_LIKE(openat)
OPENAT_LIKE(openat64)

int creat(const char* path, mode_t mode) {
  load_creat();
  if (should_fail("creat", path, -1)) FAIL_WITH(-1);
  return real_creat(path, mode);
}

static int fopen_writes(const char* mode) {
  return mode && (strchr(mode, 'w') || strchr(mode, 'a') || strchr(mode, '+'));
}
FILE* fopen(const char* path, const char* mode) {
  load_fopen();
  if (fopen_writes(mode) && should_fail("fopen", path, -1)) FAIL_WITH(NULL);
  return real_fopen(path, mode);
}
FILE* fopen64(const char* path, const char* mode) {
  load_fopen64();
  if (fopen_writes(mode) && should_fail("fopen64", path, -1)) FAIL_WITH(NULL);
  return real_fopen64(path, mode);
}

ssize_t write(int fd, const void* buf, size_t n) {
  load_write();
  if (fd > 2 && should_fail("write", NULL, fd)) FAIL_WITH(-1);
  return real_write(fd, buf, n);
}
ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) {
  load_pwrite();
  if (should_fail("pwrite", NULL, fd)) FAIL_WITH(-1);
  return real_pwrite(fd, buf, n, off);
}
ssize_t pwrite64(int fd, const void* buf, size_t n, off64_t off) {
  load_pwrite64();
  if (should_fail("pwrite64", NULL, fd)) FAIL_WITH(-1);
  return real_pwrite64(fd, buf, n, off);
}
ssize_t writev(int fd, const struct iovec* iov, int cnt) {
  load_writev();
  if (fd > 2 && should_fail("writev", NULL, fd)) FAIL_WITH(-1);
  return real_writev(fd, iov, cnt);
}
ssize_t pwritev(int fd, const struct iovec* iov, int cnt, off_t off) {
  load_pwritev();
  if (should_fail("pwritev", NULL, fd)) FAIL_WITH(-1);
  return real_pwritev(fd, iov, cnt, off);
}
int ftruncate(int fd, off_t len) {
  load_ftruncate();
  if (should_fail("ftruncate", NULL, fd)) FAIL_WITH(-1);
  return real_ftruncate(fd, len);
}
int ftruncate64(int fd, off64_t len) {
  load_ftruncate64();
  if (should_fail("ftruncate64", NULL, fd)) FAIL_WITH(-1);
  return real_ftruncate64(fd, len);
}
int fallocate(int fd, int mode, off_t off, off_t len) {
  load_fallocate();
  if (should_fail("fallocate", NULL, fd)) FAIL_WITH(-1);
  return real_fallocate(fd, mode, off, len);
}
int fsync(int fd) {
  load_fsync();
  if (should_fail("fsync", NULL, fd)) FAIL_WITH(-1);
  return real_fsync(fd);
}
int fdatasync(int fd) {
  load_fdatasync();
  if (should_fail("fdatasync", NULL, fd)) FAIL_WITH(-1);
  return real_fdatasync(fd);
}
int close(int fd) {
  load_close();
  const int fail = fd > 2 && should_fail("close", NULL, fd);
  const int rc = real_close(fd);
  if (fail) FAIL_WITH(-1);
  return rc;
}
int fclose(FILE* f) {
  load_fclose();
  const int fd = f ? fileno(f) : -1;
  const int fail = fd > 2 && should_fail("fclose", NULL, fd);
  const int rc = real_fclose(f);
  if (fail) FAIL_WITH(EOF);
  return rc;
}
int rename(const char* from, const char* to) {
  load_rename();
  if (should_fail("rename", to, -1)) FAIL_WITH(-1);
  return real_rename(from, to);
}
int renameat(int fd1, const char* from, int fd2, const char* to) {
  load_renameat();
  if ((fd2 == AT_FDCWD || to[0] == '/') && should_fail("renameat", to, -1)) FAIL_WITH(-1);
  return real_renameat(fd1, from, fd2, to);
}
int renameat2(int fd1, const char* from, int fd2, const char* to, unsigned flags) {
  load_renameat2();
  if ((fd2 == AT_FDCWD || to[0] == '/') && should_fail("renameat2", to, -1)) FAIL_WITH(-1);
  return real_renameat2(fd1, from, fd2, to, flags);
}
int mkdir(const char* path, mode_t mode) {
  load_mkdir();
  if (should_fail("mkdir", path, -1)) FAIL_WITH(-1);
  return real_mkdir(path, mode);
}

__attribute__((destructor)) static void report_count(void) {
  const char* f = getenv("FAILIO_COUNT");
  if (!f) return;
  g_inside = 1;
  FILE* out = fopen(f, "w");
  if (!out) return;
  fprintf(out, "%ld\n", g_count);
  fclose(out);
}
