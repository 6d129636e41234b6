#pragma once
// The compare table's capacities by kvfleet capacity's own search (sim/sweep/capacity.h,
// find_capacity): for each compared variant, bisection to the load at which the SLO line and the
// refused share stop holding, on a background thread, so that the table does not depend on the
// load grid (it read 135.4 users off a 150 grid and 123.3 off a 300 one) and says what `kvfleet
// capacity` says for the same settings.
#include <QtCore/QObject>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "sim/simulation/scenario.h"
#include "sim/sweep/capacity.h"

namespace kvfleet::gui {

class CapacitySearch : public QObject {
  Q_OBJECT
 public:
  explicit CapacitySearch(QObject* parent = nullptr) : QObject(parent) {}
  ~CapacitySearch() override { stop(); }

  struct Answer {
    bool done = false;
    sim::CapacityResult result;
    std::string error;  // the variant's refusal or failure, in words
  };
  // Searches every variant (its --set overrides) under `slo` (parse_slo's text) varying `key`
  // (users: whole numbers). Stops a search already running. One seed (the scenario's), no
  // step-time sensitivity: the comparison's own settings.
  void start(const sim::ScenarioSource& source, std::vector<std::vector<std::string>> variants,
             const std::string& slo, const std::string& key);
  void stop();  // cancels and waits
  void clear();
  bool running() const { return running_; }
  const std::vector<Answer>& answers() const { return answers_; }
  // The SLO and key the answers are for (empty before any search).
  const std::string& slo() const { return slo_; }
  const std::string& key() const { return key_; }
  // kvfleet capacity's command line for variant i (the scenario file, its overrides).
  std::string command(std::size_t i, const std::string& scenario_path) const;

 Q_SIGNALS:
  void changed();  // an answer arrived
  void finished();

 private:
  std::vector<Answer> answers_;
  std::vector<std::vector<std::string>> variants_;
  std::string slo_, key_;
  std::thread worker_;
  std::atomic<bool> stop_{false};
  bool running_ = false;
  int generation_ = 0;  // GUI thread only
};

}  // namespace kvfleet::gui
