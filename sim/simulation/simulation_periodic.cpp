// Simulation's periodic events: metrics scrapes and time-series samples, paused while the fleet
// is quiet (nothing in flight) and caught up, sample by sample, when it wakes.
#include "sim/simulation/simulation.h"

#include <algorithm>
#include <cstdint>

#include "sim/fleet/lifecycle.h"

namespace kvfleet::sim {

bool Simulation::quiet() const {
  if (client_->pending() || (disaggregation_ && disaggregation_->pending()) ||
      !in_frontend_.empty())
    return false;
  for (const auto& r : replicas_)
    if (!r->idle()) return false;
  for (const auto& p : pools_)
    if (!p.gateway->empty()) return false;
  return true;
}

void Simulation::schedule_periodic(Kind kind, SimTime next) {
  if (!fast_forward_idle_ || !quiet()) {
    periodic_event(kind) = queue_.push(next, this, kind);
    return;
  }
  // Both periodic events pause together (the other is taken out of the queue), so that only an
  // event that can change something wakes them.
  (kind == kScrape ? paused_scrape_ : paused_sample_) = {next, std::nullopt};
  const Kind other = kind == kScrape ? kSample : kScrape;
  if (auto e = queue_.remove(periodic_event(other)))
    (other == kScrape ? paused_scrape_ : paused_sample_) = {e->time, e};
  periodic_event(other) = EventId();
  queue_.wake_before_next(this, kWake);
}

void Simulation::resume_periodic(SimTime now) {
  // Each paused event resumes at the first time on its grid at or after `now`. One still due
  // then, taken out of the queue, goes back as it was. One that skipped instants goes back as if
  // pushed at its previous instant: after every event pushed before the fleet went quiet, and,
  // where both land on one instant, the one with the longer interval first (it was pushed
  // earlier), the scrape first when the intervals are equal (the order of run()).
  struct Due {
    Kind kind;
    SimTime at, interval;
  };
  std::vector<Due> due;
  auto first_at_or_after = [&](SimTime next, SimTime interval) {
    return next >= now ? next : next + (now - next + interval - 1) / interval * interval;
  };
  if (paused_scrape_.due != kTimeNever) {
    const SimTime at = first_at_or_after(paused_scrape_.due, scrape_interval_);
    if (at == paused_scrape_.due && paused_scrape_.cancelled) {
      scrape_event_ = queue_.reinsert(*paused_scrape_.cancelled);
    } else {
      // A scrape taken out of the queue and skipped would have seen the fleet at rest.
      if (paused_scrape_.cancelled)
        for (std::size_t p = 0; p < pools_.size(); ++p) scrape(p);
      due.push_back({kScrape, at, scrape_interval_});
    }
  }
  if (paused_sample_.due != kTimeNever) {
    const SimTime first = paused_sample_.due;
    catch_up_samples(paused_sample_, now);
    if (paused_sample_.due == first && paused_sample_.cancelled)
      sample_event_ = queue_.reinsert(*paused_sample_.cancelled);
    else
      due.push_back({kSample, paused_sample_.due, sample_interval_});
  }
  paused_scrape_ = paused_sample_ = Paused{};
  std::stable_sort(due.begin(), due.end(), [](const Due& a, const Due& b) {
    return a.at - a.interval < b.at - b.interval;
  });
  for (const Due& d : due) periodic_event(d.kind) = queue_.push(d.at, this, d.kind);
}

void Simulation::catch_up_samples(Paused& p, SimTime until) {
  // The rows due in [p.due, until) have the values of the fleet at rest (busy and utilisation
  // shares 0 after the first, every other value unchanged). Up to kIdleRowsWritten of them are
  // written as if sampled; a longer idle stretch keeps only its first and last rows, so that
  // forward-filling restores the others and idle time costs nothing.
  if (p.due >= until) return;
  const SimTime rows = (until - 1 - p.due) / sample_interval_ + 1;
  const SimTime last = p.due + (rows - 1) * sample_interval_;
  if (rows <= static_cast<SimTime>(kIdleRowsWritten)) {
    check_timeseries_rows(static_cast<std::size_t>(rows), last);
    for (; p.due <= last; p.due += sample_interval_) sample(p.due);
  } else {
    if (p.cancelled) sample(p.due);  // the stretch's first row was not written yet
    sample(last);
    p.due = last + sample_interval_;
  }
}

void Simulation::check_timeseries_rows(std::size_t more_samples, SimTime at) const {
  if (more_samples <= kMaxTimeseriesRows &&
      timeseries_rows_ + more_samples * replicas_.size() <= kMaxTimeseriesRows)
    return;
  throw InputError("simulation.timeseries_interval_s", "",
                   "the time series would hold more than " + std::to_string(kMaxTimeseriesRows) +
                       " rows (all " + std::to_string(replicas_.size()) +
                       " replicas) by simulated time " +
                       std::to_string(static_cast<long long>(to_seconds(at))) +
                       " s: raise the interval, or end the run earlier with "
                       "simulation.max_time_s");
}

void Simulation::sample(SimTime now) {
  check_timeseries_rows(1, now);
  timeseries_rows_ += replicas_.size();
  for (std::size_t i = 0; i < replicas_.size(); ++i) {
    const Replica& r = *replicas_[i];
    TimeSeries& ts = series_[i];
    ts.t_s.push_back(to_seconds(now));
    ts.num_requests_running.push_back(r.num_requests_running());
    ts.num_requests_waiting.push_back(r.num_requests_waiting());
    ts.kv_cache_usage.push_back(r.kv_cache_usage());
    ts.kv_tokens_held.push_back(r.kv_tokens_held());
    ts.kv_tokens_allocated.push_back(r.kv_tokens_allocated());
    ts.num_preemptions.push_back(r.stats().num_preemptions);
    ts.prompt_tokens.push_back(r.stats().prompt_tokens);
    ts.generation_tokens.push_back(r.stats().generation_tokens);
    ts.available.push_back(lifecycle_->up(NodeId{i}));
    Cumulative& last = last_sample_[i];
    const EngineStats& st = r.stats();
    const double dt = to_seconds(now) - last.t_s;
    // A step is counted whole in the interval it starts in: clip the overhang at 1.
    auto share = [&](double now_s, double then_s) {
      return dt > 0 ? std::min(1.0, (now_s - then_s) / dt) : 0.0;
    };
    ts.busy_fraction.push_back(share(st.busy_s, last.busy_s));
    ts.compute_utilization.push_back(share(st.compute_s_at_peak, last.compute_s));
    ts.memory_bandwidth_utilization.push_back(share(st.memory_s_at_peak, last.memory_s));
    ts.kv_used_bytes.push_back(static_cast<double>(r.kv_tokens_allocated()) *
                               r.memory().kv_bytes_per_token);
    last = {to_seconds(now), st.busy_s, st.compute_s_at_peak, st.memory_s_at_peak};
  }
}

}  // namespace kvfleet::sim
