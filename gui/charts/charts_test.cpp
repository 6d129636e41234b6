// Charts: a sweep's points become series (replicates averaged, series ordered by value), bad keys
// are named, and `kvfleet plot` renders PNG and SVG files offscreen.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gui/charts/sweep_chart.h"
#include "sim/core/error.h"

namespace kvfleet::charts {
namespace {

sim::SweepResults results() {
  sim::SweepResults r;
  r.axis_keys = {"seqs", "rate"};
  r.metric_names = {"ttft_p99_s"};
  // seqs 64 and 8 (unsorted on purpose), rates 10 and 20, two replicates each.
  int i = 0;
  for (std::string seqs : {"64", "8"}) {
    for (std::string rate : {"20", "10"}) {
      for (int rep = 0; rep < 2; ++rep) {
        sim::PointResult p;
        p.point = i++;
        p.done = p.ok = true;
        p.metrics = {std::stod(rate) / std::stod(seqs) + rep};
        r.points.push_back(p);
        r.axis_values.push_back({seqs, rate});
      }
    }
  }
  return r;
}

TEST(SweepChart, SeriesPerAxisValueWithReplicatesAveraged) {
  const LineChartSpec s = sweep_chart(results(), "rate", "ttft_p99_s", "seqs");
  ASSERT_EQ(s.series.size(), 2u);
  EXPECT_EQ(s.series[0].name, "seqs = 8");  // numeric order
  EXPECT_EQ(s.series[1].name, "seqs = 64");
  EXPECT_EQ(s.series[0].x, (std::vector<double>{10, 20}));
  // 10/8 + (0 + 1)/2 replicates averaged.
  EXPECT_DOUBLE_EQ(s.series[0].y[0], 10.0 / 8 + 0.5);
  EXPECT_EQ(s.y_label, "ttft_p99_s (s)");
  EXPECT_THROW(sweep_chart(results(), "nope", "ttft_p99_s"), sim::InputError);
  EXPECT_THROW(sweep_chart(results(), "rate", "nope"), sim::InputError);
  EXPECT_THROW(sweep_chart(results(), "rate", "ttft_p99_s", "nope"), sim::InputError);
}

std::pair<int, std::string> run(const std::string& cmd) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  const int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

TEST(KvfleetPlot, RendersPngAndSvgOffscreen) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "kvfleet_plot_test";
  fs::create_directories(dir);
  const std::string bin = KVFLEET_BINARY_DIR "/bin/kvfleet";
  const std::string sweep = KVFLEET_SOURCE_DIR "/scenarios/sweeps/load-vs-max-seqs.yaml";
  const std::string h5 = (dir / "s.h5").string();
  ASSERT_EQ(run(bin + " sweep " + sweep + " --quiet --out " + h5).first, 0);
  const std::string common =
      " --x workload.arrival.rate_per_s --y time_to_first_token_p99_s "
      "--series \"pools[0].engine.max_num_seqs\" --slo 2 --log-y";
  auto png = run(bin + " plot " + h5 + common + " --out " + (dir / "p.png").string());
  ASSERT_EQ(png.first, 0) << png.second;
  std::ifstream pf(dir / "p.png", std::ios::binary);
  std::string magic(8, '\0');
  pf.read(magic.data(), 8);
  EXPECT_EQ(magic.substr(1, 3), "PNG");
  EXPECT_GT(fs::file_size(dir / "p.png"), 20000u);
  auto svg = run(bin + " plot " + h5 + common + " --out " + (dir / "p.svg").string());
  ASSERT_EQ(svg.first, 0) << svg.second;
  std::stringstream ss;
  ss << std::ifstream(dir / "p.svg").rdbuf();
  EXPECT_NE(ss.str().find("<svg"), std::string::npos);
  EXPECT_NE(ss.str().find("max_num_seqs = 256"), std::string::npos);
  auto bad = run(bin + " plot " + h5 + " --x nope --y time_to_first_token_p99_s --out " +
                 (dir / "b.png").string());
  EXPECT_EQ(bad.first, 2);
  EXPECT_NE(bad.second.find("nope"), std::string::npos) << bad.second;
  EXPECT_FALSE(fs::exists(dir / "b.png"));
}

}  // namespace
}  // namespace kvfleet::charts
