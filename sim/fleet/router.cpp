#include "sim/fleet/router.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "sim/core/rng.h"
#include "sim/engine/block_hash.h"
#include "sim/fleet/prefix_index.h"

namespace kvfleet::sim {
namespace {

struct NoParams {
  template <class V>
  void visit(V&) {}
};

std::size_t count_available(std::span<const ReplicaLoad> r) {
  std::size_t n = 0;
  for (const auto& x : r) n += x.available;
  return n;
}

// Index of the k-th available replica (k < count_available).
std::size_t nth_available(std::span<const ReplicaLoad> r, std::size_t k) {
  for (std::size_t i = 0; i < r.size(); ++i)
    if (r[i].available && k-- == 0) return i;
  return 0;
}

// The available replica with the smallest value of `key`; ties go to the lowest index.
template <class F>
std::size_t argmin(std::span<const ReplicaLoad> r, F key) {
  std::size_t best = r.size();
  for (std::size_t i = 0; i < r.size(); ++i)
    if (r[i].available && (best == r.size() || key(r[i]) < key(r[best]))) best = i;
  return best == r.size() ? 0 : best;
}

std::size_t least_outstanding(std::span<const ReplicaLoad> r) {
  return argmin(r, [](const ReplicaLoad& x) { return x.outstanding(); });
}

class RoundRobin final : public Router {
 public:
  using Config = NoParams;
  RoundRobin(const Config&, std::uint64_t) {}
  std::size_t pick(const RequestSpec&, std::span<const ReplicaLoad> r) override {
    for (;;) {
      const std::size_t i = next_++ % r.size();
      if (r[i].available) return i;
    }
  }

 private:
  std::size_t next_ = 0;
};

class RandomRouter final : public Router {
 public:
  using Config = NoParams;
  RandomRouter(const Config&, std::uint64_t seed) : rng_(seed, "router.random") {}
  std::size_t pick(const RequestSpec&, std::span<const ReplicaLoad> r) override {
    return nth_available(r, rng_.below(count_available(r)));
  }

 private:
  RngStream rng_;
};

class LeastOutstanding final : public Router {
 public:
  using Config = NoParams;
  LeastOutstanding(const Config&, std::uint64_t) {}
  std::size_t pick(const RequestSpec&, std::span<const ReplicaLoad> r) override {
    return least_outstanding(r);
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
    const std::size_t n = count_available(r);
    if (n == 1) return nth_available(r, 0);
    const std::size_t a = rng_.below(n);
    std::size_t b = rng_.below(n - 1);
    if (b >= a) ++b;  // two distinct replicas
    const std::size_t ia = nth_available(r, a), ib = nth_available(r, b);
    return r[ib].outstanding() < r[ia].outstanding() ? ib : ia;
  }

 private:
  RngStream rng_;
};

// Sticky sessions: a session's first request goes to the least loaded replica, later ones follow
// it (to a new home if its replica stopped taking requests). Requests without a session go to the
// least loaded replica.
class SessionAffinity final : public Router {
 public:
  using Config = NoParams;
  SessionAffinity(const Config&, std::uint64_t) {}
  std::size_t pick(const RequestSpec& req, std::span<const ReplicaLoad> r) override {
    if (req.session == 0) return least_outstanding(r);
    auto [it, fresh] = home_.try_emplace(req.session, 0);
    if (fresh || it->second >= r.size() || !r[it->second].available)
      it->second = least_outstanding(r);
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
              {.unit = "points", .desc = "ring points per replica", .min = 1, .max = 10000});
    }
  };
  BoundedConsistentHash(const Config& c, std::uint64_t) : c_(c) {}

