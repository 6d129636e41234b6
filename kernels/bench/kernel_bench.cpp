// kvfleet-kernel-bench: Google Benchmark over explicit grids of the kernels, for calibration.
//
// Each point times its kernel with CUDA events (UseManualTime) after warm-up, launching 10 times
// between two events and rotating among several copies of the KV pool whose total exceeds the
// L2 cache three times over, so repeated runs do not measure the cache. Counters per point:
// bytes_read, bytes_written, GBps (their sum over the kernel time), frac_copy_bw (GBps over the
// device-to-device copy bandwidth measured at start, which counts read plus written bytes too),
// TFLOPs. `--benchmark_out=FILE --benchmark_out_format=json` gives the JSON that calibration
// reads; the context carries the device, its copy bandwidths and the versions.
//
// --grid=targets|trimmed|full (default full) chooses the points (register_grid below).
//
// Argument order (names appear in each point's name):
//   decode    batch, context, block, q_heads, kv_heads, head_dim, dtype (0 fp16, 1 bf16, 2 fp8),
//             splits (0 automatic, 1 none)
//   prefill   chunk, prefix, block, q_heads, kv_heads, head_dim, dtype, path (0 tensor cores,
//             1 CUDA cores)
//   kv_write  tokens, kv_heads, head_dim, dtype
//   gemm      m (tokens), n, k, dtype (0 fp16, 1 bf16, 2 fp8)
//   copy      MiB, kind (0 device-to-device, 1 host-to-device, 2 device-to-host)
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernels/attention.h"
#include "kernels/probes.h"

