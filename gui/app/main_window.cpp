#include "gui/app/main_window.h"
#include "gui/app/words.h"

#include "gui/app/number_field.h"

#include "gui/app/sizing_view.h"
#include "gui/app/yaml_lookup.h"

#include "sim/metrics/fidelity.h"

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

#include "sim/core/error.h"
#include "sim/fleet/router.h"
#include "sim/io/text_file.h"
#include "sim/workload/context_policy.h"

namespace kvfleet::gui {

namespace {

const std::vector<double> kFactors = {0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0};

}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle("kvfleet — built-in default scenario[*]");
  yaml_ = sim::builtin_default_scenario();
  base_dir_ = ".";
  file_ = "<built-in default.yaml>";
  scenario_ = sim::load_scenario_text(yaml_, file_.toStdString(), base_dir_, {});
  buildToolbar();  // layout.cpp: the widgets, then their connections
  auto* split = new QSplitter(this);
  split->addWidget(buildSidePanel());
  split->addWidget(buildTabs());
  split->setStretchFactor(1, 1);
  setCentralWidget(split);
  status_ = new QLabel;
  statusBar()->addWidget(status_, 1);
  connectRuns();
  buildPanel();
  redrawLatency();
  redrawMemory();
  resize(1280, 800);
  study_changed_ = false;
}

void MainWindow::studyChanged() {
  study_changed_ = true;
  setWindowModified(true);
}

bool MainWindow::openScenario(const QString& path) {
  std::ifstream in(path.toStdString());
  if (!in) {
    showError("cannot open " + path);
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    const std::string dir = std::filesystem::path(path.toStdString()).parent_path().string();
    sim::Scenario sc =
        sim::load_scenario_text(ss.str(), path.toStdString(), dir.empty() ? "." : dir, {});
    yaml_ = ss.str();
    base_dir_ = dir.empty() ? "." : dir;
    file_ = path;
    scenario_ = std::move(sc);
  } catch (const std::exception& e) {
    showError(QString::fromStdString(e.what()));
    return false;
  }
  last_error_.clear();
  // Nothing of the previous scenario stays on screen: its runs, comparisons, pins and tables go.
  rerun_timer_->stop();
  sweep_.reset();
  compare_.reset();
  bisect_->clear();
  compare_refused_.clear();
  pins_.clear();
  refreshPinList();
  edits_.clear();
  stale_ = false;
  pool_ = 0;
  buildPanel();
  updateViews();
  redrawMemory();
  run_->setEnabled(true);
  cancel_->setEnabled(false);
  progress_->setValue(0);
  setWindowTitle("kvfleet — " + path + "[*]");
  rememberFile(path);
  // The study saved with the file: its SLO, comparison and pins.
  study_has_compare_ = false;
  try {
    bool found = false;
    const Study st = read_study(yaml_, &found);
    if (found) applyStudy(st);
  } catch (const std::exception& e) {
    showError(path + ": " + QString::fromStdString(e.what()) +
              " (the scenario is open; the study is not)");
  }
  study_changed_ = false;  // what the file says
  setWindowModified(false);
  return true;
}

bool MainWindow::openAndRun(const QString& path) {
  if (!openScenario(path)) return false;
  if (!auto_rerun_->isChecked()) return true;
  if (study_has_compare_) {
    const auto [key, values] = compareBox();  // the saved study's comparison
    if (runCompare(key, values)) return true;
  }
  // The study's pins are settings without curves: rerun beside the current settings, they get
  // their curves back (curvesForPins).
  bool unrun = false;
  for (const auto& p : pins_) unrun |= p.visible && p.points.empty();
  if (unrun && comparePins()) return true;
  runSweep();
  return true;
}

QString MainWindow::loadLabel() const {
  const std::string key = loadKey();
  if (key == "workload.users") return "Users";
  if (key == "workload.session_arrival.rate_per_s") return "Session arrival rate (sessions/s)";
  if (key.empty()) return "Load";
  return "Arrival rate (requests/s)";
}

std::string MainWindow::scenarioTitle() const {
  const auto& c = scenario_.config;
  std::string t = c.name;
  if (!scenario_.pools.empty()) {
    const std::size_t i = std::min(pool_, scenario_.pools.size() - 1);
    const auto& p = scenario_.pools[i];
    t += " — " + p.model.name + " on " + p.gpu.name;
    if (scenario_.pools.size() > 1) t += ", pool " + c.pools.at(i).name;
  }
  return t;
}

