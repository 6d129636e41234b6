// kvfleet-kv-bench: the KV block manager alone. Reports ns per operation for allocating and
// freeing blocks, looking up and hitting cached prefixes, and evicting, on a pool the size of an
// H100's for Llama-3-8B (28,000 blocks).
#include <benchmark/benchmark.h>

#include <vector>

#include "sim/engine/kv_cache.h"

namespace {

using kvfleet::sim::KvCacheManager;
using kvfleet::sim::SlotId;

constexpr std::int64_t kBlocks = 28000;

// Sequences of `tokens` tokens each allocate their blocks, then free them: one op = one block.
void BM_AllocateFree(benchmark::State& state) {
  const std::int64_t tokens = state.range(0);
  KvCacheManager kv(kBlocks, 16, true);
  const std::int64_t seqs = kBlocks * 16 / tokens / 2;
  std::int64_t blocks = 0;
  for (auto _ : state) {
    for (std::uint32_t s = 0; s < seqs; ++s) kv.allocate(SlotId(s), tokens);
    for (std::uint32_t s = 0; s < seqs; ++s) kv.free(SlotId(s));
    blocks += seqs * ((tokens + 15) / 16);
  }
  state.SetItemsProcessed(blocks);
}
BENCHMARK(BM_AllocateFree)->Arg(512)->Arg(4096);

// Decode growth: one token at a time, a new block every 16 tokens.
void BM_DecodeGrowth(benchmark::State& state) {
  KvCacheManager kv(kBlocks, 16, true);
  const std::uint32_t seqs = 256;
  std::int64_t ops = 0;
  for (auto _ : state) {
    for (std::int64_t t = 1; t <= 1024; ++t)
      for (std::uint32_t s = 0; s < seqs; ++s) benchmark::DoNotOptimize(kv.allocate(SlotId(s), t));
    for (std::uint32_t s = 0; s < seqs; ++s) kv.free(SlotId(s));
    ops += 1024 * seqs;
  }
  state.SetItemsProcessed(ops);
}
BENCHMARK(BM_DecodeGrowth);

// A prompt of 64 cached blocks (1,024 tokens): hash lookup of every block, then hitting them
// (taking them out of the free queue) and releasing them. One op = one block.
void BM_PrefixLookupAndHit(benchmark::State& state) {
  KvCacheManager kv(kBlocks, 16, true);
  std::vector<std::uint64_t> h(64);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = 0x1234567ull * (i + 1);
  kv.allocate(SlotId(0), 64 * 16);
  kv.cache_blocks(SlotId(0), h, 64);
  kv.free(SlotId(0));
  std::int64_t blocks = 0;
  for (auto _ : state) {
    const auto n = kv.match_prefix(h);
    kv.allocate_with_prefix(SlotId(1), h, n, 64 * 16 + 1);
    kv.free(SlotId(1));
    blocks += 64;
  }
  state.SetItemsProcessed(blocks);
}
BENCHMARK(BM_PrefixLookupAndHit);

// Every allocation evicts a cached block: the pool is full of cached blocks. One op = one block.
void BM_AllocateEvicting(benchmark::State& state) {
  KvCacheManager kv(kBlocks, 16, true);
  std::uint64_t next = 1;
  std::vector<std::uint64_t> h(32);
  std::int64_t blocks = 0;
  for (auto _ : state) {
    for (auto& x : h) x = next++ * 0x9E3779B97F4A7C15ull;
    kv.allocate(SlotId(0), 32 * 16);
    kv.cache_blocks(SlotId(0), h, 32);
    kv.free(SlotId(0));
    blocks += 32;
  }
  state.SetItemsProcessed(blocks);
  state.counters["evictions"] = static_cast<double>(kv.evictions());
}
BENCHMARK(BM_AllocateEvicting);

}  // namespace

BENCHMARK_MAIN();
