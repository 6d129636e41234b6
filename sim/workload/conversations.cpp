// Multi-turn conversations: what the application sends, turn after turn (issue: conversations and
// context policy). Sessions start open loop (an arrival process) or closed loop (N users, each
// starting a new session after the last one ends). Each turn waits for the previous reply plus a
// think time. Its prompt is assembled from segments: the tenant's system prompt, an optional
// document (shared from a pool, or uploaded privately), an optional dynamic header (unique per
// request: placed first it destroys prefix reuse), the summary if any, the history turns the
// context policy keeps, and the new message. The durable history lives here, outside the fleet:
// whatever a replica has lost, the next prompt is rebuilt from it and pays its prefill.
#include <algorithm>
#include <cmath>
#include <queue>

#include "sim/core/rng.h"
#include "sim/workload/context_policy.h"
#include "sim/workload/distributions.h"
#include "sim/workload/workload.h"

namespace kvfleet::sim {
namespace {

class Conversations final : public Workload {
 public:
  struct Config {
    std::int64_t num_sessions = 100;
    int users = 0;
    double session_gap_s = 0;
    config::ImplSpec session_arrival;
    config::ImplSpec turns;
    config::ImplSpec user_tokens;
    config::ImplSpec reply_tokens;
    double think_time_s = 30;
    double abandon_probability = 0;
    double patience_s = 0;
    double idle_timeout_s = 0;
    double archive_timeout_s = 0;
    bool cancel_propagates = true;
    std::int64_t system_prompt_tokens = 0;
    double document_probability = 0;
    std::int64_t document_tokens = 0;
    int shared_documents = 0;
    int document_priority = -1;
    std::int64_t dynamic_header_tokens = 0;
    std::string dynamic_header_position = "first";
    config::ImplSpec context_policy;
    std::int64_t max_context_tokens = 0;
    std::int64_t output_reservation_tokens = 0;
    std::string overflow = "reject";
    std::int64_t summary_tokens = 400;
    std::string summary_pool;
    int tenants = 1;
    std::vector<double> priority_weights;
    template <class V>
    void visit(V& v) {
      visit_sessions(v);
      visit_users(v);
      visit_content(v);
      visit_context(v);
    }
    // How many conversations, when they start, and how long they are.
    template <class V>
    void visit_sessions(V& v) {
      v.param("num_sessions", num_sessions,
              {.unit = "sessions",
               .desc = "conversations in the run",
               .min = 1,
               .label = "Conversation sessions"});
      v.param("users", users,
              {.unit = "users",
               .desc = "closed loop: N users, each starting a new session when "
                       "the last ends; 0 = open loop (session_arrival)",
               .min = 0,
               .label = "Concurrent users"});
      v.param("session_gap_s", session_gap_s,
              {.unit = "s",
               .desc = "closed loop: mean (exponential) pause between a user's sessions",
               .min = 0});
      v.impl("session_arrival", session_arrival, arrival_registry(),
             {.desc = "open loop: when conversations start", .label = "Conversation arrivals"});
      v.impl("turns", turns, length_dist_registry(),
             {.desc = "number of turns (user messages) in a conversation",
              .required = true,
              .label = "Turns per conversation"});
      v.impl("user_tokens", user_tokens, length_dist_registry(),
             {.desc = "length of each user message",
              .required = true,
              .label = "User message length"});
      v.impl("reply_tokens", reply_tokens, length_dist_registry(),
             {.desc = "length of each reply (output tokens)",
              .required = true,
              .label = "Reply length"});
    }
    // The users' pauses, patience and departures.
    template <class V>
    void visit_users(V& v) {
      v.param("think_time_s", think_time_s,
              {.unit = "s",
               .desc = "mean (exponential) time from a reply to the next message",
               .min = 0});
      v.param("abandon_probability", abandon_probability,
              {.unit = "probability",
               .desc = "after each reply, the user leaves the session",
               .min = 0,
               .max = 1});
      v.param("patience_s", patience_s,
              {.unit = "s",
               .desc = "a user cancels a turn whose reply has not finished this long "
                       "after sending it, and leaves; 0 = waits forever",
               .min = 0});
      v.param("cancel_propagates", cancel_propagates,
              {.desc = "a cancellation stops the server's work (else the server finishes the "
                       "reply for nobody: wasted work)"});
      v.param("idle_timeout_s", idle_timeout_s,
              {.unit = "s",
               .desc = "a session with no message this long after a reply turns idle "
                       "and the fleet drops its KV (session-based retention); 0 = never",
               .min = 0});
      v.param("archive_timeout_s", archive_timeout_s,
              {.unit = "s",
               .desc = "a session idle this long after a reply is archived: the user "
                       "does not come back; 0 = never",
               .min = 0});
    }
    // What the prompts hold besides the conversation: system prompt, documents, headers.
    template <class V>
    void visit_content(V& v) {
      v.param("system_prompt_tokens", system_prompt_tokens,
              {.unit = "tokens",
               .desc = "system prompt at the start of every prompt, shared by "
                       "all sessions of a tenant; 0 = none",
               .min = 0});
      v.param("document_probability", document_probability,
              {.unit = "probability",
               .desc = "a session works on a document (sent every turn)",
               .min = 0,
               .max = 1});
      v.param("document_tokens", document_tokens,
              {.unit = "tokens", .desc = "length of a document", .min = 0});
      v.param("shared_documents", shared_documents,
              {.unit = "documents",
               .desc = "documents are drawn from a pool of this many, shared "
                       "by the tenant's sessions; 0 = each session uploads "
                       "its own",
               .min = 0});
      v.param("document_priority", document_priority,
              {.desc = "priority of sessions with a document (a separate queue under priority "
                       "scheduling); -1 = like the others",
               .min = -1,
               .max = kMaxPriority,
               .why = kMaxPriorityWhy});
      v.param("dynamic_header_tokens", dynamic_header_tokens,
              {.unit = "tokens",
               .desc = "a header unique to each request (timestamp, request id); "
                       "0 = none",
               .min = 0});
      v.param("dynamic_header_position", dynamic_header_position,
              {.desc = "first: before everything (destroys prefix reuse); after_system: after the "
                       "system prompt and document; last: after the new message",
               .choices = {"first", "after_system", "last"}});
    }
    // How much history each turn sends, summaries, tenants and priorities.
    template <class V>
    void visit_context(V& v) {
      v.impl("context_policy", context_policy, context_policy_registry(),
             {.desc = "how much history each turn sends", .label = "Context policy"});
      v.param("max_context_tokens", max_context_tokens,
              {.unit = "tokens",
               .desc = "the application's context limit (the model's window); "
                       "0 = none (the engine's max_model_len still applies)",
               .min = 0});
      v.param("output_reservation_tokens", output_reservation_tokens,
              {.unit = "tokens",
               .desc = "room kept for the reply inside max_context_tokens",
               .min = 0});
      v.param("overflow", overflow,
              {.desc = "an input that still does not fit: reject the turn (the session ends) or "
                       "truncate the oldest history",
               .choices = {"reject", "truncate"}});
      v.param("summary_tokens", summary_tokens,
              {.unit = "tokens", .desc = "length of a summary (summarize policy)", .min = 1});
      v.param("summary_pool", summary_pool,
              {.desc = "pool that serves summarisation requests; empty = the fleet's first pool"});
      v.param(
          "tenants", tenants,
          {.unit = "tenants", .desc = "sessions are spread uniformly over tenants 1..N", .min = 1});
      v.param("priority_weights", priority_weights,
              {.desc = "relative frequency of session priority 0, 1, ... (0 most urgent)",
               .min = 0,
               .max = 1e6,
               .why = "relative weights; larger values would overflow their sum"});
    }
  };