namespace kvfleet::kernels {
namespace {

constexpr int kReps = 10;  // launches between two events

struct Globals {
  DeviceInfo info;
  CopyBandwidth copy;
  std::size_t free_bytes = 0;
};
Globals& globals() {
  static Globals g;
  return g;
}

// Device memory owned for one benchmark point.
struct Buf {
  void* p = nullptr;
  Buf() = default;
  explicit Buf(std::size_t bytes) {
    if (cudaMalloc(&p, std::max<std::size_t>(bytes, 16)) != cudaSuccess) p = nullptr;
  }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  Buf(Buf&& o) noexcept : p(o.p) { o.p = nullptr; }
  Buf& operator=(Buf&& o) noexcept {
    std::swap(p, o.p);
    return *this;
  }
  ~Buf() {
    if (p) cudaFree(p);
  }
};

template <typename T>
Buf upload(const std::vector<T>& v) {
  Buf b(v.size() * sizeof(T));
  if (b.p) cudaMemcpy(b.p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
  return b;
}

// Random bytes that are finite numbers in every dtype here: each byte in 0x30..0x3F gives fp8
// values in [0.5, 1.9) and fp16/bf16 values of moderate size.
Buf random_bytes(std::size_t bytes, std::uint32_t seed) {
  std::vector<std::uint8_t> h(std::min<std::size_t>(bytes, 1u << 24));
  std::mt19937 rng(seed);
  for (auto& x : h) x = static_cast<std::uint8_t>(0x30 + rng() % 16);
  Buf b(bytes);
  if (!b.p) return b;
  // The first 16 MiB from the host, then doubled on the device.
  auto* d = static_cast<std::uint8_t*>(b.p);
  cudaMemcpy(d, h.data(), std::min(h.size(), bytes), cudaMemcpyHostToDevice);
  for (std::size_t have = h.size(); have < bytes; have *= 2) {
    cudaMemcpy(d + have, d, std::min(have, bytes - have), cudaMemcpyDeviceToDevice);
  }
  return b;
}

// How many copies of `bytes` to rotate among so that they exceed L2 three times (at most 8).
int rotation(std::size_t bytes) {
  const double l2 = std::max(globals().info.l2_bytes, 1 << 20);
  return static_cast<int>(std::clamp(std::ceil(3.0 * l2 / std::max<double>(bytes, 1)), 1.0, 8.0));
}

bool fits(benchmark::State& state, std::size_t bytes) {
  if (bytes > globals().free_bytes * 0.8) {
    state.SkipWithError("needs more device memory than is free");
    return false;
  }
  return true;
}

// Times `launch(i)` (the i-th launch, for rotation): warm-up, then kReps launches per iteration
// between two events. Returns the mean seconds per launch over all iterations.
template <typename Launch>
double time_launches(benchmark::State& state, Launch launch) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (int i = 0; i < 3; ++i) {
    if (Status s = launch(i); !s) {
      state.SkipWithError(s.message.c_str());
      return 0;
    }
  }
  cudaDeviceSynchronize();
  double total = 0;
  long n = 0;
  int i = 0;
  for (auto _ : state) {
    cudaEventRecord(a);
    for (int r = 0; r < kReps; ++r) launch(i++);
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    const double per = ms * 1e-3 / kReps;
    state.SetIterationTime(per);
    total += per;
    ++n;
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) {
    state.SkipWithError(cudaGetErrorString(e));
    return 0;
  }
  return n ? total / n : 0;
}

void set_counters(benchmark::State& state, double seconds, double read, double written,
                  double flops) {
  state.counters["bytes_read"] = read;
  state.counters["bytes_written"] = written;
  if (seconds <= 0) return;
  const double gbps = (read + written) / seconds / 1e9;
  state.counters["GBps"] = gbps;
  if (globals().copy.d2d_GBps > 0) state.counters["frac_copy_bw"] = gbps / globals().copy.d2d_GBps;
  state.counters["TFLOPs"] = flops / seconds / 1e12;
}

KvDtype dtype_arg(std::int64_t x) { return static_cast<KvDtype>(x); }

// A paged KV pool for `batch` sequences of `ctx` tokens: shuffled block ids, one table per copy.
struct PagedPool {
  std::vector<Buf> k, v, table;
  Buf ctx_lens;
  int max_blocks = 0;
  int num_blocks = 0;
  std::size_t kv_bytes_each = 0;
};
// The pool's shape in a PagedKv, and copy c's buffers (for rotation).
void use_pool(const PagedPool& p, int c, int bs, KvDtype dt, PagedKv* kv) {
  kv->num_blocks = p.num_blocks;
  kv->block_size = bs;
  kv->max_blocks_per_seq = p.max_blocks;
  kv->dtype = dt;
  kv->k_scale = kv->v_scale = 0.01f;
  c %= static_cast<int>(p.k.size());
  kv->k_cache = p.k[c].p;
  kv->v_cache = p.v[c].p;
  kv->block_table = static_cast<const std::int32_t*>(p.table[c].p);
}

bool make_pool(benchmark::State& state, PagedPool* p, int batch, int ctx, int bs, int kvh, int D,
               KvDtype dt) {
  p->max_blocks = (ctx + bs - 1) / bs;
  p->num_blocks = batch * p->max_blocks;
  p->kv_bytes_each = static_cast<std::size_t>(p->num_blocks) * bs * kvh * D * kv_bytes(dt);
  const int copies = rotation(2 * p->kv_bytes_each);
  if (!fits(state, 2 * p->kv_bytes_each * copies)) return false;
  std::mt19937 rng(ctx + batch);
  for (int c = 0; c < copies; ++c) {
    p->k.push_back(random_bytes(p->kv_bytes_each, 2 * c + 1));
    p->v.push_back(random_bytes(p->kv_bytes_each, 2 * c + 2));
    std::vector<std::int32_t> ids(p->num_blocks);
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng);
    p->table.push_back(upload(ids));
    if (!p->k.back().p || !p->v.back().p || !p->table.back().p) {
      state.SkipWithError("device allocation failed");
      return false;
    }
  }
  p->ctx_lens = upload(std::vector<std::int32_t>(batch, ctx));
  return true;
}

void BM_PagedDecode(benchmark::State& state) {
  const int batch = state.range(0), ctx = state.range(1), bs = state.range(2);
  const int qh = state.range(3), kvh = state.range(4), D = state.range(5);
  const KvDtype dt = dtype_arg(state.range(6));
  const int splits_req = state.range(7);
  PagedPool pool;
  if (!make_pool(state, &pool, batch, ctx, bs, kvh, D, dt)) return;
  Buf q = random_bytes(static_cast<std::size_t>(batch) * qh * D * 2, 7);
  Buf out(static_cast<std::size_t>(batch) * qh * D * 2);
  DecodeArgs a;
  a.q = q.p;
  a.out = out.p;
  a.context_lens = static_cast<const std::int32_t*>(pool.ctx_lens.p);
  a.num_seqs = batch;
  a.num_q_heads = qh;
  a.num_kv_heads = kvh;
  a.head_dim = D;
  a.sm_scale = 1.0f / std::sqrt(static_cast<float>(D));
  a.max_context_len = ctx;
  a.num_splits = splits_req;
  a.num_sms = globals().info.sm_count;
  use_pool(pool, 0, bs, dt, &a.kv);
  int splits = 1;  // what the launcher will choose (occupancy included), to size the workspace
  if (Status s = paged_decode_splits(a, &splits); !s) {
    state.SkipWithError(s.message.c_str());
    return;
  }
  const std::size_t ws_bytes = decode_workspace_bytes(splits, batch, qh, D);
  Buf ws(ws_bytes);
  a.num_splits = splits;
  a.workspace = ws.p;
  a.workspace_bytes = ws_bytes;
  const double t = time_launches(state, [&](int i) {
    use_pool(pool, i, bs, dt, &a.kv);
    return paged_decode(a, nullptr);
  });
  const double read = 2.0 * batch * ctx * kvh * D * kv_bytes(dt) + batch * qh * D * 2.0 +
                      batch * pool.max_blocks * 4.0;
  set_counters(state, t, read, batch * qh * D * 2.0, 4.0 * batch * ctx * qh * D);
  state.counters["splits"] = splits;
}

void BM_ContiguousDecode(benchmark::State& state) {
  const int batch = state.range(0), ctx = state.range(1);
  const int qh = state.range(2), kvh = state.range(3), D = state.range(4);
  const KvDtype dt = dtype_arg(state.range(5));
  const std::size_t each = static_cast<std::size_t>(batch) * ctx * kvh * D * kv_bytes(dt);
  const int copies = rotation(2 * each);
  if (!fits(state, 2 * each * copies)) return;
  std::vector<Buf> k, v;
  for (int c = 0; c < copies; ++c) {
    k.push_back(random_bytes(each, 2 * c + 1));
    v.push_back(random_bytes(each, 2 * c + 2));
  }
  Buf lens = upload(std::vector<std::int32_t>(batch, ctx));
  Buf q = random_bytes(static_cast<std::size_t>(batch) * qh * D * 2, 7);
  Buf out(static_cast<std::size_t>(batch) * qh * D * 2);
  ContiguousDecodeArgs a;
  a.q = q.p;
  a.out = out.p;
  a.context_lens = static_cast<const std::int32_t*>(lens.p);
  a.num_seqs = batch;
  a.num_q_heads = qh;
  a.num_kv_heads = kvh;
  a.head_dim = D;
  a.max_context = ctx;
  a.sm_scale = 1.0f / std::sqrt(static_cast<float>(D));
  a.dtype = dt;
  a.k_scale = a.v_scale = 0.01f;
  a.k = k[0].p;
  a.v = v[0].p;
  a.num_sms = globals().info.sm_count;
  int splits = 1;
  if (Status s = contiguous_decode_splits(a, &splits); !s) {
    state.SkipWithError(s.message.c_str());
    return;
  }
  const std::size_t ws_bytes = decode_workspace_bytes(splits, batch, qh, D);
  Buf ws(ws_bytes);
  a.num_splits = splits;
  a.workspace = ws.p;
  a.workspace_bytes = ws_bytes;
  const double t = time_launches(state, [&](int i) {
    a.k = k[i % copies].p;
    a.v = v[i % copies].p;
    return contiguous_decode(a, nullptr);
  });
  const double read = 2.0 * batch * ctx * kvh * D * kv_bytes(dt) + batch * qh * D * 2.0;
  set_counters(state, t, read, batch * qh * D * 2.0, 4.0 * batch * ctx * qh * D);
  state.counters["splits"] = splits;
}

void BM_PagedPrefill(benchmark::State& state) {
  const int chunk = state.range(0), prefix = state.range(1), bs = state.range(2);
  const int qh = state.range(3), kvh = state.range(4), D = state.range(5);
  const KvDtype dt = dtype_arg(state.range(6));
  const PrefillPath path = static_cast<PrefillPath>(state.range(7));
  const int ctx = prefix + chunk;
  PagedPool pool;
  if (!make_pool(state, &pool, 1, ctx, bs, kvh, D, dt)) return;
  Buf q = random_bytes(static_cast<std::size_t>(chunk) * qh * D * 2, 7);
  Buf out(static_cast<std::size_t>(chunk) * qh * D * 2);
  Buf indptr = upload(std::vector<std::int32_t>{0, chunk});
  PrefillArgs a;
  a.q = q.p;
  a.out = out.p;
  a.q_indptr = static_cast<const std::int32_t*>(indptr.p);
  a.context_lens = static_cast<const std::int32_t*>(pool.ctx_lens.p);
  a.num_seqs = 1;
  a.num_q_tokens = chunk;
  a.num_q_heads = qh;
  a.num_kv_heads = kvh;
  a.head_dim = D;
  a.sm_scale = 1.0f / std::sqrt(static_cast<float>(D));
  a.max_q_len = chunk;
  a.path = path;
  const double t = time_launches(state, [&](int i) {
    use_pool(pool, i, bs, dt, &a.kv);
    return paged_prefill(a, nullptr);
  });
  // Causal: query i sees prefix + i + 1 keys; 4 flops per (query, key, dim) for QK and PV.
  const double pairs = static_cast<double>(chunk) * prefix + 0.5 * chunk * (chunk + 1.0);
  const double read = 2.0 * ctx * kvh * D * kv_bytes(dt) + chunk * qh * D * 2.0;
  set_counters(state, t, read, chunk * qh * D * 2.0, 4.0 * pairs * qh * D);
}

void BM_KvWrite(benchmark::State& state) {
  const int tokens = state.range(0), kvh = state.range(1), D = state.range(2);
  const KvDtype dt = dtype_arg(state.range(3));
  const int bs = 16;
  const int blocks = (tokens + bs - 1) / bs * 4;
  const std::size_t row = static_cast<std::size_t>(kvh) * D;
  Buf k = random_bytes(tokens * row * 2, 1), v = random_bytes(tokens * row * 2, 2);
  Buf kc(blocks * bs * row * kv_bytes(dt)), vc(blocks * bs * row * kv_bytes(dt));
  std::vector<std::int64_t> slots(tokens);
  std::vector<std::int64_t> perm(blocks * bs);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(tokens));
  std::copy_n(perm.begin(), tokens, slots.begin());
  Buf ds = upload(slots);
  const KvWriteArgs a = kv_write_args(k.p, v.p, static_cast<const std::int64_t*>(ds.p), kc.p, vc.p,
                                      tokens, kvh, D, blocks, bs, dt, 0.01f, 0.01f);
  const double t = time_launches(state, [&](int) { return kv_write(a, nullptr); });
  set_counters(state, t, 2.0 * tokens * row * 2 + tokens * 8.0, 2.0 * tokens * row * kv_bytes(dt),
               0);
}

