#include "gui/charts/run_dashboard.h"

#include <yaml-cpp/yaml.h>

#include <QtCharts/QChart>
#include <QtCore/QBuffer>
#include <QtCore/QCoreApplication>
#include <QtGui/QFont>
#include <QtGui/QPageSize>
#include <QtGui/QPainter>
#include <QtGui/QPdfWriter>
#include <QtWidgets/QGraphicsScene>
#include <QtWidgets/QGraphicsSimpleTextItem>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>

#include "sim/core/error.h"
#include "sim/io/h5.h"
#include "sim/io/output_set.h"
#include "sim/output/results.h"

namespace kvfleet::charts {

namespace {

using sim::Table;

// A text or categorical column as names (an integer column as its numbers, older files).
std::vector<std::string> names(const Table& t, const std::string& table, const std::string& name,
                               const std::string& path) {
  const sim::Column* c = t.find(name);
  if (!c) throw sim::InputError(path, table + "." + name, "column is missing");
  if (auto* s = std::get_if<std::vector<std::string>>(&c->data)) return *s;
  std::vector<std::string> out;
  if (auto* k = std::get_if<sim::Categorical>(&c->data)) {
    for (std::size_t r = 0; r < k->size(); ++r) out.push_back(k->name(r));
  } else if (auto* i = std::get_if<std::vector<std::int64_t>>(&c->data)) {
    for (auto v : *i) out.push_back(std::to_string(v));
  } else {
    throw sim::InputError(path, table + "." + name, "is not text");
  }
  return out;
}

}  // namespace

static void read_tables(hid_t file, const std::string& path, RunData& d);

RunData read_run_file(const std::string& path) {
  const sim::h5::H5 file = sim::h5::open_for_reading(path, "run results");
  if (!sim::h5::has_link(file.id, "requests")) {
    throw sim::InputError(path, "requests",
                          sim::h5::has_link(file.id, "points")
                              ? "this is a sweep file: plot it with --x and --y"
                              : "dataset missing: not a run's result file (kvfleet run --out)");
  }
  RunData d;
  try {
    const YAML::Node sc = YAML::Load(sim::h5::read_string_dataset(file.id, "scenario"));
    if (sc["name"]) d.title = sc["name"].as<std::string>();
    if (sc["simulation"] && sc["simulation"]["timeseries_interval_s"])
      d.sample_interval_s = sc["simulation"]["timeseries_interval_s"].as<double>();
    if (const YAML::Node a = sc["alerts"]) {
      std::string slo;
      for (const char* k : {"ttft", "tpot"}) {
        const std::string key = std::string("slo_") + k + "_p99_s";
        if (a[key] && a[key].as<double>() > 0)
          slo +=
              (slo.empty() ? "" : ",") + std::string(k) + "_p99=" + a[key].as<std::string>() + "s";
      }
      if (!slo.empty()) d.scenario_slo = sim::parse_slo(slo);
    }
  } catch (const std::exception&) {
    // A file without a readable scenario still plots; the title and SLO are then unknown.
  }
  try {
    read_tables(file.id, path, d);
  } catch (const sim::InputError&) {
    throw;
  } catch (const std::runtime_error& e) {  // HDF5: a dataset missing or of the wrong shape
    throw sim::InputError(path, "", e.what());
  }
  return d;
}

namespace {

// Pool names by index: /replicas lists replicas pool by pool.
std::vector<std::string> pools_in_order(const std::vector<std::string>& replica_pools) {
  std::vector<std::string> out;
  for (const auto& p : replica_pools)
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  return out;
}

}  // namespace

static void read_tables(hid_t file, const std::string& path, RunData& d) {
  const Table rp = sim::h5::read_table(file, "replicas");
  const auto rep_names = names(rp, "replicas", "replica", path);
  const auto rep_pools = names(rp, "replicas", "pool", path);
  d.pools = pools_in_order(rep_pools);
  const Table rq = sim::h5::read_table(file, "requests");
  const auto arrival = sim::column_numbers(rq, "arrival_s", path, "requests");
  const auto ttft = sim::column_numbers(rq, "ttft_s", path, "requests");
  const auto tpot = sim::column_numbers(rq, "tpot_s", path, "requests");
  const auto e2e = sim::column_numbers(rq, "e2e_s", path, "requests");
  const auto input = sim::column_numbers(rq, "input_tokens", path, "requests");
  const auto cached = sim::column_numbers(rq, "cached_tokens", path, "requests");
  const auto scheduled = sim::column_numbers(rq, "first_scheduled_s", path, "requests");
  const auto outcome = names(rq, "requests", "outcome", path);
  auto pool = names(rq, "requests", "pool", path);
  // Files of kvfleet before categorical columns hold the pool's index: its name by index.
  if (const sim::Column* c = rq.find("pool");
      c && std::holds_alternative<std::vector<std::int64_t>>(c->data)) {
    const auto& codes = std::get<std::vector<std::int64_t>>(c->data);
    for (std::size_t i = 0; i < codes.size(); ++i)
      if (codes[i] >= 0 && static_cast<std::size_t>(codes[i]) < d.pools.size())
        pool[i] = d.pools[codes[i]];
  }
  d.requests.reserve(arrival.size());
  for (std::size_t i = 0; i < arrival.size(); ++i) {
    d.requests.push_back({arrival[i], ttft[i], tpot[i], e2e[i], input[i], cached[i],
                          outcome[i] == "ok", std::isfinite(scheduled[i]), pool[i]});
  }
  std::map<std::string, std::string> pool_of, by_flat_name;
  for (std::size_t i = 0; i < rep_names.size(); ++i) {
    pool_of[rep_names[i]] = rep_pools[i];
    by_flat_name[sim::timeseries_name(rep_names[i])] = rep_names[i];  // the group's member name
  }
  if (sim::h5::has_link(file, "timeseries")) {
    const sim::h5::H5 group{
        sim::h5::check_id(H5Gopen2(file, "timeseries", H5P_DEFAULT), "timeseries"), H5Gclose};
    for (const auto& member : sim::h5::group_members(file, "timeseries")) {
      const Table ts = sim::h5::read_table(group.id, member.c_str());
      const std::string where = "timeseries/" + member;
      RunData::Replica r;
      // The name as /replicas spells it: the attribute, or (older files) the member's name
      // mapped back.
      r.name =
          sim::h5::read_text_attribute(group.id, member.c_str(), "replica",
                                       by_flat_name.count(member) ? by_flat_name[member] : member);
      r.pool = pool_of.count(r.name) ? pool_of[r.name] : r.name;
      r.t_s = sim::column_numbers(ts, "t_s", path, where);
      r.kv_usage = sim::column_numbers(ts, "kv_cache_usage_perc", path, where);
      r.running = sim::column_numbers(ts, "num_requests_running", path, where);
      r.waiting = sim::column_numbers(ts, "num_requests_waiting", path, where);
      r.generation_tokens = sim::column_numbers(ts, "generation_tokens_total", path, where);
      r.compute = sim::column_numbers(ts, "compute_utilization", path, where);
      r.bandwidth = sim::column_numbers(ts, "memory_bandwidth_utilization", path, where);
      d.replicas.push_back(std::move(r));
    }
    // In the order of /replicas (the group lists names alphabetically: h100_10 before h100_2).
    std::map<std::string, std::size_t> order;
    for (std::size_t i = 0; i < rep_names.size(); ++i) order[rep_names[i]] = i;
    std::stable_sort(d.replicas.begin(), d.replicas.end(), [&](const auto& a, const auto& b) {
      return (order.count(a.name) ? order[a.name] : 1u << 30) <
             (order.count(b.name) ? order[b.name] : 1u << 30);
    });
  }
}

namespace {

using Getter = std::vector<double> RunData::Replica::*;

// One line per replica, or per pool (the mean over its replicas at each sample time) past
// max_lines replicas. `rate` turns a cumulative counter into its rate per second.
LineChartSpec over_time(const RunData& run, const DashboardOptions& o, const std::string& title,
                        const std::string& y_label, Getter get, bool rate = false) {
  LineChartSpec spec;
  spec.title = title;
  spec.x_label = "simulated time (s)";
  spec.y_label = y_label;
  auto values = [&](const RunData::Replica& r) {
    std::vector<double> v = r.*get;
    if (!rate) return v;
    std::vector<double> out(v.size(), std::nan(""));
    for (std::size_t i = 1; i < v.size(); ++i) {
      const double dt = r.t_s[i] - r.t_s[i - 1];
      if (dt > 0) out[i] = (v[i] - v[i - 1]) / dt;
    }
    return out;
  };
  if (run.replicas.size() <= o.max_lines) {
    for (const auto& r : run.replicas) spec.series.push_back({r.name, r.t_s, values(r)});
    return spec;
  }
  for (const auto& p : run.pools) {
    std::map<double, std::pair<double, int>> acc;
    int n = 0;
    for (const auto& r : run.replicas) {
      if (r.pool != p) continue;
      ++n;
      const auto v = values(r);
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (!std::isfinite(v[i])) continue;
        auto& e = acc[r.t_s[i]];
        e.first += v[i];
        e.second += 1;
      }
    }
    if (n == 0) continue;
    Series s;
    s.name = p + " (mean of " + std::to_string(n) + " replicas)";
    for (const auto& [t, e] : acc) {
      s.x.push_back(t);
      s.y.push_back(e.first / e.second);
    }
    spec.series.push_back(std::move(s));
  }
  return spec;
}

// The empirical CDF of `v` with at most ~400 points (every value when fewer).
Series cdf(const std::string& name, std::vector<double> v) {
  std::sort(v.begin(), v.end());
  Series s;
  s.name = name + " (" + std::to_string(v.size()) + " requests)";
  const std::size_t n = v.size();
  const std::size_t step = std::max<std::size_t>(1, n / 400);
  for (std::size_t i = 0; i < n; i += step) {
    s.x.push_back(v[i]);
    s.y.push_back(static_cast<double>(i + 1) / static_cast<double>(n));
  }
  if (n > 0 && (s.x.empty() || s.y.back() < 1)) {
    s.x.push_back(v.back());
    s.y.push_back(1);
  }
  return s;
}

LineChartSpec latency_cdf(const RunData& run, const std::vector<sim::Slo>& slo,
                          const std::string& title, const std::string& stem,
                          double RunData::Request::*field) {
  LineChartSpec spec;
  spec.title = title;
  spec.x_label = stem + " (s, log scale)";
  spec.y_label = "share of completed requests";
  spec.log_x = true;
  spec.y_max = 1;
  const bool by_pool = run.pools.size() > 1;
  for (const auto& p : by_pool ? run.pools : std::vector<std::string>{""}) {
    std::vector<double> v;
    for (const auto& q : run.requests)
      if (q.ok && (!by_pool || q.pool == p) && std::isfinite(q.*field) && q.*field > 0)
        v.push_back(q.*field);
    if (!v.empty()) spec.series.push_back(cdf(by_pool ? p : "all pools", std::move(v)));
  }
  // The SLO on this latency: its limit (a vertical line) and its percentile (a horizontal one).
  for (const auto& s : slo) {
    if (s.kind != sim::Slo::Kind::kLatency || s.metric.rfind(stem + "_", 0) != 0) continue;
    const std::string stat = s.metric.substr(stem.size() + 1, s.metric.size() - stem.size() - 3);
    if (stat.size() > 1 && stat[0] == 'p' && std::isdigit(static_cast<unsigned char>(stat[1]))) {
      spec.y_limit = std::stod(stat.substr(1)) / 100;
      spec.y_limit_label = stat;
    }
    spec.x_mark = s.limit_s;
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g s", s.limit_s);
    spec.x_mark_label = "SLO: " + s.name + " \u2264 " + limit;  // no '<': legends are rich text
    break;
  }
  return spec;
}

// Prompt tokens served from prefix caches over prompt tokens of requests scheduled, by arrival
// time (bins of about 1% of the run, at least the sampling interval), per pool.
LineChartSpec hit_rate(const RunData& run) {
  LineChartSpec spec;
  spec.title = "Prefix-cache hit rate (prompt tokens served from cache, by arrival)";
  spec.x_label = "arrival time (s)";
  spec.y_label = "hit rate (fraction)";
  spec.y_max = 1;
  double end = 0;
  for (const auto& q : run.requests)
    if (std::isfinite(q.arrival_s)) end = std::max(end, q.arrival_s);
  double bin = std::max(run.sample_interval_s, end / 100);
  if (!(bin > 0) || !std::isfinite(bin)) bin = 1;  // a file's odd interval: plain seconds
  const bool by_pool = run.pools.size() > 1;
  for (const auto& p : by_pool ? run.pools : std::vector<std::string>{""}) {
    std::map<long, std::pair<double, double>> acc;  // bin -> (cached, input)
    for (const auto& q : run.requests) {
      if (!q.scheduled || (by_pool && q.pool != p) || !(q.input_tokens > 0) ||
          !(q.arrival_s >= 0 && q.arrival_s / bin < 1e15))
        continue;
      auto& e = acc[static_cast<long>(q.arrival_s / bin)];
      e.first += q.cached_tokens;
      e.second += q.input_tokens;
    }
    Series s;
    s.name = by_pool ? p : "all pools";
    for (const auto& [b, e] : acc) {
      s.x.push_back((static_cast<double>(b) + 0.5) * bin);
      s.y.push_back(e.first / e.second);
    }
    if (!s.x.empty()) spec.series.push_back(std::move(s));
  }
  return spec;
}

}  // namespace

