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

  auto* toolbar = addToolBar("Scenario");
  // Every action has a keyboard shortcut (shown in its tooltip).
  auto action = [&](const QString& text, const QKeySequence& keys, auto&& slot) {
    QAction* a = toolbar->addAction(text, this, slot);
    a->setShortcut(keys);
    a->setToolTip(text + " (" + keys.toString(QKeySequence::NativeText) + ")");
    return a;
  };
  action("Open…", QKeySequence::Open, [this] {
    if (!maybeSave()) return;
    const QString f = QFileDialog::getOpenFileName(this, "Open scenario", scenarioFolder(),
                                                   "Scenarios (*.yaml *.yml)");
    if (!f.isEmpty()) openAndRun(f);
  });
  auto* recent = new QToolButton;
  recent->setText("Recent");
  recent->setPopupMode(QToolButton::InstantPopup);
  recent_menu_ = new QMenu(recent);
  recent->setMenu(recent_menu_);
  toolbar->addWidget(recent);
  refreshRecentMenu();
  action("Save", QKeySequence::Save, [this] { save(); });
  action("Save as…", QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S), [this] {
    const QString f = QFileDialog::getSaveFileName(this, "Save scenario", {}, "Scenarios (*.yaml)");
    if (!f.isEmpty()) saveScenario(f);
  });
  action("Pin run", QKeySequence(Qt::CTRL | Qt::Key_P), [this] { pinRun(); });
  action("Open sweep results…", QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O), [this] {
    const QString f = QFileDialog::getOpenFileName(this, "Open sweep results", {}, "HDF5 (*.h5)");
    if (!f.isEmpty()) openSweepFile(f);
  });
  action("Export chart…", QKeySequence(Qt::CTRL | Qt::Key_E), [this] {
    const QString f =
        QFileDialog::getSaveFileName(this, "Export chart", {}, "Images (*.png *.svg)");
    if (!f.isEmpty()) {
      const QString err = exportCurrentChart(f);
      if (!err.isEmpty()) showError(err);
    }
  });
  action("Export table…", QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E), [this] {
    const QString f = QFileDialog::getSaveFileName(this, "Export table", {}, "CSV (*.csv)");
    if (!f.isEmpty()) {
      const QString err = exportCurrentTable(f);
      if (!err.isEmpty()) showError(err);
    }
  });

  auto* split = new QSplitter(this);
  auto* panel = new QWidget;
  auto* pl = new QVBoxLayout(panel);
  auto* box = new QGroupBox("Scenario");
  form_ = new QFormLayout(box);
  pl->addWidget(box);
  auto* slorow = new QFormLayout;
  auto* slo = new NumberField("SLO line", 0.001, 3600, slo_s_, 3, " s",
                              "the latency target drawn on the latency chart");
  slo->setObjectName("slo");
  slo->on_refused = [this](const QString& m) { showError(m); };
  slo_ = slo;
  slorow->addRow("SLO line", slo_);
  auto* reject = new NumberField(
      "Refused at most", 0, 99, reject_pct_, 2, " %",
      "the share of requests the capacity table allows to be rejected or to time out");
  reject->setObjectName("refused");
  reject->on_refused = [this](const QString& m) { showError(m); };
  reject_ = reject;
  slorow->addRow("Refused at most", reject_);
  pl->addLayout(slorow);
  auto* runrow = new QHBoxLayout;
  run_ = new QPushButton("Run load sweep");
  run_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
  run_->setToolTip("run the load sweep (Ctrl+R)");
  cancel_ = new QPushButton("Cancel");
  cancel_->setShortcut(QKeySequence(Qt::Key_Escape));
  cancel_->setToolTip("stop the sweep (Esc)");
  cancel_->setEnabled(false);
  runrow->addWidget(run_);
  runrow->addWidget(cancel_);
  pl->addLayout(runrow);
  progress_ = new QProgressBar;
  progress_->setRange(0, static_cast<int>(kFactors.size()) * kProgressSteps);
  progress_->setValue(0);
  pl->addWidget(progress_);
  // Compare mode: one key, two to six values, one curve family each.
  auto* cbox = new QGroupBox("Compare");
  auto* cform = new QFormLayout(cbox);
  compare_key_ = new QComboBox;
  compare_key_->setEditable(true);  // any declared key may be typed
  compare_key_->setToolTip("the scenario key that differs between the curves (as for --set)");
  cform->addRow("Parameter", compare_key_);
  compare_values_ = new QLineEdit;
  compare_values_->setPlaceholderText("e.g. full, window, summarize  or  32, 128");
  compare_values_->setToolTip("two to six values, separated by commas");
  cform->addRow("Values", compare_values_);
  // The Compare box is part of the study Save keeps: the user's edits (not the window's own).
  connect(compare_values_, &QLineEdit::textEdited, this, [this] { studyChanged(); });
  connect(compare_key_, &QComboBox::activated, this, [this] { studyChanged(); });
  compare_run_ = new QPushButton("Run comparison");
  cform->addRow(compare_run_);
  pl->addWidget(cbox);
  auto_rerun_ = new QCheckBox("Rerun after a change");
  auto_rerun_->setChecked(true);
  auto_rerun_->setToolTip(
      "a changed field reruns the sweep (or the comparison) after a short "
      "pause; untick for heavy scenarios");
  pl->addWidget(auto_rerun_);
  rerun_timer_ = new QTimer(this);
  rerun_timer_->setSingleShot(true);
  rerun_timer_->setInterval(700);
  connect(rerun_timer_, &QTimer::timeout, this, [this] { rerunNow(); });
  pl->addStretch(1);
  auto* scroll = new QScrollArea;
  scroll->setWidget(panel);
  scroll->setWidgetResizable(true);
  scroll->setMinimumWidth(450);
  split->addWidget(scroll);

  auto* tabs = new QTabWidget;
  tabs_ = tabs;
  latency_view_ = new QChartView;
  latency_view_->setRenderHint(QPainter::Antialiasing);
  auto* lat = new QWidget;
  auto* latl = new QVBoxLayout(lat);
  auto* metricrow = new QHBoxLayout;
  metricrow->addWidget(new QLabel("Compared quantity:"));
  metric_ = new QComboBox;
  for (const auto& m : compare_metrics()) metric_->addItem(m.name);
  metric_->setToolTip(
      "what every compared curve shows; the capacity table uses it when it is a "
      "latency (else TTFT p99)");
  metricrow->addWidget(metric_);
  metricrow->addStretch(1);
  latl->addLayout(metricrow);
  latl->addWidget(latency_view_, 1);
  capacity_table_ = new QTableWidget;
  capacity_table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  capacity_table_->setMaximumHeight(180);
  auto* below = new QHBoxLayout;
  below->addWidget(capacity_table_, 3);
  auto* pinbox = new QGroupBox("Pinned runs");
  auto* pinl = new QVBoxLayout(pinbox);
  pin_list_ = new QListWidget;
  pin_list_->setMaximumHeight(120);
  pinl->addWidget(pin_list_);
  auto* pinbuttons = new QHBoxLayout;
  auto* pin_remove = new QPushButton("Remove");
  auto* pin_compare = new QPushButton("Compare pins");
  pin_compare->setToolTip("rerun the visible pins' settings and the current ones side by side");
  pinbuttons->addWidget(pin_remove);
  pinbuttons->addWidget(pin_compare);
  pinl->addLayout(pinbuttons);
  pinbox->setMaximumHeight(190);
  below->addWidget(pinbox, 2);
  latl->addLayout(below);
  connect(pin_list_, &QListWidget::itemChanged, this, [this](QListWidgetItem* item) {
    const auto i = static_cast<std::size_t>(pin_list_->row(item));
    if (i >= pins_.size()) return;
    const bool visible = item->checkState() == Qt::Checked;
    std::string text = item->text().toStdString();
    const std::string unrun = kUnrunPin;
    if (text.size() > unrun.size() &&
        text.compare(text.size() - unrun.size(), unrun.size(), unrun) == 0)
      text.resize(text.size() - unrun.size());
    if (text != pinLabel(i)) pins_[i].name = text;
    pins_[i].visible = visible;
    studyChanged();
    QMetaObject::invokeMethod(
        this, [this] { redrawLatency(); }, Qt::QueuedConnection);
  });
  connect(pin_remove, &QPushButton::clicked, this, [this] {
    const int r = pin_list_->currentRow();
    if (r >= 0) removePin(static_cast<std::size_t>(r));
  });
  connect(pin_compare, &QPushButton::clicked, this, [this] { comparePins(); });
  tabs->addTab(lat, "Latency vs load");
  timeline_ = new TimelineView;
  tabs->addTab(timeline_, "Run over time");
  auto* mem = new QWidget;
  auto* ml = new QVBoxLayout(mem);
  memory_view_ = new QChartView;
  memory_view_->setRenderHint(QPainter::Antialiasing);
  ml->addWidget(memory_view_, 1);
  auto* fitrow = new QHBoxLayout;
  fitrow->addWidget(new QLabel("Context length (tokens):"));
  context_len_ = new QSpinBox;
  context_len_->setRange(16, 1 << 20);
  context_len_->setValue(4096);
  fitrow->addWidget(context_len_);
  fit_label_ = new QLabel;
  fitrow->addWidget(fit_label_, 1);
  ml->addLayout(fitrow);
  tabs->addTab(mem, "Memory budget");
  fleet_ = new FleetView;
  tabs->addTab(fleet_, "Fleet");
  points_table_ = new PointsTable;
  tabs->addTab(points_table_, "Points");
  sweep_file_ = new SweepFileView;
  tabs->addTab(sweep_file_, "Sweep file");
  // The sizing answer: kvfleet size's search on the scenario as the panel has it.
  sizing_ = new SizingView([this] { return scenarioSource(); }, [this] { return overrides(); });
  tabs->addTab(sizing_, "Sizing");
  split->addWidget(tabs);
  split->setStretchFactor(1, 1);
  setCentralWidget(split);
  status_ = new QLabel;
  statusBar()->addWidget(status_, 1);

  connect(run_, &QPushButton::clicked, this, [this] { runSweep(); });
  connect(compare_run_, &QPushButton::clicked, this, [this] {
    const auto [key, values] = compareBox();
    runCompare(key, values);
  });
  // The user's choice is a change of the study; the window's own refills of the list are not.
  connect(metric_, &QComboBox::activated, this, [this] { studyChanged(); });
  connect(metric_, &QComboBox::currentTextChanged, this, [this](const QString&) {
    redrawLatency();
    refreshBisection();
  });
  connect(&compare_, &CompareRun::changed, this, [this] {
    int done = 0;
    for (const auto& v : compare_.variants())
      for (const auto& p : v.sweep->points()) done += p.done ? 1 : 0;
    progress_->setValue(done * kProgressSteps);
    updateViews();
  });
  connect(&compare_, &CompareRun::finished, this, [this] {
    compare_run_->setEnabled(true);
    run_->setEnabled(true);
    cancel_->setEnabled(false);
    curvesForPins();
    redrawLatency();
    status_->setText("Comparison done; capacities by bisection (kvfleet capacity's search)...");
    refreshBisection();
  });
  bisect_ = new CapacitySearch(this);
  connect(bisect_, &CapacitySearch::changed, this, [this] { redrawLatency(); });
  connect(bisect_, &CapacitySearch::finished, this, [this] {
    redrawLatency();
    if (!compare_.running() && !sweep_.running())
      status_->setText(
          "Comparison done; capacities by kvfleet capacity's search (each row's "
          "command line in its tooltip)");
  });
  connect(cancel_, &QPushButton::clicked, this, [this] { cancelSweep(); });
  // Progress within a point: the share of its requests sent (when its workload says how many)
  // moves the bar, and the status names each running point's simulated time.
  auto* poll = new QTimer(this);
  poll->setInterval(300);
  connect(poll, &QTimer::timeout, this, [this] { showProgress(); });
  poll->start();
  connect(context_len_, qOverload<int>(&QSpinBox::valueChanged), this, [this] { redrawMemory(); });
  connect(&sweep_, &LoadSweep::pointDone, this, [this](int) { updateViews(); });
  connect(slo_, qOverload<double>(&QDoubleSpinBox::valueChanged), this,
          [this](double v) { setSlo(v); });
  connect(reject_, qOverload<double>(&QDoubleSpinBox::valueChanged), this,
          [this](double v) { setMaxRefused(v); });
  connect(&sweep_, &LoadSweep::progress, this,
          [this](int done, int) { progress_->setValue(done * kProgressSteps); });
  connect(&sweep_, &LoadSweep::finished, this, [this](bool cancelled) {
    run_->setEnabled(true);
    cancel_->setEnabled(false);
    updateViews();
    status_->setText(cancelled ? "Load sweep cancelled" : "Load sweep done");
  });
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

