// Fuzz harness: the trace readers. Input: one byte choosing the format (Azure CSV, Vidur CSV,
// vLLM requests.jsonl, Mooncake JSONL) and whether arrival times are needed, then the file.
#include <cmath>

#include "fuzz_support.h"
#include "sim/workload/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kvfleet;
  fuzz::Bytes in(data, size);
  const std::uint8_t choice = in.byte();
  const std::string format(sim::kTraceFormats[choice % sim::kTraceFormats.size()]);
  const bool need_arrivals = (choice >> 4) & 1;
  fuzz::clear_scratch();
  const std::string path = fuzz::write_file("trace", in.rest());
  try {
    const auto rows = sim::read_trace(format, path, need_arrivals);
    FUZZ_CHECK(!rows.empty());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      FUZZ_CHECK(rows[i].input_tokens >= 1);
      FUZZ_CHECK(rows[i].output_tokens >= 0);
      FUZZ_CHECK(std::isfinite(rows[i].arrival_s));
      FUZZ_CHECK(std::fabs(rows[i].arrival_s) <= 2e10);
      if (i > 0) FUZZ_CHECK(rows[i].arrival_s >= rows[i - 1].arrival_s);
    }
  } catch (const sim::InputError&) {
  }
  fuzz::check_memory();
  return 0;
}
