#include "sim/fleet/router.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <list>
#include <map>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "sim/core/rng.h"
#include "sim/engine/block_hash.h"

namespace kvfleet::sim {
namespace {

struct NoParams {
  template <class V>
  void visit(V&) {}
};

class RoundRobin final : public Router {
 public:
  using Config = NoParams;
  RoundRobin(const Config&, std::uint64_t) {}
  std::size_t pick(const RequestSpec&, std::span<const ReplicaLoad> r) override {
    return next_++ % r.size();
  }

 private:
  std::size_t next_ = 0;
};

class RandomRouter final : public Router {
 public:
  using Config = NoParams;
  RandomRouter(const Config&, std::uint64_t seed) : rng_(seed, "router.random") {}
  std::size_t pick(const RequestSpec&, std::span<const ReplicaLoad> r) override {
    return rng_.below(r.size());
  }

 private:
  RngStream rng_;
};

// The smallest value of `key`; ties go to the lowest index.
template <class F>
std::size_t argmin(std::span<const ReplicaLoad> r, F key) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < r.size(); ++i)
    if (key(r[i]) < key(r[best])) best = i;
  return best;
}

class LeastOutstanding final : public Router {
 public:
  using Config = NoParams;
  LeastOutstanding(const Config&, std::uint64_t) {}
  std::size_t pick(const RequestSpec&, std::span<const ReplicaLoad> r) override {
    return argmin(r, [](const ReplicaLoad& x) { return x.outstanding(); });
  }
};

class LeastKvUsage final : public Router {
 public:
  using Config = NoParams;
  LeastKvUsage(const Config&, std::uint64_t) {}
  std::size_t pick(const RequestSpec&, std::span<const ReplicaLoad> r) override {
    return argmin(r, [](const ReplicaLoad& x) { return x.kv_usage; });
  }
};

// Two replicas drawn at random; the less loaded one (outstanding requests) wins.
class PowerOfTwo final : public Router {
 public:
  using Config = NoParams;
  PowerOfTwo(const Config&, std::uint64_t seed) : rng_(seed, "router.power_of_two") {}
  std::size_t pick(const RequestSpec&, std::span<const ReplicaLoad> r) override {
    if (r.size() == 1) return 0;
    const std::size_t a = rng_.below(r.size());
    std::size_t b = rng_.below(r.size() - 1);
    if (b >= a) ++b;  // two distinct replicas
    return r[b].outstanding() < r[a].outstanding() ? b : a;
  }

 private:
  RngStream rng_;
};

// Sticky sessions: a session's first request goes to the least loaded replica, later ones follow
// it. Requests without a session go to the least loaded replica.
class SessionAffinity final : public Router {
 public:
  using Config = NoParams;
  SessionAffinity(const Config&, std::uint64_t) {}
  std::size_t pick(const RequestSpec& req, std::span<const ReplicaLoad> r) override {
    const auto least = [&] {
      return argmin(r, [](const ReplicaLoad& x) { return x.outstanding(); });
    };
    if (req.session == 0) return least();
    auto [it, fresh] = home_.try_emplace(req.session, 0);
    if (fresh || it->second >= r.size()) it->second = least();
    return it->second;
  }

 private:
  absl::flat_hash_map<std::uint64_t, std::size_t> home_;
};

// Consistent hashing with bounded loads (Mirrokni, Thorup, Zadimoghaddam 2018): the key (the
// session, else the request) maps to a point on a ring of virtual nodes; the first replica
// clockwise whose load after taking the request stays within c × the mean load takes it.
class BoundedConsistentHash final : public Router {
 public:
  struct Config {
    double load_factor = 1.25;
    int virtual_nodes = 100;
    template <class V>
    void visit(V& v) {
      v.param("load_factor", load_factor,
              {.desc = "c: a replica is eligible while its load <= c × the mean load", .min = 1});
      v.param("virtual_nodes", virtual_nodes,
              {.unit = "points", .desc = "ring points per replica", .min = 1});
    }
  };
  BoundedConsistentHash(const Config& c, std::uint64_t) : c_(c) {}

  std::size_t pick(const RequestSpec& req, std::span<const ReplicaLoad> r) override {
    if (ring_n_ != r.size()) build(r.size());
    const std::uint64_t key =
        mix64(req.session != 0 ? req.session : (1ull << 63) ^ next_anon_++, 0x726F75746572ull);
    // Load counts the request being placed: sum of outstanding + 1, spread over replicas.
    double total = 1;
    for (const auto& x : r) total += x.outstanding();
    // Integer capacity ceil(c × mean), as in the paper, so that some replica always qualifies.
    const double bound = std::ceil(c_.load_factor * total / static_cast<double>(r.size()));
    auto it = ring_.lower_bound(key);
    for (std::size_t step = 0; step < ring_.size(); ++step, ++it) {
      if (it == ring_.end()) it = ring_.begin();
      const std::size_t i = it->second;
      if (r[i].outstanding() + 1 <= bound) return i;
    }
    return argmin(r, [](const ReplicaLoad& x) { return x.outstanding(); });
  }

 private:
  void build(std::size_t n) {
    ring_.clear();
    for (std::size_t i = 0; i < n; ++i)
      for (int v = 0; v < c_.virtual_nodes; ++v)
        ring_.emplace(mix64(static_cast<std::uint64_t>(i) * 1000003ull + v, 0x72696E67ull), i);
    ring_n_ = n;
  }
  Config c_;
  std::map<std::uint64_t, std::size_t> ring_;
  std::size_t ring_n_ = 0;
  std::uint64_t next_anon_ = 0;
};

