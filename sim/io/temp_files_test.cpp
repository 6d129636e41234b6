#include "sim/io/temp_files.h"
#include "sim/core/error.h"
#include "sim/io/output_set.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

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

namespace kvfleet::sim {
namespace {

// Into an existing folder, the temporary folder is made inside it, so that publishing renames
// within one file system (a folder that is a mount point once failed with "Invalid cross-device
// link"); the folder's other files stay, same-named ones are replaced, and nothing is left.
TEST_F(TempFiles, AnExistingOutputFolderIsFilledFromInside) {
  const fs::path out = dir_ / "csv";
  fs::create_directory(out);
  std::ofstream(out / "keep.txt") << "kept";
  std::ofstream(out / "summary.csv") << "old";
  {
    OutputSet set;
    const fs::path temp = set.add_folder("--csv", out.string());
    EXPECT_EQ(temp.parent_path(), out);
    std::ofstream(temp / "summary.csv") << "new";
    set.publish();
  }
  std::ifstream kept(out / "keep.txt"), summary(out / "summary.csv");
  std::string k, s;
  kept >> k;
  summary >> s;
  EXPECT_EQ(k, "kept");
  EXPECT_EQ(s, "new");
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(out)) names.push_back(e.path().filename().string());
  EXPECT_EQ(names.size(), 2u);
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename(), "csv") << "left behind: " << e.path();
}

// A file that existed is replaced whole, and its second name (kept until the set is published)
// is gone afterwards; an output set that is not published leaves the previous file.
TEST_F(TempFiles, PublishingReplacesAndAbandoningKeeps) {
  const fs::path f = dir_ / "o.h5";
  std::ofstream(f) << "old";
  {
    OutputSet set;
    std::ofstream(set.add_file("--out", f.string())) << "abandoned";
  }
  {
    std::ifstream in(f);
    std::string s;
    in >> s;
    EXPECT_EQ(s, "old");
  }
  {
    OutputSet set;
    std::ofstream(set.add_file("--out", f.string())) << "new";
    set.publish();
  }
  std::ifstream in(f);
  std::string s;
  in >> s;
  EXPECT_EQ(s, "new");
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename(), "o.h5") << "left behind: " << e.path();
}

TEST_F(TempFiles, APrivateFolderIsThisProcesssOwnAndNothingElseIsTakenForIt) {
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old ? old : "";
  ::setenv("TMPDIR", dir_.c_str(), 1);
  const std::string pid = std::to_string(::getpid());
  // Made with mode 0700, reused by this process, made again once removed.
  const std::string a = private_temp_folder("a");
  EXPECT_EQ(a, (dir_ / ("a.tmp-" + pid)).string());
  EXPECT_EQ(fs::status(a).permissions() & fs::perms::all, fs::perms::owner_all);
  std::ofstream(fs::path(a) / "trace.csv") << "kept";
  EXPECT_EQ(private_temp_folder("a"), a);
  EXPECT_TRUE(fs::exists(fs::path(a) / "trace.csv"));
  fs::remove_all(a);
  EXPECT_EQ(private_temp_folder("a"), a);
  EXPECT_TRUE(fs::is_directory(a));
  // One an earlier process of this PID left is made afresh.
  fs::create_directories(dir_ / ("b.tmp-" + pid));
  std::ofstream(dir_ / ("b.tmp-" + pid) / "old.csv") << "stale";
  const std::string b = private_temp_folder("b");
  EXPECT_TRUE(fs::is_empty(b));
  // A link at the name is refused, and what it points to is left alone.
  fs::create_directories(dir_ / "elsewhere");
  std::ofstream(dir_ / "elsewhere" / "precious") << "x";
  fs::create_directory_symlink(dir_ / "elsewhere", dir_ / ("c.tmp-" + pid));
  EXPECT_THROW(private_temp_folder("c"), InputError);
  EXPECT_TRUE(fs::exists(dir_ / "elsewhere" / "precious"));
  // A TMPDIR that is no folder is named.
  ::setenv("TMPDIR", (dir_ / "nowhere").c_str(), 1);
  try {
    private_temp_folder("d");
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("TMPDIR"), std::string::npos) << e.what();
  }
  if (old)
    ::setenv("TMPDIR", saved.c_str(), 1);
  else
    ::unsetenv("TMPDIR");
  for (const auto& f : {a, b}) {
    forget_temp(f);
    fs::remove_all(f);
  }
}

}  // namespace
}  // namespace kvfleet::sim
