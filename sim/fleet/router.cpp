#include "sim/fleet/router.h"

#include "sim/core/rng.h"
#include "sim/engine/replica.h"

namespace kvfleet::sim {
namespace {

class RoundRobin final : public Router {
 public:
  struct Config {
    template <class V>
    void visit(V&) {}
  };
  RoundRobin(const Config&, std::uint64_t) {}
  std::size_t pick(const RequestSpec&, std::span<Replica* const> r) override {
    return next_++ % r.size();
  }

 private:
  std::size_t next_ = 0;
};

class RandomRouter final : public Router {
 public:
  struct Config {
    template <class V>
    void visit(V&) {}
  };
  RandomRouter(const Config&, std::uint64_t seed) : rng_(seed, "router.random") {}
  std::size_t pick(const RequestSpec&, std::span<Replica* const> r) override {
    return rng_.below(r.size());
  }

 private:
  RngStream rng_;
};

// Fewest running + waiting requests; ties go to the lowest index.
class LeastOutstanding final : public Router {
 public:
  struct Config {
    template <class V>
    void visit(V&) {}
  };
  LeastOutstanding(const Config&, std::uint64_t) {}
  std::size_t pick(const RequestSpec&, std::span<Replica* const> r) override {
    std::size_t best = 0;
    int best_load = INT32_MAX;
    for (std::size_t i = 0; i < r.size(); ++i) {
      const int load = r[i]->num_requests_running() + r[i]->num_requests_waiting();
      if (load < best_load) best_load = load, best = i;
    }
    return best;
  }
};

}  // namespace

const RouterRegistry& router_registry() {
  static const RouterRegistry reg = [] {
    RouterRegistry r("router", "round_robin");
    r.add<RoundRobin>("round_robin", "Replicas in turn.");
    r.add<RandomRouter>("random", "A replica drawn uniformly at random.");
    r.add<LeastOutstanding>("least_outstanding",
                            "Fewest running + waiting requests (current signals).");
    return r;
  }();
  return reg;
}

}  // namespace kvfleet::sim