std::vector<DashboardPage> run_dashboard(const RunData& run, const DashboardOptions& o) {
  const std::string name = run.title.empty() ? "" : run.title + ": ";
  DashboardPage state{kDashboardPages[0], name + "replica state over time", {}};
  using R = RunData::Replica;
  state.charts.push_back(
      over_time(run, o, "KV cache usage", "fraction of KV blocks", &R::kv_usage));
  state.charts.back().y_max = 1;
  state.charts.push_back(over_time(run, o, "Running requests", "requests", &R::running));
  state.charts.push_back(over_time(run, o, "Waiting requests", "requests", &R::waiting));
  state.charts.push_back(
      over_time(run, o, "Output throughput", "tokens/s", &R::generation_tokens, true));
  state.charts.push_back(
      over_time(run, o, "Compute utilisation", "achieved / peak FLOP/s", &R::compute));
  state.charts.back().y_max = 1;
  state.charts.push_back(over_time(run, o, "Memory-bandwidth utilisation",
                                   "achieved / peak bandwidth", &R::bandwidth));
  state.charts.back().y_max = 1;
  const std::vector<sim::Slo>& slo = o.slo.empty() ? run.scenario_slo : o.slo;
  DashboardPage latency{
      kDashboardPages[1], name + "latency of completed requests and prefix caching", {}};
  using Q = RunData::Request;
  latency.charts.push_back(
      latency_cdf(run, slo, "TTFT: time to first token", "time_to_first_token", &Q::ttft_s));
  latency.charts.push_back(
      latency_cdf(run, slo, "TPOT: time per output token", "inter_token_latency", &Q::tpot_s));
  latency.charts.push_back(
      latency_cdf(run, slo, "E2E: end-to-end latency", "e2e_request_latency", &Q::e2e_s));
  latency.charts.push_back(hit_rate(run));
  return {state, latency};
}

