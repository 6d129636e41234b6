#pragma once
// Compare mode: the architect's question in one chart. One scenario key takes two to six values
// (context policy full / window / summarize, max_num_seqs 32 / 128, ...); each value runs its own
// load sweep on background threads and becomes one curve family, labelled by the value. A metric
// chooser switches every curve at once, and each variant's capacity at the SLO (latency and
// rejected share) is estimated from its points.
#include <QtCore/QObject>
#include <QtCore/QString>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gui/app/load_sweep.h"
#include "sim/metrics/summary.h"

namespace kvfleet::gui {

// A quantity of a load point to draw: a latency (seconds) or a share of the requests (%).
struct CompareMetric {
  QString name;  // "TTFT p99", "Goodput"
  bool latency;  // seconds (log axis, SLO line) or percent
  double (*get)(const sim::Summary&);
  QString axis_label() const { return name + (latency ? " (s)" : " (%)"); }
};
const std::vector<CompareMetric>& compare_metrics();
const CompareMetric* find_compare_metric(const QString& name);

// part as a percentage of whole (0 when whole is 0): shares of the requests that arrived.
double percent_of(std::int64_t part, std::int64_t whole);
// The share of the requests that arrived and were refused: rejected or timed out (%).
double refused_percent(const sim::Summary& s);
// The rejected share the capacity table's SLO allows by default (%; the panel's "Refused at
// most" changes it).
inline constexpr double kCapacityMaxRejectPct = 1.0;
// True for a key that names a component's implementation (workload.context_policy.impl).
inline bool is_impl_key(const std::string& key) { return key.ends_with(".impl"); }

// The capacity of one variant at the SLO, read from its load points: the highest load at which
// the latency stays within slo_s and the rejected share within max_reject_pct, interpolated
// between the last point that meets both and the first that does not (on a log scale for a
// latency, which grows steeply near saturation; linearly for the rejected share). `lo`, `hi`: the
// two points it lies between. `below` / `beyond`: the lowest load already misses / every load
// meets it (then `value` is that load).
struct CapacityEstimate {
  bool known = false;  // some point finished
  bool below = false, beyond = false;
  double value = 0, lo = 0, hi = 0;
  std::string limited_by;        // "latency", "rejections" or ""
  double cost_per_m_tokens = 0;  // at the last point that meets the SLO (NaN when none)
  // The window's table: `value` is kvfleet capacity's bisection (MainWindow::variantCapacity),
  // not read off the grid; `searched` says why there is none ("none: ...", "search failed: ...").
  bool bisected = false;
  std::string searched;
};
CapacityEstimate estimate_capacity(const std::vector<LoadPoint>& points,
                                   const CompareMetric& latency, double slo_s,
                                   double max_reject_pct);

// The --set overrides of one variant: the base overrides with `key=value` last; for an `impl`
// key the base overrides of that section go (they belong to the implementation shown now).
// The panel's own edits go through it too.
std::vector<std::string> variant_overrides(const std::vector<std::string>& base,
                                           const std::string& key, const std::string& value);

// The variants' load sweeps, run together (each on its share of the cores).
class CompareRun : public QObject {
  Q_OBJECT
 public:
  struct Variant {
    std::string value, label;
    std::vector<std::string> overrides;  // what it runs with (--set lines)
    std::unique_ptr<LoadSweep> sweep;
  };
  explicit CompareRun(QObject* parent = nullptr) : QObject(parent) {}
  ~CompareRun() override { reset(); }
  // One variant: its label and the --set overrides it runs with (variant_overrides for a
  // compared value, a pin's own settings for a pinned run).
  struct Spec {
    std::string label;
    std::vector<std::string> overrides;
    std::string value;  // the compared value (a pinned run: its label)
  };
  // Starts one sweep per variant; false (nothing started) while a comparison runs or when
  // there are none or more than six variants (the window asks for two to six values, and runs
  // those its scenario accepts). `what` names what differs.
  bool start(const std::string& yaml, const std::string& base_dir, const std::string& what,
             const std::vector<Spec>& specs, const std::string& load_key, double base_load,
             const std::vector<double>& factors);
  void cancel();
  void reset();  // cancels, waits, forgets every variant
  bool running() const;
  const std::string& key() const { return key_; }
  const std::vector<Variant>& variants() const { return variants_; }

 Q_SIGNALS:
  void changed();   // a point finished somewhere
  void finished();  // every variant is done

 private:
  std::string key_;
  std::vector<Variant> variants_;
};

}  // namespace kvfleet::gui
