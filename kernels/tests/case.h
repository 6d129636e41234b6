#pragma once
// Test data for the kernels: a paged KV cache of random values (never zeros) with shuffled block
// ids, blocks shared between sequences (a shared prefix), unused slots poisoned with NaN and
// unused block-table entries pointing far outside the cache, so a kernel or reference that reads
// what it should not either fails or produces NaN. Used by the CPU reference tests and by the GPU
// tests, which upload the same bytes.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/attention.h"
#include "kernels/ref/numeric.h"

namespace kvfleet::kernels::testing {

inline constexpr std::int32_t kPoisonBlock = 0x3FFFFFFF;

struct CaseSpec {
  KvDtype dtype = KvDtype::kBF16;
  int head_dim = 128;
  int block_size = 16;
  int num_kv_heads = 2;
  int group = 4;
  std::vector<int> context_lens;  // KV tokens per sequence (including any prefill chunk)
  std::vector<int> q_lens;        // prefill: chunk lengths (empty for decode: one query each)
  std::uint64_t seed = 1;
  bool share_prefix = true;  // sequence i > 0 reuses sequence 0's first full block
};

struct HostCase {
  CaseSpec spec;
  int num_q_heads = 0;
  int num_q_rows = 0;  // decode: num_seqs; prefill: total chunk tokens
  int max_blocks = 0;
  int num_blocks = 0;
  float k_scale = 1.0f;
  float v_scale = 1.0f;
  std::vector<std::uint16_t> q;       // [rows, num_q_heads, head_dim] activation bits
  std::vector<std::uint8_t> k_cache;  // [num_blocks, block_size, num_kv_heads, head_dim] bytes
  std::vector<std::uint8_t> v_cache;
  std::vector<float> k_real;  // the real (unquantised) K and V values, same layout, NaN unused
  std::vector<float> v_real;
  std::vector<std::int32_t> block_table;  // [num_seqs, max_blocks]
  std::vector<std::int32_t> context_lens;
  std::vector<std::int32_t> q_indptr;

  int num_seqs() const { return static_cast<int>(context_lens.size()); }
  std::size_t row() const { return static_cast<std::size_t>(spec.num_kv_heads) * spec.head_dim; }

