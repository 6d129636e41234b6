// Charts: a sweep's points become series (replicates averaged, series ordered by value), bad keys
// are named, and `kvfleet plot` renders PNG and SVG files offscreen.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <QtGui/QImage>
#include <regex>

#include "gui/charts/line_chart.h"
#include "gui/charts/run_dashboard.h"
#include "gui/charts/sweep_chart.h"
#include "sim/core/error.h"
#include "sim/io/h5.h"

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
  // Numeric order; the legend says the replicates were averaged.
  EXPECT_EQ(s.series[0].name, "seqs = 8");
  EXPECT_EQ(s.series[1].name, "seqs = 64");
  EXPECT_EQ(s.note, "each line: the mean of 2 replicates, band: their range");
  EXPECT_EQ(s.series[0].x, (std::vector<double>{10, 20}));
  // 10/8 + (0 + 1)/2 replicates averaged.
  EXPECT_DOUBLE_EQ(s.series[0].y[0], 10.0 / 8 + 0.5);
  // With two replicates the band is their range (a 95% interval with one degree of freedom
  // would be 12.7 standard errors wide).
  ASSERT_EQ(s.series[0].band_lo.size(), 2u);
  EXPECT_DOUBLE_EQ(s.series[0].band_lo[0], 10.0 / 8);
  EXPECT_DOUBLE_EQ(s.series[0].band_hi[0], 10.0 / 8 + 1);
  // Three replicates: the mean's 95% interval, t(2 dof) = 4.303 times sd / sqrt(3).
  sim::SweepResults three = results();
  for (std::size_t i = 0, n = three.points.size(); i < n; i += 2) {
    sim::PointResult p = three.points[i];
    p.metrics[0] += 2;
    three.points.push_back(p);
    three.axis_values.push_back(three.axis_values[i]);
  }
  const LineChartSpec t = sweep_chart(three, "rate", "ttft_p99_s", "seqs");
  EXPECT_EQ(t.note, "each line: the mean of 3 replicates, 95% CI");
  const double half = 4.303 * 1.0 / std::sqrt(3.0);  // values m, m+1, m+2: sd 1
  EXPECT_NEAR(t.series[0].band_lo[0], 10.0 / 8 + 1 - half, 1e-3);
  EXPECT_NEAR(t.series[0].band_hi[0], 10.0 / 8 + 1 + half, 1e-3);
  // No band where nothing was averaged, nor for a mean over an axis (not replicates).
  sim::SweepResults one = results();
  for (std::size_t i = 1; i < one.points.size(); i += 2) one.points[i].ok = false;
  const LineChartSpec single = sweep_chart(one, "rate", "ttft_p99_s", "seqs");
  EXPECT_TRUE(single.series[0].band_lo.empty());
  EXPECT_EQ(single.series[0].name, "seqs = 8");
  SweepChartOptions over;
  over.mean_over = {"seqs"};
  const LineChartSpec mean = sweep_chart(results(), "rate", "ttft_p99_s", over);
  EXPECT_TRUE(mean.series[0].band_lo.empty());
  EXPECT_EQ(s.y_label, "ttft_p99_s (s)");
  EXPECT_THROW(sweep_chart(results(), "nope", "ttft_p99_s"), sim::InputError);
  EXPECT_THROW(sweep_chart(results(), "rate", "nope"), sim::InputError);
  EXPECT_THROW(sweep_chart(results(), "rate", "ttft_p99_s", "nope"), sim::InputError);
}

TEST(LineChart, EveryLogAxisHasAtLeastTwoLabelledTicks) {
  // Qt labels a log axis at the powers of its base: over 32-256 sequences base 10 labelled one
  // tick (100). Base 2 there; base 10 once two powers of ten are in range.
  EXPECT_EQ(log_axis_base(32, 256), 2);
  EXPECT_EQ(log_axis_base(0.05, 0.4), 2);
  EXPECT_EQ(log_axis_base(5, 50), 2);
  EXPECT_EQ(log_axis_base(1, 10), 10);
  EXPECT_EQ(log_axis_base(0.002, 30), 10);
  for (double lo : {0.001, 0.03, 1.0, 32.0, 700.0})
    for (double ratio : {4.0, 8.0, 30.0, 99.0, 1e4}) {
      const double b = log_axis_base(lo, lo * ratio);
      const double ticks = std::floor(std::log(lo * ratio) / std::log(b) + 1e-9) -
                           std::ceil(std::log(lo) / std::log(b) - 1e-9) + 1;
      EXPECT_GE(ticks, 2) << lo << " x " << ratio;
    }
}