  Conversations(const Config& c, std::uint64_t seed, const std::vector<std::string>& pools)
      : cfg_(c),
        seed_(seed),
        policy_(context_policy_registry().make(c.context_policy)),
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
        rng_priority_(seed, "workload.priority"),
        rng_doc_(seed, "workload.document"),
        rng_abandon_(seed, "workload.abandon") {
    for (std::size_t i = 0; i < pools.size(); ++i)
      if (pools[i] == c.summary_pool) summary_pool_ = static_cast<std::int32_t>(i);
    if (cfg_.users > 0) {
      // Closed loop: every user starts a session at time 0 (staggered by one gap).
      for (int u = 0; u < cfg_.users && started_ < cfg_.num_sessions; ++u)
        start_session(from_seconds(rng_arrival_.exponential(std::max(cfg_.session_gap_s, 1e-3))));
    }
  }

  bool peek(SimTime& t) override {
    if (cfg_.users == 0 && !start_queued_ && started_ < cfg_.num_sessions) {
      start_s_ += arrival_->next_gap_s(rng_arrival_);
      start_session(from_seconds(start_s_));
      start_queued_ = true;
    }
    if (queue_.empty()) return false;
    t = queue_.top().time;
    return true;
  }

  RequestSpec pop() override {
    const Pending p = queue_.top();
    queue_.pop();
    if (p.start && cfg_.users == 0) start_queued_ = false;
    Session& s = sessions_[p.session - 1];
    if (p.release) {  // the session turned idle: not a request
      RequestSpec idle;
      idle.arrival = p.time;
      idle.session = p.session;
      idle.purpose = kPurposeRelease;
      return idle;
    }
    RequestSpec r;
    r.arrival = p.time;
    r.session = p.session;
    r.tenant = s.tenant;
    r.priority = s.priority;
    ++in_flight_;
    s.in_flight = true;

    // The user's next message is drawn once, even if a summary has to come first.
    if (!s.has_pending_user) {
      ++s.turn;
      s.pending_user = {content_id(p.session, s.turn, 1), user_->sample(rng_user_), s.tenant};
      s.pending_reply_tokens = reply_->sample(rng_reply_);
      s.has_pending_user = true;
    }
    const std::int64_t fixed =
        stable_tokens(s) + cfg_.dynamic_header_tokens + s.pending_user.tokens;
    const std::int64_t limit =
        cfg_.max_context_tokens > 0 ? cfg_.max_context_tokens - cfg_.output_reservation_tokens : 0;
    ConversationView view{s.history, s.summarized_turns, s.has_summary ? s.summary.tokens : 0,
                          fixed, limit};
    const HistoryChoice choice = policy_->choose(view);
    if (choice.summarize_now)
      summary_request(p, s, choice, r);
    else
      turn_request(p, s, choice, fixed, limit, r);
    finish_spec(r);
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
      end_session(s, now);  // the user gives up (the client's retries, if any, failed too)
      return;
    }
    if (rec.purpose == kPurposeSummary) {
      s.summary = {content_id(rec.session, s.turn, 3), rec.generated_tokens, s.tenant};
      s.has_summary = true;
      s.summarized_turns = s.summarizing_upto;
      ++summaries_;
      queue_.push({now, seq_++, rec.session, false});  // the user's turn, right away
      return;
    }
    s.history.push_back(
        {s.pending_user, {content_id(rec.session, s.turn, 2), rec.generated_tokens, s.tenant}});
    s.has_pending_user = false;
    if (s.turn >= s.turns || rng_abandon_.uniform() < cfg_.abandon_probability) {
      end_session(s, now);
      return;
    }
    const double think = rng_think_.exponential(cfg_.think_time_s);
    // Lifecycle: active until idle_timeout_s without a message, archived after archive_timeout_s.
    if (cfg_.archive_timeout_s > 0 && think > cfg_.archive_timeout_s) {
      ++archived_;
      if (cfg_.idle_timeout_s > 0 && cfg_.idle_timeout_s < cfg_.archive_timeout_s) {
        ++went_idle_;
        queue_.push({now + from_seconds(cfg_.idle_timeout_s), seq_++, rec.session, false, true});
      }
      end_session(s, now + from_seconds(cfg_.archive_timeout_s));
      return;
    }
    if (cfg_.idle_timeout_s > 0 && think > cfg_.idle_timeout_s) {
      ++went_idle_;
      queue_.push({now + from_seconds(cfg_.idle_timeout_s), seq_++, rec.session, false, true});
    }
    queue_.push({now + from_seconds(think), seq_++, rec.session, false});
  }