namespace {

// One page laid out in a scene: its title, then the charts in a grid (3 columns for 5 or more,
// else 2).
std::unique_ptr<QGraphicsScene> page_scene(const DashboardPage& page, int width, int height) {
  auto scene = std::make_unique<QGraphicsScene>();
  scene->setSceneRect(0, 0, width, height);
  scene->setBackgroundBrush(Qt::white);
  auto* title = scene->addSimpleText(QString::fromStdString(page.title));
  QFont f;
  f.setPointSize(16);
  f.setBold(true);
  title->setFont(f);
  title->setPos((width - title->boundingRect().width()) / 2, 8);
  const int top = 48;
  const int n = static_cast<int>(page.charts.size());
  const int cols = n >= 5 ? 3 : 2;
  const int rows = (n + cols - 1) / cols;
  const double w = static_cast<double>(width) / cols;
  const double h = static_cast<double>(height - top) / std::max(1, rows);
  for (int i = 0; i < n; ++i) {
    QChart* chart = make_line_chart(page.charts[i]);
    QFont tf;
    tf.setPointSize(11);
    tf.setBold(true);
    chart->setTitleFont(tf);
    chart->legend()->setAlignment(Qt::AlignBottom);
    scene->addItem(chart);  // the scene owns it
    chart->setGeometry((i % cols) * w, top + (i / cols) * h, w, h);
  }
  QCoreApplication::processEvents();
  return scene;
}

std::string with_suffix(const std::filesystem::path& p, const std::string& page) {
  return (p.parent_path() / (p.stem().string() + "-" + page + p.extension().string())).string();
}

// `file` is the temporary the image is written to; `png` comes from the final name (the
// temporary's own suffix, ".tmp-PID", says nothing about the format).
void write_image(const DashboardPage& page, const std::string& file, bool png, int width,
                 int height) {
  auto scene = page_scene(page, width, height);
  if (!paint_scene(*scene, file, png, width, height, page.title))
    throw std::runtime_error("could not draw " + file);
}

void write_pdf(const std::vector<DashboardPage>& pages, const std::string& file, int width,
               int height) {
  // Into memory, then written with every call checked (line_chart.h, write_checked).
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  QPdfWriter pdf(&buffer);
  pdf.setResolution(96);
  pdf.setPageSize(QPageSize(QSizeF(width * 0.75, height * 0.75), QPageSize::Point));
  pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
  pdf.setTitle(QString::fromStdString(pages.empty() ? "" : pages[0].title));
  QPainter painter(&pdf);
  bool ok = painter.isActive();
  if (ok) painter.setRenderHint(QPainter::Antialiasing);
  for (std::size_t i = 0; ok && i < pages.size(); ++i) {
    if (i > 0 && !(ok = pdf.newPage())) break;
    auto scene = page_scene(pages[i], width, height);
    scene->render(&painter, QRectF(painter.viewport()), QRectF(0, 0, width, height));
  }
  if (!(painter.isActive() && painter.end() && ok))
    throw std::runtime_error("could not draw " + file);
  // Qt stamps the time of writing as /CreationDate: the same run gives the same bytes when it is
  // the time SOURCE_DATE_EPOCH gives (the reproducible-builds convention), else 1 January 2000.
  const QByteArray key = "/CreationDate (D:";
  if (const qsizetype at = bytes.indexOf(key); at >= 0) {
    const qsizetype start = at + key.size(), end = bytes.indexOf(')', start);
    std::time_t t = 946684800;
    if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH"))
      t = static_cast<std::time_t>(std::strtoll(epoch, nullptr, 10));
    std::tm tm{};
    gmtime_r(&t, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%d%H%M%SZ", &tm);
    if (end - start == static_cast<qsizetype>(std::strlen(stamp)))  // offsets stay as they are
      bytes.replace(start, end - start, stamp);
  }
  write_checked(file, bytes);
}

}  // namespace

DashboardOutput::DashboardOutput(const std::string& out) {
  const std::filesystem::path p(out);
  std::error_code ec;
  if (std::filesystem::is_directory(p, ec) || (!out.empty() && out.back() == '/')) {
    // The files go into a temporary folder, published into `out` (made, or an existing one).
    const std::filesystem::path folder = files_.add_folder("--out", out);
    const bool exists = std::filesystem::is_directory(p, ec);
    auto add = [&](const std::string& name, const std::string& page) {
      // In an existing folder, none of the files may be taken by a folder, a link, ...
      if (exists) sim::check_output_file("--out", (p / name).string());
      targets_.emplace_back((folder / name).string(), page);
      written_.push_back((p / name).string());
    };
    for (const char* page : kDashboardPages)
      for (const char* ext : {".png", ".svg"}) add(page + std::string(ext), page);
    add("dashboard.pdf", "");
    return;
  }
  const std::string ext = p.extension().string();
  if (ext != ".pdf" && ext != ".png" && ext != ".svg")
    throw sim::InputError("--out", "",
                          out +
                              ": a run's dashboard is written as FILE.pdf (every page), "
                              "FILE.png or FILE.svg (FILE-<page>.png per page) or into a "
                              "folder (DIR/)");
  if (ext == ".pdf") {
    targets_.emplace_back(files_.add_file("--out", out), "");
    written_.push_back(out);
    return;
  }
  for (const char* page : kDashboardPages) {
    targets_.emplace_back(files_.add_file("--out", with_suffix(p, page)), page);
    written_.push_back(with_suffix(p, page));
  }
}

std::vector<std::string> DashboardOutput::write(const std::vector<DashboardPage>& pages, int width,
                                                int height) {
  for (std::size_t i = 0; i < targets_.size(); ++i) {
    const auto& [file, page_name] = targets_[i];
    try {
      if (page_name.empty()) {
        write_pdf(pages, file, width, height);
        continue;
      }
      const bool png = std::filesystem::path(written_[i]).extension() == ".png";
      for (const auto& page : pages)
        if (page.name == page_name) write_image(page, file, png, width, height);
    } catch (const sim::InputError& e) {
      // Named by the file asked for, not the temporary written to.
      throw sim::InputError(written_[i], "", e.problem());
    }
  }
  files_.publish();
  return written_;
}

}  // namespace kvfleet::charts
