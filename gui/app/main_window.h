#pragma once
// kvfleet-gui's window: the scenario panel on the left (fields with units and the declarations'
// descriptions as tooltips), views on the right (latency against load with pinned earlier runs,
// the memory budget), a load sweep on background threads with progress and cancel.
#include <QtCore/QStringList>
#include <QtWidgets/QMainWindow>

#include <map>
#include <string>
#include <vector>

#include "gui/app/capacity_search.h"
#include "gui/app/compare.h"
#include "gui/app/load_sweep.h"
#include "gui/app/study.h"
#include "gui/app/views.h"
#include "gui/charts/line_chart.h"
#include "sim/simulation/scenario.h"

class QChartView;
class QCloseEvent;
class QMenu;

class QCheckBox;
class QTimer;
class QComboBox;
class QLineEdit;
class QListWidget;
class QTableWidget;
class QFormLayout;
class QLabel;
class QProgressBar;
class QPushButton;
class QDoubleSpinBox;
class QSpinBox;
class QTabWidget;
class QWidget;

namespace YAML {
class Node;
}

namespace kvfleet::gui {

class SizingView;

// What the pin list says after a pin reopened from a saved study, which has no curve yet.
inline constexpr const char* kUnrunPin = " (not run: Compare pins)";

// One editable scenario key.
struct Field {
  std::string key;    // as for --set: pools[0].engine.max_num_seqs
  std::string label;  // shown
  QWidget* editor = nullptr;
};

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);

  // Loads a scenario file; on error shows the message, keeps the current scenario, returns false.
  bool openScenario(const QString& path);
  // What Open and Recent do: opens the file and, unless "Rerun after a change" is off (heavy
  // scenarios), runs its load sweep, as the window does at start.
  bool openAndRun(const QString& path);
  // The study as Save writes it into the scenario file (gui/app/study.h): the SLO line, refused
  // share, compared quantity, the Compare box and the pins' settings.
  Study study() const;
  // Fills the Compare box (the key, the values) as the user would type them.
  void setCompareBox(const std::string& key, const std::vector<std::string>& values);
  // Writes the scenario with the fields changed since it was opened: the file's own text with
  // those values edited in place (its comments kept) where that loads to the same scenario,
  // else the resolved scenario in full. The window then edits the saved file.
  bool saveScenario(const QString& path);
  // Whether the last save kept the file's text (comments and layout).
  bool lastSaveKeptText() const { return last_save_kept_; }
  // Fields changed since the scenario was opened or saved (the title shows "*").
  // Fields changed, or the study (SLO line, refused share, compared quantity, comparison, pins)
  // since the file was opened or saved (the title shows "*").
  bool hasUnsavedChanges() const { return !edits_.empty() || study_changed_; }
  // The files opened or saved, most recent first (at most 8; kept across sessions in QSettings).
  QStringList recentFiles() const;
  // Sets a field by key (as the user would); false if no such field or the value is refused.
  bool setField(const std::string& key, const QString& value);
  QString fieldValue(const std::string& key) const;
  // The pool on the panel takes a calibration file (kvfleet-calibrate fit): its cost model
  // becomes `fitted`, corrected by the file; false with a message when the file is refused (not
  // a calibration, another GPU's).
  bool calibratePool(const QString& file);
  void runSweep();
  // The panel edits pool `p` of the scenario (its fields become pools[p]...).
  void selectPool(std::size_t p);
  void cancelSweep();
  void pinRun();
  // Opens a sweep's results (kvfleet sweep) in the Sweep file view; false with a message if not.
  bool openSweepFile(const QString& path);
  // Exports the current view's chart (PNG/SVG) or table (CSV); returns an error or "".
  QString exportCurrentChart(const QString& path);
  QString exportCurrentTable(const QString& path);
  void setSlo(double seconds);
  // The share of requests (%) a capacity may leave rejected or timed out (1% unless set).
  void setMaxRefused(double percent);
  // The progress bar and status while runs are in flight (polled every 0.3 s).
  void showProgress();
  static constexpr int kProgressSteps = 100;  // bar steps per load point
  // Compare mode: `key` takes each of `values` (2 to 6), one load sweep each, one curve family
  // each in the latency chart; false with a message when the values or the key are refused.
  bool runCompare(const std::string& key, const std::vector<std::string>& values);
  CompareRun& compare() { return compare_; }
  // The quantity every compared curve shows ("TTFT p99", "Goodput", ...).
  bool setMetric(const QString& name);
  QTableWidget* capacityTable() const { return capacity_table_; }
  // Variant i's capacity as the table shows it (the compared latency, the SLO line, ≤ 1%
  // rejected).
  CapacityEstimate variantCapacity(std::size_t i) const;
  // Variant i's capacity by kvfleet capacity's search (bisection, the SLO line and the refused
  // share as `capacitySlo()`), once it is done for the SLO on screen; nullptr before.
  const CapacitySearch::Answer* variantBisected(std::size_t i) const;
  CapacitySearch& capacitySearch() { return *bisect_; }
  // The compare table's SLO as kvfleet capacity --slo takes it: "ttft_p99=2s,refused_rate=1%".
  std::string capacitySlo() const;
  // Rerun after a change: a changed field reruns the sweep (or the comparison) after a short
  // pause; off for heavy scenarios.
  void setAutoRerun(bool on);
  bool rerunPending() const;
  // A pinned run: its points and the settings it ran with. Shown as one dashed curve of the
  // compared quantity, in its own colour, named by what differs from the current scenario
  // (unless renamed).
  struct Pin {
    std::string name;  // set by renamePin; empty: named by the difference
    std::string resolved_yaml;
    std::vector<std::string> overrides;
    std::vector<LoadPoint> points;
    bool visible = true;
  };
  const std::vector<Pin>& pins() const { return pins_; }
  QListWidget* pinList() const { return pin_list_; }
  std::string pinLabel(std::size_t i) const;
  bool renamePin(std::size_t i, const QString& name);
  bool setPinVisible(std::size_t i, bool visible);
  bool removePin(std::size_t i);
  // Reruns the visible pins' settings and the current ones as a comparison.
  bool comparePins();
  // Pins without a curve take it from the finished comparison's variant with their settings.
  void curvesForPins();
  QTabWidget* tabs() const { return tabs_; }
  SweepFileView* sweepFileView() const { return sweep_file_; }
  SizingView* sizingView() const { return sizing_; }
  PointsTable* pointsTable() const { return points_table_; }
  TimelineView* timelineView() const { return timeline_; }
  FleetView* fleetView() const { return fleet_; }
  LoadSweep& sweep() { return sweep_; }
  // What the latency chart shows now (for tests and export).
  const charts::LineChartSpec& latencySpec() const { return latency_spec_; }
  QString lastError() const { return last_error_; }
  const sim::Scenario& scenario() const { return scenario_; }
  std::vector<std::string> overrides() const;

 protected:
  // Asks to save unsaved changes (Save, Discard, Cancel) unless dialogs are off.
  void closeEvent(QCloseEvent* event) override;

 private:
  // The scenario loaded again with overrides `o`; false (message shown, fields restored) when
  // refused.
  bool reload(const std::vector<std::string>& o);
  // After an accepted change: curves marked stale, rerun scheduled, status line, fields.
  void changed(const std::string& status, bool rebuild_panel);
  // The widgets (layout.cpp), built once by the constructor, then their connections.
  void buildToolbar();
  QWidget* buildSidePanel();
  QTabWidget* buildTabs();
  QWidget* buildLatencyTab();
  QWidget* buildMemoryTab();
  void connectRuns();
  // The panel's fields (panel.cpp).
  void addField(const std::string& key, std::string label, const char* unit_override,
                const YAML::Node& root);
  void refillCompareList(const std::string& load);
  void connectFields();
  // The capacity table (compare_panel.cpp): one row per variant.
  QString expectedErrorText() const;
  std::vector<CompareRun::Spec> compareSpecs(
      const std::string& key, const std::vector<std::string>& values,
      std::vector<std::pair<std::string, std::string>>& refused) const;
  void fillCapacityRow(std::size_t r, double gpus, const QString& expected);
  // False when the user cancels; true when there is nothing to save, it was saved or discarded.
  bool maybeSave();
  // Saves to the file the window edits, or asks where when it edits none (the built-in default).
  bool save();
  void rememberFile(const QString& path);
  void refreshRecentMenu();
  QMenu* recent_menu_ = nullptr;
  bool last_save_kept_ = false;
  void buildPanel();
  // The declaration of a --set key (nullptr when it has none).
  void refreshFields();
  bool revalidate();
  void redrawLatency();
  void redrawCompare(charts::LineChartSpec* spec);
  void updateCapacityTable();
  void redrawMemory();
  void showError(const QString& message);
  std::string loadKey() const;
  double baseLoad() const;
  std::vector<double> loadFactors() const;
  // The latency the capacity table and the pins use: the compared quantity when it is a
  // latency, else TTFT p99.
  const CompareMetric& latencyMetric() const;

  std::string yaml_;      // the scenario as loaded
  std::string base_dir_;  // for its relative paths
  QString file_;
  sim::Scenario scenario_;  // yaml_ + the fields' overrides, last valid
  std::vector<Field> fields_;
  std::size_t pool_ = 0;                      // the pool the panel edits
  std::map<std::string, std::string> edits_;  // every field set since the scenario was opened
  QFormLayout* form_ = nullptr;
  void updateViews();
  void updateRunViews();
  QTabWidget* tabs_ = nullptr;
  TimelineView* timeline_ = nullptr;
  FleetView* fleet_ = nullptr;
  PointsTable* points_table_ = nullptr;
  SweepFileView* sweep_file_ = nullptr;
  SizingView* sizing_ = nullptr;
  QDoubleSpinBox* slo_ = nullptr;
  QChartView* latency_view_ = nullptr;
  QChartView* memory_view_ = nullptr;
  QSpinBox* context_len_ = nullptr;
  QLabel* fit_label_ = nullptr;
  QLabel* status_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QPushButton* run_ = nullptr;
  QPushButton* cancel_ = nullptr;
  LoadSweep sweep_;
  CompareRun compare_;
  CapacitySearch* bisect_ = nullptr;
  // Starts the compare table's bisection for the finished comparison, unless it is done or
  // running for the SLO on screen.
  void refreshBisection();
  sim::ScenarioSource scenarioSource() const;
  QComboBox* compare_key_ = nullptr;
  QLineEdit* compare_values_ = nullptr;
  QPushButton* compare_run_ = nullptr;
  QComboBox* metric_ = nullptr;
  QTableWidget* capacity_table_ = nullptr;
  charts::LineChartSpec latency_spec_;
  std::vector<Pin> pins_;
  QCheckBox* auto_rerun_ = nullptr;
  QTimer* rerun_timer_ = nullptr;
  std::string compare_key_used_;  // the last comparison asked for, rerun after a change
  std::vector<std::string> compare_values_used_;
  void rerunNow();
  // The key and values the Compare box holds now.
  std::pair<std::string, std::vector<std::string>> compareBox() const;
  // An input error in the panel's words: the field's label, the problem, the key.
  std::string panelWords(const sim::InputError& e) const;
  // Variants of the comparison the scenario refused: label, why.
  std::vector<std::pair<std::string, std::string>> compare_refused_;
  // Where Open starts: the open scenario's folder, else ./scenarios, else the source tree's.
  QString scenarioFolder() const;
  // The settings of the sweep on screen (what a pin keeps).
  std::vector<std::string> run_overrides_;
  std::string run_resolved_;
  QListWidget* pin_list_ = nullptr;
  void refreshPinList();
  // Sets the window to a study read from a scenario file (pins keep their settings; their curves
  // come from Compare pins).
  void applyStudy(const Study& s);
  bool study_has_compare_ = false;  // the opened file's study names a comparison
  bool study_changed_ = false;      // the study differs from the file's (Save keeps it)
  void studyChanged();
  double slo_s_ = 2.0;
  double reject_pct_ = kCapacityMaxRejectPct;
  QDoubleSpinBox* reject_ = nullptr;
  QString last_error_;
  // A field changed since the curves were computed: they no longer describe the panel.
  bool stale_ = false;
  // "Arrival rate (requests/s)" or "Users": the load axis as the declarations name it.
  QString loadLabel() const;
  // "scenario — model on GPU, pool NAME": what every chart title names.
  std::string scenarioTitle() const;
};

}  // namespace kvfleet::gui
