#include "sim/replay/latency_definition.h"

#include <cmath>
#include <cstdio>
#include <regex>

#include "sim/core/error.h"

namespace kvfleet::sim {

std::string LatencyDefinition::tpot_words() const {
  const std::string end = tpot_ends_at_last_token() ? "last token's chunk" : "end of stream";
  const double off = offset + (chat ? chat_offset : 0);
  char den[96];
  if (counts_tokens && per_chunk == 1 && off == -1) {
    std::snprintf(den, sizeof den, "(output − 1)");
  } else if (counts_tokens && per_chunk == 1 && off == 0) {
    std::snprintf(den, sizeof den, "output");
  } else if (per_chunk == 1 && off == 0) {
    std::snprintf(den, sizeof den, "chunks");
  } else if (off >= 0) {
    std::snprintf(den, sizeof den, "(%g × chunks + %g)", per_chunk, off);
  } else {
    std::snprintf(den, sizeof den, "(%g × chunks − %g)", per_chunk, -off);
  }
  return "(" + end + " − " + (tpot_from_send ? "sent" : "first chunk") + ") / " + den +
         (tpot_weighted_by_tokens ? ", statistics weighted by output" : "");
}

double client_tpot(const LatencyDefinition& d, const ClientTimes& t) {
  const double den = d.per_chunk * static_cast<double>(d.counts_tokens ? t.tokens : t.chunks) +
                     d.offset + (d.chat ? d.chat_offset : 0);
  if (!(den > 0)) return NAN;
  return ((d.tpot_ends_at_last_token() ? t.last_token : t.end) -
          (d.tpot_from_send ? 0.0 : t.first_chunk)) /
         den;
}

double client_e2e(const LatencyDefinition& d, const ClientTimes& t) {
  return d.e2e_ends_at_last_token() ? t.last_token : t.end;
}

const std::vector<LatencyDefinition>& known_latency_definitions() {
  static const std::vector<LatencyDefinition> k = [] {
    std::vector<LatencyDefinition> v;
    auto add = [&](const char* tool, const char* id, const char* version, bool tpot_last,
                   bool e2e_last, double per_chunk, double offset, double chat_offset) {
      LatencyDefinition d;
      d.role_chunk_first = chat_offset > 0;
      d.counts_tokens = offset == -1;
      d.tool = tool, d.id = id, d.version = version;
      d.tpot_to_last_token = tpot_last, d.e2e_to_last_token = e2e_last;
      d.per_chunk = per_chunk, d.offset = offset, d.chat_offset = chat_offset;
      v.push_back(d);
    };
    // One timestamp per SSE line read: 2 per event, [DONE] and its blank line included; chat's
    // role chunk 2 more, and the loop stops at [DONE]'s line (conformance README, line era).
    add("inference-perf", "inference-perf:lines",
        "v0.1.1 to v0.2.x (commits 23b52d0 to ad40050, July to 14 November 2025)", false, false, 2,
        1, 1);
    // One per SSE event, [DONE] included (and the chat role chunk).
    add("inference-perf", "inference-perf:events",
        "v0.3.0 to v0.4.x (commits 3631096 to 3b882ba, November 2025 to April 2026)", false, false,
        1, 0, 1);
    // One per output token, content events only.
    add("inference-perf", "inference-perf:tokens", "v0.5.0 and later (from commit 49e26a6)", true,
        false, 1, -1, 0);
    // vllm bench serve: TTFT the first token's chunk, E2EL the last token's chunk (0.7 on; the
    // chat client's last chunk of any kind), TPOT = (E2EL − TTFT) / (output − 1).
    add("vllm bench serve", "vllm-bench", "0.7.0 and later (benchmark_serving.py, vllm bench)",
        true, true, 1, -1, 0);
    v.back().chat_to_stream_end = true;
    add("vllm bench serve", "vllm-bench:0.6", "0.6.x (E2EL at the stream's [DONE])", false, false,
        1, -1, 0);
    // GuideLLM (tests/data/conformance/README.md, "GuideLLM 0.3.1" ... "0.8.1"): TTFT the first
    // line with text, E2E the stream's end ([DONE]), TPOT to the last token's line divided by
    // all n output tokens (usage.completion_tokens), its statistics weighted by n.
    // 0.2.0-0.3.x: TPOT from the first token (benchmark/benchmark.py:354-364).
    add("guidellm", "guidellm:0.3", "0.2.0 to 0.3.x (TPOT from the first token)", true, false, 1, 0,
        0);
    v.back().counts_tokens = true;
    v.back().tpot_weighted_by_tokens = true;
    // 0.4.0 on: TPOT from the request's start, TTFT included (schemas/request_stats.py:162-180
    // in 0.5.4; the same formula in 0.4.0, 0.7.3 and 0.8.1).
    add("guidellm", "guidellm:0.5", "0.4.0 and later (TPOT from the request's send)", true, false,
        1, 0, 0);
    v.back().counts_tokens = true;
    v.back().tpot_weighted_by_tokens = true;
    v.back().tpot_from_send = true;
    return v;
  }();
  return k;
}

LatencyDefinition latency_definition_id(const std::string& id, const std::string& how) {
  for (const LatencyDefinition& d : known_latency_definitions())
    if (d.id == id) {
      LatencyDefinition r = d;
      r.how = how;
      return r;
    }
  throw InputError("--tool-version", "", "no latency definition '" + id + "'");
}

namespace {

// The id of `tool`'s definition for release `major.minor`, "" if none.
std::string id_for_release(const std::string& tool, int major, int minor) {
  if (tool == "inference-perf") {
    if (major != 0) return major > 0 ? "inference-perf:tokens" : "";
    // v0.1.0 stamped every HTTP chunk read: with vLLM's one write per event, about the events.
    if (minor <= 0) return "inference-perf:events";
    if (minor <= 2) return "inference-perf:lines";
    if (minor <= 4) return "inference-perf:events";
    return "inference-perf:tokens";
  }
  if (tool == "vllm bench serve") {
    if (major == 0 && minor < 6) return "";
    return major == 0 && minor == 6 ? "vllm-bench:0.6" : "vllm-bench";
  }
  if (tool == "guidellm") {
    // 0.1.x reported its own result layout (core/result.py), not read here.
    if (major == 0 && minor < 2) return "";
    return major == 0 && minor <= 3 ? "guidellm:0.3" : "guidellm:0.5";
  }
  return "";
}

}  // namespace

LatencyDefinition latency_definition_for(const std::string& tool, const std::string& given) {
  std::string choices;
  for (const LatencyDefinition& d : known_latency_definitions()) {
    if (d.tool != tool) continue;
    choices += (choices.empty() ? "" : ", ") + d.id;
    if (given == d.id) return latency_definition_id(d.id, "--tool-version " + given);
  }
  static const std::regex release(R"(^\s*v?(\d{1,3})\.(\d{1,3})(?:\.\d+)*(?:[a-z.+][\w.+]*)?\s*$)");
  std::smatch m;
  if (std::regex_match(given, m, release)) {
    const std::string id = id_for_release(tool, std::stoi(m[1].str()), std::stoi(m[2].str()));
    if (!id.empty()) return latency_definition_id(id, "--tool-version " + given);
  }
  throw InputError("--tool-version", "",
                   "'" + given + "' is not a " + tool +
                       " release or definition kvfleet knows (a release like 0.2.0, or one of " +
                       choices + ")");
}

}  // namespace kvfleet::sim
