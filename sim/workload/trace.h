#pragma once
// Readers for request traces: arrival times and token counts. Each reader checks every row and
// reports the first bad one as InputError naming the file, the row and the column.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kvfleet::sim {

struct TraceRow {
  double arrival_s = 0;  // seconds from the first row of the file
  std::int32_t input_tokens = 0;
  std::int32_t output_tokens = 0;
  std::vector<std::uint32_t> hash_ids;  // mooncake: one id per 512-token block of the prompt
};

// Formats: azure (Azure LLM inference trace CSV), vidur (Vidur/Splitwise processed CSV),
// vllm_jsonl (vLLM benchmark requests.jsonl; arrivals at queued_ts when present, else
// arrival_time), mooncake (Mooncake FAST'25 JSONL).
extern const std::vector<std::string_view> kTraceFormats;

// Reads a whole trace. `need_arrivals` false accepts files without an arrival column (used for
// empirical length distributions); their rows get arrival 0.
std::vector<TraceRow> read_trace(const std::string& format, const std::string& path,
                                 bool need_arrivals = true);

}  // namespace kvfleet::sim
