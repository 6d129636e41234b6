#include "gui/app/load_sweep.h"

#include <QtCore/QMetaObject>

#include "sim/config/params.h"
#include "sim/simulation/scenario.h"

namespace kvfleet::gui {

namespace {
struct Cancelled {};
}  // namespace

LoadSweep::LoadSweep(QObject* parent) : QObject(parent) {}

LoadSweep::~LoadSweep() {
  cancel_ = true;
  join();
}

void LoadSweep::join() {
  for (auto& t : workers_) {
    if (t.joinable()) t.join();
  }
  workers_.clear();
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
  cancel_ = false;
  next_ = 0;
  done_ = 0;
  running_ = true;
  const int n = static_cast<int>(factors.size());
  const int nthreads = std::max(
      1,
      std::min(n, threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency())));
  live_ = nthreads;
  for (int t = 0; t < nthreads; ++t) {
    workers_.emplace_back([this, yaml, base_dir, overrides, n] {
      for (int i = next_++; i < n && !cancel_; i = next_++) {
        LoadPoint p;
        {
          std::lock_guard<std::mutex> lock(mu_);
          p = points_[i];
        }
        try {
          std::vector<std::string> o = overrides;
          o.push_back(key_ + "=" + sim::config::format_double(p.load));
          const sim::Scenario sc = sim::load_scenario_text(yaml, "<gui>", base_dir, o);
          sim::Simulation s(sc);
          s.on_progress([this](sim::SimTime, std::size_t) {
            if (cancel_) throw Cancelled{};
          });
          sim::RunResult r = s.run();
          p.summary = sim::summarize(r);
          p.timeseries = std::move(r.timeseries);
          p.replicas = std::move(r.replicas);
          p.ok = true;
        } catch (const Cancelled&) {
          break;
        } catch (const std::exception& e) {
          p.error = e.what();
        }
        p.done = true;
        {
          std::lock_guard<std::mutex> lock(mu_);
          points_[i] = std::move(p);
        }
        const int d = ++done_;
        Q_EMIT pointDone(i);
        Q_EMIT progress(d, n);
      }
      if (--live_ == 0) {
        running_ = false;
        Q_EMIT finished(cancel_.load());
      }
    });
  }
  return true;
}

void LoadSweep::cancel() { cancel_ = true; }

std::vector<LoadPoint> LoadSweep::points() const {
  std::lock_guard<std::mutex> lock(mu_);
  return points_;
}

}  // namespace kvfleet::gui
