#include "gui/app/sizing_view.h"
#include "gui/app/words.h"

#include "gui/app/number_field.h"

#include <QtCore/QLocale>

#include "gui/app/views.h"

#include <filesystem>

#include <QtCore/QMetaObject>
#include <QtWidgets/QComboBox>
#include <QtWidgets/QDoubleSpinBox>
#include <QtWidgets/QFormLayout>
#include <QtWidgets/QHBoxLayout>
#include <QtWidgets/QHeaderView>
#include <QtWidgets/QLabel>
#include <QtWidgets/QLineEdit>
#include <QtWidgets/QPushButton>
#include <QtWidgets/QSpinBox>
#include <QtWidgets/QTableWidget>
#include <QtWidgets/QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "gui/app/compare.h"
#include "sim/config/params.h"
#include "sim/core/error.h"

namespace kvfleet::gui {
namespace {

struct Stopped {};

QString money(double v) {
  return v > 0 ? "$" + QString::number(v, 'f', v < 10 ? 3 : v < 1000 ? 2 : 0) : "—";
}

}  // namespace

QFormLayout* SizingView::buildForm() {
  auto* form = new QFormLayout;
  auto* load_row = new QHBoxLayout;
  // Each number field refuses what it cannot hold on the status line, by name.
  auto spin = [this](const QString& label, double lo, double hi, double value, int decimals,
                     const QString& suffix, const QString& tip) {
    auto* f = new NumberField(label, lo, hi, value, decimals, suffix, tip);
    f->setObjectName(label);
    f->on_refused = [this](const QString& m) { status_->setText(m); };
    return f;
  };
  target_ = spin("Target load", 0.001, 1e7, 100, 3, "", "the load the fleet must serve");
  metric_ = new QComboBox;
  metric_->addItems({"requests/s", "users", "output tokens/s"});
  metric_->setToolTip(
      "requests/s sets the workload's arrival rate; users the number of concurrent users of a "
      "closed-loop workload (conversations); output tokens/s the arrival rate that offers them "
      "(the target over the workload's mean output tokens per request, measured on one run at "
      "the panel's settings)");
  load_row->addWidget(target_);
  load_row->addWidget(metric_);
  form->addRow("Target load", load_row);
  ttft_ = spin("TTFT p99 at most", 0, 1e6, 2000, 0, " ms",
               "time to first token, 99th percentile; 0 = no target");
  tpot_ = spin("TPOT p99 at most", 0, 1e6, 100, 0, " ms",
               "time per output token, 99th percentile; 0 = no target");
  timeout_ = spin("Timeouts at most", 0, 99.9, 1, 2, " %",
                  "requests the client may give up on (client.timeout_s), as a share of those "
                  "that arrived");
  reject_ =
      spin("Rejections at most", 0, 99.9, 1, 2, " %", "requests the fleet may refuse, as a share");
  form->addRow("TTFT p99 at most", ttft_);
  form->addRow("TPOT p99 at most", tpot_);
  form->addRow("Timeouts at most", timeout_);
  form->addRow("Rejections at most", reject_);
  price_ = spin("Price", 0, 1e6, 0, 2, " $/GPU-hour",
                "price of one GPU per hour; 0 = the pool's price_per_hour from the scenario, else "
                "the GPU preset's list price (RunPod on-demand, March 2026: its source in each "
                "cost's tooltip)");
  form->addRow("Price", price_);
  replicates_ = new QSpinBox;
  replicates_->setRange(1, 20);
  replicates_->setValue(3);
  replicates_->setToolTip("seeds: the answer is the most replicas any of them needed");
  form->addRow("Seeds", replicates_);
  auto* variants = new QHBoxLayout;
  key_ = new QLineEdit("pools[0].gpu");
  key_->setToolTip("the scenario key that differs between the rows (a --set key)");
  values_ = new QLineEdit;
  values_->setPlaceholderText("H100-SXM, L40S (empty: the scenario as the panel has it)");
  values_->setToolTip("one row per value, comma-separated");
  variants->addWidget(key_, 1);
  variants->addWidget(values_, 2);
  form->addRow("Compare", variants);
  return form;
}

SizingView::SizingView(std::function<sim::ScenarioSource()> source,
                       std::function<std::vector<std::string>()> overrides, QWidget* parent)
    : QWidget(parent), source_(std::move(source)), overrides_(std::move(overrides)) {
  QFormLayout* form = buildForm();
  run_ = new QPushButton("Size");
  run_->setToolTip(
      "the fewest replicas at which every target holds at the target load, with every seed: "
      "kvfleet size's search");
  connect(run_, &QPushButton::clicked, this, [this] {
    if (running_)
      cancel();
    else
      size();
  });
  status_ = new QLabel("Set a target load and an SLO, then Size.");
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  table_ = new QTableWidget(0, 9);
  table_->setHorizontalHeaderLabels({"Variant", "Replicas", "GPUs", "Serves", "Cost per hour",
                                     "Cost per month", "Per million output tokens",
                                     "What fewer replicas miss", "Model's expected error"});
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  auto* top = new QHBoxLayout;
  top->addLayout(form, 0);
  top->addStretch(1);
  auto* l = new QVBoxLayout(this);
  l->addLayout(top);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(run_);
  buttons->addWidget(status_, 1);
  l->addLayout(buttons);
  l->addWidget(table_, 1);
}

SizingView::~SizingView() {
  stop_ = true;
  if (worker_.joinable()) worker_.join();
}

void SizingView::setTarget(double load, const QString& metric) {
  target_->setValue(load);
  metric_->setCurrentText(metric);
}
void SizingView::setSlo(double ttft_p99_s, double tpot_p99_s, double timeout_pct,
                        double reject_pct) {
  ttft_->setValue(ttft_p99_s * 1e3);
  tpot_->setValue(tpot_p99_s * 1e3);
  timeout_->setValue(timeout_pct);
  reject_->setValue(reject_pct);
}
void SizingView::setPrice(double per_gpu_hour) { price_->setValue(per_gpu_hour); }
void SizingView::setReplicates(int n) { replicates_->setValue(n); }
void SizingView::setVariants(const QString& key, const QString& values) {
  key_->setText(key);
  values_->setText(values);
}
QString SizingView::status() const { return status_->text(); }

std::string SizingView::sloText() const {
  std::string s;
  auto add = [&](const std::string& part) { s += (s.empty() ? "" : ",") + part; };
  if (ttft_->value() > 0) add("ttft_p99=" + sim::config::format_double(ttft_->value()) + "ms");
  if (tpot_->value() > 0) add("tpot_p99=" + sim::config::format_double(tpot_->value()) + "ms");
  add("timeout_rate=" + sim::config::format_double(timeout_->value()) + "%");
  add("reject_rate=" + sim::config::format_double(reject_->value()) + "%");
  return s;
}

std::string SizingView::cliCommand(std::size_t i) const {
  // The scenario file the window edits (the built-in default needs none); the panel's edits
  // follow as --set lines.
  const sim::ScenarioSource src = source_();
  std::string c = "kvfleet size";
  if (std::filesystem::is_regular_file(src.name)) c += " '" + src.name + "'";
  c += " --slo " + sloText() + " --target " + sim::config::format_double(target_->value()) +
       " --metric " + metricName() + " --replicates " + std::to_string(replicates_->value());
  if (price_->value() > 0) c += " --price-per-hour " + sim::config::format_double(price_->value());
  if (i < rows_.size())
    for (const auto& o : rows_[i].overrides) c += " --set '" + o + "'";
  return c;
}

std::string SizingView::metricName() const {
  static const char* const names[] = {"arrival_rate", "users", "output_tokens_per_s"};
  return names[std::clamp(metric_->currentIndex(), 0, 2)];
}

bool SizingView::size() {
  if (running_) return false;
  if (worker_.joinable()) worker_.join();
  std::vector<sim::Slo> slo;
  try {
    slo = sim::parse_slo(sloText());
  } catch (const sim::InputError& e) {
    status_->setText(QString("The SLO is refused: ") + e.what());
    return false;
  }
  sim::SizingOptions opt;
  opt.target = target_->value();
  opt.load = metricName();
  opt.replicates = replicates_->value();
  opt.price_per_hour = price_->value() > 0 ? price_->value() : -1;
  const std::vector<std::string> base = overrides_();
  rows_.clear();
  const std::string key = key_->text().trimmed().toStdString();
  std::stringstream values(values_->text().toStdString());
  for (std::string v; std::getline(values, v, ',');) {
    const auto a = v.find_first_not_of(' '), b = v.find_last_not_of(' ');
    if (a == std::string::npos) continue;
    v = v.substr(a, b - a + 1);
    rows_.push_back({value_label(key, v), variant_overrides(base, key, v), {}, ""});
  }
  if (rows_.empty()) rows_.push_back({"this scenario", base, {}, ""});
  if (!key.empty() && rows_.size() > 6) {
    status_->setText("At most 6 values to compare.");
    rows_.clear();
    return false;
  }
  fill();
  stop_ = false;
  running_ = true;
  run_->setText("Cancel");
  status_->setText("Sizing " + QString::number(rows_.size()) + " variant(s)...");
  const sim::ScenarioSource source = source_();
  std::vector<Row> todo = rows_;
  worker_ = std::thread([this, source, slo, opt, todo]() mutable {
    for (std::size_t i = 0; i < todo.size() && !stop_; ++i) {
      sim::SizingOptions o = opt;
      o.sets = todo[i].overrides;
      o.poll = [this] {
        if (stop_) throw Stopped{};
      };
      Row row = todo[i];
      try {
        row.result = sim::find_replicas(source, slo, o);
      } catch (const Stopped&) {
        break;
      } catch (const sim::InputError& e) {
        row.error = std::string("this variant is refused: ") + e.problem() +
                    (e.key().empty() ? "" : " (" + e.key() + ")");
      } catch (const std::exception& e) {
        row.error = std::string("failed: ") + e.what();
      }
      QMetaObject::invokeMethod(
          this,
          [this, i, row] {
            if (i < rows_.size()) rows_[i] = row;
            fill();
          },
          Qt::QueuedConnection);
    }
    QMetaObject::invokeMethod(
        this,
        [this] {
          running_ = false;
          run_->setText("Size");
          status_->setText(stop_ ? "Cancelled."
                                 : "Done: kvfleet size's search (each row's command line is "
                                   "in its tooltip).");
          Q_EMIT finished();
        },
        Qt::QueuedConnection);
  });
  return true;
}

void SizingView::cancel() { stop_ = true; }

void SizingView::fill() {
  table_->setRowCount(static_cast<int>(rows_.size()));
  for (std::size_t i = 0; i < rows_.size(); ++i) {
    const Row& r = rows_[i];
    const sim::SizingResult& z = r.result;
    const bool done = !r.error.empty() || z.replicas > 0 || !z.not_met.empty();
    auto cell = [&](int col, const QString& text) {
      auto* item = new QTableWidgetItem(text);
      item->setToolTip(text);
      table_->setItem(static_cast<int>(i), col, item);
    };
    cell(0, QString::fromStdString(r.label));
    table_->item(static_cast<int>(i), 0)
        ->setToolTip("The same answer from the command line:\n" +
                     QString::fromStdString(cliCommand(i)));
    if (!r.error.empty()) {
      cell(1, "refused");
      for (int c = 2; c < 7; ++c) cell(c, "—");
      cell(7, QString::fromStdString(r.error));
      cell(8, "");
      continue;
    }
    if (!done) {
      for (int c = 1; c < 9; ++c) cell(c, c == 1 ? "…" : "");
      continue;
    }
    if (!z.not_met.empty()) {
      cell(1, "not met");
      for (int c = 2; c < 7; ++c) cell(c, "—");
      cell(7, QString::fromStdString(z.not_met));
      cell(8, QString::fromStdString(z.expected.describe()));
      continue;
    }
    cell(1, QString::number(z.replicas));
    cell(2, QString::number(z.gpus));
    // What the fleet served at the answer, whatever the load's unit: users become requests/s
    // and tokens/s here (the run's own throughput, drain included), as kvfleet size prints it.
    auto rate = [](double x) {
      return x >= 1000 ? QLocale().toString(x, 'f', 0) : QString::number(x, 'g', 4);
    };
    cell(3, QString("%1 requests/s, %2 output tokens/s")
                .arg(rate(z.requests_per_s))
                .arg(rate(z.output_tokens_per_s)));
    if (z.output_tokens_per_request > 0)  // a tokens/s target: the rate it became, and why
      table_->item(static_cast<int>(i), 3)
          ->setToolTip(QString("Sized for %1 requests/s: %2 output tokens/s at %3 output tokens "
                               "per request (the mean of the %4 requests that completed, of "
                               "%5, in one run at the panel's settings)")
                           .arg(rate(z.target))
                           .arg(rate(z.target_output_tokens_per_s))
                           .arg(z.output_tokens_per_request, 0, 'g', 4)
                           .arg(z.measured_completed)
                           .arg(z.measured_arrived));
    table_->item(static_cast<int>(i), 3)->setData(kNumberRole, z.requests_per_s);
    cell(4, money(z.cost_per_hour));
    cell(5, money(z.cost_per_month));
    cell(6, money(z.usd_per_million_output_tokens));
    // Where the price comes from (the panel, the scenario, or the preset's sourced list price).
    for (int c = 4; c <= 6; ++c) {
      QTableWidgetItem* item = table_->item(static_cast<int>(i), c);
      item->setToolTip(item->text() + (z.price_per_hour > 0
                                           ? QString(" at $%1 per GPU-hour: %2")
                                                 .arg(z.price_per_hour, 0, 'f', 2)
                                                 .arg(QString::fromStdString(z.price_source))
                                           : QString(" (no price: enter one)")));
    }
    if (z.price_per_hour > 0) {
      table_->item(static_cast<int>(i), 4)->setData(kNumberRole, z.cost_per_hour);
      table_->item(static_cast<int>(i), 5)->setData(kNumberRole, z.cost_per_month);
      table_->item(static_cast<int>(i), 6)->setData(kNumberRole, z.usd_per_million_output_tokens);
    }
    cell(7, QString::fromStdString(z.limited_by));
    cell(8, QString::fromStdString(z.expected.describe()));
  }
  table_->resizeColumnsToContents();
}

}  // namespace kvfleet::gui