void BM_Gemm(benchmark::State& state) {
  GemmShape g;
  g.m = state.range(0);
  g.n = state.range(1);
  g.k = state.range(2);
  g.dtype = static_cast<GemmDtype>(state.range(3));
  double t = 0;
  for (auto _ : state) {
    if (Status s = time_gemm(g, 3, 20, &t); !s) {
      state.SkipWithError(s.message.c_str());
      return;
    }
    state.SetIterationTime(t);
  }
  const double in = g.dtype == GemmDtype::kFP8E4M3 ? 1 : 2;
  set_counters(state, t, in * (1.0 * g.m * g.k + 1.0 * g.k * g.n), 2.0 * g.m * g.n,
               2.0 * g.m * g.n * g.k);
}

void BM_Copy(benchmark::State& state) {
  const std::size_t bytes = static_cast<std::size_t>(state.range(0)) << 20;
  const int kind = state.range(1);
  CopyBandwidth bw;
  for (auto _ : state) {
    if (Status s = measure_copy_bandwidth(bytes, 10, &bw); !s) {
      state.SkipWithError(s.message.c_str());
      return;
    }
    const double gbps = kind == 0 ? bw.d2d_GBps : kind == 1 ? bw.h2d_GBps : bw.d2h_GBps;
    state.SetIterationTime((kind == 0 ? 2.0 : 1.0) * bytes / (gbps * 1e9));
    state.counters["GBps"] = gbps;
  }
}