  double nominal_rate_per_s() const override { return arrival_->rate_per_s(); }
  std::vector<std::pair<std::string, double>> stats() const override {
    return {{"sessions_gone_idle", static_cast<double>(went_idle_)},
            {"sessions_archived", static_cast<double>(archived_)},
            {"summaries", static_cast<double>(summaries_)}};
  }

 private:
  struct Session {
    std::uint32_t tenant = 1;
    std::int32_t priority = 0;
    std::int32_t turns = 1;
    std::int32_t turn = 0;  // user messages drawn so far
    Segment document;       // tokens 0: none
    std::vector<Turn> history;
    Segment summary;
    bool has_summary = false;
    std::size_t summarized_turns = 0, summarizing_upto = 0;
    Segment pending_user;
    std::int32_t pending_reply_tokens = 0;
    bool has_pending_user = false;
    bool in_flight = false;
  };
  struct Pending {
    SimTime time;
    std::uint64_t seq;
    std::uint64_t session;
    bool start;            // the first turn of a session
    bool release = false;  // not a turn: the session turns idle
    bool operator>(const Pending& o) const { return time != o.time ? time > o.time : seq > o.seq; }
  };

  // Asks the fleet for a summary of turns [0, upto): the old summary (if any) and the turns
  // since it. The user's turn follows when it returns.
  void summary_request(const Pending& p, Session& s, const HistoryChoice& choice, RequestSpec& r) {
    r.purpose = kPurposeSummary;
    r.turn = s.turn;
    append_stable(s, r.segments);
    if (s.has_summary) r.segments.push_back(s.summary);
    for (std::size_t i = s.summarized_turns; i < choice.summarize_upto; ++i) {
      r.segments.push_back(s.history[i].user);
      r.segments.push_back(s.history[i].reply);
    }
    r.output_tokens = static_cast<std::int32_t>(cfg_.summary_tokens);
    r.output_content = content_id(p.session, s.turn, 3);
    r.pool = summary_pool_;
    s.summarizing_upto = choice.summarize_upto;
  }

