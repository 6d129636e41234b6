#include "sim/engine/retention.h"

namespace kvfleet::sim {
namespace {

double seconds(SimTime t) { return to_seconds(t); }

class Lru final : public RetentionPolicy {
 public:
  struct Config {
    template <class V>
    void visit(V&) {}
  };
  explicit Lru(const Config&) {}
  bool by_session() const override { return false; }
  std::array<double, 3> key(const SessionState& s, SimTime) const override {
    return {seconds(s.last_active), 0, 0};
  }
};

class Watermark final : public RetentionPolicy {
 public:
  struct Config {
    double watermark = 0.8;
    template <class V>
    void visit(V& v) {
      v.param("watermark", watermark,
              {.unit = "fraction",
               .desc = "evict cached blocks while held + cached blocks exceed "
                       "this share of the pool",
               .max = 1,
               .positive = true});
    }
  };
  explicit Watermark(const Config& c) : w_(c.watermark) {}
  std::array<double, 3> key(const SessionState& s, SimTime) const override {
    return {seconds(s.last_active), 0, 0};
  }
  double watermark() const override { return w_; }

 private:
  double w_;
};

class IdleTtl final : public RetentionPolicy {
 public:
  struct Config {
    double ttl_s = 300;
    template <class V>
    void visit(V& v) {
      v.param("ttl_s", ttl_s,
              {.unit = "s",
               .desc = "a session idle this long loses its cached blocks",
               .positive = true});
    }
  };
  explicit IdleTtl(const Config& c) : ttl_(c.ttl_s) {}
  std::array<double, 3> key(const SessionState& s, SimTime) const override {
    return {seconds(s.last_active), 0, 0};
  }
  double idle_ttl_s() const override { return ttl_; }

 private:
  double ttl_;
};

class Priority final : public RetentionPolicy {
 public:
  struct Config {
    template <class V>
    void visit(V&) {}
  };
  explicit Priority(const Config&) {}
  std::array<double, 3> key(const SessionState& s, SimTime) const override {
    return {-static_cast<double>(s.priority), seconds(s.last_active), 0};
  }
};

class SessionAware final : public RetentionPolicy {
 public:
  struct Config {
    double idle_limit_s = 300;
    int keep_priority = 0;
    template <class V>
    void visit(V& v) {
      v.param("idle_limit_s", idle_limit_s,
              {.unit = "s", .desc = "sessions idle longer than this are evicted first", .min = 0});
      v.param("keep_priority", keep_priority,
              {.desc = "sessions of this priority or more urgent are kept until last"});
    }
  };
  explicit SessionAware(const Config& c) : c_(c) {}
  std::array<double, 3> key(const SessionState& s, SimTime now) const override {
    const double idle = seconds(now - s.last_active);
    if (s.active > 0) return {3, seconds(s.last_active), 0};            // last resort
    if (idle > c_.idle_limit_s) return {0, seconds(s.last_active), 0};  // long idle: oldest first
    const double band = s.priority <= c_.keep_priority ? 2 : 1;         // keep high priority
    return {band, -static_cast<double>(s.cached_blocks), seconds(s.last_active)};  // largest first
  }

 private:
  Config c_;
};

}  // namespace

const RetentionRegistry& retention_registry() {
  static const RetentionRegistry reg = [] {
    RetentionRegistry r("retention policy", "lru");
    r.add<Lru>("lru", "vLLM's free queue: the least recently freed block is evicted first.");
    r.add<Watermark>("watermark",
                     "Evict above a usage watermark, least recently active sessions first.");
    r.add<IdleTtl>("idle_ttl",
                   "Evict sessions idle longer than a time to live; else least recently active.");
    r.add<Priority>("priority", "Low-priority sessions' caches first, then least recently active.");
    r.add<SessionAware>("session_aware",
                        "Keep active sessions, evict long-idle ones, then the largest caches; "
                        "high-priority sessions last.");
    return r;
  }();
  return reg;
}

}  // namespace kvfleet::sim
