#pragma once
// The serving frontend of a replica: vLLM's OpenAI-compatible API server, the process in front of
// the engine core. A benchmark client (vllm bench serve, inference-perf, GuideLLM) measures
// latency at this boundary, so the frontend's time is part of the TTFT, TPOT and E2E it reports:
//  - in: HTTP handling, validation and the chat template (request_s), and tokenisation, growing
//    with the prompt (per_input_token_s), before the engine sees the request;
//  - out: each step's output tokens are detokenised and streamed by one serial output processor
//    per engine (per_output_token_s per token, after the step that emitted them; a step's tokens
//    reach the clients when the processor has handled them, so a processor busier than the
//    steps falls behind and TPOT grows), and the final chunk (finish_s) after the last token.
// Times measured inside the engine (vLLM's own queued/first-token timestamps) exclude all of
// this: a replay of engine-side measurements turns the frontend off.
#include <algorithm>
#include <cstdint>

#include "sim/config/params.h"
#include "sim/core/time.h"

namespace kvfleet::sim {

struct FrontendConfig {
  bool enabled = true;
  // Defaults and their sources: docs/engine.md, "The serving frontend".
  double request_s = 0.005;
  double per_input_token_s = 1e-6;
  double per_output_token_s = 45.9e-6;
  double finish_s = 0.00078;

  template <class V>
  void visit(V& v) {
    v.param("enabled", enabled,
            {.desc = "count the API server's time (HTTP, tokenisation, detokenisation, streaming) "
                     "in latencies as a benchmark client measures them; false = latencies as "
                     "the engine measures them (its own queued and first-token timestamps)"});
    v.param("request_s", request_s,
            {.unit = "s",
             .desc = "per request before the engine sees it: HTTP, validation, chat template",
             .min = 0,
             .max = 60,
             .why = "a minute per request is no API server"});
    v.param("per_input_token_s", per_input_token_s,
            {.unit = "s",
             .desc = "tokenisation per prompt token, before the engine sees the request",
             .min = 0,
             .max = 0.01,
             .why = "10 ms per token is a thousand times any tokenizer"});
    v.param("per_output_token_s", per_output_token_s,
            {.unit = "s",
             .desc = "detokenisation and streaming per output token, by one serial output "
                     "processor per engine after each step",
             .min = 0,
             .max = 0.01,
             .why = "10 ms per token is a thousand times any detokenizer"});
    v.param("finish_s", finish_s,
            {.unit = "s",
             .desc = "after a request's last token: final chunk, usage, end of stream",
             .min = 0,
             .max = 60,
             .why = "a minute to close a stream is no API server"});
  }

  // Time from the request reaching the replica to the engine seeing it.
  SimTime input_delay(std::int64_t input_tokens) const {
    if (!enabled) return 0;
    return from_seconds(request_s + per_input_token_s * static_cast<double>(input_tokens));
  }
  SimTime finish_delay() const { return enabled ? from_seconds(finish_s) : 0; }
  bool streams() const { return enabled && per_output_token_s > 0; }
};

// The serial output processor of one engine: a step that ends at `now` with `tokens` output
// tokens hands them over; they reach the clients when the processor has detokenised and sent
// them (it handles steps in order, one token after another).
class OutputProcessor {
 public:
  explicit OutputProcessor(const FrontendConfig& c)
      : per_token_s_(c.streams() ? c.per_output_token_s : 0) {}
  // When the tokens of the step ending at `now` reach the clients.
  SimTime deliver(SimTime now, std::int64_t tokens) {
    if (per_token_s_ <= 0 || tokens <= 0) return now;
    busy_until_ = std::max(now, busy_until_) +
                  std::max<SimTime>(1, from_seconds(per_token_s_ * static_cast<double>(tokens)));
    return busy_until_;
  }
  void reset() { busy_until_ = 0; }

 private:
  double per_token_s_;
  SimTime busy_until_ = 0;
};

}  // namespace kvfleet::sim
