// The window's scenario as a document: Save (the file's own text with the changed fields edited
// in place), the unsaved-changes prompt, and the recent files.
#include <QtCore/QSettings>
#include <QtGui/QAction>
#include <QtGui/QCloseEvent>
#include <QtWidgets/QComboBox>
#include <QtWidgets/QFileDialog>
#include <QtWidgets/QLabel>
#include <QtWidgets/QLineEdit>
#include <QtWidgets/QMenu>
#include <QtWidgets/QMessageBox>

#include <filesystem>

#include "gui/app/main_window.h"
#include "gui/app/yaml_lookup.h"
#include "sim/core/error.h"
#include "sim/io/text_file.h"

namespace kvfleet::gui {

namespace {

constexpr int kRecentFiles = 8;

bool dialogs() { return !qEnvironmentVariableIsSet("KVFLEET_GUI_NO_DIALOGS"); }

}  // namespace

bool MainWindow::saveScenario(const QString& path) {
  // The changed fields, in the order --set applies them (an implementation before its
  // parameters is not needed: a parameter set earlier survives a new impl).
  std::vector<std::string> sets;
  for (const auto& [key, value] : edits_) sets.push_back(key + "=" + value);
  // A pin's overrides apply to the file it was pinned on; the saved file carries the edits, so
  // each pin also sets back its own value of every edited key it does not set itself.
  std::vector<std::vector<std::string>> before;  // the overrides only: a pin's points are big
  for (auto& pin : pins_) {
    before.push_back(pin.overrides);
    const YAML::Node mine = YAML::Load(pin.resolved_yaml);
    std::vector<std::string> rebased;
    for (const auto& [key, value] : edits_) {
      bool own = false;
      for (const auto& o : pin.overrides) own = own || o.rfind(key + "=", 0) == 0;
      const std::string v = own ? "" : lookup(mine, key);
      if (!v.empty()) rebased.push_back(key + "=" + v);
    }
    rebased.insert(rebased.end(), pin.overrides.begin(), pin.overrides.end());
    pin.overrides = std::move(rebased);
  }
  bool kept = false;
  std::string text;
  try {
    text = sim::scenario_text_with_sets(yaml_, file_.toStdString(), base_dir_, sets, &kept);
    // The SLO, comparison and pins, as comments: added when they say something, replaced when
    // the file has a block.
    const bool had = without_study(text) != text;
    if (had || !is_default(study())) text = with_study(text, study());
    sim::write_text_atomically(path.toStdString(), [&](std::ostream& o) { o << text; });
  } catch (const std::exception& e) {
    // Nothing saved: the pins stay relative to the file still open.
    for (std::size_t i = 0; i < pins_.size(); ++i) pins_[i].overrides = std::move(before[i]);
    showError(QString::fromStdString(e.what()));
    return false;
  }
  // The window now edits the saved file (its relative paths from its own folder).
  const std::string dir = std::filesystem::path(path.toStdString()).parent_path().string();
  yaml_ = text;
  file_ = path;
  base_dir_ = dir.empty() ? "." : dir;
  edits_.clear();
  study_changed_ = false;
  last_save_kept_ = kept;
  setWindowTitle("kvfleet — " + path + "[*]");
  setWindowModified(false);
  rememberFile(path);
  status_->setText("saved " + path +
                   (kept ? " (its comments and layout kept)"
                         : " (written in full: the changes could not be made in its own text)"));
  return true;
}

Study MainWindow::study() const {
  Study s;
  s.slo_s = slo_s_;
  s.refused_pct = reject_pct_;
  s.metric = metric_->currentText().toStdString();
  const auto [key, values] = compareBox();
  if (!key.empty() && !values.empty()) {
    s.compare_key = key;
    s.compare_values = values;
  }
  for (const auto& p : pins_) s.pins.push_back({p.name, p.visible, p.overrides});
  return s;
}

void MainWindow::setCompareBox(const std::string& key, const std::vector<std::string>& values) {
  const int at = compare_key_->findData(QString::fromStdString(key));
  if (at >= 0) {
    compare_key_->setCurrentIndex(at);
  } else {
    compare_key_->setEditText(QString::fromStdString(key));
  }
  QStringList list;
  for (const auto& v : values) list << QString::fromStdString(v);
  compare_values_->setText(list.join(", "));
}

void MainWindow::applyStudy(const Study& s) {
  setSlo(s.slo_s);
  setMaxRefused(s.refused_pct);
  if (metric_->findText(QString::fromStdString(s.metric)) >= 0)
    metric_->setCurrentText(QString::fromStdString(s.metric));
  study_has_compare_ = !s.compare_key.empty() && s.compare_values.size() >= 2;
  if (!s.compare_key.empty()) setCompareBox(s.compare_key, s.compare_values);
  QStringList refused;
  for (const auto& p : s.pins) {
    try {
      const sim::Scenario sc =
          sim::load_scenario_text(yaml_, file_.toStdString(), base_dir_, p.overrides);
      pins_.push_back({p.name, sc.resolved_yaml, p.overrides, {}, p.visible});
    } catch (const std::exception& e) {
      refused << QString::fromStdString(e.what());
    }
  }
  refreshPinList();
  if (!refused.isEmpty()) showError("a pin of the saved study is refused: " + refused.join("; "));
}

bool MainWindow::maybeSave() {
  if (!hasUnsavedChanges() || !dialogs()) return true;
  const auto answer = QMessageBox::question(
      this, "kvfleet", "The scenario has changes that are not saved. Save them?",
      QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
  if (answer == QMessageBox::Cancel) return false;
  if (answer == QMessageBox::Discard) return true;
  return save();
}

bool MainWindow::save() {
  QString target = file_;
  if (!std::filesystem::is_regular_file(file_.toStdString()))
    target = QFileDialog::getSaveFileName(this, "Save scenario", {}, "Scenarios (*.yaml)");
  return !target.isEmpty() && saveScenario(target);
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (maybeSave()) {
    event->accept();
  } else {
    event->ignore();
  }
}

QStringList MainWindow::recentFiles() const {
  return QSettings("kvfleet", "kvfleet-gui").value("recentFiles").toStringList();
}

void MainWindow::rememberFile(const QString& path) {
  const QString abs =
      QString::fromStdString(std::filesystem::absolute(path.toStdString()).string());
  QStringList files = recentFiles();
  files.removeAll(abs);
  files.prepend(abs);
  while (files.size() > kRecentFiles) files.removeLast();
  QSettings("kvfleet", "kvfleet-gui").setValue("recentFiles", files);
  refreshRecentMenu();
}

void MainWindow::refreshRecentMenu() {
  if (!recent_menu_) return;
  recent_menu_->clear();
  const QStringList files = recentFiles();
  for (int i = 0; i < files.size(); ++i) {
    const QString f = files[i];
    QAction* a = recent_menu_->addAction(QString("&%1 %2").arg(i + 1).arg(f), this, [this, f] {
      if (maybeSave()) openAndRun(f);
    });
    a->setEnabled(std::filesystem::is_regular_file(f.toStdString()));
  }
  if (files.isEmpty()) recent_menu_->addAction("(none yet)")->setEnabled(false);
}

}  // namespace kvfleet::gui
