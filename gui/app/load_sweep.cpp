#include "gui/app/load_sweep.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <stdexcept>

#include <QtCore/QMetaObject>
#include <QtCore/QStringList>

#include "sim/config/params.h"
#include "sim/simulation/scenario.h"
#include "sim/sweep/capacity.h"
#include "sim/sweep/point_runner.h"

namespace kvfleet::gui {

LoadSweep::LoadSweep(QObject* parent) : QObject(parent) {}

LoadSweep::~LoadSweep() {
  cancel();
  join();
}

void LoadSweep::join() {
  if (worker_.joinable()) worker_.join();
}

bool LoadSweep::start(const std::string& yaml, const std::string& base_dir,
                      const std::vector<std::string>& overrides, const std::string& key,
                      double base_load, const std::vector<double>& factors, int threads) {
  if (running_) return false;
  join();
  key_ = key;
  {
    std::lock_guard<std::mutex> lock(mu_);
    points_.assign(factors.size(), {});
    for (std::size_t i = 0; i < factors.size(); ++i) points_[i].load = base_load * factors[i];
  }
  cancel_ = std::make_shared<sim::CancelToken>();
  running_ = true;
  // The runner blocks: it runs on a thread of its own, so that the GUI thread stays free; points
  // arrive through queued signals.
  worker_ = std::thread([this, yaml, base_dir, overrides, threads, cancel = cancel_] {
    const int n = static_cast<int>(points_.size());
    std::atomic<int> done{0};
    sim::PointRunnerOptions ro;
    ro.threads = threads;
    ro.cancel = cancel.get();
    sim::run_points(
        static_cast<std::size_t>(n),
        [&](std::size_t i) {
          if (!runPoint(i, yaml, base_dir, overrides, cancel.get())) return;  // cancelled
          const int d = ++done;
          Q_EMIT pointDone(static_cast<int>(i));
          Q_EMIT progress(d, n);
        },
        ro);
    running_ = false;
    Q_EMIT finished(cancel->cancelled());
  });
  return true;
}

bool LoadSweep::runPoint(std::size_t i, const std::string& yaml, const std::string& base_dir,
                         const std::vector<std::string>& overrides, sim::CancelToken* cancel) {
  LoadPoint p;
  {
    std::lock_guard<std::mutex> lock(mu_);
    p = points_[i];
  }
  try {
    std::vector<std::string> o = overrides;
    o.push_back(key_ + "=" + sim::config::format_double(p.load));
    const sim::Scenario sc = sim::load_scenario_text(yaml, "<gui>", base_dir, o);
    // A load the workload cannot offer is not run as if it could: closed-loop users
    // beyond its conversations have nothing to send, so every such point would be the
    // same run, marked as if it held more users.
    const YAML::Node& w = sc.config.workload.params;
    if (const double cap = sim::load_cap(sc, key_); p.load > cap)
      throw std::runtime_error(
          "load beyond the workload: " + sim::config::format_double(p.load) + " users but only " +
          sim::config::format_double(cap) +
          " conversations (num_sessions), so the extra users would have nothing to send; "
          "raise num_sessions or lower the load");
    sim::Simulation s(sc);
    s.set_cancel(cancel);
    {
      std::lock_guard<std::mutex> lock(mu_);
      points_[i].started = true;
      try {
        if (w["num_requests"] && w["num_requests"].IsScalar())
          points_[i].requests_total =
              static_cast<std::size_t>(std::max(0.0, w["num_requests"].as<double>()));
      } catch (const YAML::Exception&) {
        // Not a number the workload takes as a count: progress by points only.
      }
    }
    s.on_progress([this, i](sim::SimTime now, std::size_t requests) {
      std::lock_guard<std::mutex> lock(mu_);
      if (i < points_.size()) {
        points_[i].simulated_s = sim::to_seconds(now);
        points_[i].requests_so_far = requests;
      }
    });
    sim::RunResult r = s.run();
    if (r.cancelled) return false;
    p.summary = sim::summarize(r);
    p.timeseries = std::move(r.timeseries);
    p.replicas = std::move(r.replicas);
    p.ok = true;
  } catch (const std::exception& e) {
    p.error = e.what();
  }
  p.done = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    points_[i] = std::move(p);
  }
  return true;
}

double LoadSweep::doneFraction() const {
  std::lock_guard<std::mutex> lock(mu_);
  double done = 0;
  for (const auto& p : points_) {
    if (p.done) {
      done += 1;
    } else if (p.started && p.requests_total > 0) {
      done += std::min(
          0.99, static_cast<double>(p.requests_so_far) / static_cast<double>(p.requests_total));
    }
  }
  return done;
}

QString LoadSweep::describeProgress() const {
  std::lock_guard<std::mutex> lock(mu_);
  int done = 0;
  QStringList running;
  for (const auto& p : points_) {
    if (p.done) {
      ++done;
    } else if (p.started) {
      running << QString("load %1 at %2 s simulated (%3 requests)")
                     .arg(p.load, 0, 'g', 4)
                     .arg(p.simulated_s, 0, 'f', 0)
                     .arg(p.requests_so_far);
    }
  }
  QString s = QString("%1 of %2 loads done").arg(done).arg(points_.size());
  if (!running.isEmpty()) s += "; running: " + running.join(", ");
  return s;
}

void LoadSweep::cancel() {
  if (cancel_) cancel_->cancel();
}

void LoadSweep::reset() {
  cancel();
  join();  // the runs stop at their next event check
  std::lock_guard<std::mutex> lock(mu_);
  points_.clear();
  key_.clear();
}

std::vector<LoadPoint> LoadSweep::points() const {
  std::lock_guard<std::mutex> lock(mu_);
  return points_;
}

}  // namespace kvfleet::gui