  // The user's turn: the history the policy keeps (truncated or refused past the limit), the
  // dynamic header where it goes, the new message.
  void turn_request(const Pending& p, Session& s, const HistoryChoice& choice, std::int64_t fixed,
                    std::int64_t limit, RequestSpec& r) {
    r.purpose = kPurposeTurn;
    r.turn = s.turn;
    std::size_t first = choice.first_turn;
    bool use_summary = choice.use_summary && s.has_summary;
    std::int64_t input =
        fixed + (use_summary ? s.summary.tokens : 0) + history_tokens(s.history, first);
    if (limit > 0 && input > limit) {
      if (cfg_.overflow == "reject") {
        r.context_overflow = true;
      } else {
        // Truncate: the summary, then the oldest turns, go first.
        const std::int64_t before = input;
        if (use_summary) input -= s.summary.tokens, use_summary = false;
        while (first < s.history.size() && input > limit) input -= s.history[first++].tokens();
        r.truncated_tokens = static_cast<std::int32_t>(before - input);
        if (input > limit) r.context_overflow = true;  // the new message alone is too long
      }
    }
    const auto header = Segment{0, static_cast<std::int32_t>(cfg_.dynamic_header_tokens), s.tenant};
    const bool header_on = cfg_.dynamic_header_tokens > 0;
    if (header_on && cfg_.dynamic_header_position == "first") r.segments.push_back(header);
    append_stable(s, r.segments);
    if (header_on && cfg_.dynamic_header_position == "after_system") r.segments.push_back(header);
    for (const auto& g : r.segments) r.stable_tokens += g.tokens;
    if (use_summary) r.segments.push_back(s.summary);
    for (std::size_t i = first; i < s.history.size(); ++i) {
      r.segments.push_back(s.history[i].user);
      r.segments.push_back(s.history[i].reply);
    }
    r.segments.push_back(s.pending_user);
    if (header_on && cfg_.dynamic_header_position == "last") r.segments.push_back(header);
    r.output_tokens = s.pending_reply_tokens;
    r.output_content = content_id(p.session, s.turn, 2);
    if (cfg_.patience_s > 0) {
      r.cancel_at = p.time + from_seconds(cfg_.patience_s);
      r.cancel_propagates = cfg_.cancel_propagates;
    }
  }

