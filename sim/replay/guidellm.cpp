// kvfleet replay of a GuideLLM benchmark report (benchmarks.json, or its YAML form): one of its
// benchmarks (a strategy of the profile: synchronous, concurrent, throughput, constant, poisson)
// as a scenario, its requests' sends and lengths as a trace, and the report's own statistics.
// Layouts (tests/data/conformance/README.md, "GuideLLM"): 0.2-0.3 keep the strategy in
// benchmarks[].args and the backend in benchmarks[].worker, each request's start_time beside its
// tokens; 0.4 on keep both in benchmarks[].config and each request's request_start_time, and
// 0.5 on record metadata.guidellm_version.
#include "sim/replay/bench_detail.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/error.h"
#include "sim/io/json.h"
#include "sim/replay/bench_files.h"

namespace kvfleet::sim::bench_detail {

using json = nlohmann::json;

namespace {

// The two report layouts (see the top of this file).
enum class Layout { k03, k04 };

// The benchmark's strategy as the report records it.
struct Strategy {
  std::string type;   // synchronous, concurrent, throughput, constant, poisson, ...
  std::string where;  // its key path
  double rate = NAN;  // constant, poisson
  std::int64_t streams = 0, max_concurrency = 0;
  bool closed_loop() const {
    return type == "synchronous" || type == "concurrent" || type == "throughput";
  }
  std::string words() const {
    if (type == "concurrent") return "concurrent, " + std::to_string(streams) + " streams";
    if (std::isfinite(rate)) return type + " at " + fmt("%g", rate) + " requests/s";
    return type;
  }
};

Strategy read_strategy(const JsonObject& b, Layout layout) {
  const char* parent = layout == Layout::k03 ? "args" : "config";
  const auto p = b.object(parent);
  if (!p) b.fail(parent, "missing: the benchmark's strategy is read from it");
  const auto s = p->object("strategy");
  if (!s) p->fail("strategy", "missing: the benchmark's load is read from it");
  Strategy st;
  st.where = p->key_path("strategy");  // "benchmarks[0].config.strategy"
  st.type = s->need_string("type_");
  st.rate = s->number("rate", 1e-9, 1e9).value_or(NAN);
  st.streams = s->integer("streams", 1, 100'000'000).value_or(0);
  st.max_concurrency = s->integer("max_concurrency", 1, 100'000'000).value_or(0);
  if (st.type == "concurrent" && st.streams == 0)
    s->fail("streams", "missing: a concurrent strategy runs this many streams");
  return st;
}

// One request of the report: when it was sent (seconds, the tool's wall clock) and its tokens.
struct Request {
  double start = NAN, prompt = 0, output = 0;
};

// The requests of one status (successful, errored, incomplete); lengths only for successful
// ones (errored requests' counts are the request's own, not what the server did).
std::vector<Request> read_requests(const JsonObject& reqs, const char* status, Layout layout,
                                   bool lengths) {
  std::vector<Request> out;
  const json* a = reqs.find(status);
  if (a == nullptr) return out;
  if (!a->is_array()) reqs.fail(status, "must be an array of requests");
  for (std::size_t i = 0; i < a->size(); ++i) {
    const std::string key = std::string(status) + "[" + std::to_string(i) + "]";
    if (!(*a)[i].is_object()) reqs.fail(key, "must be an object, not " + json_type_name((*a)[i]));
    const JsonObject q((*a)[i], reqs.where(), reqs.key_path(key));
    Request r;
    if (layout == Layout::k03) {
      r.start = q.number("start_time", 0, 1e12).value_or(NAN);
    } else {
      r.start = q.number("request_start_time", 0, 1e12).value_or(NAN);
      if (!std::isfinite(r.start))
        if (const auto info = q.object("info"))
          if (const auto t = info->object("timings"))
            r.start = t->number("request_start", 0, 1e12).value_or(NAN);
    }
    if (lengths) {
      if (!std::isfinite(r.start))
        q.fail(layout == Layout::k03 ? "start_time" : "request_start_time",
               "missing: the request's send is read from it");
      r.prompt = static_cast<double>(q.need_integer("prompt_tokens", 1, 100'000'000));
      r.output = static_cast<double>(q.integer("output_tokens", 0, 100'000'000).value_or(0));
    }
    out.push_back(r);
  }
  return out;
}

// The report's own statistics of one metric over the successful requests, in seconds.
MeasuredStats reported(const JsonObject& metrics, const char* name, double to_s) {
  MeasuredStats m;
  const auto metric = metrics.object(name);
  if (!metric) return m;
  const auto s = metric->object("successful");
  if (!s || s->integer("count", 0).value_or(1) == 0) return m;
  auto stat = [&](const JsonObject& o, const char* k) {
    return o.number(k, 0, 1e12).value_or(NAN) * to_s;
  };
  m.mean = stat(*s, "mean");
  m.p50 = stat(*s, "median");
  if (const auto p = s->object("percentiles")) {
    if (p->has("p50")) m.p50 = stat(*p, "p50");
    m.p90 = stat(*p, "p90");
    m.p99 = stat(*p, "p99");
  }
  return m;
}

// The endpoint: 0.8's backend request_format, else a request's request_type, else the run's
// request formatter (0.4-0.5 top-level args).
std::string endpoint(const JsonObject& top, const JsonObject& b, const JsonObject& reqs,
                     std::string& from) {
  if (const auto c = b.object("config"))
    if (const auto be = c->object("backend"))
      if (const auto f = be->string("request_format")) {
        from = be->key_path("request_format");
        return *f;
      }
  for (const char* status : {"successful", "errored", "incomplete"}) {
    const json* a = reqs.find(status);
    if (a && a->is_array() && !a->empty() && (*a)[0].is_object()) {
      const JsonObject q((*a)[0], reqs.where(), reqs.key_path(std::string(status) + "[0]"));
      if (const auto t = q.string("request_type")) {
        from = q.key_path("request_type");
        return *t;
      }
    }
  }
  if (const auto args = top.object("args"))
    if (const auto f = args->string("data_request_formatter")) {
      from = args->key_path("data_request_formatter");
      return *f;
    }
  return "";
}

// The model the backend was pointed at.
std::string model_name(const JsonObject& top, const JsonObject& b, Layout layout) {
  if (layout == Layout::k03) {
    if (const auto w = b.object("worker")) return w->string("backend_model").value_or("");
    return "";
  }
  if (const auto c = b.object("config"))
    if (const auto be = c->object("backend"))
      if (const auto m = be->string("model")) return *m;
  if (const auto args = top.object("args")) return args->string("model").value_or("");
  return "";
}

// GuideLLM's timeout is httpx's: a limit on each wait for the server's next bytes (connect,
// read), not on the whole request, so kvfleet's client timeout (the whole request) stays unset.
void timeout_setting(const BenchOptions& o, const JsonObject& b, Layout layout, BenchReplay& plan) {
  const std::optional<JsonObject> holder = [&]() -> std::optional<JsonObject> {
    const auto parent = b.object(layout == Layout::k03 ? "worker" : "config");
    if (!parent) return std::nullopt;
    return parent->object(layout == Layout::k03 ? "backend_info" : "backend");
  }();
  std::string why;
  if (!holder || !holder->has("timeout")) {
    why = "the report records no timeout";
  } else {
    const double t = holder->need_number("timeout", 0, 1e9);
    why = o.path + ": " + holder->key_path("timeout") + " " + fmt("%g", t) +
          " s is httpx's read timeout (each wait for the server's next bytes, the first token's "
          "included), not a limit on the whole request: not applied";
  }
  if (holder && holder->raw().contains("timeout") && holder->raw()["timeout"].is_null())
    why = o.path + ": " + holder->key_path("timeout") + " is null (no read timeout)";
  plan.settings.push_back({"client.timeout_s", "0 (none)", why});
}

// How the report tells which GuideLLM wrote it: metadata.guidellm_version, else its layout.
LatencyDefinition definition(const BenchOptions& o, const JsonObject& top, Layout layout) {
  if (!o.tool_version.empty()) return latency_definition_for("guidellm", o.tool_version);
  if (const auto md = top.object("metadata"))
    if (const auto v = md->string("guidellm_version")) {
      LatencyDefinition d;
      try {
        d = latency_definition_for("guidellm", *v);
      } catch (const InputError&) {
        md->fail("guidellm_version", "'" + *v +
                                         "' is a GuideLLM release kvfleet knows no definitions "
                                         "of (0.2.0 on): give --tool-version");
      }
      d.how = o.path + ": metadata.guidellm_version " + *v;
      return d;
    }
  if (layout == Layout::k04)
    return latency_definition_id(
        "guidellm:0.5",
        "the report's layout: benchmarks[].config and top-level args without metadata are "
        "GuideLLM 0.4.x's (0.5.0 on record metadata.guidellm_version)");
  return latency_definition_id(
      "guidellm:0.3",
      "the report's layout: benchmarks[].args and worker, each request's first_token_time, no "
      "metadata: GuideLLM 0.2-0.3");
}

// The benchmark to replay: --benchmark, else the last (a sweep's last is its highest rate);
// where the report holds several, a note lists them.
std::size_t choose_benchmark(const BenchOptions& o, const JsonObject& top, const json& bs,
                             BenchReplay& plan) {
  const std::size_t n = bs.size();
  if (o.benchmark >= static_cast<int>(n))
    throw InputError("--benchmark", "",
                     std::to_string(o.benchmark) + " is past the " + std::to_string(n) +
                         " benchmark(s) of " + o.path + " (0 to " + std::to_string(n - 1) + ")");
  const std::size_t bi = o.benchmark >= 0 ? static_cast<std::size_t>(o.benchmark) : n - 1;
  std::string list;
  for (std::size_t i = 0; i < n; ++i) {
    const std::string key = "benchmarks[" + std::to_string(i) + "]";
    if (!bs[i].is_object()) top.fail(key, "must be an object");
    const JsonObject b(bs[i], o.path, key);
    if (!b.has("config") && !(b.has("args") && b.has("worker")))
      b.fail("config",
             "missing, and no args and worker either: not a GuideLLM benchmark layout kvfleet "
             "reads (0.2 to 0.8)");
    if (n > 1)
      list += (list.empty() ? "" : "; ") + std::to_string(i) + ": " +
              read_strategy(b, b.has("config") ? Layout::k04 : Layout::k03).words();
  }
  if (n > 1)
    plan.notes.push_back(
        o.path + " holds " + std::to_string(n) + " benchmarks (" + list + "): benchmark " +
        std::to_string(bi) + " is replayed, compared with its own statistics" +
        (o.benchmark >= 0 ? " (--benchmark)" : " (the last; --benchmark N for another)"));
  return bi;
}

void endpoint_setting(const BenchOptions& o, const JsonObject& top, const JsonObject& b,
                      const JsonObject& reqs, BenchReplay& plan) {
  std::string from;
  const std::string ep = endpoint(top, b, reqs, from);
  plan.latency.chat = ep.empty() || ep.find("chat") != std::string::npos;
  plan.settings.push_back({"client endpoint", ep.empty() ? "chat_completions" : ep,
                           ep.empty() ? "assumed: the report records no request type (GuideLLM "
                                        "0.5 on default to chat completions)"
                                      : o.path + ": " + from});
}

// The successful requests replayed at their sends (closed-loop strategies: all due at once,
// the client's cap sending them as slots free) with their server-counted lengths; the others
// noted. Returns how many are replayed.
std::size_t trace_requests(const BenchOptions& o, const JsonObject& reqs, Layout layout,
                           const Strategy& st, BenchReplay& plan, YAML::Node& sc) {
  std::vector<Request> ok = read_requests(reqs, "successful", layout, true);
  const std::vector<Request> errored = read_requests(reqs, "errored", layout, false);
  const std::vector<Request> incomplete = read_requests(reqs, "incomplete", layout, false);
  if (ok.empty()) reqs.fail("successful", "holds no request: nothing to replay or compare");
  double t0 = INFINITY;
  for (const std::vector<Request>* v : {&std::as_const(ok), &errored, &incomplete})
    for (const Request& r : *v)
      if (std::isfinite(r.start)) t0 = std::min(t0, r.start);
  std::stable_sort(ok.begin(), ok.end(),
                   [](const Request& a, const Request& c) { return a.start < c.start; });
  double sum_in = 0, sum_out = 0;
  for (const Request& r : ok) {
    plan.trace.push_back(
        {st.closed_loop() ? 0.0 : r.start - t0, r.prompt, std::max(1.0, r.output)});
    sum_in += r.prompt, sum_out += r.output;
  }
  const double n_ok = static_cast<double>(ok.size());
  YAML::Node wl;
  wl["impl"] = "trace";
  wl["format"] = "vidur";
  wl["path"] = "";  // written by the caller beside the scenario
  sc["workload"] = wl;
  const std::string rk = reqs.key_path("successful[]");
  plan.notes.push_back(
      "workload: the " + std::to_string(ok.size()) + " successful requests' lengths (" + rk +
      ".prompt_tokens, .output_tokens: the server's usage), " +
      (st.closed_loop() ? "all due at once and sent as slots free (" + st.words() +
                              ": each stream sends its next request when one ends)"
                        : std::string("sent when they were (") +
                              (layout == Layout::k03 ? "start_time" : "request_start_time") +
                              " from the first request's)"));
  plan.settings.push_back({"workload prompt length (mean)", fmt("%.1f", sum_in / n_ok) + " tokens",
                           o.path + ": " + rk + ".prompt_tokens (usage.prompt_tokens)"});
  plan.settings.push_back({"workload output length (mean)", fmt("%.1f", sum_out / n_ok) + " tokens",
                           o.path + ": " + rk + ".output_tokens (usage.completion_tokens)"});
  if (!errored.empty())
    plan.notes.push_back(std::to_string(errored.size()) + " errored request(s) (" +
                         reqs.key_path("errored") +
                         ") neither replayed nor compared: GuideLLM records the request's own "
                         "token counts for them, not what the server did");
  if (!incomplete.empty())
    plan.notes.push_back(std::to_string(incomplete.size()) + " incomplete request(s) (" +
                         reqs.key_path("incomplete") +
                         ", cut off when the benchmark ended) neither replayed nor compared");
  return ok.size();
}

// A report may keep a sample of the requests only (--output-sampling, sample_requests).
void note_sampling(const JsonObject& b, Layout layout, std::size_t kept, BenchReplay& plan) {
  const std::optional<JsonObject> totals = [&]() -> std::optional<JsonObject> {
    if (layout == Layout::k03) return b.object("request_totals");
    const auto sm = b.object("scheduler_metrics");
    return sm ? sm->object("requests_made") : std::nullopt;
  }();
  if (!totals) return;
  const auto made = totals->integer("successful", 0, 1ll << 40);
  if (made && *made > static_cast<std::int64_t>(kept))
    plan.notes.push_back("the report keeps " + std::to_string(kept) + " of the " +
                         std::to_string(*made) + " successful requests (" +
                         totals->key_path("successful") +
                         "; a sample): only those are replayed, a lighter load than measured");
}

// The client: its cap on requests in flight and its rate.
void client_settings(const BenchOptions& o, const Strategy& st, BenchReplay& plan, YAML::Node& sc) {
  std::int64_t cap = 0;
  std::string cap_from;
  if (st.type == "synchronous") {
    cap = 1, cap_from = st.where + ".type_ synchronous (one request at a time)";
  } else if (st.type == "concurrent") {
    cap = st.streams,
    cap_from = st.where + ".streams (concurrent: each stream one request at a time)";
  } else if (st.max_concurrency > 0) {
    cap = st.max_concurrency,
    cap_from = st.where + ".max_concurrency (GuideLLM's cap on requests in flight)";
  }
  if (cap > 0) {
    sc["client"]["max_concurrency"] = cap;
    plan.settings.push_back(
        {"client.max_concurrency", std::to_string(cap), o.path + ": " + cap_from});
  } else {
    plan.settings.push_back(
        {"client.max_concurrency", "none",
         o.path + ": " + st.where + " records no max_concurrency (" + st.type + ")"});
  }
  if (std::isfinite(st.rate))
    plan.settings.push_back(
        {"client rate", fmt("%g", st.rate) + " requests/s (" + st.type + ")",
         o.path + ": " + st.where + ".rate (the trace keeps the sends as they were)"});
  else if (!st.closed_loop())
    plan.notes.push_back(o.path + ": " + st.where + ".type_ " + st.type +
                         " is a strategy kvfleet does not model: the requests are sent when "
                         "they were");
}

}  // namespace

BenchReplay plan_guidellm(const BenchOptions& o, const LocatedResult& where) {
  BenchReplay plan;
  plan.format = "GuideLLM";
  plan.source = o.path;
  const json j = read_report_json(o.path);
  if (!j.is_object()) throw InputError(o.path, "", "must be a JSON object (a GuideLLM report)");
  const JsonObject top(j, o.path);
  const json* bs = top.find("benchmarks");
  if (bs == nullptr || !bs->is_array() || bs->empty())
    top.fail("benchmarks", "must be a non-empty array of benchmarks");
  const std::size_t bi = choose_benchmark(o, top, *bs, plan);
  const JsonObject b((*bs)[bi], o.path, "benchmarks[" + std::to_string(bi) + "]");
  const Layout layout = b.has("config") ? Layout::k04 : Layout::k03;
  plan.latency = definition(o, top, layout);
  const Strategy st = read_strategy(b, layout);
  const auto reqs = b.object("requests");
  if (!reqs) b.fail("requests", "missing: the report's per-request records are read from it");
  endpoint_setting(o, top, b, *reqs, plan);

  YAML::Node sc = base_scenario(o, "replay-" + fs::path(o.path).stem().string(), plan);
  // The report's own settings, read (and checked) before the server's, listed after them.
  BenchReplay part;
  const std::size_t replayed = trace_requests(o, *reqs, layout, st, part, sc);
  note_sampling(b, layout, replayed, part);
  client_settings(o, st, part, sc);
  timeout_setting(o, b, layout, part);
  // The measured statistics: the report's own, over its successful requests.
  const auto m = b.object("metrics");
  if (!m) b.fail("metrics", "missing: the measured latencies are read from it");
  MeasuredGroup g;
  g.name = "benchmark " + std::to_string(bi) + " (" + st.words() + ")";
  g.requests = static_cast<std::int64_t>(replayed);
  g.ttft = reported(*m, "time_to_first_token_ms", 1e-3);
  g.tpot = reported(*m, "time_per_output_token_ms", 1e-3);
  g.e2e = reported(*m, "request_latency", 1);

  server_settings(o, where, model_name(top, b, layout), "", "", sc, plan);
  plan.trace = std::move(part.trace);
  plan.notes.insert(plan.notes.end(), part.notes.begin(), part.notes.end());
  plan.settings.insert(plan.settings.end(), part.settings.begin(), part.settings.end());
  plan.groups.push_back(g);
  plan.scenario = sc;
  return plan;
}

}  // namespace kvfleet::sim::bench_detail