TEST(SweepChart, NeverAveragesAnAxisItDoesNotShow) {
  // Without a series, the file's other axis (seqs) would be averaged: refused, naming it.
  try {
    sweep_chart(results(), "rate", "ttft_p99_s");
    FAIL() << "averaged seqs silently";
  } catch (const sim::InputError& e) {
    EXPECT_EQ(e.key(), "seqs");
    EXPECT_NE(e.problem().find("64, 8"), std::string::npos) << e.problem();
    EXPECT_NE(e.problem().find("--where seqs=64"), std::string::npos) << e.problem();
  }
  // --where picks one value: the numbers are that value's, not a mean over seqs.
  SweepChartOptions o;
  o.where["seqs"] = "8";
  LineChartSpec s = sweep_chart(results(), "rate", "ttft_p99_s", o);
  ASSERT_EQ(s.series.size(), 1u);
  EXPECT_DOUBLE_EQ(s.series[0].y[0], 10.0 / 8 + 0.5);
  EXPECT_NE(s.title.find("seqs = 8"), std::string::npos);
  // --mean-over averages on purpose, and the legend says so.
  SweepChartOptions m;
  m.mean_over = {"seqs"};
  s = sweep_chart(results(), "rate", "ttft_p99_s", m);
  ASSERT_EQ(s.series.size(), 1u);
  EXPECT_DOUBLE_EQ(s.series[0].y[0], (10.0 / 8 + 10.0 / 64) / 2 + 0.5);
  EXPECT_NE(s.note.find("mean over seqs"), std::string::npos) << s.note;
  // A value the axis never takes, or an unknown axis, is named.
  o.where["seqs"] = "16";
  EXPECT_THROW(sweep_chart(results(), "rate", "ttft_p99_s", o), sim::InputError);
  SweepChartOptions bad;
  bad.where["nope"] = "1";
  EXPECT_THROW(sweep_chart(results(), "rate", "ttft_p99_s", bad), sim::InputError);
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
  // The sweep varies max_num_seqs: without a series the plot refuses, naming the axis and the
  // options; --where gives that value's curve.
  const std::string two = " --x workload.arrival.rate_per_s --y time_to_first_token_p99_s";
  auto refused = run(bin + " plot " + h5 + two + " --out " + (dir / "r.png").string());
  EXPECT_EQ(refused.first, 2) << refused.second;
  EXPECT_NE(refused.second.find("pools[0].engine.max_num_seqs"), std::string::npos)
      << refused.second;
  EXPECT_NE(refused.second.find("--where"), std::string::npos) << refused.second;
  EXPECT_FALSE(fs::exists(dir / "r.png"));
  auto one = run(bin + " plot " + h5 + two +
                 " --where \"pools[0].engine.max_num_seqs=256\" --out " + (dir / "w.svg").string());
  ASSERT_EQ(one.first, 0) << one.second;
  std::stringstream ws;
  ws << std::ifstream(dir / "w.svg").rdbuf();
  EXPECT_NE(ws.str().find("max_num_seqs = 256"), std::string::npos);
}

// A run of `replicas` replicas in pools "a" and "b" (alternating), 20 samples each, and 100
// completed requests with TTFT i ms.
RunData fake_run(int replicas) {
  RunData d;
  d.pools = {"a", "b"};
  for (int r = 0; r < replicas; ++r) {
    RunData::Replica x;
    x.pool.assign(1, r % 2 ? 'b' : 'a');  // (GCC 12 warns falsely on assigning a literal here)
    x.name = x.pool + '/' + std::to_string(r / 2);
    for (int t = 0; t < 20; ++t) {
      x.t_s.push_back(t);
      x.kv_usage.push_back((r % 2 ? 0.5 : 0.25) + 0.01 * r);
      x.running.push_back(r);
      x.waiting.push_back(0);
      x.generation_tokens.push_back(100.0 * t);
      x.compute.push_back(0.1);
      x.bandwidth.push_back(0.6);
    }
    d.replicas.push_back(x);
  }
  for (int i = 1; i <= 100; ++i)
    d.requests.push_back({0.1 * i, i * 1e-3, 0.01, 1.0, 100, 50, true, true, i % 2 ? "b" : "a"});
  return d;
}

