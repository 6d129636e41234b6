#include "sim/output/chrome_trace.h"

#include <nlohmann/json.hpp>

#include "sim/io/text_file.h"

namespace kvfleet::sim {

void write_chrome_trace(const std::string& path, const RunResult& r, std::size_t max_requests) {
  using nlohmann::json;
  json events = json::array();
  auto us = [](double s) { return s * 1e6; };
  events.push_back(
      {{"ph", "M"}, {"pid", 1}, {"name", "process_name"}, {"args", {{"name", "replicas"}}}});
  events.push_back(
      {{"ph", "M"}, {"pid", 2}, {"name", "process_name"}, {"args", {{"name", "requests"}}}});
  for (std::size_t i = 0; i < r.replicas.size(); ++i) {
    events.push_back({{"ph", "M"},
                      {"pid", 1},
                      {"tid", i},
                      {"name", "thread_name"},
                      {"args", {{"name", r.replicas[i].name}}}});
    if (i >= r.steps.size()) continue;
    for (const auto& s : r.steps[i]) {
      events.push_back({{"ph", "X"},
                        {"pid", 1},
                        {"tid", i},
                        {"name", s.prefill_tokens > 0 ? "step (prefill+decode)" : "step (decode)"},
                        {"ts", us(to_seconds(s.start))},
                        {"dur", us(s.dur_s)},
                        {"args",
                         {{"sequences", s.seqs},
                          {"prefill_tokens", s.prefill_tokens},
                          {"decode_sequences", s.decode_seqs}}}});
    }
  }
  std::size_t n = 0;
  for (const auto& q : r.requests) {
    if (n >= max_requests) break;
    if (q.first_token < 0 || q.finish < 0 || q.first_scheduled < 0) continue;
    ++n;
    const double a = to_seconds(q.arrival), sch = to_seconds(q.first_scheduled),
                 ft = to_seconds(q.first_token), fin = to_seconds(q.finish);
    const json args = {{"replica", q.replica},
                       {"input_tokens", q.input_tokens},
                       {"output_tokens", q.generated_tokens},
                       {"preemptions", q.num_preemptions}};
    const std::string id = std::to_string(q.id);
    for (auto [name, b, e] :
         {std::tuple{"queued", a, sch}, {"prefill", sch, ft}, {"decode", ft, fin}}) {
      events.push_back({{"ph", "b"},
                        {"cat", "request"},
                        {"name", name},
                        {"id", id},
                        {"pid", 2},
                        {"tid", 0},
                        {"ts", us(b)},
                        {"args", args}});
      events.push_back({{"ph", "e"},
                        {"cat", "request"},
                        {"name", name},
                        {"id", id},
                        {"pid", 2},
                        {"tid", 0},
                        {"ts", us(e)}});
    }
  }
  write_text_atomically(path, [&](std::ostream& o) {
    o << json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump();
  });
}

}  // namespace kvfleet::sim