  // Stable, non-zero content ids: (session, turn, kind); kind 0 the system prompt of a tenant,
  // 1 a user message, 2 a reply, 3 a summary, 4 a shared document, 5 a private one.
  std::uint64_t content_id(std::uint64_t session, std::int64_t turn, int kind) const {
    std::uint64_t h = stable_hash("conversation") ^ (seed_ * 0x9E3779B97F4A7C15ull);
    h = (h ^ session) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ static_cast<std::uint64_t>(turn)) * 0x94D049BB133111EBull;
    h = (h ^ static_cast<std::uint64_t>(kind)) * 0xBF58476D1CE4E5B9ull;
    return (h ^ (h >> 31)) | 1;
  }

  std::int64_t stable_tokens(const Session& s) const {
    return cfg_.system_prompt_tokens + s.document.tokens;
  }
  // The system prompt and the session's document.
  void append_stable(const Session& s, std::vector<Segment>& out) const {
    if (cfg_.system_prompt_tokens > 0)
      out.push_back({content_id(0, s.tenant, 0),
                     static_cast<std::int32_t>(cfg_.system_prompt_tokens), s.tenant});
    if (s.document.tokens > 0) out.push_back(s.document);
  }
  static void finish_spec(RequestSpec& r) {
    r.input_tokens = 0;
    for (const auto& g : r.segments) r.input_tokens += g.tokens;
  }

  void start_session(SimTime at) {
    Session s;
    s.tenant = draw_tenant(cfg_.tenants, rng_tenant_);
    s.turns = std::max<std::int32_t>(1, turns_->sample(rng_turns_));
    s.priority = draw_weighted(cfg_.priority_weights, rng_priority_);
    if (cfg_.document_tokens > 0 && rng_doc_.uniform() < cfg_.document_probability) {
      const auto tokens = static_cast<std::int32_t>(cfg_.document_tokens);
      if (cfg_.shared_documents > 0)
        s.document = {
            content_id(0, static_cast<std::int64_t>(rng_doc_.below(cfg_.shared_documents)), 4),
            tokens, s.tenant};
      else
        s.document = {content_id(sessions_.size() + 1, 0, 5), tokens, s.tenant};
      if (cfg_.document_priority >= 0) s.priority = cfg_.document_priority;
    }
    sessions_.push_back(std::move(s));
    ++started_;
    queue_.push({at, seq_++, sessions_.size(), true});
  }

  void end_session(Session& s, SimTime now) {
    s.history.clear();
    s.history.shrink_to_fit();
    if (cfg_.users > 0 && started_ < cfg_.num_sessions)
      start_session(now +
                    from_seconds(rng_arrival_.exponential(std::max(cfg_.session_gap_s, 1e-3))));
  }

  Config cfg_;
  std::uint64_t seed_;
  std::unique_ptr<ContextPolicy> policy_;
  std::unique_ptr<ArrivalProcess> arrival_;
  std::unique_ptr<LengthDist> turns_, user_, reply_;
  RngStream rng_arrival_, rng_turns_, rng_user_, rng_reply_, rng_think_, rng_tenant_, rng_priority_,
      rng_doc_, rng_abandon_;
  std::vector<Session> sessions_;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> queue_;
  std::uint64_t seq_ = 0;
  std::int64_t started_ = 0;
  std::int64_t in_flight_ = 0;
  std::int64_t summaries_ = 0;
  std::int64_t went_idle_ = 0, archived_ = 0;
  std::int32_t summary_pool_ = -1;
  double start_s_ = 0;
  bool start_queued_ = false;
};

}  // namespace

void register_conversations(WorkloadRegistry& r) {
  r.add<Conversations>("conversations",
                       "Multi-turn conversations: closed or open loop, prompts assembled from "
                       "system prompt, document, header, summary and history by a context policy.");
}

}  // namespace kvfleet::sim