TEST(RunDashboard, LinesPerReplicaOrPoolMeansAndTheSloMarked) {
  const auto few = run_dashboard(fake_run(4), {});
  ASSERT_EQ(few.size(), 2u);
  EXPECT_EQ(few[0].name, "state");
  ASSERT_EQ(few[0].charts.size(), 6u);
  EXPECT_EQ(few[0].charts[0].series.size(), 4u);  // one line per replica
  EXPECT_EQ(few[0].charts[0].series[1].name, "b/0");
  // Throughput is the counter's rate: 100 tokens per second.
  EXPECT_DOUBLE_EQ(few[0].charts[3].series[0].y[5], 100.0);
  // Past 8 replicas: the 6 hottest by mean KV cache usage (every b, then the busiest a), in the
  // order of the file, and each pool's mean over all its replicas, dashed.
  DashboardOptions eight;
  eight.max_lines = 8;
  const auto many = run_dashboard(fake_run(10), eight);
  const auto& kv = many[0].charts[0].series;
  ASSERT_EQ(kv.size(), 8u);
  std::vector<std::string> names;
  for (const auto& s : kv) names.push_back(s.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"b/0", "b/1", "b/2", "b/3", "a/4", "b/4",
                                      "a: mean of its 5 replicas", "b: mean of its 5 replicas"}));
  EXPECT_TRUE(kv[6].dashed && !kv[0].dashed);
  EXPECT_NEAR(kv[6].y[3], 0.29, 1e-12);  // a: 0.25 + (0 + 2 + 4 + 6 + 8) / 5 / 100
  EXPECT_NEAR(kv[7].y[3], 0.55, 1e-12);
  EXPECT_NE(many[0].note.find("the 6 hottest of 10 replicas"), std::string::npos) << many[0].note;
  // Running requests of pool a: replicas 0, 2, 4, 6, 8, mean 4; the same replicas on every chart.
  EXPECT_DOUBLE_EQ(many[0].charts[1].series[6].y[0], 4.0);
  EXPECT_EQ(many[0].charts[1].series[4].name, "a/4");
  EXPECT_EQ(many[0].charts[1].series[4].y[0], 8.0);
  // By default 4 lines at most: the 2 hottest beside the 2 pools' means.
  const auto fewer = run_dashboard(fake_run(10), {})[0].charts[0].series;
  ASSERT_EQ(fewer.size(), 4u);
  EXPECT_EQ(fewer[0].name, "b/3");
  EXPECT_EQ(fewer[1].name, "b/4");
  // Past 300 samples a line is drawn as means of consecutive samples, and the title says so.
  RunData longer = fake_run(2);
  for (auto& r : longer.replicas) {
    r.t_s.clear();
    r.kv_usage.clear();
    for (int t = 0; t < 900; ++t) r.t_s.push_back(t), r.kv_usage.push_back(t % 3);
    for (auto* v : {&r.running, &r.waiting, &r.generation_tokens, &r.compute, &r.bandwidth})
      v->assign(900, 0.0);
  }
  const auto binned = run_dashboard(longer, {})[0];
  ASSERT_EQ(binned.charts[0].series[0].x.size(), 300u);
  EXPECT_DOUBLE_EQ(binned.charts[0].series[0].x[1], 4.0);  // samples 3, 4, 5
  EXPECT_DOUBLE_EQ(binned.charts[0].series[0].y[1], 1.0);  // 0, 1, 2
  EXPECT_NE(binned.note.find("each point the mean of 3 samples (3 s)"), std::string::npos)
      << binned.note;
  DashboardOptions o;
  o.slo = sim::parse_slo("ttft_p99=50ms");
  const auto latency = run_dashboard(fake_run(2), o)[1];
  ASSERT_EQ(latency.charts.size(), 4u);
  const LineChartSpec& ttft = latency.charts[0];
  ASSERT_TRUE(ttft.x_mark && ttft.y_limit);
  EXPECT_DOUBLE_EQ(*ttft.x_mark, 0.05);
  EXPECT_DOUBLE_EQ(*ttft.y_limit, 0.99);
  // Two pools: a CDF each, 50 requests each, ending at 1.
  ASSERT_EQ(ttft.series.size(), 2u);
  EXPECT_DOUBLE_EQ(ttft.series[0].y.back(), 1.0);
  EXPECT_EQ(ttft.series[0].name, "a (50 requests)");
  EXPECT_FALSE(latency.charts[1].x_mark);  // no target on TPOT
  // Hit rate: 50 of 100 prompt tokens.
  EXPECT_DOUBLE_EQ(latency.charts[3].series[0].y[0], 0.5);
}

// The share of pixels that are not white in a region of an image.
double ink(const QImage& img, QRect r) {
  long n = 0, dark = 0;
  for (int y = r.top(); y <= r.bottom(); y += 2)
    for (int x = r.left(); x <= r.right(); x += 2, ++n)
      if (qGray(img.pixel(x, y)) < 200) ++dark;
  return n ? static_cast<double>(dark) / n : 0;
}

