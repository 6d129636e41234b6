// Multi-turn conversations, closed loop: a session starts (open-loop arrivals of sessions), sends
// its first message, and after each reply ends waits a think time before its next turn. Each
// turn's prompt holds the tenant's system prompt, the whole history (every earlier user message
// and reply, with the reply's content id, so that the next turn can hit the blocks of the last),
// and the new message. The conversations issue adds context policies (window, budget, summarise).
#include <algorithm>
#include <cmath>
#include <queue>

#include "sim/core/rng.h"
#include "sim/workload/distributions.h"
#include "sim/workload/workload.h"

namespace kvfleet::sim {
namespace {

class Conversations final : public Workload {
 public:
  struct Config {
    std::int64_t num_sessions = 100;
    config::ImplSpec session_arrival;
    config::ImplSpec turns;
    config::ImplSpec user_tokens;
    config::ImplSpec reply_tokens;
    double think_time_s = 30;
    std::int64_t system_prompt_tokens = 0;
    int tenants = 1;
    std::vector<double> priority_weights;
    template <class V>
    void visit(V& v) {
      v.param("num_sessions", num_sessions,
              {.unit = "sessions", .desc = "conversations started in the run", .min = 1});
      v.impl("session_arrival", session_arrival, arrival_registry(),
             {.desc = "when conversations start"});
      v.impl("turns", turns, length_dist_registry(),
             {.desc = "number of turns (user messages) in a conversation", .required = true});
      v.impl("user_tokens", user_tokens, length_dist_registry(),
             {.desc = "length of each user message", .required = true});
      v.impl("reply_tokens", reply_tokens, length_dist_registry(),
             {.desc = "length of each reply (output tokens)", .required = true});
      v.param("think_time_s", think_time_s,
              {.unit = "s",
               .desc = "mean (exponential) time from a reply to the next message",
               .min = 0});
      v.param("system_prompt_tokens", system_prompt_tokens,
              {.unit = "tokens",
               .desc = "system prompt at the start of every prompt, shared by "
                       "all sessions of a tenant; 0 = none",
               .min = 0});
      v.param(
          "tenants", tenants,
          {.unit = "tenants", .desc = "sessions are spread uniformly over tenants 1..N", .min = 1});
      v.param(
          "priority_weights", priority_weights,
          {.desc = "relative frequency of session priority 0, 1, ... (0 most urgent)", .min = 0});
    }
  };

  Conversations(const Config& c, std::uint64_t seed)
      : cfg_(c),
        seed_(seed),
        arrival_(arrival_registry().make(c.session_arrival)),
        turns_(length_dist_registry().make(c.turns)),
        user_(length_dist_registry().make(c.user_tokens)),
        reply_(length_dist_registry().make(c.reply_tokens)),
        rng_arrival_(seed, "workload.session_arrival"),
        rng_turns_(seed, "workload.turns"),
        rng_user_(seed, "workload.user_tokens"),
        rng_reply_(seed, "workload.reply_tokens"),
        rng_think_(seed, "workload.think_time"),
        rng_tenant_(seed, "workload.tenant"),
        rng_priority_(seed, "workload.priority") {
    for (double x : c.priority_weights) priority_total_ += x;
  }

  bool peek(SimTime& t) override {
    start_sessions_until_queue_has_a_start();
    if (queue_.empty()) return false;
    t = queue_.top().time;
    return true;
  }

  RequestSpec pop() override {
    const Pending p = queue_.top();
    queue_.pop();
    if (p.start) start_queued_ = false;
    Session& s = sessions_[p.session - 1];
    ++s.turn;
    RequestSpec r;
    r.arrival = p.time;
    r.session = p.session;
    r.tenant = s.tenant;
    r.priority = s.priority;
    if (cfg_.system_prompt_tokens > 0)
      r.segments.push_back({content_id(0, s.tenant, 0),
                            static_cast<std::int32_t>(cfg_.system_prompt_tokens), s.tenant});
    r.segments.insert(r.segments.end(), s.history.begin(), s.history.end());
    const std::int32_t user = user_->sample(rng_user_);
    s.pending_user = {content_id(p.session, s.turn, 1), user, s.tenant};
    r.segments.push_back(s.pending_user);
    for (const auto& g : r.segments) r.input_tokens += g.tokens;
    r.output_tokens = reply_->sample(rng_reply_);
    r.output_content = content_id(p.session, s.turn, 2);
    s.in_flight = true;
    ++in_flight_;
    return r;
  }

