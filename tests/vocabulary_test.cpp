// One vocabulary (issue 21): every /summary metric has one name, and that name is what the
// report, the HDF5 file, the CSV file, a sweep's columns, --slo and --y use; the short aliases
// users type (ttft_p99) resolve to it everywhere; OpenMetrics uses vLLM's names, which are the
// same stems. Each surface is exercised through the kvfleet command as a user would.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/io/h5.h"
#include "sim/metrics/summary.h"
#include "sim/sweep/capacity.h"
#include "sim/sweep/sweep.h"
#include "support/cli.h"

namespace {

using kvfleet::testing::CliTest;
using kvfleet::testing::kvfleet;
namespace sim = kvfleet::sim;

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> csv_header(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string cell;
  while (std::getline(ss, cell, ',')) out.push_back(cell);
  return out;
}

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// The four latency stems, vLLM's names, and the labels the report shows them by.
struct Latency {
  const char* stem;
  const char* alias;
  const char* label;
};
constexpr Latency kLatencies[] = {{"time_to_first_token", "ttft", "TTFT"},
                                  {"inter_token_latency", "tpot", "TPOT"},
                                  {"e2e_request_latency", "e2e", "E2E"},
                                  {"queue_time", "queue", "queue"}};
constexpr const char* kStats[] = {"mean", "p50", "p90", "p99", "max"};

TEST(Vocabulary, AliasesResolveToTheOneName) {
  for (const auto& l : kLatencies) {
    for (const char* st : kStats) {
      const std::string name = std::string(l.stem) + "_" + st + "_s";
      const std::string alias = std::string(l.alias) + "_" + st;
      EXPECT_EQ(sim::canonical_metric(name), name);
      EXPECT_EQ(sim::canonical_metric(alias), name) << alias;
      EXPECT_EQ(sim::canonical_metric(alias + "_s"), name) << alias;
      EXPECT_EQ(sim::canonical_metric(std::string(l.stem) + "_" + st), name);
      EXPECT_TRUE(contains(sim::metric_aliases(name), alias)) << name;
    }
  }
  EXPECT_EQ(sim::canonical_metric("itl_p99"), "inter_token_latency_p99_s");
  EXPECT_EQ(sim::canonical_metric("ok"), "ok");
  EXPECT_EQ(sim::canonical_metric("ttft"), "");
  EXPECT_EQ(sim::canonical_metric("ttft_p42"), "");
  EXPECT_EQ(sim::canonical_metric("nonsense"), "");
  // Every declared metric is its own name, and each of its aliases leads back to it.
  for (const auto& m : sim::summary_metrics()) {
    EXPECT_EQ(sim::canonical_metric(m.name), m.name);
    for (const auto& a : sim::metric_aliases(m.name)) EXPECT_EQ(sim::canonical_metric(a), m.name);
  }
}

TEST(Vocabulary, SloNamesAndAliasesAreTheSameTarget) {
  for (const auto& l : kLatencies) {
    const std::string name = std::string(l.stem) + "_p99_s";
    const auto by_alias = sim::parse_slo(std::string(l.alias) + "_p99=2s");
    const auto by_name = sim::parse_slo(name + "=2s");
    ASSERT_EQ(by_alias.size(), 1u);
    ASSERT_EQ(by_name.size(), 1u);
    EXPECT_EQ(by_alias[0].metric, name);
    EXPECT_EQ(by_name[0].metric, name);
  }
}

class VocabularyCli : public CliTest {};

TEST_F(VocabularyCli, EverySurfaceUsesTheOneName) {
  const auto run = kvfleet("run --set workload.num_requests=200 --out " + path("r.h5") + " --csv " +
                           path("csv") + " --prometheus " + path("prom"));
  ASSERT_EQ(run.status, 0) << run.text;

  // HDF5 and CSV: /summary holds every declared metric under its name, in the same order.
  const sim::h5::H5 file = sim::h5::open_for_reading(path("r.h5"), "results");
  const sim::Table summary = sim::h5::read_table(file.id, "summary");
  std::vector<std::string> h5_names;
  for (const auto& c : summary.columns) h5_names.push_back(c.name);
  const auto csv_names = csv_header(path("csv") + "/summary.csv");
  EXPECT_EQ(h5_names, csv_names);
  for (const auto& m : sim::summary_metrics()) {
    EXPECT_TRUE(contains(h5_names, m.name)) << m.name;
    // Counts are integer columns in the file.
    for (const auto& c : summary.columns) {
      if (c.name == m.name) {
        EXPECT_EQ(std::holds_alternative<std::vector<std::int64_t>>(c.data), m.integer) << m.name;
      }
    }
  }

  // The report prints each latency's name beside its familiar label; OpenMetrics uses vLLM's
  // name for the same stem (queue time has no vLLM histogram here).
  const std::string om = read_file(path("prom") + "/backfill.om");
  for (const auto& l : kLatencies) {
    const auto line_start = run.text.find(std::string("\n  ") + l.label);
    ASSERT_NE(line_start, std::string::npos) << l.label;
    const std::string line =
        run.text.substr(line_start + 1, run.text.find('\n', line_start + 1) - line_start - 1);
    EXPECT_NE(line.find(std::string(l.stem) + "_<stat>_s"), std::string::npos) << line;
    EXPECT_NE(line.find(std::string("(") + l.alias + "_<stat>)"), std::string::npos) << line;
    if (std::string(l.stem) != "queue_time") {
      EXPECT_NE(om.find(std::string("vllm:") + l.stem + "_seconds"), std::string::npos) << l.stem;
    }
  }

  // Every metric the report's legend names is a /summary metric.
  const std::string prefix = "Metric names (files, sweeps, --slo, --y, Python): ";
  const auto legend = run.text.find(prefix);
  ASSERT_NE(legend, std::string::npos) << run.text;
  const auto from = legend + prefix.size();
  std::string names = run.text.substr(from, run.text.find('\n', from) - from);
  for (char& ch : names)
    if (ch == ',' || ch == ';') ch = ' ';
  std::stringstream words(names);
  int checked = 0;
  for (std::string w; words >> w;) {
    if (w == "latencies" || w == "as" || w == "above" || w == "every" || w == "one:" ||
        w == "kvfleet" || w == "outputs")
      continue;
    EXPECT_TRUE(contains(h5_names, w)) << w;
    ++checked;
  }
  EXPECT_EQ(checked, 13);

  // A sweep asked for aliases stores the one name; --y takes either.
  write("s.yaml", R"(set: [workload.num_requests=200]
axes:
  - {key: workload.arrival.rate_per_s, values: [10, 20]}
metrics: [ttft_p99, tpot_p99_s, e2e_request_latency_p99_s, queue_p50, ok]
)");
  const auto sw = kvfleet("sweep " + path("s.yaml") + " --quiet --out " + path("s.h5"));
  ASSERT_EQ(sw.status, 0) << sw.text;
  const sim::SweepResults res = sim::read_sweep_h5(path("s.h5"));
  EXPECT_EQ(res.metric_names,
            (std::vector<std::string>{"time_to_first_token_p99_s", "inter_token_latency_p99_s",
                                      "e2e_request_latency_p99_s", "queue_time_p50_s", "ok"}));
  // The same name twice, once as an alias, is refused.
  write("twice.yaml", R"(axes:
  - {key: workload.arrival.rate_per_s, values: [10]}
metrics: [time_to_first_token_p99_s, ttft_p99]
)");
  const auto twice = kvfleet("sweep " + path("twice.yaml") + " --quiet --out " + path("t.h5"));
  EXPECT_EQ(twice.status, 2) << twice.text;
  EXPECT_NE(twice.text.find("listed twice (as time_to_first_token_p99_s)"), std::string::npos)
      << twice.text;

#ifdef KVFLEET_HAVE_PLOT
  for (const char* y : {"ttft_p99", "time_to_first_token_p99_s"}) {
    const auto plot = kvfleet("plot " + path("s.h5") + " --x workload.arrival.rate_per_s --y " + y +
                              " --out " + path(std::string(y) + ".svg"));
    ASSERT_EQ(plot.status, 0) << plot.text;
    // The chart names the metric by its one name whichever way it was asked for (the SVG's
    // <title> is the chart's title; its text is drawn as paths).
    EXPECT_NE(read_file(path(std::string(y) + ".svg"))
                  .find("<title>time_to_first_token_p99_s against workload.arrival.rate_per_s"),
              std::string::npos);
  }
#endif
}

}  // namespace