// What the panel shows, as --set keys ("pool." stands for the pool chosen above the form); the
// label, editor (check box, list of choices or text), unit, tooltip and range come from the
// parameter declarations (gui/app/words.h).
constexpr const char* kPoolKeys[] = {
    "pool.model",
    "pool.gpu",
    "pool.replicas",
    "pool.tensor_parallel",
    "pool.pipeline_parallel",
    "pool.weight_dtype",
    "pool.engine.kv_cache_dtype",
    "pool.engine.block_size",
    "pool.engine.enable_prefix_caching",
    "pool.engine.max_num_seqs",
    "pool.engine.max_num_batched_tokens",
    "pool.engine.gpu_memory_utilization",
    "router.impl",
};

void MainWindow::buildPanel() {
  while (form_->rowCount() > 0) form_->removeRow(0);
  fields_.clear();
  const YAML::Node root = YAML::Load(scenario_.resolved_yaml);
  const std::size_t pools = root["pools"].IsSequence() ? root["pools"].size() : 1;
  if (pool_ >= pools) pool_ = 0;
  const std::string pool = "pools[" + std::to_string(pool_) + "]";
  if (pools > 1) {  // any pool can be edited
    auto* c = new QComboBox;
    for (std::size_t p = 0; p < pools; ++p)
      c->addItem(QString::fromStdString(lookup(root, "pools[" + std::to_string(p) + "].name")));
    c->setCurrentIndex(static_cast<int>(pool_));
    connect(
        c, &QComboBox::activated, this, [this](int i) { selectPool(static_cast<std::size_t>(i)); },
        Qt::QueuedConnection);
    form_->addRow(new QLabel("Pool"), c);
  }
  auto combo = [&](const std::vector<std::string>& items) {
    auto* c = new QComboBox;
    for (const auto& i : items) c->addItem(QString::fromStdString(i));
    return c;
  };
  // Models and GPUs are names: the presets and the scenario's own definitions.
  auto names = [&](const char* section, std::vector<std::string> v) {
    for (const auto& d : root[section]) v.push_back(d["name"].as<std::string>());
    return v;
  };
  std::vector<std::string> models, gpus;
  for (const auto& m : sim::model_presets()) models.push_back(m.name);
  for (const auto& g : sim::gpu_presets()) gpus.push_back(g.name);
  // `label` is the declaration's (key_label) unless the panel says what the key means here.
  auto add = [&](const std::string& key, std::string label, const char* unit_override) {
    if (label.empty()) label = key_label(key);
    const auto* row = declaration(key);
    QWidget* editor = nullptr;
    if (key.ends_with(".model")) {
      editor = combo(names("models", models));
    } else if (key.ends_with(".gpu")) {
      editor = combo(names("gpus", gpus));
    } else if (row && row->kind == "boolean") {
      editor = new QCheckBox;
    } else if (row && !row->choices.empty()) {
      editor = combo(row->choices);
    } else {
      editor = new QLineEdit;
    }
    // Unit and tooltip: the key's declaration (a component's: its section's).
    std::string unit = unit_override ? unit_override : "";
    if (row) {
      std::string tip = row->description;
      if (!row->unit.empty()) tip += " [" + row->unit + "]";
      if (!row->type.empty()) tip += "\n" + row->type;
      editor->setToolTip(QString::fromStdString(tip + "\nkey: " + key));
      if (!unit_override) unit = row->unit;
    }
    auto* l = new QLabel(QString::fromStdString(with_unit(label, unit)));
    l->setToolTip(editor->toolTip());
    form_->addRow(l, editor);
    fields_.push_back({key, label, editor});
  };
  for (const char* k : kPoolKeys) {
    std::string key = k;
    if (key.starts_with("pool.")) key = pool + key.substr(4);
    add(key, "", nullptr);
  }
  if (!lookup(root, "workload.context_policy.impl").empty()) {
    add("workload.context_policy.impl", "", nullptr);
    // The chosen policy's own parameters (window: turns; summarize: threshold, kept turns...).
    const YAML::Node cp = root["workload"]["context_policy"];
    for (auto it = cp.begin(); it != cp.end(); ++it) {
      const std::string k = it->first.as<std::string>();
      if (k == "impl" || !it->second.IsScalar()) continue;
      add("workload.context_policy." + k, "  " + key_label("workload.context_policy." + k),
          nullptr);
    }
  }
  const std::string load = loadKey();
  // The load is the sweep's ×1; requests and conversations are per point of the sweep.
  if (!load.empty()) add(load, key_label(load) + " at ×1", nullptr);
  if (!lookup(root, "workload.num_requests").empty()) {
    add("workload.num_requests", key_label("workload.num_requests") + " per point", nullptr);
  }
  if (!lookup(root, "workload.num_sessions").empty()) {
    add("workload.num_sessions", key_label("workload.num_sessions") + " per point", nullptr);
    add("workload.turns.mean", "", "turns");
  }
  refreshFields();
  // Compare: every field but the load, by its label; any other key may be typed.
  const QString previous = compare_key_->currentText();
  compare_key_->clear();
  for (const auto& f : fields_) {
    if (f.key == load) continue;
    compare_key_->addItem(QString::fromStdString(f.label), QString::fromStdString(f.key));
  }
  if (const int i = compare_key_->findText(previous); i >= 0) compare_key_->setCurrentIndex(i);
  for (auto& f : fields_) {
    const std::string key = f.key;
    if (auto* e = qobject_cast<QLineEdit*>(f.editor)) {
      connect(e, &QLineEdit::editingFinished, this, [this, key, e] { setField(key, e->text()); });
    } else if (auto* c = qobject_cast<QComboBox*>(f.editor)) {
      connect(c, &QComboBox::activated, this, [this, key, c] { setField(key, c->currentText()); });
    } else if (auto* b = qobject_cast<QCheckBox*>(f.editor)) {
      connect(b, &QCheckBox::toggled, this,
              [this, key](bool on) { setField(key, on ? "true" : "false"); });
    }
  }
}