std::string MainWindow::loadKey() const {
  const YAML::Node root = YAML::Load(scenario_.resolved_yaml);
  // Closed loop (users > 0) sweeps the users; open loop the arrival rate.
  const std::string users = lookup(root, "workload.users");
  if (!users.empty() && users != "0") return "workload.users";
  for (const char* k : {"workload.arrival.rate_per_s", "workload.session_arrival.rate_per_s"}) {
    if (!lookup(root, k).empty()) return k;
  }
  return "";
}

void MainWindow::updateViews() {
  redrawLatency();
  updateRunViews();
}

void MainWindow::updateRunViews() {
  // The panel's load sweep, else the comparison's runs: every variant's points, each named by
  // its variant (the picker of Run over time and Fleet, the first column of Points).
  std::vector<LoadPoint> pts = sweep_.points();
  std::vector<std::string> names;
  if (pts.empty()) {
    for (const auto& v : compare_.variants()) {
      for (auto& p : v.sweep->points()) {
        pts.push_back(std::move(p));
        names.push_back(v.label);
      }
    }
  }
  timeline_->setPoints(pts, names);
  fleet_->setPoints(pts, names);
  points_table_->setPoints(loadLabel().toStdString(), pts, names);
  // Empty views say why; the comparison's say whose runs they show.
  const QString hint = !names.empty()
                           ? "The comparison's runs: each variant at each load (" +
                                 QString::number(compare_.variants().size()) + " variants)."
                       : !pts.empty() ? QString()
                                      : "Nothing has run yet: Run load sweep (Ctrl+R) fills this "
                                        "view.";
  timeline_->setHint(hint);
  fleet_->setHint(hint);
  points_table_->setHint(hint);
}

void MainWindow::setSlo(double seconds) {
  if (seconds != slo_s_) studyChanged();
  slo_s_ = seconds;
  if (slo_->value() != seconds) slo_->setValue(seconds);
  redrawLatency();
  refreshBisection();
}

sim::ScenarioSource MainWindow::scenarioSource() const {
  sim::ScenarioSource s;
  s.text = yaml_;
  s.name = file_.isEmpty() ? std::string("<built-in default.yaml>") : file_.toStdString();
  s.base_dir = base_dir_;
  return s;
}

void MainWindow::showProgress() {
  if (sweep_.running()) {
    progress_->setValue(static_cast<int>(sweep_.doneFraction() * kProgressSteps));
    status_->setText("Load sweep: " + sweep_.describeProgress());
  } else if (compare_.running()) {
    double done = 0;
    QStringList parts;
    for (const auto& v : compare_.variants()) {
      done += v.sweep->doneFraction();
      parts << QString::fromStdString(v.label) + ": " + v.sweep->describeProgress();
    }
    progress_->setValue(static_cast<int>(done * kProgressSteps));
    status_->setText("Comparison: " + parts.join(" | "));
  }
}

void MainWindow::setMaxRefused(double percent) {
  if (percent != reject_pct_) studyChanged();
  reject_pct_ = percent;
  if (reject_->value() != percent) reject_->setValue(percent);
  redrawLatency();
  refreshBisection();
}

bool MainWindow::openSweepFile(const QString& path) {
  try {
    sweep_file_->open(path);
  } catch (const std::exception& e) {
    showError(QString::fromStdString(e.what()));
    return false;
  }
  tabs_->setCurrentWidget(sweep_file_);
  status_->setText(QString("%1: %2 points").arg(path).arg(sweep_file_->results().completed()));
  return true;
}

QString MainWindow::exportCurrentChart(const QString& path) {
  QWidget* w = tabs_->currentWidget();
  QChartView* view = qobject_cast<QChartView*>(w);
  if (!view) {
    const auto views = w->findChildren<QChartView*>();
    if (!views.isEmpty()) view = views.front();
  }
  if (!view) return "this view has no chart";
  return export_chart_view(view, path);
}

QString MainWindow::exportCurrentTable(const QString& path) {
  const auto tables = tabs_->currentWidget()->findChildren<QTableWidget*>();
  if (tables.isEmpty()) return "this view has no table (the Points and Sweep file views do)";
  return export_table_csv(tables.front(), path);
}

