// The window's compare mode: running a comparison, its chart and its capacity table.
#include <yaml-cpp/yaml.h>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <QtCore/QTimer>
#include <QtGui/QAction>
#include <QtGui/QKeySequence>
#include <QtWidgets/QCheckBox>
#include <QtWidgets/QComboBox>
#include <QtWidgets/QDoubleSpinBox>
#include <QtWidgets/QFileDialog>
#include <QtWidgets/QFormLayout>
#include <QtWidgets/QGroupBox>
#include <QtWidgets/QHBoxLayout>
#include <QtWidgets/QLabel>
#include <QtWidgets/QLineEdit>
#include <QtWidgets/QListWidget>
#include <QtWidgets/QMenu>
#include <QtWidgets/QMessageBox>
#include <QtWidgets/QProgressBar>
#include <QtWidgets/QPushButton>
#include <QtWidgets/QScrollArea>
#include <QtWidgets/QSpinBox>
#include <QtWidgets/QSplitter>
#include <QtWidgets/QStatusBar>
#include <QtWidgets/QTabWidget>
#include <QtWidgets/QTableWidget>
#include <QtWidgets/QToolBar>
#include <QtWidgets/QToolButton>
#include <QtWidgets/QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include "gui/app/main_window.h"
#include "gui/app/sizing_view.h"
#include "gui/app/words.h"
#include "gui/app/yaml_lookup.h"
#include "sim/core/error.h"
#include "sim/fleet/router.h"
#include "sim/io/text_file.h"
#include "sim/metrics/fidelity.h"
#include "sim/workload/context_policy.h"

