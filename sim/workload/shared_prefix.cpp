// inference-perf's shared_prefix workload (its datagen/synthetic/shared_prefix_datagen): groups of
// users behind one system prompt each, every user asking one fixed question, the whole set of
// prompts sent round-robin in a shuffled order, so that a system prompt is shared within its
// group and a whole prompt repeats once the list wraps around. With multi-turn chat each prompt
// is a user's session: request j of a stage is round j / (groups × prompts) of session
// j mod (groups × prompts), sent with the whole conversation so far in front of it, and only
// once the session's previous round has ended (inference-perf's enable_multi_turn_chat; its
// sessions start afresh at each stage).
#include <algorithm>
#include <deque>
#include <numeric>
#include <queue>
#include <unordered_map>

#include "sim/core/rng.h"
#include "sim/workload/distributions.h"
#include "sim/workload/workload.h"

namespace kvfleet::sim {
namespace {

class SharedPrefix final : public OpenLoopWorkload {
 public:
  struct Config {
    int num_groups = 10;
    int num_prompts_per_group = 10;
    config::ImplSpec system_prompt_len;
    config::ImplSpec question_len;
    config::ImplSpec output_len;
    std::int64_t num_requests = 1000;
    config::ImplSpec arrival;
    StagesConfig load;
    bool multi_turn = false;
    template <class V>
    void visit(V& v) {
      v.param("num_groups", num_groups,
              {.unit = "groups",
               .desc = "distinct system prompts (inference-perf num_groups, written "
                       "num_unique_system_prompts in its resolved config)",
               .min = 1,
               .max = 1'000'000,
               .why = "a million system prompts is no shared-prefix benchmark"});
      v.param("num_prompts_per_group", num_prompts_per_group,
              {.unit = "prompts",
               .desc = "distinct questions (users) behind each system prompt",
               .min = 1,
               .max = 1'000'000,
               .why = "a million users per prompt is no shared-prefix benchmark"});
      v.impl("system_prompt_len", system_prompt_len, length_dist_registry(),
             {.desc = "system prompt tokens, drawn once per group", .required = true});
      v.impl("question_len", question_len, length_dist_registry(),
             {.desc = "question tokens, drawn once per prompt", .required = true});
      v.impl("output_len", output_len, length_dist_registry(),
             {.desc = "output tokens (max_tokens, ignore_eos), drawn once per prompt",
              .required = true});
      v.param("num_requests", num_requests,
              {.unit = "requests",
               .desc = "without load stages: requests sent",
               .min = 1,
               .label = "Requests"});
      v.impl("arrival", arrival, arrival_registry(),
             {.desc = "without load stages: the arrival process"});
      v.param("load", load,
              {.desc = "load stages (inference-perf's): when given, they time the arrivals and "
                       "the round-robin over the prompts restarts at each stage"});
      v.param("multi_turn", multi_turn,
              {.desc = "inference-perf's enable_multi_turn_chat: each prompt is a user's "
                       "session; its next round sends the conversation so far (every earlier "
                       "prompt and reply) before the prompt again, and waits until the round "
                       "before has ended"});
    }
    void check(config::Reader& r) const {
      if (static_cast<std::int64_t>(num_groups) * num_prompts_per_group > 10'000'000)
        r.fail_key("num_prompts_per_group",
                   "num_groups × num_prompts_per_group exceeds 10,000,000 prompts");
    }
  };

  SharedPrefix(const Config& c, std::uint64_t seed, const std::vector<std::string>&)
      : OpenLoopWorkload(c.load, seed),
        cfg_(c),
        arrival_(arrival_registry().make(c.arrival)),
        rng_arrival_(seed, "workload.arrival") {
    auto sys = length_dist_registry().make(c.system_prompt_len);
    auto q = length_dist_registry().make(c.question_len);
    auto out = length_dist_registry().make(c.output_len);
    RngStream rng(seed, "workload.shared_prefix");
    const std::size_t n = static_cast<std::size_t>(c.num_groups) * c.num_prompts_per_group;
    prompts_.reserve(n);
    for (int g = 0; g < c.num_groups; ++g) {
      const std::int32_t s = sys->sample(rng);
      for (int p = 0; p < c.num_prompts_per_group; ++p)
        prompts_.push_back({g, p, s, q->sample(rng), out->sample(rng)});
    }
    // One shuffle, then round-robin over the shuffled list.
    for (std::size_t i = n; i > 1; --i) std::swap(prompts_[i - 1], prompts_[rng.below(i)]);
  }

  bool next_arrival_s(double& t_s) override {
    if (count_ >= cfg_.num_requests) return false;
    t_s_ += arrival_->next_gap_s(rng_arrival_);
    t_s = t_s_;
    return true;
  }

