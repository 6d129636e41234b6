#pragma once
// Helpers for tests that run the kvfleet command line as a user would: run it and capture its
// exit status and text, and a fixture with a fresh folder per test that can list what a command
// left behind.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace kvfleet::testing {

struct Output {
  int status;        // exit status; 128 + signal when killed by one
  std::string text;  // stdout and stderr
};

// Runs `build/bin/TOOL ARGS` through the shell (ARGS may hold redirections), after the shell
// command `before` when given (`ulimit -v 1500000 &&`).
inline Output run_tool(const std::string& tool, const std::string& args,
                       const std::string& before = "") {
  const std::string cmd =
      before + std::string(KVFLEET_BINARY_DIR) + "/bin/" + tool + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  const int st = pclose(p);
  // The shell reports a child killed by signal N as 128 + N.
  return {WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), out};
}

// Runs `build/bin/kvfleet ARGS` (run_tool).
inline Output kvfleet(const std::string& args, const std::string& before = "") {
  return run_tool("kvfleet", args, before);
}

// A test with its own empty folder, removed afterwards.
class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->test_suite_name()) + "_" + info->name();
    std::replace(name.begin(), name.end(), '/', '_');
    dir_ = std::filesystem::temp_directory_path() / ("kvfleet_cli_" + name);
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // Files under the folder other than `inputs`.
  std::vector<std::string> outputs(const std::vector<std::string>& inputs) const {
    std::vector<std::string> v;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) {
      const auto n = e.path().filename().string();
      if (std::find(inputs.begin(), inputs.end(), n) == inputs.end()) v.push_back(n);
    }
    return v;
  }
  std::filesystem::path dir_;
};

}  // namespace kvfleet::testing
