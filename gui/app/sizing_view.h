#pragma once
// The Sizing tab: the architect's question in one screen. A target load (requests/s or users)
// and an SLO (TTFT and TPOT p99, the timeouts and rejections allowed) give, for the scenario as
// the panel has it or for each value of one compared key (GPU: H100-SXM, L40S), the replicas
// and GPUs a pool needs, their cost per month and per million output tokens at a price per
// GPU-hour, and what one replica fewer misses. The search is kvfleet size's own (sim/sweep/
// sizing.h, find_replicas), run on a background thread, so the GUI, the CLI and Python agree.
#include <QtWidgets/QWidget>

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "sim/simulation/scenario.h"
#include "sim/sweep/sizing.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTableWidget;

class QFormLayout;

namespace kvfleet::gui {

class SizingView : public QWidget {
  Q_OBJECT
 public:
  // `source`: the scenario as loaded; `overrides`: the panel's edits (--set lines), both read
  // when a sizing starts.
  SizingView(std::function<sim::ScenarioSource()> source,
             std::function<std::vector<std::string>()> overrides, QWidget* parent = nullptr);
  ~SizingView() override;

  // Starts sizing every variant; false (and the message in status()) when an input is refused
  // before anything runs.
  bool size();
  bool running() const { return running_; }
  void cancel();

  // One row of the table: a variant and its answer, or why it was refused.
  struct Row {
    std::string label;
    std::vector<std::string> overrides;
    sim::SizingResult result;
    std::string error;  // the variant's own refusal, in words
  };
  const std::vector<Row>& rows() const { return rows_; }
  QTableWidget* table() const { return table_; }
  QString status() const;

  // The inputs, as the user sets them.
  void setTarget(double load, const QString& metric);  // metric: "requests/s" or "users"
  void setSlo(double ttft_p99_s, double tpot_p99_s, double timeout_pct, double reject_pct);
  void setPrice(double per_gpu_hour);
  void setReplicates(int n);
  void setVariants(const QString& key, const QString& values);  // values comma-separated
  // The SLO as kvfleet size --slo takes it.
  std::string sloText() const;
  // The command line that gives the same answer for variant `i` (for the status line and tests).
  std::string cliCommand(std::size_t i) const;
  // What the target is, as kvfleet size --metric names it.
  std::string metricName() const;

 Q_SIGNALS:
  void finished();

 private:
  // The targets, SLO, price, seeds and variants to compare.
  QFormLayout* buildForm();
  void fill();
  std::function<sim::ScenarioSource()> source_;
  std::function<std::vector<std::string>()> overrides_;
  QDoubleSpinBox* target_ = nullptr;
  QComboBox* metric_ = nullptr;
  QDoubleSpinBox* ttft_ = nullptr;  // ms
  QDoubleSpinBox* tpot_ = nullptr;  // ms
  QDoubleSpinBox* timeout_ = nullptr;
  QDoubleSpinBox* reject_ = nullptr;
  QDoubleSpinBox* price_ = nullptr;
  QSpinBox* replicates_ = nullptr;
  QLineEdit* key_ = nullptr;
  QLineEdit* values_ = nullptr;
  QPushButton* run_ = nullptr;
  QLabel* status_ = nullptr;
  QTableWidget* table_ = nullptr;
  std::vector<Row> rows_;
  std::thread worker_;
  std::atomic<bool> stop_{false};
  bool running_ = false;
};

}  // namespace kvfleet::gui