// A run's file as kvfleet wrote it before categorical columns: /requests' pool as an index and
// /timeseries tables without their replica attribute. The dashboard reads them by name all the
// same.
TEST(RunDashboard, ReadsFilesOfEarlierVersions) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "kvfleet_dashboard_old";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string now = (dir / "now.h5").string(), old = (dir / "old.h5").string();
  const std::string scenario = KVFLEET_SOURCE_DIR "/scenarios/fleet/long-documents-separate.yaml";
  auto ran = run(KVFLEET_BINARY_DIR "/bin/kvfleet run " + scenario +
                 " -q --set simulation.max_time_s=120 --out " + now);
  ASSERT_EQ(ran.first, 0) << ran.second;
  {
    const sim::h5::H5 in = sim::h5::open_for_reading(now, "run");
    sim::Table requests = sim::h5::read_table(in.id, "requests");
    for (auto& c : requests.columns) {
      if (auto* k = std::get_if<sim::Categorical>(&c.data)) {
        std::vector<std::int64_t> codes(k->codes.begin(), k->codes.end());
        c.data = codes;
      }
    }
    sim::h5::write_file_atomically(old, [&](hid_t f) {
      sim::h5::write_table(f, "requests", requests);
      sim::h5::write_table(f, "replicas", sim::h5::read_table(in.id, "replicas"));
      const sim::h5::H5 group = sim::h5::create_group(f, "timeseries");
      const sim::h5::H5 ts{H5Gopen2(in.id, "timeseries", H5P_DEFAULT), H5Gclose};
      for (const auto& m : sim::h5::group_members(in.id, "timeseries"))
        sim::h5::write_table(group.id, m.c_str(), sim::h5::read_table(ts.id, m.c_str()));
    });
  }
  const RunData a = read_run_file(now), b = read_run_file(old);
  ASSERT_EQ(a.pools.size(), 2u);
  EXPECT_EQ(a.pools, b.pools);
  ASSERT_EQ(a.replicas.size(), b.replicas.size());
  for (std::size_t i = 0; i < a.replicas.size(); ++i) {
    EXPECT_EQ(a.replicas[i].name, b.replicas[i].name);
    EXPECT_EQ(a.replicas[i].pool, b.replicas[i].pool);
  }
  ASSERT_EQ(a.requests.size(), b.requests.size());
  std::size_t per_pool[2] = {0, 0};
  for (std::size_t i = 0; i < a.requests.size(); ++i) {
    EXPECT_EQ(a.requests[i].pool, b.requests[i].pool);
    per_pool[a.requests[i].pool == a.pools[1]]++;
  }
  EXPECT_GT(per_pool[0], 0u);
  EXPECT_GT(per_pool[1], 0u);
  // Both pools' latency lines are drawn from the old file.
  EXPECT_EQ(run_dashboard(b, {})[1].charts[0].series.size(), 2u);
}