void MainWindow::selectPool(std::size_t p) {
  pool_ = p;
  buildPanel();
}

void MainWindow::refreshFields() {
  const YAML::Node root = YAML::Load(scenario_.resolved_yaml);
  for (auto& f : fields_) {
    const QString v = QString::fromStdString(lookup(root, f.key));
    f.editor->blockSignals(true);
    if (auto* e = qobject_cast<QLineEdit*>(f.editor)) e->setText(v);
    if (auto* c = qobject_cast<QComboBox*>(f.editor)) c->setCurrentText(v);
    if (auto* b = qobject_cast<QCheckBox*>(f.editor)) b->setChecked(v == "true");
    f.editor->blockSignals(false);
  }
}

std::vector<std::string> MainWindow::overrides() const {
  // Edits of fields not on the panel now (another pool's), then the fields as they stand, as
  // --set overrides on the loaded YAML.
  std::vector<std::string> o;
  const YAML::Node root = YAML::Load(scenario_.resolved_yaml);
  for (const auto& [key, value] : edits_)
    if (std::none_of(fields_.begin(), fields_.end(), [&](const Field& f) { return f.key == key; }))
      o.push_back(key + "=" + value);
  for (const auto& f : fields_) o.push_back(f.key + "=" + lookup(root, f.key));
  return o;
}