  bool finished() override {
    return started_ >= cfg_.num_sessions && queue_.empty() && in_flight_ == 0;
  }

  void on_request_end(const RequestRecord& rec, SimTime now) override {
    if (rec.session == 0 || rec.session > sessions_.size()) return;
    Session& s = sessions_[rec.session - 1];
    if (!s.in_flight) return;
    s.in_flight = false;
    --in_flight_;
    if (rec.outcome != Outcome::kOk) {
      s.done = true;  // the user gives up (retries arrive with the fleet issue)
      return;
    }
    s.history.push_back(s.pending_user);
    s.history.push_back({content_id(rec.session, s.turn, 2), rec.generated_tokens, s.tenant});
    if (s.turn >= s.turns) {
      s.done = true;
      return;
    }
    const SimTime next = now + from_seconds(rng_think_.exponential(cfg_.think_time_s));
    queue_.push({next, seq_++, rec.session, false});
  }

  double nominal_rate_per_s() const override { return arrival_->rate_per_s(); }

 private:
  struct Session {
    std::uint32_t tenant = 1;
    std::int32_t priority = 0;
    std::int32_t turns = 1;
    std::int32_t turn = 0;  // turns sent so far
    std::vector<Segment> history;
    Segment pending_user;
    bool in_flight = false, done = false;
  };
  struct Pending {
    SimTime time;
    std::uint64_t seq;
    std::uint64_t session;
    bool start;  // the first turn of a session (open-loop)
    bool operator>(const Pending& o) const { return time != o.time ? time > o.time : seq > o.seq; }
  };

  // Stable, non-zero content ids: (session, turn, kind) for messages; kind 0 the system prompt.
  std::uint64_t content_id(std::uint64_t session, std::int64_t turn, int kind) const {
    std::uint64_t h = stable_hash("conversation") ^ (seed_ * 0x9E3779B97F4A7C15ull);
    h = (h ^ session) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ static_cast<std::uint64_t>(turn)) * 0x94D049BB133111EBull;
    h = (h ^ static_cast<std::uint64_t>(kind)) * 0xBF58476D1CE4E5B9ull;
    return (h ^ (h >> 31)) | 1;
  }

  // Session starts are open-loop: keep the next start in the queue until all have started.
  void start_sessions_until_queue_has_a_start() {
    if (start_queued_ || started_ >= cfg_.num_sessions) return;
    start_s_ += arrival_->next_gap_s(rng_arrival_);
    Session s;
    s.tenant =
        cfg_.tenants > 1 ? 1 + static_cast<std::uint32_t>(rng_tenant_.below(cfg_.tenants)) : 1;
    s.turns = std::max<std::int32_t>(1, turns_->sample(rng_turns_));
    if (priority_total_ > 0) {
      double u = rng_priority_.uniform() * priority_total_;
      while (s.priority + 1 < static_cast<std::int32_t>(cfg_.priority_weights.size()) &&
             u >= cfg_.priority_weights[s.priority])
        u -= cfg_.priority_weights[s.priority++];
    }
    sessions_.push_back(std::move(s));
    ++started_;
    queue_.push({from_seconds(start_s_), seq_++, sessions_.size(), true});
    start_queued_ = true;
  }

  Config cfg_;
  std::uint64_t seed_;
  std::unique_ptr<ArrivalProcess> arrival_;
  std::unique_ptr<LengthDist> turns_, user_, reply_;
  RngStream rng_arrival_, rng_turns_, rng_user_, rng_reply_, rng_think_, rng_tenant_, rng_priority_;
  double priority_total_ = 0;
  std::vector<Session> sessions_;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> queue_;
  std::uint64_t seq_ = 0;
  std::int64_t started_ = 0;
  std::int64_t in_flight_ = 0;
  double start_s_ = 0;
  bool start_queued_ = false;
};

}  // namespace

void register_conversations(WorkloadRegistry& r) {
  r.add<Conversations>("conversations",
                       "Multi-turn conversations, closed loop: each turn sends the whole history "
                       "plus a new message, think time after each reply.");
}

}  // namespace kvfleet::sim