double MainWindow::baseLoad() const {
  const std::string v = lookup(YAML::Load(scenario_.resolved_yaml), loadKey());
  return v.empty() ? 0 : std::stod(v);
}

void MainWindow::runSweep() {
  if (sweep_.running()) return;
  const std::string key = loadKey();
  if (key.empty()) {
    showError("this workload has no arrival rate to sweep");
    return;
  }
  progress_->setValue(0);
  run_->setEnabled(false);
  cancel_->setEnabled(true);
  status_->setText("Running 8 loads on background threads…");
  stale_ = false;
  const std::vector<double> factors = loadFactors();
  rerun_timer_->stop();
  compare_.reset();  // the chart shows this sweep now
  bisect_->clear();
  compare_refused_.clear();
  run_overrides_ = overrides();
  run_resolved_ = scenario_.resolved_yaml;
  progress_->setRange(0, static_cast<int>(factors.size()) * kProgressSteps);
  sweep_.start(yaml_, base_dir_, overrides(), key, baseLoad(), factors);
  redrawLatency();
}

void MainWindow::setAutoRerun(bool on) {
  auto_rerun_->setChecked(on);
  if (!on) rerun_timer_->stop();
}

bool MainWindow::rerunPending() const { return rerun_timer_->isActive(); }

std::string MainWindow::panelWords(const sim::InputError& e) const {
  // Not the command line's ("--set key=value: ..."): the field's label, the problem, and the key
  // for the curious.
  std::string label = e.key();
  for (const auto& f : fields_) {
    if (f.key == e.key()) label = f.label;
  }
  if (label.empty()) return e.problem();
  return label + ": " + e.problem() +
         (label != e.key() && !e.key().empty() ? " (key " + e.key() + ")" : "");
}

std::pair<std::string, std::vector<std::string>> MainWindow::compareBox() const {
  std::string key = compare_key_->currentData().toString().toStdString();
  if (key.empty() ||
      compare_key_->currentText() != compare_key_->itemText(compare_key_->currentIndex()))
    key = compare_key_->currentText().toStdString();  // typed
  std::vector<std::string> values;
  for (const auto& v : compare_values_->text().split(',', Qt::SkipEmptyParts)) {
    if (!v.trimmed().isEmpty()) values.push_back(v.trimmed().toStdString());
  }
  return {key, values};
}

void MainWindow::rerunNow() {
  if (sweep_.running() || compare_.running()) {  // stop the old run, then start again
    sweep_.cancel();
    compare_.cancel();
    rerun_timer_->start();
    return;
  }
  if (!compare_.variants().empty() && !compare_key_used_.empty()) {
    // The comparison the Compare box asks for now (edited since the last run or not); the last
    // one run when the box holds no comparison.
    const auto [key, values] = compareBox();
    if (!key.empty() && values.size() >= 2)
      runCompare(key, values);
    else
      runCompare(compare_key_used_, compare_values_used_);
  } else {
    runSweep();
  }
}

QString MainWindow::scenarioFolder() const {
  const std::filesystem::path opened = std::filesystem::path(file_.toStdString()).parent_path();
  std::error_code ec;
  if (!opened.empty() && std::filesystem::is_directory(opened, ec)) {
    return QString::fromStdString(opened.string());
  }
  if (std::filesystem::is_directory("scenarios", ec)) return "scenarios";
#ifdef KVFLEET_SCENARIOS_DIR
  if (std::filesystem::is_directory(KVFLEET_SCENARIOS_DIR, ec)) return KVFLEET_SCENARIOS_DIR;
#endif
  return {};
}

void MainWindow::cancelSweep() {
  rerun_timer_->stop();
  sweep_.cancel();
  compare_.cancel();
}

std::vector<double> MainWindow::loadFactors() const {
  std::vector<double> factors = kFactors;
  if (loadKey() == "workload.users") {
    // Whole users: factors that land on integers for this base.
    for (double& f : factors) f = std::max(1.0, std::round(f * baseLoad())) / baseLoad();
  }
  return factors;
}