// The grids. Llama-3-8B's attention shape (32 query heads, 8 KV heads, head dim 128) is the
// centre; other axes vary one at a time around batch 64 × context 4096.
//   targets  the five points the H200 targets are read from (docs/kernels.md), first and alone
//            so that a device run reports them even if it is cut short;
//   trimmed  about 50 points over every axis, sized for the device script's time budget;
//   full     every point below (calibration runs this one).
enum class Grid { kTargets, kTrimmed, kFull };

benchmark::internal::Benchmark* decode_bench() {
  auto* b = benchmark::RegisterBenchmark("decode", BM_PagedDecode);
  b->ArgNames({"batch", "ctx", "block", "qh", "kvh", "hd", "dtype", "splits"});
  return b;
}
benchmark::internal::Benchmark* contiguous_bench() {
  auto* b = benchmark::RegisterBenchmark("decode_contiguous", BM_ContiguousDecode);
  b->ArgNames({"batch", "ctx", "qh", "kvh", "hd", "dtype"});
  return b;
}

void register_grid(Grid grid) {
  using B = benchmark::internal::Benchmark;
  std::vector<B*> timed, once;
  if (grid == Grid::kTargets) {
    auto* decode = decode_bench();
    decode->Args({64, 4096, 16, 32, 8, 128, 1, 0});  // ≥ 80% of copy bandwidth
    decode->Args({64, 4096, 16, 32, 8, 128, 2, 0});  // fp8 ≥ 1.6× bf16
    decode->Args({1, 32768, 16, 32, 8, 128, 1, 0});  // split-KV ≥ 60%
    decode->Args({1, 32768, 16, 32, 8, 128, 1, 1});  // … and without split-KV
    auto* contiguous = contiguous_bench();
    contiguous->Args({64, 4096, 32, 8, 128, 1});  // paging costs ≤ 5%
    for (B* b : {decode, contiguous})
      b->UseManualTime()->Unit(benchmark::kMicrosecond)->MinTime(0.1);
    return;
  }
  auto* decode = decode_bench();
  auto* contiguous = contiguous_bench();
  auto prefill = benchmark::RegisterBenchmark("prefill", BM_PagedPrefill);
  prefill->ArgNames({"chunk", "prefix", "block", "qh", "kvh", "hd", "dtype", "path"});
  auto write = benchmark::RegisterBenchmark("kv_write", BM_KvWrite);
  write->ArgNames({"tokens", "kvh", "hd", "dtype"});
  auto gemm = benchmark::RegisterBenchmark("gemm", BM_Gemm);
  gemm->ArgNames({"m", "n", "k", "dtype"});
  auto copy = benchmark::RegisterBenchmark("copy", BM_Copy);
  copy->ArgNames({"MiB", "kind"});
  // Llama-3-8B at tensor parallelism 1: QKV, O, gate+up, down, lm_head.
  const std::vector<std::pair<int, int>> layers = {
      {6144, 4096}, {4096, 4096}, {28672, 4096}, {4096, 14336}, {128256, 4096}};
  if (grid == Grid::kTrimmed) {
    decode->ArgsProduct(
        {{1, 8, 64, 256}, {1024, 4096, 32768}, {16}, {32}, {8}, {128}, {1, 2}, {0}});
    decode->ArgsProduct({{64}, {4096}, {8, 32, 64}, {32}, {8}, {128}, {1}, {0}});  // block size
    decode->ArgsProduct({{64}, {4096}, {16}, {32}, {8}, {64, 256}, {1}, {0}});     // head dim
    decode->ArgsProduct({{64}, {4096}, {16}, {8, 16, 64}, {8}, {128}, {1}, {0}});  // group 1, 2, 8
    decode->ArgsProduct({{64}, {4096}, {16}, {32}, {8}, {128}, {0}, {0}});         // fp16
    contiguous->ArgsProduct({{1, 64}, {32768}, {32}, {8}, {128}, {1}});
    prefill->ArgsProduct({{512, 2048}, {0, 8192}, {16}, {32}, {8}, {128}, {1}, {0}});
    prefill->ArgsProduct({{2048}, {8192}, {16}, {32}, {8}, {128}, {2}, {0}});
    prefill->ArgsProduct({{2048}, {8192}, {16}, {32}, {8}, {128}, {1}, {1}});  // CUDA cores
    write->ArgsProduct({{64, 4096}, {8}, {128}, {1}});
    gemm->ArgsProduct({{64, 4096}, {layers[0].first}, {layers[0].second}, {1, 2}});
    copy->ArgsProduct({{1024}, {0, 1}});
  } else {
    decode->ArgsProduct({{1, 8, 32, 64, 128, 256},
                         {512, 1024, 2048, 4096, 8192, 16384, 32768},
                         {16},
                         {32},
                         {8},
                         {128},
                         {0, 1, 2},
                         {0}});
    decode->ArgsProduct({{64}, {4096}, {8, 16, 32, 64}, {32}, {8}, {64, 128, 256}, {1, 2}, {0}});
    decode->ArgsProduct({{64}, {4096}, {16}, {8, 16, 32, 64}, {8}, {128}, {1}, {0}});
    decode->ArgsProduct({{1, 4}, {32768}, {16}, {32}, {8}, {128}, {1, 2}, {1}});  // split-KV off
    contiguous->ArgsProduct({{1, 64}, {4096, 32768}, {32}, {8}, {128}, {1, 2}});
    prefill->ArgsProduct({{128, 512, 2048}, {0, 2048, 8192}, {16}, {32}, {8}, {128}, {1, 2}, {0}});
    prefill->ArgsProduct({{512, 2048}, {8192}, {16}, {32}, {8}, {128}, {1}, {1}});  // CUDA cores
    write->ArgsProduct({{1, 64, 512, 4096}, {8}, {128}, {1, 2}});
    for (auto nk : layers) {
      gemm->ArgsProduct({{16, 64, 256, 1024, 4096}, {nk.first}, {nk.second}, {1, 2}});
    }
    copy->ArgsProduct({{64, 1024}, {0, 1, 2}});
  }
  const double min_time = grid == Grid::kTrimmed ? 0.05 : 0.2;
  for (B* b : {decode, contiguous, prefill, write}) {
    b->UseManualTime()->Unit(benchmark::kMicrosecond)->MinTime(min_time);
  }
  for (B* b : {gemm, copy}) {  // each iteration is already a median of 20 (10) timed runs
    b->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(1);
  }
}

}  // namespace
}  // namespace kvfleet::kernels

