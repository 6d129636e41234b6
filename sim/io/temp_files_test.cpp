#include "sim/io/temp_files.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace kvfleet::sim {
namespace {

namespace fs = std::filesystem;

class TempFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kvfleet-temp-files-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void touch(const std::string& name) { std::ofstream(dir_ / name) << "x"; }
  fs::path dir_;
};

TEST_F(TempFiles, AKilledProcessNotYetReapedCountsAsGone) {
  // A child that exits at once and is not waited for stays a zombie: kill(pid, 0) still
  // succeeds, but its temporaries will never be finished (CI containers whose PID 1 does not
  // reap orphans keep killed kvfleets in this state).
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  for (int i = 0; i < 200; ++i) {  // until the child has exited (a zombie), without reaping it
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == child)
      break;
    ::usleep(10000);
  }
  const std::string out = (dir_ / "r.h5").string();
  touch("r.h5.tmp-" + std::to_string(child));
  touch("r.h5.tmp-" + std::to_string(::getpid()));  // this process's own: kept
  touch("r.h5.tmp-1");                              // a running process (PID 1): kept
  touch("other.h5.tmp-999999999");                  // beside another path: not ours to remove
  remove_stale_temps(out);
  EXPECT_FALSE(fs::exists(dir_ / ("r.h5.tmp-" + std::to_string(child))));
  EXPECT_TRUE(fs::exists(dir_ / ("r.h5.tmp-" + std::to_string(::getpid()))));
  EXPECT_TRUE(fs::exists(dir_ / "r.h5.tmp-1"));
  EXPECT_TRUE(fs::exists(dir_ / "other.h5.tmp-999999999"));
  int status = 0;
  ::waitpid(child, &status, 0);
}

TEST_F(TempFiles, AProcessThatNoLongerExistsLeavesNothing) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  touch("r.h5.tmp-" + std::to_string(child));
  fs::create_directories(dir_ / ("r.h5.tmp-" + std::to_string(child) + "x"));  // not a PID
  remove_stale_temps((dir_ / "r.h5").string());
  EXPECT_FALSE(fs::exists(dir_ / ("r.h5.tmp-" + std::to_string(child))));
  EXPECT_TRUE(fs::exists(dir_ / ("r.h5.tmp-" + std::to_string(child) + "x")));
}

}  // namespace
}  // namespace kvfleet::sim
