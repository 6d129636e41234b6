#pragma once
// The command line's commands, one file each (replay_command.cpp, run_command.cpp,
// sweep_command.cpp, capacity_command.cpp; the small ones in main.cpp), and what they share:
// option parsing and its usage error, and running kvfleet-plot.
#include <boost/program_options.hpp>

#include <stdexcept>
#include <string>
#include <vector>

namespace kvfleet::sim {
class Mpi;
}

namespace kvfleet::cli {

namespace po = boost::program_options;
using sim::Mpi;

// A command line kvfleet cannot parse: its message is printed as is, exit status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Whether two paths name the same existing file (an output must not overwrite an input).
bool same_file(const std::string& a, const std::string& b);

// Parses a command's options with one positional argument named `positional`.
po::variables_map parse_command(const std::vector<std::string>& args,
                                const po::options_description& opts, const char* positional,
                                const char* command);

// kvfleet-plot (gui/, built with Qt6 Charts) beside this program, or "" when it was not built:
// the simulator core stays free of Qt.
std::string plot_program(const char* argv0);

// Runs kvfleet-plot with `args` and waits; its list of files written (temporary names) is
// dropped, its error messages are kept in `errors` (the last line, without the tool's prefix) so
// that kvfleet's own message carries them. Returns its exit status.
int run_plot(const std::string& program, const std::vector<std::string>& args, std::string& errors);

int cmd_replay(const std::vector<std::string>& args);
int cmd_run(const std::vector<std::string>& args);
int cmd_sweep(const std::vector<std::string>& args, Mpi& mpi);
int cmd_merge(const std::vector<std::string>& args);
int cmd_capacity(const std::vector<std::string>& args);
int cmd_size(const std::vector<std::string>& args);

}  // namespace kvfleet::cli