int main(int argc, char** argv) {
  using namespace kvfleet::kernels;
  bool listing = false;
  Grid grid = Grid::kFull;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    listing |= std::strncmp(argv[i], "--benchmark_list_tests", 22) == 0;
    if (std::strncmp(argv[i], "--grid=", 7) == 0) {
      const std::string g = argv[i] + 7;
      if (g == "targets") {
        grid = Grid::kTargets;
      } else if (g == "trimmed") {
        grid = Grid::kTrimmed;
      } else if (g == "full") {
        grid = Grid::kFull;
      } else {
        std::fprintf(stderr, "kvfleet-kernel-bench: --grid=%s: expected targets, trimmed or full\n",
                     g.c_str());
        return 2;
      }
      continue;
    }
    argv[kept++] = argv[i];
  }
  argc = kept;
  register_grid(grid);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  if (!listing) {
    if (!cuda_available()) {
      std::fprintf(stderr,
                   "kvfleet-kernel-bench: no CUDA device is visible; nothing to measure "
                   "(--benchmark_list_tests=true lists the grid)\n");
      return 1;
    }
    Globals& g = globals();
    if (Status s = device_info(&g.info); !s) {
      std::fprintf(stderr, "kvfleet-kernel-bench: %s\n", s.message.c_str());
      return 1;
    }
    if (Status s = measure_copy_bandwidth(std::size_t{1} << 30, 20, &g.copy); !s) {
      std::fprintf(stderr, "kvfleet-kernel-bench: %s\n", s.message.c_str());
      return 1;
    }
    std::size_t total = 0;
    cudaMemGetInfo(&g.free_bytes, &total);
    benchmark::AddCustomContext("gpu", g.info.name);
    benchmark::AddCustomContext("sm_count", std::to_string(g.info.sm_count));
    benchmark::AddCustomContext("l2_bytes", std::to_string(g.info.l2_bytes));
    benchmark::AddCustomContext("memory_bytes", std::to_string(g.info.memory_bytes));
    benchmark::AddCustomContext("driver_version", std::to_string(g.info.driver_version));
    benchmark::AddCustomContext("runtime_version", std::to_string(g.info.runtime_version));
    benchmark::AddCustomContext("copy_d2d_GBps", std::to_string(g.copy.d2d_GBps));
    benchmark::AddCustomContext("copy_h2d_GBps", std::to_string(g.copy.h2d_GBps));
    benchmark::AddCustomContext("copy_d2h_GBps", std::to_string(g.copy.d2h_GBps));
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
