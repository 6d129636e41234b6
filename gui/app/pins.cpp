// The window's pinned runs: kept curves named by what differs from the panel.
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

void MainWindow::pinRun() {
  // The run on screen stays, as one dashed curve, under the next runs.
  const auto pts = sweep_.points();
  if (std::none_of(pts.begin(), pts.end(), [](const LoadPoint& p) { return p.done && p.ok; })) {
    showError("Pin run: no finished load sweep to pin (run one first)");
    return;
  }
  pins_.push_back({"", run_resolved_, run_overrides_, pts, true});
  studyChanged();
  refreshPinList();
  redrawLatency();
}

namespace {

// Every scalar of a YAML tree by its --set path (pools[0].engine.max_num_seqs).
void flatten_yaml(const YAML::Node& n, const std::string& path,
                  std::map<std::string, std::string>* out) {
  if (n.IsMap()) {
    for (const auto& kv : n)
      flatten_yaml(kv.second, path.empty() ? kv.first.Scalar() : path + "." + kv.first.Scalar(),
                   out);
  } else if (n.IsSequence()) {
    for (std::size_t i = 0; i < n.size(); ++i)
      flatten_yaml(n[i], path + "[" + std::to_string(i) + "]", out);
  } else if (n.IsScalar()) {
    (*out)[path] = n.Scalar();
  }
}

}  // namespace

std::string MainWindow::pinLabel(std::size_t i) const {
  const Pin& p = pins_.at(i);
  if (!p.name.empty()) return p.name;
  // What differs from the current scenario, in the pin's values and the declarations' words:
  // "Max running sequences 64", "Context policy window".
  std::map<std::string, std::string> a, b;
  flatten_yaml(YAML::Load(p.resolved_yaml), "", &a);
  flatten_yaml(YAML::Load(scenario_.resolved_yaml), "", &b);
  std::vector<std::string> diffs;
  for (const auto& [k, v] : a) {
    const auto it = b.find(k);
    if (it != b.end() && it->second == v) continue;
    if (k == "name" || k == "description") continue;
    diffs.push_back(setting_label(k, v));
  }
  for (const auto& [k, v] : b) {
    if (!a.count(k)) diffs.push_back(setting_label(k, "unset"));
  }
  if (diffs.empty()) return "same settings";
  std::string label;
  for (std::size_t d = 0; d < diffs.size() && d < 3; ++d) label += (d ? ", " : "") + diffs[d];
  if (diffs.size() > 3) label += ", +" + std::to_string(diffs.size() - 3) + " more";
  return label;
}

bool MainWindow::renamePin(std::size_t i, const QString& name) {
  if (i >= pins_.size()) return false;
  pins_[i].name = name.trimmed().toStdString();
  studyChanged();
  refreshPinList();
  redrawLatency();
  return true;
}

bool MainWindow::setPinVisible(std::size_t i, bool visible) {
  if (i >= pins_.size()) return false;
  pins_[i].visible = visible;
  studyChanged();
  refreshPinList();
  redrawLatency();
  return true;
}

bool MainWindow::removePin(std::size_t i) {
  if (i >= pins_.size()) return false;
  pins_.erase(pins_.begin() + static_cast<std::ptrdiff_t>(i));
  studyChanged();
  refreshPinList();
  redrawLatency();
  return true;
}

bool MainWindow::comparePins() {
  std::vector<CompareRun::Spec> specs;
  for (std::size_t i = 0; i < pins_.size(); ++i) {
    if (pins_[i].visible) specs.push_back({pinLabel(i), pins_[i].overrides, pinLabel(i)});
  }
  specs.push_back({"current settings", overrides(), "current settings"});
  if (specs.size() < 2 || specs.size() > 6) {
    showError("Compare pins: pin one to five runs first (the current settings are the last curve)");
    return false;
  }
  if (sweep_.running() || compare_.running()) return false;
  sweep_.reset();
  bisect_->clear();
  compare_.start(yaml_, base_dir_, "pinned runs", specs, loadKey(), baseLoad(), loadFactors());
  run_->setEnabled(false);
  compare_run_->setEnabled(false);
  cancel_->setEnabled(true);
  progress_->setRange(0, static_cast<int>(specs.size() * loadFactors().size()) * kProgressSteps);
  progress_->setValue(0);
  status_->setText("Comparing the pinned runs with the current settings…");
  updateViews();
  return true;
}

void MainWindow::curvesForPins() {
  // A pin without a curve (reopened from a saved study) takes the curve of a finished variant
  // run with exactly its settings.
  bool filled = false;
  for (auto& pin : pins_) {
    if (!pin.points.empty()) continue;
    for (const auto& v : compare_.variants()) {
      if (v.overrides != pin.overrides) continue;
      const auto pts = v.sweep->points();
      const bool all = !pts.empty() && std::all_of(pts.begin(), pts.end(),
                                                   [](const LoadPoint& p) { return p.done; });
      if (!all) continue;
      pin.points = pts;
      filled = true;
      break;
    }
  }
  if (filled) refreshPinList();
}

void MainWindow::refreshPinList() {
  if (!pin_list_) return;
  pin_list_->blockSignals(true);
  pin_list_->clear();
  for (std::size_t i = 0; i < pins_.size(); ++i) {
    // A pin reopened from a saved study keeps its settings; Open (or Compare pins) reruns them
    // and draws its curve.
    auto* item = new QListWidgetItem(QString::fromStdString(pinLabel(i)) +
                                     (pins_[i].points.empty() ? QString(kUnrunPin) : QString()));
    item->setFlags(item->flags() | Qt::ItemIsEditable | Qt::ItemIsUserCheckable);
    item->setCheckState(pins_[i].visible ? Qt::Checked : Qt::Unchecked);
    item->setToolTip("double-click to rename; untick to hide");
    pin_list_->addItem(item);
  }
  pin_list_->blockSignals(false);
}

}  // namespace kvfleet::gui
