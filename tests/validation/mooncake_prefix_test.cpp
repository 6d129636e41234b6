// Prefix caching on the Mooncake conversation trace (FAST'25): hash_ids name 512-token blocks,
// equal ids equal content. With unlimited KV and FCFS admission, every request must hit exactly
// the longest prefix that earlier requests cached (in 16-token blocks, at most prompt − 1 tokens):
// computed here from the trace alone and compared token for token. With less KV the hit rate can
// only fall. Skips when ../shared/reference is absent.
#include <gtest/gtest.h>

#include <absl/container/flat_hash_set.h>

#include <cstdio>

#include "sim/testing/run.h"
#include "sim/workload/trace.h"

namespace kvfleet {
namespace {

const char* kScenario = "/scenarios/traces/mooncake-conversation-h200.yaml";

TEST(MooncakePrefix, UnlimitedCacheHitsExactlyTheLongestSeenPrefix) {
  const std::string trace =
      testing::reference_file("traces/mooncake_fast25/conversation_trace.jsonl");
  if (trace.empty()) GTEST_SKIP() << "../shared/reference is absent: no Mooncake trace";
  std::int64_t ideal = 0, queried = 0;
  absl::flat_hash_set<std::uint32_t> seen;
  for (const auto& r : sim::read_trace("mooncake", trace)) {
    const std::int64_t len = std::max<std::int32_t>(1, r.input_tokens);
    const std::size_t need = static_cast<std::size_t>((len + 511) / 512);
    const std::size_t n = std::min(need, r.hash_ids.size());
    std::size_t k = 0;
    while (k < n && seen.contains(r.hash_ids[k])) ++k;
    const std::int64_t covered = std::min<std::int64_t>(static_cast<std::int64_t>(k) * 512, len);
    ideal += std::min(covered / 16 * 16, (len - 1) / 16 * 16);
    queried += len;
    seen.insert(r.hash_ids.begin(), r.hash_ids.begin() + static_cast<std::ptrdiff_t>(n));
  }
  const auto run = [&](std::int64_t blocks) {
    const auto sc = sim::load_scenario_file(
        std::string(KVFLEET_SOURCE_DIR) + kScenario,
        {"workload.time_scale=3",
         "pools[0].engine.num_gpu_blocks_override=" + std::to_string(blocks)});
    sim::Simulation s(sc);
    return sim::summarize(s.run());
  };
  const auto unlimited = run(6'000'000);  // 96M tokens: more than the trace's unique content
  std::printf("ideal %lld of %lld prompt tokens (%.2f%%); kvfleet %lld (%.2f%%)\n",
              static_cast<long long>(ideal), static_cast<long long>(queried),
              100.0 * ideal / queried, static_cast<long long>(unlimited.total("prefix_cache_hits")),
              100 * unlimited.prefix_cache_hit_rate());
  EXPECT_EQ(unlimited.total("prefix_cache_queries"), queried);
  EXPECT_EQ(unlimited.total("prefix_cache_hits"), ideal);
  EXPECT_EQ(unlimited.total("cache_evictions"), 0);

  double last = unlimited.prefix_cache_hit_rate();
  for (std::int64_t blocks : {500'000, 100'000, 56'142}) {
    const auto s = run(blocks);
    std::printf("%lld blocks: hit rate %.2f%%\n", static_cast<long long>(blocks),
                100 * s.prefix_cache_hit_rate());
    EXPECT_LE(s.prefix_cache_hit_rate(), last) << blocks << " blocks";
    last = s.prefix_cache_hit_rate();
  }
}

}  // namespace
}  // namespace kvfleet
