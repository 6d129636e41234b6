#include "gui/app/views.h"

#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <QtCore/QBuffer>
#include <QtGui/QPainter>
#include <QtSvg/QSvgGenerator>
#include <QtWidgets/QComboBox>
#include <QtWidgets/QHBoxLayout>
#include <QtWidgets/QHeaderView>
#include <QtWidgets/QLabel>
#include <QtWidgets/QSplitter>
#include <QtWidgets/QTableWidget>
#include <QtWidgets/QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>

#include "gui/app/compare.h"
#include "gui/charts/line_chart.h"
#include "gui/charts/sweep_chart.h"
#include "sim/core/error.h"
#include "sim/io/checked_file.h"
#include "sim/output/results.h"

namespace kvfleet::gui {

namespace {

QChartView* chart_view() {
  auto* v = new QChartView;
  v->setRenderHint(QPainter::Antialiasing);
  v->setMinimumHeight(240);
  return v;
}

void set_chart(QChartView* view, QChart* chart) {
  QChart* old = view->chart();
  view->setChart(chart);
  delete old;
}

QComboBox* point_picker(QWidget* parent) {
  auto* c = new QComboBox(parent);
  c->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  return c;
}

void fill_picker(QComboBox* c, const std::vector<LoadPoint>& points,
                 const std::vector<std::string>& names) {
  const int keep = c->currentIndex();
  c->blockSignals(true);
  c->clear();
  for (std::size_t i = 0; i < points.size(); ++i) {
    const QString who = i < names.size() ? QString::fromStdString(names[i]) + ", " : QString();
    c->addItem(QString("%1load %2%3")
                   .arg(who)
                   .arg(points[i].load)
                   .arg(points[i].done ? "" : " (not run)"));
  }
  c->setCurrentIndex(keep >= 0 && keep < c->count() ? keep : std::max(0, c->count() / 2 - 1));
  c->blockSignals(false);
}

}  // namespace

QString export_table_csv(const QTableWidget* t, const QString& path) {
  sim::Table table;
  auto any = [&](int c, int role) {
    for (int r = 0; r < t->rowCount(); ++r)
      if (t->item(r, c) && t->item(r, c)->data(role).isValid()) return true;
    return false;
  };
  auto numbers = [&](int c, int role) {
    std::vector<double> v;
    for (int r = 0; r < t->rowCount(); ++r) {
      const auto* item = t->item(r, c);
      const QVariant d = item ? item->data(role) : QVariant();
      v.push_back(d.isValid() ? d.toDouble() : std::numeric_limits<double>::quiet_NaN());
    }
    return v;
  };
  for (int c = 0; c < t->columnCount(); ++c) {
    const std::string name = t->horizontalHeaderItem(c)->text().toStdString();
    if (any(c, kNumberRole)) {
      const bool range = any(c, kHighRole);
      table.f64(range ? name + " (low)" : name) = numbers(c, kNumberRole);
      if (range) table.f64(name + " (high)") = numbers(c, kHighRole);
      if (any(c, kBoundRole)) {
        auto& bound = table.str(name + " (bound)");
        for (int r = 0; r < t->rowCount(); ++r) {
          const auto* item = t->item(r, c);
          bound.push_back(item ? item->data(kBoundRole).toString().toStdString() : "");
        }
      }
      continue;
    }
    auto& col = table.str(name);
    for (int r = 0; r < t->rowCount(); ++r) {
      const auto* item = t->item(r, c);
      col.push_back(item ? item->text().toStdString() : "");
    }
  }
  try {
    sim::write_csv(path.toStdString(), table);
  } catch (const std::exception& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

QString export_chart_view(QChartView* view, const QString& path) {
  // Drawn into memory, then written atomically with every call checked (a full disk is an
  // error naming the file, never a short image).
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  if (path.endsWith(".png", Qt::CaseInsensitive)) {
    if (!view->grab().save(&buffer, "PNG")) return "cannot draw " + path;
  } else if (path.endsWith(".svg", Qt::CaseInsensitive)) {
    QSvgGenerator gen;
    gen.setOutputDevice(&buffer);
    gen.setSize(view->size());
    gen.setViewBox(QRect(QPoint(0, 0), view->size()));
    QPainter p(&gen);
    view->render(&p);
    if (!p.end()) return "cannot draw " + path;
  } else {
    return "export to a .png or .svg file";
  }
  try {
    sim::write_bytes_atomically(path.toStdString(), bytes.constData(),
                                static_cast<std::size_t>(bytes.size()));
  } catch (const std::exception& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

RunView::RunView(QWidget* parent) : QWidget(parent) {
  auto* l = new QVBoxLayout(this);
  auto* row = new QHBoxLayout;
  row->addWidget(new QLabel("Run:"));
  which_ = point_picker(this);
  row->addWidget(which_);
  row->addStretch(1);
  l->addLayout(row);
  hint_ = new QLabel(this);
  hint_->setWordWrap(true);
  hint_->setVisible(false);
  l->addWidget(hint_);
  top_ = chart_view();
  bottom_ = chart_view();
  l->addWidget(top_, 1);
  l->addWidget(bottom_, 1);
  connect(which_, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] { redraw(); });
}

QString RunView::hint() const { return hint_->text(); }

void RunView::setHint(const QString& hint) {
  hint_->setText(hint);
  hint_->setVisible(!hint.isEmpty());
}

void RunView::setPoints(const std::vector<LoadPoint>& points,
                        const std::vector<std::string>& names) {
  points_ = points;
  names_ = names;
  fill_picker(which_, points_, names_);
  redraw();
}

void RunView::redraw() {
  const int i = which_->currentIndex();
  const bool ran =
      i >= 0 && i < static_cast<int>(points_.size()) && points_[i].done && points_[i].ok;
  draw(ran ? &points_[i] : nullptr, top_, bottom_);
}

void TimelineView::draw(const LoadPoint* point, QChartView* top, QChartView* bottom) {
  charts::LineChartSpec kv, q;
  kv.title = "KV memory against compute over time (mean over replicas)";
  kv.x_label = "time (s)";
  kv.y_label = "fraction";
  kv.y_max = 1.0;
  kv.x_exact = true;
  q.title = "Requests over time (all replicas)";
  q.x_label = "time (s)";
  q.x_exact = true;
  q.y_label = "count";  // short: the two stacked charts leave little height at 1280×800
  if (point != nullptr && !point->timeseries.empty()) {
    const auto& ts = point->timeseries;
    const std::size_t n = ts[0].t_s.size();
    charts::Series use{"KV usage", {}, {}}, mark{"KV watermark (highest so far)", {}, {}};
    charts::Series comp{"compute utilisation", {}, {}}, bw{"memory-bandwidth utilisation", {}, {}};
    charts::Series run{"running", {}, {}}, wait{"waiting", {}, {}},
        pre{"preemptions (cumulative)", {}, {}};
    double high = 0;
    for (std::size_t k = 0; k < n; ++k) {
      double u = 0, r = 0, w = 0, p = 0, c = 0, b = 0;
      for (const auto& t : ts) {
        if (k >= t.t_s.size()) continue;
        u += t.kv_cache_usage[k] / ts.size();
        c += t.compute_utilization[k] / ts.size();
        b += t.memory_bandwidth_utilization[k] / ts.size();
        r += t.num_requests_running[k];
        w += t.num_requests_waiting[k];
        p += static_cast<double>(t.num_preemptions[k]);
      }
      high = std::max(high, u);
      const double x = ts[0].t_s[k];
      use.x.push_back(x), use.y.push_back(u);
      mark.x.push_back(x), mark.y.push_back(high);
      if (k > 0) {  // utilisation is over the interval that ends at this sample
        comp.x.push_back(x), comp.y.push_back(c);
        bw.x.push_back(x), bw.y.push_back(b);
      }
      run.x.push_back(x), run.y.push_back(r);
      wait.x.push_back(x), wait.y.push_back(w);
      pre.x.push_back(x), pre.y.push_back(p);
    }
    kv.series = {use, mark, comp, bw};
    q.series = {run, wait, pre};
  }
  set_chart(top, charts::make_line_chart(kv));
  set_chart(bottom, charts::make_line_chart(q));
}

void FleetView::draw(const LoadPoint* point, QChartView* top, QChartView* bottom) {
  charts::BarChartSpec load, cache;
  load.title = "Load per replica (time means): hotspots stand out";
  load.value_label = "requests";
  cache.title = "KV usage and prefix-cache hits per replica";
  cache.value_label = "fraction";
  if (point != nullptr) {
    const auto& p = *point;
    std::vector<double> run, wait, kv, hit;
    for (const auto& ts : p.timeseries) {
      load.categories.push_back(ts.replica);
      cache.categories.push_back(ts.replica);
      double r = 0, w = 0, u = 0;
      for (std::size_t k = 0; k < ts.t_s.size(); ++k) {
        r += ts.num_requests_running[k];
        w += ts.num_requests_waiting[k];
        u += ts.kv_cache_usage[k];
      }
      const double n = std::max<std::size_t>(1, ts.t_s.size());
      run.push_back(r / n);
      wait.push_back(w / n);
      kv.push_back(u / n);
    }
    for (const auto& rep : p.replicas) {
      hit.push_back(rep.stats.prefix_cache_queries
                        ? static_cast<double>(rep.stats.prefix_cache_hits) /
                              rep.stats.prefix_cache_queries
                        : 0.0);
    }
    hit.resize(kv.size(), 0.0);
    load.sets = {{"running", run}, {"waiting", wait}};
    cache.sets = {{"KV usage", kv}, {"prefix-cache hit rate", hit}};
  }
  set_chart(top, charts::make_bar_chart(load));
  set_chart(bottom, charts::make_bar_chart(cache));
}

PointsTable::PointsTable(QWidget* parent) : QWidget(parent) {
  auto* l = new QVBoxLayout(this);
  hint_ = new QLabel(this);
  hint_->setWordWrap(true);
  hint_->setVisible(false);
  l->addWidget(hint_);
  table_ = new QTableWidget(this);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  l->addWidget(table_);
}

QString PointsTable::hint() const { return hint_->text(); }

void PointsTable::setHint(const QString& hint) {
  hint_->setText(hint);
  hint_->setVisible(!hint.isEmpty());
}

void PointsTable::setPoints(const std::string& load_label, const std::vector<LoadPoint>& points,
                            const std::vector<std::string>& names) {
  // One column per quantity: its header (with the unit) and its text for a finished point.
  // Refused work comes right after the status, so that a policy that refuses the longest
  // conversations cannot look fast unnoticed.
  using S = sim::Summary;
  auto num = [](double x, int digits = 4) { return QString::number(x, 'g', digits); };
  auto pct = [](std::int64_t part, std::int64_t whole) {
    return QString::number(percent_of(part, whole), 'g', 4);
  };
  struct Col {
    QString header;
    std::function<QString(const S&)> text;
  };
  std::vector<Col> cols = {
      {"goodput (%)", [&](const S& s) { return pct(s.ok, s.requests); }},
      {"rejected (%)", [&](const S& s) { return pct(s.rejected, s.requests); }},
      {"rejected", [](const S& s) { return QString::number(s.rejected); }},
      {"refused turns (context)", [](const S& s) { return QString::number(s.context_overflows); }},
      {"timed out", [](const S& s) { return QString::number(s.timed_out); }},
      {"TTFT p50 (s)", [&](const S& s) { return num(s.ttft.p50); }},
      {"TTFT p99 (s)", [&](const S& s) { return num(s.ttft.p99); }},
      {"TPOT p50 (s)", [&](const S& s) { return num(s.tpot.p50); }},
      {"TPOT p99 (s)", [&](const S& s) { return num(s.tpot.p99); }},
      {"E2E p99 (s)", [&](const S& s) { return num(s.e2e.p99); }},
      {"requests/s", [&](const S& s) { return num(s.requests_per_s); }},
      {"KV usage mean (%)", [&](const S& s) { return num(100 * s.kv_usage_mean, 3); }},
      {"compute util. (%)", [&](const S& s) { return num(100 * s.compute_utilization, 3); }},
      {"bandwidth util. (%)",
       [&](const S& s) { return num(100 * s.memory_bandwidth_utilization, 3); }},
  };
  // Then every declared counter (sim::summary_totals()), by its label and unit: a new
  // counter shows here without a line of this file.
  for (const auto& t : sim::summary_totals()) {
    cols.push_back({QString::fromStdString(t.label + (t.unit.empty() ? "" : " (" + t.unit + ")")),
                    [name = t.name, integer = t.integer, num](const S& s) {
                      const double v = s.total(name);
                      return integer ? QString::number(static_cast<qlonglong>(v)) : num(v);
                    }});
  }
  // Compared variants get a first column of their own; every other column shifts by `at`.
  const int at = names.empty() ? 0 : 1;
  QStringList headers = {QString::fromStdString(load_label), "status"};
  if (at) headers.prepend("variant");
  for (const auto& c : cols) headers << c.header;
  headers << "binding resource";
  table_->clear();
  table_->setColumnCount(headers.size());
  table_->setHorizontalHeaderLabels(headers);
  table_->setRowCount(static_cast<int>(points.size()));
  for (int r = 0; r < static_cast<int>(points.size()); ++r) {
    const auto& p = points[r];
    const auto& s = p.summary;
    const QString status = !p.done ? "pending"
                           : p.ok  ? "ok"
                                   : "failed: " + QString::fromStdString(p.error);
    if (at)
      table_->setItem(r, 0,
                      new QTableWidgetItem(QString::fromStdString(
                          static_cast<std::size_t>(r) < names.size() ? names[r] : "")));
    table_->setItem(r, at, new QTableWidgetItem(num(p.load, 6)));
    table_->setItem(r, at + 1, new QTableWidgetItem(status));
    if (!(p.done && p.ok)) continue;
    for (std::size_t c = 0; c < cols.size(); ++c) {
      table_->setItem(r, static_cast<int>(c) + at + 2, new QTableWidgetItem(cols[c].text(s)));
    }
    const sim::Binding b = sim::binding_resource(s);
    auto* item = new QTableWidgetItem(QString::fromStdString(b.resource));
    item->setToolTip(QString::fromStdString(b.evidence));
    table_->setItem(r, static_cast<int>(cols.size()) + at + 2, item);
  }
  table_->resizeColumnsToContents();
}

SweepFileView::SweepFileView(QWidget* parent) : QWidget(parent) {
  auto* l = new QVBoxLayout(this);
  auto* row = new QHBoxLayout;
  x_ = new QComboBox;
  y_ = new QComboBox;
  series_ = new QComboBox;
  row->addWidget(new QLabel("x:"));
  row->addWidget(x_, 1);
  row->addWidget(new QLabel("y:"));
  row->addWidget(y_, 1);
  row->addWidget(new QLabel("series:"));
  row->addWidget(series_, 1);
  l->addLayout(row);
  // The other axes: each fixed to a value (or averaged on purpose), never averaged silently.
  filter_row_ = new QHBoxLayout;
  l->addLayout(filter_row_);
  problem_label_ = new QLabel;
  problem_label_->setWordWrap(true);
  problem_label_->setStyleSheet("color: #a02020");
  l->addWidget(problem_label_);
  auto* split = new QSplitter(Qt::Vertical);
  chart_ = chart_view();
  table_ = new QTableWidget;
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  split->addWidget(chart_);
  split->addWidget(table_);
  l->addWidget(split, 1);
  for (auto* c : {x_, y_, series_}) {
    connect(c, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] { redraw(); });
  }
  set_chart(chart_, charts::make_line_chart({}));
}

void SweepFileView::open(const QString& path) {
  results_ = sim::read_sweep_h5(path.toStdString());  // throws on a bad file, keeping the old
  for (auto* c : {x_, y_, series_}) c->blockSignals(true);
  x_->clear();
  y_->clear();
  series_->clear();
  series_->addItem("(none)");
  for (const auto& k : results_.axis_keys) {
    x_->addItem(QString::fromStdString(k));
    series_->addItem(QString::fromStdString(k));
  }
  for (const auto& m : results_.metric_names) {
    x_->addItem(QString::fromStdString(m));
    y_->addItem(QString::fromStdString(m));
  }
  const int ttft = y_->findText("time_to_first_token_p99_s");
  if (ttft >= 0) y_->setCurrentIndex(ttft);
  if (results_.axis_keys.size() > 1) series_->setCurrentIndex(1);
  if (results_.axis_keys.size() > 1) x_->setCurrentIndex(1);
  for (auto* c : {x_, y_, series_}) c->blockSignals(false);
  // One chooser per axis: its values (the first chosen) or "(mean over)".
  while (QLayoutItem* item = filter_row_->takeAt(0)) {
    delete item->widget();
    delete item;
  }
  filters_.clear();
  for (const auto& k : results_.axis_keys) {
    auto* c = new QComboBox;
    for (const auto& v : charts::axis_values(results_, k)) c->addItem(QString::fromStdString(v));
    c->addItem("(mean over)");
    c->setToolTip(QString::fromStdString("the value of " + k +
                                         " the chart shows when it is neither x nor the series"));
    filter_row_->addWidget(new QLabel(QString::fromStdString(k + ":")));
    filter_row_->addWidget(c, 1);
    connect(c, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] { redraw(); });
    filters_.emplace_back(k, c);
  }
  // The table: one row per point, axes then metrics.
  QStringList cols = {"point", "replicate", "status"};
  for (const auto& k : results_.axis_keys) cols << QString::fromStdString(k);
  for (const auto& m : results_.metric_names) cols << QString::fromStdString(m);
  table_->clear();
  table_->setColumnCount(cols.size());
  table_->setHorizontalHeaderLabels(cols);
  int rows = 0;
  for (const auto& p : results_.points) rows += p.done ? 1 : 0;
  table_->setRowCount(rows);
  int r = 0;
  for (std::size_t i = 0; i < results_.points.size(); ++i) {
    const auto& p = results_.points[i];
    if (!p.done) continue;
    int c = 0;
    table_->setItem(r, c++, new QTableWidgetItem(QString::number(p.point)));
    table_->setItem(r, c++, new QTableWidgetItem(QString::number(p.replicate)));
    table_->setItem(r, c++, new QTableWidgetItem(p.ok ? "ok" : "failed"));
    for (const auto& v : results_.axis_values[i])
      table_->setItem(r, c++, new QTableWidgetItem(QString::fromStdString(v)));
    for (double v : p.metrics)
      table_->setItem(r, c++, new QTableWidgetItem(QString::number(v, 'g', 6)));
    ++r;
  }
  redraw();
}

bool SweepFileView::setAxisFilter(const std::string& axis, const QString& value) {
  for (auto& [k, c] : filters_) {
    if (k != axis) continue;
    const int i = c->findText(value);
    if (i < 0) return false;
    c->setCurrentIndex(i);
    redraw();
    return true;
  }
  return false;
}

bool SweepFileView::setSeries(const QString& axis) {
  const int i = axis.isEmpty() ? 0 : series_->findText(axis);
  if (i < 0) return false;
  series_->setCurrentIndex(i);
  redraw();
  return true;
}

bool SweepFileView::setX(const QString& key) {
  const int i = x_->findText(key);
  if (i < 0) return false;
  x_->setCurrentIndex(i);
  redraw();
  return true;
}

void SweepFileView::redraw() {
  if (x_->count() == 0 || y_->count() == 0) return;
  charts::SweepChartOptions o;
  o.series = series_->currentIndex() > 0 ? series_->currentText().toStdString() : "";
  const std::string x = x_->currentText().toStdString();
  for (auto& [k, c] : filters_) {
    const bool drawn = k == x || k == o.series;
    c->setEnabled(!drawn);  // an axis on the chart needs no value
    if (drawn) continue;
    if (c->currentText() == "(mean over)") {
      o.mean_over.push_back(k);
    } else {
      o.where[k] = c->currentText().toStdString();
    }
  }
  try {
    spec_ = charts::sweep_chart(results_, x, y_->currentText().toStdString(), o);
    set_chart(chart_, charts::make_line_chart(spec_));
    problem_label_->clear();
  } catch (const sim::InputError& e) {
    // x and the series the same axis, say: the message, and the last chart stays.
    problem_label_->setText(QString::fromStdString(e.problem()));
  }
}

}  // namespace kvfleet::gui
