#pragma once
// Per-tenant fair share (start-time fair queuing over tokens): a waiting request's key is its
// tenant's service so far, the tokens the engine has computed for that tenant (prefill chunks and
// decode tokens), so the tenant served least goes next, ties by arrival. A tenant with nothing in
// the engine starts, when a request of it arrives, at no less than the least service among the
// tenants that have requests in the engine: time spent idle banks no credit, and a tenant that
// returns cannot shut the others out. Under KV pressure the newest running request of the
// most-served tenant is preempted. A flooding tenant no longer makes a light one wait behind its
// queue; total throughput is the same work in another order. Keys follow the service as it
// grows (rekeys). An example of a stateful policy: this file and one line in scheduler.cpp.
#include <algorithm>
#include <limits>
#include <unordered_map>

#include "sim/engine/scheduler.h"

namespace kvfleet::sim {

class FairShare final : public SchedulingPolicy {
 public:
  struct Config {
    template <class V>
    void visit(V&) {}
  };
  explicit FairShare(const Config&) {}
  Order order() const override { return Order::kKeyed; }
  bool stateful() const override { return true; }
  bool rekeys() const override { return true; }

  std::int64_t key(const SchedView& r) override { return tenants_[r.tenant].served; }

  void on_arrive(const SchedView& r) override {
    Tenant& t = tenants_[r.tenant];
    if (t.in_engine == 0) t.served = std::max(t.served, least_active_service());
    ++t.in_engine;
  }
  void on_scheduled(const SchedView& r, std::int64_t tokens) override {
    tenants_[r.tenant].served += tokens;
  }
  void on_finish(const SchedView& r) override {
    Tenant& t = tenants_[r.tenant];
    if (t.in_engine > 0) --t.in_engine;
  }
  void reset() override { tenants_.clear(); }

  std::size_t victim(std::span<const SchedView> running) override {
    std::size_t v = running.size() - 1;
    for (std::size_t i = running.size(); i-- > 0;)
      if (tenants_[running[i].tenant].served > tenants_[running[v].tenant].served) v = i;
    return v;
  }

 private:
  struct Tenant {
    std::int64_t served = 0;     // tokens computed for the tenant
    std::int64_t in_engine = 0;  // its requests waiting or running
  };
  // The least service among tenants with requests in the engine (0 when none has).
  std::int64_t least_active_service() const {
    std::int64_t m = std::numeric_limits<std::int64_t>::max();
    for (const auto& [id, t] : tenants_)
      if (t.in_engine > 0) m = std::min(m, t.served);
    return m == std::numeric_limits<std::int64_t>::max() ? 0 : m;
  }
  std::unordered_map<std::uint32_t, Tenant> tenants_;
};

}  // namespace kvfleet::sim