  std::size_t pick(const RequestSpec& req, std::span<const ReplicaLoad> r) override {
    if (ring_n_ != r.size()) build(r.size());
    const std::uint64_t key =
        mix64(req.session != 0 ? req.session : (1ull << 63) ^ next_anon_++, 0x726F75746572ull);
    // Load counts the request being placed: sum of outstanding + 1, spread over the replicas
    // that take requests.
    double total = 1;
    for (const auto& x : r)
      if (x.available) total += x.outstanding();
    // Integer capacity ceil(c × mean), as in the paper, so that some replica always qualifies.
    const double bound =
        std::ceil(c_.load_factor * total / static_cast<double>(count_available(r)));
    auto it = ring_.lower_bound(key);
    for (std::size_t step = 0; step < ring_.size(); ++step, ++it) {
      if (it == ring_.end()) it = ring_.begin();
      const std::size_t i = it->second;
      if (r[i].available && r[i].outstanding() + 1 <= bound) return i;
    }
    return least_outstanding(r);
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

// Where a router learns what replicas cache: its own record of what it sent where (approximate,
// bounded per replica, LRU; one index for the pool), or the replicas' true caches (exact).
class PrefixIndex {
 public:
  PrefixIndex(bool exact, std::int64_t capacity, int block_size)
      : exact_(exact), block_size_(block_size), pool_(capacity) {}
  void attach(const CacheProbe* p) {
    if (exact_) probe_ = p;
  }
  bool exact() const { return exact_; }
  // Hashes `req` (at the engines' block size when exact) and, for the approximate index, matches
  // it against the first `replicas` replicas at once.
  std::span<const std::uint64_t> hash(const RequestSpec& req, std::size_t replicas) {
    prompt_block_hashes(req, probe_ ? probe_->block_size() : block_size_, hashes_);
    if (!probe_) pool_.match(hashes_, replicas, matched_);
    return hashes_;
  }
  int block_size() const { return probe_ ? probe_->block_size() : block_size_; }
  std::span<const std::uint64_t> last(int& block_size) const {
    block_size = this->block_size();
    return hashes_;
  }
  std::size_t matched(std::size_t replica) const {
    if (probe_) return static_cast<std::size_t>(probe_->cached_blocks(replica, hashes_));
    return replica < matched_.size() ? matched_[replica] : 0;
  }
  // Blocks the router believes the replica holds (0 when exact: the probe does not tell).
  std::size_t size(std::size_t replica) const { return pool_.size(replica); }
  // Remembers that the hashed request went to `replica`.
  void record(std::size_t replica) {
    if (!probe_) pool_.record(replica, hashes_);
  }

 private:
  bool exact_;
  int block_size_;
  const CacheProbe* probe_ = nullptr;
  PoolPrefixIndex pool_;
  std::vector<std::uint64_t> hashes_;
  std::vector<std::size_t> matched_;
};

template <class V>
void index_params(V& v, std::string& index, std::int64_t& index_blocks, int& block_size) {
  v.param("index", index,
          {.desc = "what the router knows of replicas' caches: approximate = its own record of "
                   "what it sent where (per-replica LRU); exact = the replicas' true caches",
           .choices = {"approximate", "exact"}});
  v.param("index_blocks", index_blocks,
          {.unit = "blocks", .desc = "approximate index capacity per replica (LRU)", .min = 1});
  v.param("block_size", block_size,
          {.unit = "tokens",
           .desc = "tokens per hashed block in the approximate index (exact uses the engines')",
           .min = 1});
}

// Prefix-cache-aware weighted scoring, as the Kubernetes Gateway API Inference Extension's
// default scorers: queue score (maxQ − q) / (maxQ − minQ) × 2, KV score (1 − usage) × 2, prefix
// score matched blocks / prompt blocks × 3; the highest total wins, ties at random. The prefix
// index is the router's own (approximate: for each replica, an LRU of the block hashes it sent
// there, as the extension's approximate prefix cache plugin keeps) or the replicas' true caches.
class PrefixAware final : public Router {
 public:
  struct Config {
    double queue_weight = 2, kv_weight = 2, prefix_weight = 3;
    std::string index = "approximate";
    std::int64_t index_blocks = 100000;
    int block_size = 16;
    template <class V>
    void visit(V& v) {
      v.param("queue_weight", queue_weight, {.desc = "weight of the queue score", .min = 0});
      v.param("kv_weight", kv_weight, {.desc = "weight of the KV-usage score", .min = 0});
      v.param("prefix_weight", prefix_weight,
              {.desc = "weight of the prefix-match score", .min = 0});
      index_params(v, index, index_blocks, block_size);
    }
  };
  PrefixAware(const Config& c, std::uint64_t seed)
      : c_(c),
        rng_(seed, "router.prefix_aware"),
        index_(c.index == "exact", c.index_blocks, c.block_size) {}
  void attach(const CacheProbe* p) override { index_.attach(p); }
  std::span<const std::uint64_t> prompt_hashes(int& block_size) const override {
    return index_.last(block_size);
  }

  std::size_t pick(const RequestSpec& req, std::span<const ReplicaLoad> r) override {
    index_.hash(req, r.size());
    const double total_blocks = std::max<double>(1.0, req.input_tokens / index_.block_size());
    std::int32_t qmin = INT32_MAX, qmax = 0;
    for (const auto& x : r)
      if (x.available)
        qmin = std::min(qmin, x.outstanding()), qmax = std::max(qmax, x.outstanding());
    double best = -1;
    std::vector<std::size_t>& ties = ties_;
    ties.clear();
    for (std::size_t i = 0; i < r.size(); ++i) {
      if (!r[i].available) continue;
      const double q =
          qmax > qmin ? static_cast<double>(qmax - r[i].outstanding()) / (qmax - qmin) : 1.0;
      const double score = c_.queue_weight * q + c_.kv_weight * (1 - r[i].kv_usage) +
                           c_.prefix_weight * static_cast<double>(index_.matched(i)) / total_blocks;
      if (score > best + 1e-12) {
        best = score;
        ties.assign(1, i);
      } else if (score > best - 1e-12) {
        ties.push_back(i);
      }
    }
    const std::size_t pick = ties.size() == 1 ? ties[0] : ties[rng_.below(ties.size())];
    index_.record(pick);
    return pick;
  }

 private:
  Config c_;
  RngStream rng_;
  PrefixIndex index_;
  std::vector<std::size_t> ties_;
};

// SGLang's cache-aware policy (sgl-router, policy `cache_aware`): when the pool is imbalanced by
// both measures (max − min load > balance_abs_threshold and max > balance_rel_threshold × min),
// the least loaded replica takes the request; otherwise the replica with the longest prefix match
// takes it if the match covers more than cache_threshold of the prompt, else the replica whose
// index holds least (most room to cache). Load is outstanding requests; SGLang's defaults.
class CacheAware final : public Router {
 public:
  struct Config {
    double cache_threshold = 0.5;
    double balance_abs_threshold = 32;
    double balance_rel_threshold = 1.0001;
    std::string index = "approximate";
    std::int64_t index_blocks = 100000;
    int block_size = 16;
    template <class V>
    void visit(V& v) {
      v.param("cache_threshold", cache_threshold,
              {.unit = "fraction",
               .desc = "follow the longest match when it covers more than this much of the prompt",
               .min = 0,
               .max = 1});
      v.param(
          "balance_abs_threshold", balance_abs_threshold,
          {.unit = "requests", .desc = "imbalanced when max − min load exceeds this", .min = 0});
      v.param("balance_rel_threshold", balance_rel_threshold,
              {.desc = "... and max load exceeds this × min load", .min = 1});
      index_params(v, index, index_blocks, block_size);
    }
  };
  CacheAware(const Config& c, std::uint64_t)
      : c_(c), index_(c.index == "exact", c.index_blocks, c.block_size) {}
  void attach(const CacheProbe* p) override { index_.attach(p); }
  std::span<const std::uint64_t> prompt_hashes(int& block_size) const override {
    return index_.last(block_size);
  }

  std::size_t pick(const RequestSpec& req, std::span<const ReplicaLoad> r) override {
    index_.hash(req, r.size());
    std::int32_t lo = INT32_MAX, hi = 0;
    for (const auto& x : r)
      if (x.available) lo = std::min(lo, x.outstanding()), hi = std::max(hi, x.outstanding());
    std::size_t pick;
    if (hi - lo > c_.balance_abs_threshold && hi > c_.balance_rel_threshold * lo) {
      pick = least_outstanding(r);
    } else {
      std::size_t best = r.size(), best_match = 0;
      for (std::size_t i = 0; i < r.size(); ++i) {
        if (!r[i].available) continue;
        const std::size_t m = index_.matched(i);
        if (best == r.size() || m > best_match) best = i, best_match = m;
      }
      const double blocks = std::max<double>(1.0, req.input_tokens / index_.block_size());
      if (best_match > 0 && best_match / blocks > c_.cache_threshold) {
        pick = best;
      } else if (index_.exact()) {
        pick = least_outstanding(r);  // the probe does not say how full a cache is
      } else {
        pick = argmin(r, [&](const ReplicaLoad& x) { return index_.size(&x - r.data()); });
      }
    }
    index_.record(pick);
    return pick;
  }

 private:
  Config c_;
  PrefixIndex index_;
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
                       "Extension), with an approximate router-side or exact prefix index.");
    r.add<CacheAware>("cache_aware",
                      "SGLang's cache-aware policy: least loaded when imbalanced, else the longest "
                      "prefix match above a threshold, else the emptiest index.");
    return r;
  }();
  return reg;
}

}  // namespace kvfleet::sim
