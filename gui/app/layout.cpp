// The main window's widgets, built once: the toolbar, the side panel, the tabs, and the
// connections between them and the runs (MainWindow's constructor calls these in order).
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
#include <QtWidgets/QProgressBar>
#include <QtWidgets/QPushButton>
#include <QtWidgets/QScrollArea>
#include <QtWidgets/QSpinBox>
#include <QtWidgets/QTabWidget>
#include <QtWidgets/QTableWidget>
#include <QtWidgets/QToolBar>
#include <QtWidgets/QToolButton>
#include <QtWidgets/QVBoxLayout>

#include "gui/app/main_window.h"
#include "gui/app/number_field.h"
#include "gui/app/sizing_view.h"

namespace kvfleet::gui {

void MainWindow::buildToolbar() {
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
  action("Calibrate pool…", QKeySequence(Qt::CTRL | Qt::Key_K), [this] {
    const QString f = QFileDialog::getOpenFileName(this, "Calibration file (kvfleet-calibrate fit)",
                                                   {}, "Calibrations (*.yaml *.yml)");
    if (!f.isEmpty()) calibratePool(f);
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
}

QWidget* MainWindow::buildSidePanel() {
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
  progress_->setRange(0, static_cast<int>(loadFactors().size()) * kProgressSteps);
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
  return scroll;
}

QWidget* MainWindow::buildLatencyTab() {
  auto* lat = new QWidget;
  latency_view_ = new QChartView;
  latency_view_->setRenderHint(QPainter::Antialiasing);
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
  return lat;
}

QWidget* MainWindow::buildMemoryTab() {
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
  return mem;
}

QTabWidget* MainWindow::buildTabs() {
  auto* tabs = new QTabWidget;
  tabs_ = tabs;
  QWidget* lat = buildLatencyTab();
  tabs->addTab(lat, "Latency vs load");
  timeline_ = new TimelineView;
  tabs->addTab(timeline_, "Run over time");
  QWidget* mem = buildMemoryTab();
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
  return tabs;
}

void MainWindow::connectRuns() {
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
}

}  // namespace kvfleet::gui