  PagedKv paged_kv() const {
    PagedKv kv;
    kv.k_cache = k_cache.data();
    kv.v_cache = v_cache.data();
    kv.block_table = block_table.data();
    kv.num_blocks = num_blocks;
    kv.block_size = spec.block_size;
    kv.max_blocks_per_seq = max_blocks;
    kv.dtype = spec.dtype;
    kv.k_scale = k_scale;
    kv.v_scale = v_scale;
    return kv;
  }
  DecodeArgs decode_args(void* out) const {
    DecodeArgs a;
    a.q = q.data();
    a.out = out;
    a.context_lens = context_lens.data();
    a.num_seqs = num_seqs();
    a.num_q_heads = num_q_heads;
    a.num_kv_heads = spec.num_kv_heads;
    a.head_dim = spec.head_dim;
    a.sm_scale = 1.0f / std::sqrt(static_cast<float>(spec.head_dim));
    a.max_context_len = *std::max_element(context_lens.begin(), context_lens.end());
    a.kv = paged_kv();
    a.num_splits = 1;
    return a;
  }
  PrefillArgs prefill_args(void* out) const {
    PrefillArgs a;
    a.q = q.data();
    a.out = out;
    a.q_indptr = q_indptr.data();
    a.context_lens = context_lens.data();
    a.num_seqs = num_seqs();
    a.num_q_tokens = num_q_rows;
    a.num_q_heads = num_q_heads;
    a.num_kv_heads = spec.num_kv_heads;
    a.head_dim = spec.head_dim;
    a.sm_scale = 1.0f / std::sqrt(static_cast<float>(spec.head_dim));
    a.max_q_len =
        spec.q_lens.empty() ? 1 : *std::max_element(spec.q_lens.begin(), spec.q_lens.end());
    a.kv = paged_kv();
    return a;
  }
  // Contiguous-decode arguments over k and v as contiguous() lays them out.
  ContiguousDecodeArgs contiguous_args(const void* k, const void* v, int max_context,
                                       void* out) const {
    ContiguousDecodeArgs a;
    a.q = q.data();
    a.out = out;
    a.k = k;
    a.v = v;
    a.context_lens = context_lens.data();
    a.num_seqs = num_seqs();
    a.num_q_heads = num_q_heads;
    a.num_kv_heads = spec.num_kv_heads;
    a.head_dim = spec.head_dim;
    a.max_context = max_context;
    a.sm_scale = 1.0f / std::sqrt(static_cast<float>(spec.head_dim));
    a.dtype = spec.dtype;
    a.k_scale = k_scale;
    a.v_scale = v_scale;
    return a;
  }
  // The same K and V as a contiguous [num_seqs, max_context, num_kv_heads, head_dim] copy of the
  // stored bytes (NaN past each context).
  void contiguous(std::vector<std::uint8_t>* k, std::vector<std::uint8_t>* v,
                  int* max_context) const {
    const std::size_t eb = kv_bytes(spec.dtype);
    *max_context = *std::max_element(context_lens.begin(), context_lens.end());
    const std::size_t rb = row() * eb;
    k->assign(num_seqs() * static_cast<std::size_t>(*max_context) * rb, 0xFF);
    v->assign(k->size(), 0xFF);
    for (int s = 0; s < num_seqs(); ++s) {
      for (int t = 0; t < context_lens[s]; ++t) {
        std::size_t slot =
            static_cast<std::size_t>(block_table[s * max_blocks + t / spec.block_size]) *
                spec.block_size +
            t % spec.block_size;
        std::size_t dst = (static_cast<std::size_t>(s) * *max_context + t) * rb;
        std::copy_n(k_cache.begin() + slot * rb, rb, k->begin() + dst);
        std::copy_n(v_cache.begin() + slot * rb, rb, v->begin() + dst);
      }
    }
  }
};

inline void store_kv(std::vector<std::uint8_t>& cache, std::size_t i, float x, KvDtype d,
                     float scale) {
  switch (d) {
    case KvDtype::kF16: {
      std::uint16_t b = ref::float_to_f16(x);
      std::memcpy(&cache[2 * i], &b, 2);
      break;
    }
    case KvDtype::kBF16: {
      std::uint16_t b = ref::float_to_bf16(x);
      std::memcpy(&cache[2 * i], &b, 2);
      break;
    }
    case KvDtype::kFP8E4M3:
      cache[i] = ref::float_to_fp8e4m3(x / scale);
      break;
  }
}

inline void poison(std::vector<std::uint8_t>& cache, KvDtype d) {
  if (d == KvDtype::kFP8E4M3) {
    std::fill(cache.begin(), cache.end(), std::uint8_t{0x7F});
  } else {
    const std::uint16_t nan = d == KvDtype::kF16 ? 0x7E00 : 0x7FC0;
    for (std::size_t i = 0; i + 1 < cache.size(); i += 2) std::memcpy(&cache[i], &nan, 2);
  }
}

inline HostCase make_case(const CaseSpec& spec) {
  HostCase c;
  c.spec = spec;
  c.num_q_heads = spec.num_kv_heads * spec.group;
  std::mt19937_64 rng(spec.seed);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  const int n = static_cast<int>(spec.context_lens.size());
  const int bs = spec.block_size;
  const ActDtype act = act_dtype(spec.dtype);
  c.context_lens.assign(spec.context_lens.begin(), spec.context_lens.end());
  int max_ctx = *std::max_element(c.context_lens.begin(), c.context_lens.end());
  c.max_blocks = std::max(1, (max_ctx + bs - 1) / bs) + 1;  // one spare entry, poisoned
  int used = 0;
  for (int x : c.context_lens) used += (x + bs - 1) / bs;
  c.num_blocks = used + 3;  // a few blocks no sequence uses stay poisoned
  // Shuffled block ids, handed out in order.
  std::vector<std::int32_t> ids(c.num_blocks);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  c.block_table.assign(static_cast<std::size_t>(n) * c.max_blocks, kPoisonBlock);
  std::size_t next = 0;
  for (int s = 0; s < n; ++s) {
    const int nb = (c.context_lens[s] + bs - 1) / bs;
    for (int b = 0; b < nb; ++b) {
      const bool share = spec.share_prefix && s > 0 && b == 0 && c.context_lens[0] >= bs &&
                         c.context_lens[s] >= bs;
      c.block_table[s * c.max_blocks + b] = share ? c.block_table[0] : ids[next++];
    }
  }
  const std::size_t row = c.row();
  const std::size_t elems = static_cast<std::size_t>(c.num_blocks) * bs * row;
  c.k_scale = spec.dtype == KvDtype::kFP8E4M3 ? 2.0f / 448.0f : 1.0f;
  c.v_scale = spec.dtype == KvDtype::kFP8E4M3 ? 1.5f / 448.0f : 1.0f;
  c.k_cache.assign(elems * kv_bytes(spec.dtype), 0);
  c.v_cache.assign(elems * kv_bytes(spec.dtype), 0);
  poison(c.k_cache, spec.dtype);
  poison(c.v_cache, spec.dtype);
  c.k_real.assign(elems, NAN);
  c.v_real.assign(elems, NAN);
  for (int s = 0; s < n; ++s) {
    for (int t = 0; t < c.context_lens[s]; ++t) {
      const std::size_t slot =
          static_cast<std::size_t>(c.block_table[s * c.max_blocks + t / bs]) * bs + t % bs;
      for (std::size_t e = 0; e < row; ++e) {
        // Real values are what a bf16/fp16 model would hold: rounded to the activation dtype.
        const std::uint16_t kb = ref::to_act(2.0f * unit(rng), act);
        const std::uint16_t vb = ref::to_act(1.5f * unit(rng), act);
        const float kx = ref::load_act(&kb, 0, act);
        const float vx = ref::load_act(&vb, 0, act);
        c.k_real[slot * row + e] = kx;
        c.v_real[slot * row + e] = vx;
        store_kv(c.k_cache, slot * row + e, kx, spec.dtype, c.k_scale);
        store_kv(c.v_cache, slot * row + e, vx, spec.dtype, c.v_scale);
      }
    }
  }
  // Queries: one per sequence (decode) or each chunk's tokens (prefill).
  c.q_indptr.assign(1, 0);
  if (spec.q_lens.empty()) {
    c.num_q_rows = n;
    for (int s = 0; s < n; ++s) c.q_indptr.push_back(s + 1);
  } else {
    for (int s = 0; s < n; ++s) c.q_indptr.push_back(c.q_indptr.back() + spec.q_lens[s]);
    c.num_q_rows = c.q_indptr.back();
  }
  c.q.resize(static_cast<std::size_t>(c.num_q_rows) * c.num_q_heads * spec.head_dim);
  for (auto& x : c.q) x = ref::to_act(2.0f * unit(rng), act);
  return c;
}

// max |a − b| / max |b|: the normwise relative error the GPU tests hold to their tolerances.
inline double rel_error(const std::vector<double>& a, const std::vector<double>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) != std::isnan(b[i])) return INFINITY;
    num = std::max(num, std::fabs(a[i] - b[i]));
    den = std::max(den, std::fabs(b[i]));
  }
  return den > 0 ? num / den : num;
}

}  // namespace kvfleet::kernels::testing
