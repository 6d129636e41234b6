#include "calibration/backend.h"

#include "sim/core/error.h"

#include <Eigen/Dense>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <random>
#include <stdexcept>
#include <thread>

#include "kernels/ref/numeric.h"
#include "kernels/ref/reference.h"

namespace kvfleet::calibration {

namespace {

Timing summarise(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  auto q = [&](double f) { return t[static_cast<std::size_t>(f * (t.size() - 1) + 0.5)]; };
  return {q(0.5), 0.5 * (q(0.9) - q(0.1))};
}

Timing check(const kernels::Status& s, double median, const char* what) {
  if (!s) throw std::runtime_error(std::string(what) + ": " + s.message);
  return {median, 0};
}

class GpuBackend final : public Backend {
 public:
  explicit GpuBackend(int iters) : iters_(iters) {}
  std::string name() const override { return "gpu"; }
  std::vector<std::pair<std::string, std::string>> describe() override {
    kernels::DeviceInfo d;
    if (auto s = kernels::device_info(&d); !s) throw std::runtime_error(s.message);
    kernels::CopyBandwidth bw;
    if (auto s = kernels::measure_copy_bandwidth(std::size_t{1} << 30, 10, &bw); !s)
      throw std::runtime_error(s.message);
    return {{"gpu", d.name},
            {"sm_count", std::to_string(d.sm_count)},
            {"compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)},
            {"memory_bytes", std::to_string(d.memory_bytes)},
            {"l2_bytes", std::to_string(d.l2_bytes)},
            {"driver_version", std::to_string(d.driver_version)},
            {"cuda_runtime_version", std::to_string(d.runtime_version)},
            {"max_sm_clock_khz", std::to_string(d.sm_clock_khz)},
            {"max_memory_clock_khz", std::to_string(d.mem_clock_khz)},
            {"copy_d2d_GBps", std::to_string(bw.d2d_GBps)},
            {"copy_h2d_GBps", std::to_string(bw.h2d_GBps)},
            {"copy_d2h_GBps", std::to_string(bw.d2h_GBps)}};
  }
  Timing gemm(int m, int n, int k) override {
    double t = 0;
    return check(kernels::time_gemm({m, n, k, kernels::GemmDtype::kBF16}, 3, iters_, &t), t,
                 "GEMM");
  }
  Timing decode(const kernels::AttentionShape& s) override {
    double t = 0;
    return check(kernels::time_decode(s, iters_, &t), t, "decode attention");
  }
  Timing prefill(const kernels::AttentionShape& s) override {
    double t = 0;
    return check(kernels::time_prefill(s, iters_, &t), t, "prefill attention");
  }
  Timing kv_write(int tokens, int kvh, int hd, kernels::KvDtype d) override {
    double t = 0;
    return check(kernels::time_kv_write(tokens, kvh, hd, d, iters_, &t), t, "KV write");
  }

 private:
  int iters_;
};

// Host buffers of random stored values for a paged cache, a block table and queries.
struct HostAttention {
  std::vector<std::uint8_t> k, v;
  std::vector<std::uint16_t> q;
  std::vector<std::int32_t> table, lens, indptr;
  kernels::PagedKv kv;
  HostAttention(const kernels::AttentionShape& s, int seqs, int tokens, int q_rows) {
    std::mt19937 rng(tokens * 31 + seqs);
    const int bs = s.block_size;
    const int max_blocks = std::max(1, (tokens + bs - 1) / bs);
    const std::size_t elems =
        static_cast<std::size_t>(seqs) * max_blocks * bs * s.kv_heads * s.head_dim;
    k.resize(elems * kernels::kv_bytes(s.dtype));
    v.resize(k.size());
    // Bytes 0x30..0x3F are moderate finite values in every dtype used here.
    for (auto& x : k) x = static_cast<std::uint8_t>(0x30 + rng() % 16);
    for (auto& x : v) x = static_cast<std::uint8_t>(0x30 + rng() % 16);
    q.resize(static_cast<std::size_t>(q_rows) * s.q_heads * s.head_dim);
    for (auto& x : q)
      x = kernels::ref::float_to_bf16(std::uniform_real_distribution<float>(-1, 1)(rng));
    table.resize(static_cast<std::size_t>(seqs) * max_blocks);
    for (std::size_t i = 0; i < table.size(); ++i) table[i] = static_cast<std::int32_t>(i);
    std::shuffle(table.begin(), table.end(), rng);
    lens.assign(seqs, tokens);
    kv.k_cache = k.data();
    kv.v_cache = v.data();
    kv.block_table = table.data();
    kv.num_blocks = seqs * max_blocks;
    kv.block_size = bs;
    kv.max_blocks_per_seq = max_blocks;
    kv.dtype = s.dtype;
    kv.k_scale = kv.v_scale = 0.01f;
  }
};

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int iters) : iters_(std::max(1, iters)) {}
  std::string name() const override { return "cpu"; }
  std::vector<std::pair<std::string, std::string>> describe() override {
    std::string cpu = "unknown CPU";
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("model name", 0) == 0) {
        cpu = line.substr(line.find(':') + 2);
        break;
      }
    }
    return {{"gpu", "none (CPU backend: " + cpu + ")"},
            {"cpu_threads", std::to_string(std::thread::hardware_concurrency())},
            {"note",
             "CPU references and Eigen on one core: tests the calibration path, does not "
             "describe any GPU"}};
  }
  Timing gemm(int m, int n, int k) override {
    Eigen::MatrixXf a = Eigen::MatrixXf::Random(m, k), b = Eigen::MatrixXf::Random(k, n);
    Eigen::MatrixXf d(m, n);
    return time([&] { d.noalias() = a * b; });
  }
  Timing decode(const kernels::AttentionShape& s) override {
    HostAttention h(s, s.batch, s.context, s.batch);
    std::vector<double> out(h.q.size());
    kernels::DecodeArgs a = kernels::decode_args(s, h.q.data(), out.data(), h.lens.data());
    a.kv = h.kv;
    if (auto st = kernels::validate(a); !st) throw std::runtime_error(st.message);
    return time([&] { kernels::ref::paged_decode(a, out.data()); });
  }
  Timing prefill(const kernels::AttentionShape& s) override {
    HostAttention h(s, 1, s.prefix + s.chunk, s.chunk);
    h.indptr = {0, s.chunk};
    std::vector<double> out(h.q.size());
    kernels::PrefillArgs a =
        kernels::prefill_args(s, h.q.data(), out.data(), h.indptr.data(), h.lens.data());
    a.kv = h.kv;
    if (auto st = kernels::validate(a); !st) throw std::runtime_error(st.message);
    return time([&] { kernels::ref::paged_prefill(a, out.data()); });
  }
  Timing kv_write(int tokens, int kvh, int hd, kernels::KvDtype d) override {
    const std::size_t row = static_cast<std::size_t>(kvh) * hd;
    std::vector<std::uint16_t> k(tokens * row, 0x3F80), v(k);
    const int blocks = (tokens + 15) / 16 * 2;
    std::vector<std::uint8_t> kc(blocks * 16 * row * kernels::kv_bytes(d)), vc(kc);
    std::vector<std::int64_t> slots(tokens);
    for (int i = 0; i < tokens; ++i) slots[i] = (i * 7919L) % (blocks * 16);
    kernels::KvWriteArgs a;
    a.k = k.data();
    a.v = v.data();
    a.slot_mapping = slots.data();
    a.k_cache = kc.data();
    a.v_cache = vc.data();
    a.num_tokens = tokens;
    a.num_kv_heads = kvh;
    a.head_dim = hd;
    a.num_blocks = blocks;
    a.block_size = 16;
    a.dtype = d;
    a.k_scale = a.v_scale = 0.01f;
    return time([&] { kernels::ref::kv_write(a); });
  }

 private:
  template <typename F>
  Timing time(F f) {
    f();  // warm-up
    std::vector<double> t;
    for (int i = 0; i < iters_; ++i) {
      auto a = std::chrono::steady_clock::now();
      f();
      t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
    }
    return summarise(t);
  }
  int iters_;
};

}  // namespace

std::unique_ptr<Backend> make_gpu_backend(int iters) {
  if (!kernels::cuda_available()) {
    throw sim::InputError(
        "--backend gpu", "",
        "no usable GPU: kvfleet was built without CUDA or no CUDA device is visible "
        "(--backend cpu runs the same pipeline on the CPU references)");
  }
  return std::make_unique<GpuBackend>(iters);
}

std::unique_ptr<Backend> make_cpu_backend(int iters) { return std::make_unique<CpuBackend>(iters); }

}  // namespace kvfleet::calibration
