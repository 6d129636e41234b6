#include "gui/app/capacity_search.h"

#include "sim/core/error.h"

namespace kvfleet::gui {
namespace {
struct Stopped {};
}  // namespace

void CapacitySearch::stop() {
  stop_ = true;
  if (worker_.joinable()) worker_.join();
  running_ = false;
  ++generation_;  // what the stopped search still has queued is dropped
}

void CapacitySearch::clear() {
  stop();
  answers_.clear();
  variants_.clear();
  slo_.clear();
  key_.clear();
}

void CapacitySearch::start(const sim::ScenarioSource& source,
                           std::vector<std::vector<std::string>> variants, const std::string& slo,
                           const std::string& key) {
  stop();
  variants_ = std::move(variants);
  answers_.assign(variants_.size(), {});
  slo_ = slo;
  key_ = key;
  stop_ = false;
  const int gen = generation_;
  running_ = true;
  std::vector<sim::Slo> targets;
  try {
    targets = sim::parse_slo(slo);
  } catch (const sim::InputError& e) {
    for (auto& a : answers_) a = {true, {}, e.what()};
    running_ = false;
    Q_EMIT finished();
    return;
  }
  sim::CapacityOptions opt;
  opt.key = key;
  opt.load = key == "workload.users" ? "users" : "arrival_rate";
  opt.replicates = 1;
  opt.step_time_sensitivity = 0;
  const std::vector<std::vector<std::string>> todo = variants_;
  worker_ = std::thread([this, source, targets, opt, todo, gen] {
    for (std::size_t i = 0; i < todo.size() && !stop_; ++i) {
      sim::CapacityOptions o = opt;
      o.sets = todo[i];
      o.poll = [this] {
        if (stop_) throw Stopped{};
      };
      Answer a;
      a.done = true;
      try {
        a.result = sim::find_capacity(source, targets, o);
      } catch (const Stopped&) {
        break;
      } catch (const sim::InputError& e) {
        a.error = e.what();
      } catch (const std::exception& e) {
        a.error = std::string("failed: ") + e.what();
      }
      QMetaObject::invokeMethod(
          this,
          [this, i, a, gen] {
            if (gen != generation_) return;
            if (i < answers_.size()) answers_[i] = a;
            Q_EMIT changed();
          },
          Qt::QueuedConnection);
    }
    QMetaObject::invokeMethod(
        this,
        [this, gen] {
          if (gen != generation_) return;
          running_ = false;
          Q_EMIT finished();
        },
        Qt::QueuedConnection);
  });
}

std::string CapacitySearch::command(std::size_t i, const std::string& scenario_path) const {
  std::string c = "kvfleet capacity " + scenario_path + " --slo " + slo_ + " --key " + key_ +
                  " --replicates 1 --step-sensitivity 0";
  if (i < variants_.size())
    for (const auto& s : variants_[i]) c += " --set " + s;
  return c;
}

}  // namespace kvfleet::gui