namespace kvfleet::gui {

// Every variant is loaded before anything runs: a refused value gets a row of its own in the
// capacity table, saying why in the panel's words, and the others run. An implementation's
// label carries its parameters: "window (turns kept 4)".
std::vector<CompareRun::Spec> MainWindow::compareSpecs(
    const std::string& key, const std::vector<std::string>& values,
    std::vector<std::pair<std::string, std::string>>& refused) const {
  std::vector<CompareRun::Spec> specs;
  const bool impl = is_impl_key(key);
  for (const auto& v : values) {
    CompareRun::Spec spec{value_label(key, v), variant_overrides(overrides(), key, v), v};
    try {
      const sim::Scenario sc =
          sim::load_scenario_text(yaml_, file_.toStdString(), base_dir_, spec.overrides);
      if (impl) {
        const YAML::Node section =
            lookup_node(YAML::Load(sc.resolved_yaml), key.substr(0, key.rfind(".impl")));
        std::string params;
        if (section.IsMap()) {
          for (const auto& kv : section) {
            if (kv.first.Scalar() == "impl" || !kv.second.IsScalar()) continue;
            const std::string param = key.substr(0, key.rfind(".impl")) + "." + kv.first.Scalar();
            params += (params.empty() ? "" : ", ") + inline_label(param) + " " +
                      quantity(param, kv.second.Scalar());
          }
        }
        if (!params.empty()) spec.label += " (" + params + ")";
      }
    } catch (const sim::InputError& e) {
      refused.emplace_back(spec.label, panelWords(e));
      continue;
    } catch (const std::exception& e) {
      refused.emplace_back(spec.label, e.what());
      continue;
    }
    specs.push_back(std::move(spec));
  }
  return specs;
}

bool MainWindow::runCompare(const std::string& key_in, const std::vector<std::string>& values) {
  if (sweep_.running() || compare_.running()) return false;
  const std::string load = loadKey();
  if (load.empty()) {
    showError("this workload has no arrival rate or users to sweep");
    return false;
  }
  if (values.size() < 2 || values.size() > 6) {
    showError("Compare: give two to six values, separated by commas");
    return false;
  }
  std::string key;
  try {
    key = sim::config::canonical_key(key_in, "Compare parameter");
  } catch (const std::exception& e) {
    showError(QString::fromStdString(e.what()));
    return false;
  }
  if (key == load) {
    showError("Compare: the load itself is the chart's x axis; choose another parameter");
    return false;
  }
  std::vector<std::pair<std::string, std::string>> refused;
  const std::vector<CompareRun::Spec> specs = compareSpecs(key, values, refused);
  if (specs.empty()) {
    showError(QString::fromStdString("Compare: every value is refused: " + refused[0].first + ": " +
                                     refused[0].second));
    return false;
  }
  rerun_timer_->stop();
  setCompareBox(key, values);  // what runs is what the Compare box says, however it was asked
  compare_key_used_ = key;
  compare_values_used_ = values;
  compare_refused_ = refused;
  sweep_.reset();  // the chart shows the comparison now (pins stay)
  stale_ = false;
  bisect_->clear();
  compare_.start(yaml_, base_dir_, key, specs, load, baseLoad(), loadFactors());
  progress_->setRange(0, static_cast<int>(specs.size() * loadFactors().size()) * kProgressSteps);
  progress_->setValue(0);
  run_->setEnabled(false);
  compare_run_->setEnabled(false);
  cancel_->setEnabled(true);
  status_->setText(
      QString("Comparing %1 values of %2 on background threads…%3")
          .arg(specs.size())
          .arg(QString::fromStdString(inline_label(key)))
          .arg(refused.empty()
                   ? QString()
                   : QString(" (%1 refused: see the capacity table)").arg(refused.size())));
  last_error_.clear();
  updateViews();
  return true;
}

bool MainWindow::setMetric(const QString& name) {
  const int i = metric_->findText(name);
  if (i < 0) return false;
  if (i != metric_->currentIndex()) studyChanged();
  metric_->setCurrentIndex(i);
  redrawLatency();
  return true;
}

void MainWindow::redrawCompare(charts::LineChartSpec* spec) {
  const CompareMetric* m = find_compare_metric(metric_->currentText());
  if (!m) m = &compare_metrics().front();
  // "by Context policy": the field's label, else the declaration's.
  std::string by = key_label(compare_.key());
  for (const auto& f : fields_) {
    if (f.key == compare_.key()) by = f.label;
  }
  // The title names what the curves differ in, not the panel's value of it (a GPU comparison
  // does not say "on H100").
  std::string title = scenarioTitle();
  if (compare_.key().find(".gpu") != std::string::npos ||
      compare_.key().find(".model") != std::string::npos) {
    title = scenario_.config.name;
    if (compare_.key().find(".gpu") != std::string::npos && !scenario_.pools.empty())
      title += " — " + scenario_.pools[std::min(pool_, scenario_.pools.size() - 1)].model.name;
    if (compare_.key().find(".model") != std::string::npos && !scenario_.pools.empty())
      title += " — on " + scenario_.pools[std::min(pool_, scenario_.pools.size() - 1)].gpu.name;
  }
  spec->title = m->name.toStdString() + " by " + by + ": " + title;
  if (stale_) spec->title += " (stale: rerun to update)";
  spec->y_label = m->axis_label().toStdString();
  spec->log_y = m->latency;
  if (m->latency) {
    spec->y_limit = slo_s_;
  } else {
    spec->y_limit.reset();  // no SLO line on a share of the requests
  }
  spec->series.clear();
  spec->markers.clear();
  charts::Series refused;
  refused.name = "≥ 1% of requests rejected or timed out";
  for (const auto& v : compare_.variants()) {
    charts::Series s;
    s.name = v.label;
    for (const auto& p : v.sweep->points()) {  // in load order (LoadSweep's factors ascend)
      if (!p.done || !p.ok) continue;
      const double y = m->get(p.summary);
      if (!std::isfinite(y)) continue;
      s.x.push_back(p.load);
      s.y.push_back(y);
      if (refused_percent(p.summary) >= 1.0) {
        refused.x.push_back(p.load);
        refused.y.push_back(y);
      }
    }
    spec->series.push_back(std::move(s));
  }
  if (!refused.x.empty()) spec->markers.push_back(std::move(refused));
  // Where each curve crosses the SLO: its capacity, on the SLO line (when the chart shows the
  // latency the capacity is judged on).
  if (m->latency) {
    charts::Series crossings;
    crossings.name = "capacity at the SLO";
    crossings.crossing = true;
    for (std::size_t i = 0; i < compare_.variants().size(); ++i) {
      const CapacityEstimate c = variantCapacity(i);
      if (!c.known || c.below || c.beyond || c.limited_by != "latency") continue;
      crossings.x.push_back(c.value);
      crossings.y.push_back(slo_s_);
    }
    if (!crossings.x.empty()) spec->markers.push_back(std::move(crossings));
  }
}

const CompareMetric& MainWindow::latencyMetric() const {
  const CompareMetric* chosen = find_compare_metric(metric_->currentText());
  return chosen && chosen->latency ? *chosen : *find_compare_metric("TTFT p99");
}

std::string MainWindow::capacitySlo() const {
  // The compared latency as --slo names it: "TTFT p99" -> ttft_p99, "Queue time p50" -> queue_p50.
  std::string name = latencyMetric().name.toLower().toStdString();
  if (name.rfind("queue time", 0) == 0) name = "queue" + name.substr(10);
  std::replace(name.begin(), name.end(), ' ', '_');
  return name + "=" + sim::config::format_double(slo_s_) +
         "s,refused_rate=" + sim::config::format_double(reject_pct_) + "%";
}

void MainWindow::refreshBisection() {
  if (compare_.variants().empty() || compare_.running() || sweep_.running()) return;
  if (bisect_->slo() == capacitySlo() && bisect_->key() == loadKey()) return;
  std::vector<std::vector<std::string>> sets;
  for (const auto& v : compare_.variants()) sets.push_back(v.overrides);
  bisect_->start(scenarioSource(), std::move(sets), capacitySlo(), loadKey());
}

const CapacitySearch::Answer* MainWindow::variantBisected(std::size_t i) const {
  if (bisect_->slo() != capacitySlo() || i >= bisect_->answers().size()) return nullptr;
  const auto& a = bisect_->answers()[i];
  return a.done ? &a : nullptr;
}

CapacityEstimate MainWindow::variantCapacity(std::size_t i) const {
  CapacityEstimate c = estimate_capacity(compare_.variants().at(i).sweep->points(), latencyMetric(),
                                         slo_s_, reject_pct_);
  // The bisection's answer, once it has one for this SLO: kvfleet capacity's own number. Until
  // then the estimate read between the grid's points.
  const CapacitySearch::Answer* b = variantBisected(i);
  if (!b) return c;
  if (!b->error.empty()) {
    c.searched = "search failed: " + b->error;
    return c;
  }
  const sim::CapacityResult& z = b->result;
  c.known = c.bisected = true;
  if (!z.not_met.empty()) {
    c.below = true;
    c.beyond = false;
    c.searched = "none: " + z.not_met;
  } else {
    c.below = false;
    c.beyond = !z.limited_by.empty();
    c.value = z.mean;
    if (c.beyond) c.limited_by = z.limited_by;
  }
  return c;
}

// The expected error of the cost model that priced the steps (docs/validation.md): the panel's
// first pool (a comparison of cost models or models is judged by the panel's).
QString MainWindow::expectedErrorText() const {
  if (scenario_.config.pools.empty()) return "—";
  const sim::ExpectedError e = sim::expected_error(scenario_.config.pools[0].cost_model.impl,
                                                   scenario_.pools[0].model.moe());
  return e.runs > 0 ? QString("TTFT ±%1%, TPOT ±%2% (%3, %4 validated runs)")
                          .arg(100 * e.ttft, 0, 'f', 1)
                          .arg(100 * e.tpot, 0, 'f', 1)
                          .arg(QString::fromStdString(e.cost_model))
                          .arg(e.runs)
                    : QString("no validated runs (%1)").arg(QString::fromStdString(e.cost_model));
}

// Row r of the capacity table: variant r's capacity in words, and the numbers behind them.
void MainWindow::fillCapacityRow(std::size_t r, double gpus, const QString& expected) {
  CapacityEstimate c = variantCapacity(r);
  auto num = [](double x) { return QString::number(x, 'g', 4); };
  QString cap = "—", between = "—", per_gpu = "—", cost = "—";
  const QString searched = QString::fromStdString(c.searched);
  QString tip;
  if (c.bisected)
    tip = QString::fromStdString(bisect_->command(
        r, file_.isEmpty() ? std::string("scenarios/default.yaml") : file_.toStdString()));
  if (c.known) {
    if (c.below) {
      cap = searched.isEmpty() ? "below " + num(c.hi) : c.bisected ? "none" : searched;
    } else if (c.beyond) {
      cap = "at least " + num(c.value);
      per_gpu = "at least " + num(c.value / gpus);
    } else {
      cap = c.bisected ? num(c.value)
                       : "≈ " + num(c.value) + (bisect_->running() ? " (bisecting…)" : "");
      between = num(c.lo) + " – " + num(c.hi);
      per_gpu = num(c.value / gpus);
    }
    if (!c.bisected && c.beyond && bisect_->running()) cap += " (bisecting…)";
    if (std::isfinite(c.cost_per_m_tokens) && c.cost_per_m_tokens > 0)
      cost = num(c.cost_per_m_tokens);
  }
  const QString cells[] = {
      QString::fromStdString(compare_.variants()[r].label),
      cap,
      between,
      per_gpu,
      cost,
      !c.below && !searched.isEmpty() ? searched : QString::fromStdString(c.limited_by),
      expected};
  for (int col = 0; col < static_cast<int>(std::size(cells)); ++col) {
    capacity_table_->setItem(static_cast<int>(r), col, new QTableWidgetItem(cells[col]));
  }
  if (!tip.isEmpty()) capacity_table_->item(static_cast<int>(r), 1)->setToolTip(tip);
  // The numbers behind the text, for a numeric CSV (views.h, export_table_csv).
  auto item = [&](int col) { return capacity_table_->item(static_cast<int>(r), col); };
  if (c.known) {
    item(1)->setData(kBoundRole, c.below ? "below" : c.beyond ? "at least" : "");
    item(1)->setData(kNumberRole, c.below ? c.hi : c.value);
    if (!c.below && !c.beyond) {
      item(2)->setData(kNumberRole, c.lo);
      item(2)->setData(kHighRole, c.hi);
    }
    if (!c.below) {
      item(3)->setData(kNumberRole, c.value / gpus);
      item(3)->setData(kBoundRole, c.beyond ? "at least" : "");
    }
    if (std::isfinite(c.cost_per_m_tokens) && c.cost_per_m_tokens > 0)
      item(4)->setData(kNumberRole, c.cost_per_m_tokens);
  }
}

void MainWindow::updateCapacityTable() {
  capacity_table_->clear();
  capacity_table_->setRowCount(0);
  if (compare_.variants().empty()) {
    capacity_table_->setVisible(false);
    return;
  }
  capacity_table_->setVisible(true);
  const CompareMetric& lat = latencyMetric();
  const bool users = loadKey() == "workload.users";
  double gpus = 0;  // the fleet's: replicas × data-parallel ranks × GPUs per rank, every pool
  for (const auto& pc : scenario_.config.pools)
    gpus += static_cast<double>(pc.replicas) * pc.data_parallel * pc.gpus_per_replica();
  gpus = std::max(gpus, 1.0);
  const QStringList headers = {
      "variant",
      QString("capacity at %1 ≤ %2 s, rejected ≤ %3%").arg(lat.name).arg(slo_s_).arg(reject_pct_),
      "between loads",
      users ? "users per GPU" : "requests/s per GPU",
      "$ per million output tokens",
      "limited by",
      "cost model's expected error"};
  capacity_table_->setColumnCount(headers.size());
  capacity_table_->setHorizontalHeaderLabels(headers);
  capacity_table_->setRowCount(
      static_cast<int>(compare_.variants().size() + compare_refused_.size()));
  // Refused variants: their own rows, after those that ran.
  for (std::size_t i = 0; i < compare_refused_.size(); ++i) {
    const int row = static_cast<int>(compare_.variants().size() + i);
    capacity_table_->setItem(
        row, 0, new QTableWidgetItem(QString::fromStdString(compare_refused_[i].first)));
    capacity_table_->setItem(row, 1, new QTableWidgetItem("refused"));
    capacity_table_->setItem(
        row, 5, new QTableWidgetItem(QString::fromStdString(compare_refused_[i].second)));
  }
  const QString expected = expectedErrorText();
  for (std::size_t r = 0; r < compare_.variants().size(); ++r) fillCapacityRow(r, gpus, expected);
  capacity_table_->resizeColumnsToContents();
}

}  // namespace kvfleet::gui
