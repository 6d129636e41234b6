// The window's scenario as a document: Save (the file's own text with the changed fields edited
// in place), the unsaved-changes prompt, and the recent files.
#include <QtCore/QSettings>
#include <QtGui/QAction>
#include <QtGui/QCloseEvent>
#include <QtWidgets/QFileDialog>
#include <QtWidgets/QLabel>
#include <QtWidgets/QMenu>
#include <QtWidgets/QMessageBox>

#include <filesystem>

#include "gui/app/main_window.h"
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
  bool kept = false;
  std::string text;
  try {
    text = sim::scenario_text_with_sets(yaml_, file_.toStdString(), base_dir_, sets, &kept);
    sim::write_text_atomically(path.toStdString(), [&](std::ostream& o) { o << text; });
  } catch (const std::exception& e) {
    showError(QString::fromStdString(e.what()));
    return false;
  }
  // The window now edits the saved file (its relative paths from its own folder).
  const std::string dir = std::filesystem::path(path.toStdString()).parent_path().string();
  yaml_ = text;
  file_ = path;
  base_dir_ = dir.empty() ? "." : dir;
  edits_.clear();
  last_save_kept_ = kept;
  setWindowTitle("kvfleet — " + path + "[*]");
  setWindowModified(false);
  rememberFile(path);
  status_->setText("saved " + path +
                   (kept ? " (its comments and layout kept)"
                         : " (written in full: the changes could not be made in its own text)"));
  return true;
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