void MainWindow::redrawLatency() {
  charts::LineChartSpec spec;
  spec.title = "Latency against load: " + scenarioTitle();
  if (stale_) spec.title += " (stale: rerun to update)";
  spec.x_label = loadLabel().toStdString();
  spec.y_label = "Latency (s)";
  spec.log_y = true;
  spec.y_limit = slo_s_;
  spec.y_limit_label = "SLO";
  const auto pts = sweep_.points();
  struct Metric {
    const char* name;
    double sim::LatencyStats::*stat;
    sim::LatencyStats sim::Summary::*which;
  };
  const Metric metrics[] = {{"TTFT p50", &sim::LatencyStats::p50, &sim::Summary::ttft},
                            {"TTFT p99", &sim::LatencyStats::p99, &sim::Summary::ttft},
                            {"TPOT p99", &sim::LatencyStats::p99, &sim::Summary::tpot},
                            {"E2E p99", &sim::LatencyStats::p99, &sim::Summary::e2e}};
  for (const auto& m : metrics) {
    charts::Series s;
    s.name = m.name;
    for (const auto& p : pts) {
      if (!p.done || !p.ok) continue;
      s.x.push_back(p.load);
      s.y.push_back((p.summary.*(m.which)).*(m.stat));
    }
    spec.series.push_back(std::move(s));
  }
  // Pins: one dashed curve each, of the compared quantity when it is a latency (else TTFT p99).
  const CompareMetric& pin_metric = latencyMetric();
  for (std::size_t i = 0; i < pins_.size(); ++i) {
    if (!pins_[i].visible) continue;
    charts::Series s;
    s.name = "pin: " + pinLabel(i) + " (" + pin_metric.name.toStdString() + ")";
    s.dashed = true;
    for (const auto& p : pins_[i].points) {  // in load order
      if (!p.done || !p.ok) continue;
      s.x.push_back(p.load);
      s.y.push_back(pin_metric.get(p.summary));
    }
    spec.series.push_back(std::move(s));
  }
  // Refused work on the chart: loads where at least 1% of the requests were rejected, marked on
  // the TTFT p99 curve.
  charts::Series refused;
  refused.name = "≥ 1% of requests rejected or timed out";
  for (const auto& p : pts) {
    if (!p.done || !p.ok || refused_percent(p.summary) < 1.0) continue;
    refused.x.push_back(p.load);
    refused.y.push_back(p.summary.ttft.p99);
  }
  if (!refused.x.empty()) spec.markers.push_back(std::move(refused));
  spec.x_mark = baseLoad();
  spec.x_mark_label = "scenario's load";
  if (!compare_.variants().empty()) redrawCompare(&spec);
  updateCapacityTable();
  latency_spec_ = spec;
  QChart* old = latency_view_->chart();
  latency_view_->setChart(charts::make_line_chart(spec));
  delete old;
}

void MainWindow::redrawMemory() {
  const auto& mem = scenario_.pools.at(0).memory;
  const double gib = 1024.0 * 1024 * 1024;
  charts::StackedBarSpec spec;
  spec.title =
      "Memory of one GPU: " + scenario_.pools[0].gpu.name + ", " + scenario_.pools[0].model.name;
  spec.value_label = "GiB";
  spec.categories = {"GPU"};
  spec.segments = {{"weights", {mem.weights_bytes / gib}},
                   {"activations (peak)", {mem.activation_peak_bytes / gib}},
                   {"runtime overhead", {mem.runtime_overhead_bytes / gib}},
                   {"KV cache", {mem.kv_pool_bytes / gib}},
                   {"margin", {(mem.device_bytes - mem.usable_bytes) / gib}}};
  QChart* old = memory_view_->chart();
  memory_view_->setChart(charts::make_stacked_bar_chart(spec));
  delete old;
  const int block = scenario_.config.pools.at(0).engine.block_size;
  const long long per_seq_blocks = (context_len_->value() + block - 1) / block;
  fit_label_->setText(
      QString("  %1 sequences of this length fit in the KV cache (%2 blocks of %3 tokens)")
          .arg(per_seq_blocks ? mem.num_blocks / per_seq_blocks : 0)
          .arg(mem.num_blocks)
          .arg(block));
}

void MainWindow::showError(const QString& message) {
  last_error_ = message;
  status_->setText("Error: " + message);
  if (isVisible() && !qEnvironmentVariableIsSet("KVFLEET_GUI_NO_DIALOGS")) {
    QMessageBox::warning(this, "kvfleet", message);
  }
}

}  // namespace kvfleet::gui