  bool make(RequestSpec& out, int stage, std::int64_t index) override {
    const std::size_t n = prompts_.size();
    const std::size_t which = static_cast<std::size_t>(index) % n;
    const Prompt& p = prompts_[which];
    // The system prompt is its group's; the question is the user's own, the same text every
    // time it is sent. Public content: every group's prompt is one application's.
    out.tenant = 1;
    const Segment system{stable_hash("shared-prefix-system") + static_cast<std::uint64_t>(p.group),
                         p.system, 1};
    const Segment question{stable_hash("shared-prefix-question") +
                               (static_cast<std::uint64_t>(p.group) << 24) +
                               static_cast<std::uint64_t>(p.user),
                           p.question, 1};
    std::int64_t input = 0;
    if (cfg_.multi_turn) {
      // Session of this stage (sessions start afresh at each stage), and its round.
      const std::uint64_t session = static_cast<std::uint64_t>(stage + 1) * n + which + 1;
      const std::int64_t round = index / static_cast<std::int64_t>(n);
      out.session = session;
      out.turn = static_cast<std::int32_t>(std::min<std::int64_t>(round + 1, INT32_MAX));
      for (std::int64_t k = 0; k < round; ++k) {
        out.segments.push_back(system);
        out.segments.push_back(question);
        out.segments.push_back({reply_content(session, k), p.output, 1});
        input += p.system + p.question + p.output;
        if (input > kMaxInput) break;
      }
      out.output_content = reply_content(session, round);
    }
    out.segments.push_back(system);
    out.segments.push_back(question);
    input += p.system + p.question;
    out.input_tokens = static_cast<std::int32_t>(std::min<std::int64_t>(input, kMaxInput));
    if (input > kMaxInput) {
      // A conversation longer than any model takes: sent as what fits, refused by the engine.
      out.segments.clear();
      out.segments.push_back({0, out.input_tokens, 1});
    }
    out.output_tokens = p.output;
    out.stable_tokens = p.system;
    ++count_;
    return true;
  }

  // Multi-turn: a round waits in its session's queue while the round before is in flight.
  bool peek(SimTime& t) override {
    if (!cfg_.multi_turn) return OpenLoopWorkload::peek(t);
    SimTime next;
    while (OpenLoopWorkload::peek(next) && (ready_.empty() || next <= ready_.top().arrival)) {
      RequestSpec r = OpenLoopWorkload::pop();
      Session& s = sessions_[r.session];
      if (s.busy) {
        s.waiting.push_back(std::move(r));
        ++waiting_;
      } else {
        s.busy = true;
        push_ready(std::move(r));
      }
    }
    if (ready_.empty()) return false;
    t = ready_.top().arrival;
    return true;
  }
  RequestSpec pop() override {
    if (!cfg_.multi_turn) return OpenLoopWorkload::pop();
    RequestSpec r = std::move(const_cast<Ready&>(ready_.top()).spec);
    ready_.pop();
    return r;
  }
  bool finished() override {
    if (!cfg_.multi_turn) return OpenLoopWorkload::finished();
    SimTime t;
    return !peek(t) && waiting_ == 0 && OpenLoopWorkload::finished();
  }
  void on_request_end(const RequestRecord& r, SimTime now) override {
    OpenLoopWorkload::on_request_end(r, now);
    if (!cfg_.multi_turn) return;
    const auto it = sessions_.find(r.session);
    if (it == sessions_.end()) return;
    Session& s = it->second;
    if (s.waiting.empty()) {
      sessions_.erase(it);
      return;
    }
    RequestSpec next = std::move(s.waiting.front());
    s.waiting.pop_front();
    --waiting_;
    next.arrival = std::max({next.arrival, now, r.finish});  // the reply received whole
    push_ready(std::move(next));
  }

  // Multi-turn: the cap of the round peek() gave (its stage's), not of the next one generated.
  int concurrency_cap() const override {
    if (!cfg_.multi_turn) return OpenLoopWorkload::concurrency_cap();
    return ready_.empty() ? 0 : stage_cap(ready_.top().spec.stage);
  }

  double nominal_rate_per_s() const override {
    return staged() ? staged_rate_per_s() : arrival_->rate_per_s();
  }

 private:
  struct Prompt {
    int group, user;
    std::int32_t system, question, output;
  };
  struct Session {
    bool busy = false;
    std::deque<RequestSpec> waiting;
  };
  struct Ready {
    SimTime arrival;
    std::uint64_t order;
    RequestSpec spec;
    bool operator>(const Ready& o) const {
      return arrival != o.arrival ? arrival > o.arrival : order > o.order;
    }
  };
  static constexpr std::int64_t kMaxInput = 100'000'000;
  static std::uint64_t reply_content(std::uint64_t session, std::int64_t round) {
    return stable_hash("shared-prefix-reply") ^
           (session * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(round) + 1);
  }
  void push_ready(RequestSpec r) {
    const SimTime at = r.arrival;
    ready_.push({at, order_++, std::move(r)});
  }
  Config cfg_;
  std::unique_ptr<ArrivalProcess> arrival_;
  RngStream rng_arrival_;
  std::vector<Prompt> prompts_;
  double t_s_ = 0;
  std::int64_t count_ = 0;
  std::unordered_map<std::uint64_t, Session> sessions_;
  std::priority_queue<Ready, std::vector<Ready>, std::greater<>> ready_;
  std::uint64_t order_ = 0;
  std::int64_t waiting_ = 0;
};

}  // namespace

void register_shared_prefix(WorkloadRegistry& r) {
  r.add<SharedPrefix>("shared_prefix",
                      "inference-perf's shared_prefix: groups of users behind one system prompt "
                      "each, fixed questions sent round-robin, optionally in load stages.");
}

}  // namespace kvfleet::sim
