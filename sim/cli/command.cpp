// What the command line's commands share (command.h).
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <boost/program_options.hpp>

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "sim/cli/command.h"
#include "sim/cli/mpi.h"
#include "sim/config/params.h"
#include "sim/core/build_info.h"
#include "sim/core/error.h"
#include "sim/io/output_set.h"
#include "sim/io/temp_files.h"
#include "sim/io/text_file.h"
#include "sim/metrics/summary.h"
#include "sim/output/chrome_trace.h"
#include "sim/output/prometheus.h"
#include "sim/output/report.h"
#include "sim/output/results.h"
#include "sim/reference/reference.h"
#include "sim/replay/bench_results.h"
#include "sim/replay/replay.h"
#include "sim/simulation/scenario.h"
#include "sim/simulation/simulation.h"
#include "sim/sweep/capacity.h"
#include "sim/sweep/sizing.h"
#include "sim/sweep/sweep.h"

using namespace kvfleet::sim;

namespace kvfleet::cli {

// Whether two paths name the same existing file (an output must not overwrite an input).
bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return std::filesystem::exists(a, ec) && std::filesystem::exists(b, ec) &&
         std::filesystem::equivalent(a, b, ec);
}

// Parses a command's options with one positional argument named `positional`.
po::variables_map parse_command(const std::vector<std::string>& args,
                                const po::options_description& opts, const char* positional,
                                const char* command) {
  po::options_description hidden;
  hidden.add_options()(positional, po::value<std::string>(), positional);
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description pos;
  pos.add(positional, 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(std::string("kvfleet ") + command + ": " + e.what());
  }
  return vm;
}

// kvfleet-plot (gui/, built with Qt6 Charts) beside this program, or "" when it was not built:
// the simulator core stays free of Qt.
std::string plot_program(const char* argv0) {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const auto plot =
      (ec ? std::filesystem::path(argv0 ? argv0 : "") : self).parent_path() / "kvfleet-plot";
  return std::filesystem::exists(plot) ? plot.string() : "";
}

// Runs kvfleet-plot with `args` and waits; its list of files written (temporary names) is
// dropped, its error messages are kept in `errors` (the last line, without the tool's prefix) so
// that kvfleet's own message carries them. Returns its exit status.
int run_plot(const std::string& program, const std::vector<std::string>& args,
             std::string& errors) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(program.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return 127;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (spawned != 0) {
    ::close(pipe_fds[0]);
    return 127;
  }
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(pipe_fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (text.size() < (1 << 16)) text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(pipe_fds[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  // The last non-empty line is the tool's own message (libraries may print before it).
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  errors =
      text.substr(text.find_last_of('\n') == std::string::npos ? 0 : text.find_last_of('\n') + 1);
  for (const char* prefix : {"kvfleet plot: error: ", "kvfleet plot: "})
    if (errors.rfind(prefix, 0) == 0) errors = errors.substr(std::strlen(prefix));
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

}  // namespace kvfleet::cli
