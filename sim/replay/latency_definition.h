#pragma once
// How a benchmark client defines the latencies it reports, so that a replay computes the same
// quantities from its simulated requests. Tools and their versions differ (docs/calibration.md,
// "What each tool measures"; tests/data/conformance/README.md for the measured proof):
// vllm bench serve ends E2E and TPOT at the last token's chunk; inference-perf ends E2E after
// [DONE], and its TPOT went through three eras: one timestamp per SSE *line* (v0.1.1-v0.2.x:
// blank lines and [DONE] included, so TPOT divides by about twice the tokens), one per SSE
// *event* (v0.3.0-v0.4.x: [DONE] and the chat role chunk included), one per token (v0.5.0 on).
// GuideLLM divides TPOT by all n output tokens, from the first token (0.2-0.3) or from the
// request's send (0.4 on, TTFT included), and weights its TPOT statistics by n.
// Every definition here has the form
//   TTFT = first chunk − sent
//   E2E  = end − sent                       (end: end of stream, or the last token's chunk)
//   TPOT = (end − start) / (per_chunk × chunks + offset [+ chat_offset for chat])
// where start is the first chunk (or the send, tpot_from_send)
// where chunks is the number of streamed chunks carrying tokens (one per token and engine step
// for vLLM without speculative decoding).
#include <string>
#include <vector>

namespace kvfleet::sim {

struct LatencyDefinition {
  std::string tool;     // "inference-perf", "vllm bench serve", ...
  std::string id;       // "inference-perf:lines", ... (what --tool-version also takes)
  std::string version;  // the versions it holds for, in words
  std::string how;      // how it was told ("the files: ...", "--tool-version 0.2.0", ...)
  bool tpot_to_last_token = false;  // TPOT's end: the last token's chunk (else end of stream)
  bool e2e_to_last_token = false;   // E2E's end: the last token's chunk (else end of stream)
  double per_chunk = 1, offset = -1;
  double chat_offset = 0;  // added to TPOT's denominator for the chat endpoint
  // Chat: the role-only chunk (before any token) is the first chunk, for TTFT and TPOT's start.
  // vLLM sends it together with the first token, so this changes nothing a replay computes; a
  // server that sends it at once (on receipt) gets TTFT ≈ 0 from these versions.
  bool role_chunk_first = false;
  // TPOT's denominator counts output tokens (else streamed chunks; they differ where a chunk
  // carries several tokens: speculative decoding, stream_interval > 1).
  bool counts_tokens = false;
  // Chat endpoint: TPOT and E2E end at the stream's last chunk (vllm bench serve's chat client
  // stamps every chunk, the usage chunk after the last token included; its completions client
  // only chunks with text: tests/data/conformance/vllm-bench-0.10.2-chat).
  bool chat_to_stream_end = false;
  bool chat = false;  // the run used the chat endpoint (chat_offset applies)
  // TPOT's start: the request's send, so TPOT includes TTFT (GuideLLM 0.4 on); else the first
  // chunk.
  bool tpot_from_send = false;
  // The tool's TPOT statistics weight each request by its output tokens (GuideLLM): the mean is
  // Σ(TPOT × n) / Σn.
  bool tpot_weighted_by_tokens = false;
  bool tpot_ends_at_last_token() const {
    return tpot_to_last_token && !(chat && chat_to_stream_end);
  }
  bool e2e_ends_at_last_token() const { return e2e_to_last_token && !(chat && chat_to_stream_end); }
  // TPOT's formula in words, for the replay's notes.
  std::string tpot_words() const;
};

// A request as a client sees it (seconds from the request's send; chunks with tokens).
struct ClientTimes {
  double first_chunk = 0, last_token = 0, end = 0;
  long long chunks = 0, tokens = 0;
};

// The TPOT `d` reports for `t` (NaN where its denominator is not positive: one chunk).
double client_tpot(const LatencyDefinition& d, const ClientTimes& t);
// The E2E latency `d` reports for `t`.
double client_e2e(const LatencyDefinition& d, const ClientTimes& t);

// The definitions kvfleet knows, every tool.
const std::vector<LatencyDefinition>& known_latency_definitions();

// The definition of `tool` that `given` names: an id ("inference-perf:events") or a release of
// the tool ("0.2.0", "v0.4.0"). Throws InputError naming --tool-version with the choices for
// anything else.
LatencyDefinition latency_definition_for(const std::string& tool, const std::string& given);
// The definition with id `id` (which must exist); `how` says how it was told.
LatencyDefinition latency_definition_id(const std::string& id, const std::string& how);

}  // namespace kvfleet::sim