TEST(KvfleetPlot, RunDashboardRendersEveryPageOffscreen) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "kvfleet_dashboard_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string bin = KVFLEET_BINARY_DIR "/bin/kvfleet";
  const std::string h5 = (dir / "r.h5").string();
  const std::string scenario = KVFLEET_SOURCE_DIR "/scenarios/conversations/chat-100-users.yaml";
  auto ran = run(bin + " run " + scenario + " -q --set simulation.max_time_s=300 --out " + h5);
  ASSERT_EQ(ran.first, 0) << ran.second;
  // Into a folder: every page as PNG and SVG, and the PDF.
  auto all = run(bin + " plot " + h5 + " --slo ttft_p99=2s --out " + (dir / "d").string() + "/");
  ASSERT_EQ(all.first, 0) << all.second;
  for (const char* page : {"state", "latency"}) {
    const QImage img(QString::fromStdString((dir / "d" / (std::string(page) + ".png")).string()));
    ASSERT_FALSE(img.isNull()) << page;
    EXPECT_EQ(img.width(), 3600);
    EXPECT_EQ(img.height(), 2000);
    // Every chart of the grid has drawn something (axes, labels, lines): 3x2 or 2x2 cells.
    const int cols = std::string(page) == "state" ? 3 : 2;
    const int top = 96, w = img.width() / cols, h = (img.height() - top) / 2;
    for (int i = 0; i < cols * 2; ++i) {
      const QRect cell((i % cols) * w, top + (i / cols) * h, w - 1, h - 1);
      EXPECT_GT(ink(img, cell), 0.01) << page << " chart " << i;
    }
    std::stringstream svg;
    svg << std::ifstream(dir / "d" / (std::string(page) + ".svg")).rdbuf();
    EXPECT_NE(svg.str().find("<title>chat-100-users: "), std::string::npos) << page;
  }
  std::stringstream pdf;
  pdf << std::ifstream(dir / "d" / "dashboard.pdf", std::ios::binary).rdbuf();
  const std::string bytes = pdf.str();
  EXPECT_EQ(bytes.substr(0, 5), "%PDF-");
  const std::regex page_object("/Type\\s*/Page[^s]");
  EXPECT_EQ(std::distance(std::sregex_iterator(bytes.begin(), bytes.end(), page_object),
                          std::sregex_iterator()),
            2);
  // FILE.png: one file per page, really PNG (the format comes from the final name, not the
  // temporary it is written under); FILE.svg: really SVG.
  auto png = run(bin + " plot " + h5 + " --out " + (dir / "run.png").string());
  ASSERT_EQ(png.first, 0) << png.second;
  auto head = [](const fs::path& f) {
    std::string b(8, '\0');
    std::ifstream(f, std::ios::binary).read(b.data(), 8);
    return b;
  };
  for (const char* page : {"run-state.png", "run-latency.png"}) {
    ASSERT_TRUE(fs::exists(dir / page)) << page;
    EXPECT_EQ(head(dir / page), std::string("\x89PNG\r\n\x1a\n", 8)) << page;
  }
  auto svg_out = run(bin + " plot " + h5 + " --out " + (dir / "run.svg").string());
  ASSERT_EQ(svg_out.first, 0) << svg_out.second;
  for (const char* page : {"run-state.svg", "run-latency.svg"}) {
    std::stringstream text;
    text << std::ifstream(dir / page).rdbuf();
    EXPECT_NE(text.str().find("<svg"), std::string::npos) << page;
  }
  // Sweep options on a run's file, and an unknown format, are refused before anything is
  // written.
  auto x = run(bin + " plot " + h5 + " --x seed --out " + (dir / "x.pdf").string());
  EXPECT_EQ(x.first, 2) << x.second;
  EXPECT_NE(x.second.find("run's result file"), std::string::npos) << x.second;
  auto fmt = run(bin + " plot " + h5 + " --out " + (dir / "x.jpg").string());
  EXPECT_EQ(fmt.first, 2) << fmt.second;
  auto unwritable = run(bin + " plot " + h5 + " --out /proc/kvfleet.pdf");
  EXPECT_EQ(unwritable.first, 2) << unwritable.second;
  EXPECT_NE(unwritable.second.find("--out"), std::string::npos) << unwritable.second;
  auto missing =
      run(bin + " plot " + (dir / "none.h5").string() + " --out " + (dir / "x.pdf").string());
  EXPECT_EQ(missing.first, 2) << missing.second;
  EXPECT_NE(missing.second.find("results file not found"), std::string::npos) << missing.second;
  EXPECT_FALSE(fs::exists(dir / "x.pdf"));
  // A folder where one page's file is a folder: refused before anything is drawn, nothing left.
  fs::create_directories(dir / "busy" / "latency.png");
  auto busy = run(bin + " plot " + h5 + " --out " + (dir / "busy").string() + "/");
  EXPECT_EQ(busy.first, 2) << busy.second;
  EXPECT_FALSE(fs::exists(dir / "busy" / "state.png"));
  // A damaged file (no /replicas) is bad input naming the file, not a failure.
  {
    const std::string damaged = (dir / "damaged.h5").string();
    const sim::h5::H5 in = sim::h5::open_for_reading(h5, "run");
    const sim::Table requests = sim::h5::read_table(in.id, "requests");
    sim::h5::write_file_atomically(damaged,
                                   [&](hid_t f) { sim::h5::write_table(f, "requests", requests); });
    auto bad = run(bin + " plot " + damaged + " --out " + (dir / "damaged.pdf").string());
    EXPECT_EQ(bad.first, 2) << bad.second;
    EXPECT_NE(bad.second.find("damaged.h5"), std::string::npos) << bad.second;
    EXPECT_FALSE(fs::exists(dir / "damaged.pdf"));
  }
  // kvfleet run --plots writes the same pages after the run.
  auto plots = run(bin + " run " + scenario + " -q --set simulation.max_time_s=60 --plots " +
                   (dir / "p").string());
  ASSERT_EQ(plots.first, 0) << plots.second;
  for (const char* f : {"state.png", "state.svg", "latency.png", "latency.svg", "dashboard.pdf"})
    EXPECT_TRUE(fs::exists(dir / "p" / f)) << f;
  EXPECT_FALSE(fs::exists(dir / "p" / ".run.h5"));
}

}  // namespace
}  // namespace kvfleet::charts
