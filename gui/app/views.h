#pragma once
// The GUI's views other than latency-against-load and memory, one widget each. They read
// results (LoadPoint, SweepResults), never simulator internals, and draw through kvfleet::charts.
#include <QtWidgets/QWidget>

#include <vector>

#include "gui/app/load_sweep.h"
#include "gui/charts/line_chart.h"
#include "sim/sweep/sweep.h"

class QChartView;
class QComboBox;
class QTableWidget;
class QHBoxLayout;
class QLabel;

namespace kvfleet::gui {

// Cells may carry their numbers for export beside the text shown ("38 – 75", "at least 300"):
// kNumberRole the value (or a range's low end), kHighRole a range's high end, kBoundRole a word
// qualifying the value ("at least", "below").
inline constexpr int kNumberRole = Qt::UserRole;
inline constexpr int kHighRole = Qt::UserRole + 1;
inline constexpr int kBoundRole = Qt::UserRole + 2;

// Writes a table as CSV (header row first); returns an empty string or what went wrong. A column
// whose cells carry numbers (kNumberRole) is written as numbers (empty where a cell has none);
// with kHighRole as two columns "<header> (low)" and "(high)"; with kBoundRole one more text
// column "<header> (bound)".
QString export_table_csv(const QTableWidget* table, const QString& path);
// Saves what a chart view shows as PNG or SVG (by extension).
QString export_chart_view(QChartView* view, const QString& path);

// A view of one load point, chosen from a list, drawn as two charts (the shared base of the
// timeline and fleet views).
class RunView : public QWidget {
  Q_OBJECT
 public:
  explicit RunView(QWidget* parent = nullptr);
  // names: what each point belongs to (a compared variant's label), said before its load in the
  // picker; empty for the panel's own sweep.
  void setPoints(const std::vector<LoadPoint>& points, const std::vector<std::string>& names = {});
  // A line above the charts saying why they are empty ("" hides it).
  void setHint(const QString& hint);
  QString hint() const;
  QChartView* topView() const { return top_; }
  QComboBox* picker() const { return which_; }
  QChartView* bottomView() const { return bottom_; }

 protected:
  // The chosen point (nullptr when none has run), drawn into the two views.
  virtual void draw(const LoadPoint* point, QChartView* top, QChartView* bottom) = 0;
  void redraw();

 private:
  std::vector<LoadPoint> points_;
  std::vector<std::string> names_;
  QLabel* hint_;
  QComboBox* which_;
  QChartView* top_;
  QChartView* bottom_;
};

// One run over time: KV usage and its watermark, running and waiting requests, preemptions.
class TimelineView : public RunView {
  Q_OBJECT
 public:
  explicit TimelineView(QWidget* parent = nullptr) : RunView(parent) { redraw(); }

 protected:
  void draw(const LoadPoint* point, QChartView* top, QChartView* bottom) override;
};

// The fleet: per replica, mean running and waiting requests, mean KV usage and prefix-hit rate.
class FleetView : public RunView {
  Q_OBJECT
 public:
  explicit FleetView(QWidget* parent = nullptr) : RunView(parent) { redraw(); }

 protected:
  void draw(const LoadPoint* point, QChartView* top, QChartView* bottom) override;
};

// Every point of the load sweep as a table (exportable as CSV).
class PointsTable : public QWidget {
  Q_OBJECT
 public:
  explicit PointsTable(QWidget* parent = nullptr);
  // load_label heads the load's column ("Users", "Arrival rate (requests/s)"); names, when
  // given, fill a first column "variant" (the compared variant each point belongs to).
  void setPoints(const std::string& load_label, const std::vector<LoadPoint>& points,
                 const std::vector<std::string>& names = {});
  void setHint(const QString& hint);  // above the table, why it is empty ("" hides it)
  QString hint() const;
  QTableWidget* table() const { return table_; }

 private:
  QLabel* hint_;
  QTableWidget* table_;
};

// A sweep's HDF5 file (kvfleet sweep): its points as a table, and a metric against an axis.
class SweepFileView : public QWidget {
  Q_OBJECT
 public:
  explicit SweepFileView(QWidget* parent = nullptr);
  // Throws sim::InputError when the file is not a sweep file.
  void open(const QString& path);
  QTableWidget* table() const { return table_; }
  QChartView* chartView() const { return chart_; }
  const sim::SweepResults& results() const { return results_; }
  // The chart on screen (for tests); what each axis not drawn is fixed to, or "(mean over)".
  const charts::LineChartSpec& spec() const { return spec_; }
  bool setAxisFilter(const std::string& axis, const QString& value);
  bool setSeries(const QString& axis);
  bool setX(const QString& key);

 private:
  void redraw();
  sim::SweepResults results_;
  QComboBox *x_, *y_, *series_;
  // One chooser per axis of the file: a value, or "(mean over)"; unused for the axes drawn.
  std::vector<std::pair<std::string, QComboBox*>> filters_;
  QHBoxLayout* filter_row_ = nullptr;
  QLabel* problem_label_ = nullptr;
  charts::LineChartSpec spec_;
  QString problem_;
  QTableWidget* table_;
  QChartView* chart_;
};

}  // namespace kvfleet::gui