// Prefix-cache-aware weighted scoring, as the Kubernetes Gateway API Inference Extension's
// default scorers: queue score (maxQ − q) / (maxQ − minQ) × 2, KV score (1 − usage) × 2, prefix
// score matched blocks / prompt blocks × 3; the highest total wins, ties at random. The prefix
// index is the router's own (approximate): for each replica, an LRU of the block hashes it sent
// there, of bounded capacity, as the extension's approximate prefix cache plugin keeps.
class PrefixAware final : public Router {
 public:
  struct Config {
    double queue_weight = 2, kv_weight = 2, prefix_weight = 3;
    std::int64_t index_blocks = 100000;
    int block_size = 16;
    template <class V>
    void visit(V& v) {
      v.param("queue_weight", queue_weight, {.desc = "weight of the queue score", .min = 0});
      v.param("kv_weight", kv_weight, {.desc = "weight of the KV-usage score", .min = 0});
      v.param("prefix_weight", prefix_weight,
              {.desc = "weight of the prefix-match score", .min = 0});
      v.param("index_blocks", index_blocks,
              {.unit = "blocks", .desc = "prefix index capacity per replica (LRU)", .min = 1});
      v.param("block_size", block_size,
              {.unit = "tokens", .desc = "tokens per hashed block (match the engines')", .min = 1});
    }
  };
  PrefixAware(const Config& c, std::uint64_t seed) : c_(c), rng_(seed, "router.prefix_aware") {}

  std::size_t pick(const RequestSpec& req, std::span<const ReplicaLoad> r) override {
    if (index_.size() != r.size()) index_.resize(r.size());
    hashes_.clear();
    if (!req.segments.empty() && req.segments.front().content != 0) {
      BlockHasher h;
      h.reset(req.segments, 0, req.tenant, c_.block_size);
      h.extend(hashes_, req.input_tokens / c_.block_size, req.input_tokens);
    }
    const double total_blocks = std::max<double>(1.0, req.input_tokens / c_.block_size);
    std::int32_t qmin = INT32_MAX, qmax = 0;
    for (const auto& x : r)
      qmin = std::min(qmin, x.outstanding()), qmax = std::max(qmax, x.outstanding());
    double best = -1;
    std::vector<std::size_t>& ties = ties_;
    ties.clear();
    for (std::size_t i = 0; i < r.size(); ++i) {
      const double q =
          qmax > qmin ? static_cast<double>(qmax - r[i].outstanding()) / (qmax - qmin) : 1.0;
      std::size_t matched = 0;
      while (matched < hashes_.size() && index_[i].contains(hashes_[matched])) ++matched;
      const double score = c_.queue_weight * q + c_.kv_weight * (1 - r[i].kv_usage) +
                           c_.prefix_weight * static_cast<double>(matched) / total_blocks;
      if (score > best + 1e-12) {
        best = score;
        ties.assign(1, i);
      } else if (score > best - 1e-12) {
        ties.push_back(i);
      }
    }
    const std::size_t pick = ties.size() == 1 ? ties[0] : ties[rng_.below(ties.size())];
    for (auto h : hashes_) index_[pick].touch(h, c_.index_blocks);
    return pick;
  }

 private:
  // An LRU set of block hashes.
  struct Lru {
    std::list<std::uint64_t> order;  // most recent at the back
    absl::flat_hash_map<std::uint64_t, std::list<std::uint64_t>::iterator> where;
    bool contains(std::uint64_t h) const { return where.contains(h); }
    void touch(std::uint64_t h, std::int64_t capacity) {
      if (auto it = where.find(h); it != where.end()) {
        order.splice(order.end(), order, it->second);
        return;
      }
      if (static_cast<std::int64_t>(order.size()) >= capacity) {
        where.erase(order.front());
        order.pop_front();
      }
      order.push_back(h);
      where[h] = std::prev(order.end());
    }
  };
  Config c_;
  RngStream rng_;
  std::vector<Lru> index_;
  std::vector<std::uint64_t> hashes_;
  std::vector<std::size_t> ties_;
};

}  // namespace

const RouterRegistry& router_registry() {
  static const RouterRegistry reg = [] {
    RouterRegistry r("router", "round_robin");
    r.add<RoundRobin>("round_robin", "Replicas in turn.");
    r.add<RandomRouter>("random", "A replica drawn uniformly at random.");
    r.add<LeastOutstanding>("least_outstanding", "Fewest running + waiting requests.");
    r.add<LeastKvUsage>("least_kv_usage", "Lowest KV cache usage.");
    r.add<PowerOfTwo>("power_of_two", "Two replicas at random; the one with fewer outstanding.");
    r.add<SessionAffinity>("session_affinity",
                           "Sticky sessions: a session stays on the replica of its first request.");
    r.add<BoundedConsistentHash>(
        "consistent_hash",
        "Consistent hashing of sessions with bounded loads: walk the ring past full replicas.");
    r.add<PrefixAware>("prefix_aware",
                       "Weighted scores of queue, KV usage and prefix match (Gateway API Inference "
                       "Extension), with a router-side approximate prefix index.");
    return r;
  }();
  return reg;
}

}  // namespace kvfleet::sim