bool MainWindow::setField(const std::string& key, const QString& value) {
  const auto it =
      std::find_if(fields_.begin(), fields_.end(), [&](const Field& f) { return f.key == key; });
  if (it == fields_.end()) return false;
  // Leaving a field without changing it is not an edit (no rerun, nothing to save).
  if (fieldValue(key) == value) return true;
  // A new implementation brings its own parameters: variant_overrides drops the old one's.
  const bool impl = is_impl_key(key);
  const std::vector<std::string> o = variant_overrides(overrides(), key, value.toStdString());
  try {
    scenario_ = sim::load_scenario_text(yaml_, file_.toStdString(), base_dir_, o);
  } catch (const sim::InputError& e) {
    showError(QString::fromStdString(panelWords(e)));
    refreshFields();  // back to the last valid values
    return false;
  } catch (const std::exception& e) {
    showError(QString::fromStdString(e.what()));
    refreshFields();
    return false;
  }
  last_error_.clear();
  if (!sweep_.points().empty() || !compare_.variants().empty()) {
    stale_ = true;  // the curves on screen no longer describe the panel: the title says so
  }
  // Pins are named by what differs from the panel: the list and the legend change together.
  refreshPinList();
  if (stale_ || !pins_.empty()) redrawLatency();
  if (auto_rerun_->isChecked() && (!sweep_.points().empty() || !compare_.variants().empty())) {
    rerun_timer_->start();  // restarts the pause on every change
  }
  if (impl)
    std::erase_if(edits_, [&](const auto& e) {
      return e.first.rfind(key.substr(0, key.size() - 4), 0) == 0;
    });
  edits_[key] = value.toStdString();
  setWindowModified(true);
  status_->setText(QString::fromStdString(setting_label(key, value.toStdString())));
  if (impl) {
    // The panel shows the new implementation's parameters. Rebuilt after this signal returns:
    // the editor that emitted it is among the widgets replaced.
    QMetaObject::invokeMethod(
        this, [this] { buildPanel(); }, Qt::QueuedConnection);
  } else {
    refreshFields();
  }
  redrawMemory();
  return true;
}

QString MainWindow::fieldValue(const std::string& key) const {
  return QString::fromStdString(lookup(YAML::Load(scenario_.resolved_yaml), key));
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
