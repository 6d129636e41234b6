#include "kernels/ref/reference.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/ref/numeric.h"

namespace kvfleet::kernels::ref {

namespace {

// The element index of (token t, kv head h, dim 0) in a paged cache, for sequence s.
std::size_t paged_row(const PagedKv& kv, int num_kv_heads, int head_dim, int s, int t, int h) {
  std::int32_t block =
      kv.block_table[static_cast<std::size_t>(s) * kv.max_blocks_per_seq + t / kv.block_size];
  std::size_t slot = static_cast<std::size_t>(block) * kv.block_size + t % kv.block_size;
  return (slot * num_kv_heads + h) * head_dim;
}

// Attention of `group` query rows (q: [group, head_dim], already as doubles) over the first n
// keys, whose rows row_of(t) index K and V (n <= 0: zero outputs). Two passes: the max, then the
// exponentials and the weighted sum, all in double.
template <typename RowOf>
void attend(const std::vector<double>& q, int group, int n, int head_dim, double scale,
            const void* k, const void* v, KvDtype dtype, double k_scale, double v_scale,
            RowOf row_of, double* out, std::size_t out_stride, double* spread = nullptr) {
  std::vector<double> logits;
  for (int g = 0; g < group; ++g) {
    double* o = out + g * out_stride;
    double* sp = spread == nullptr ? nullptr : spread + g * out_stride;
    for (int d = 0; d < head_dim; ++d) o[d] = 0;
    if (sp != nullptr) {
      for (int d = 0; d < head_dim; ++d) sp[d] = 0;
    }
    if (n <= 0) continue;
    logits.assign(n, 0.0);
    double mx = -std::numeric_limits<double>::infinity();
    for (int t = 0; t < n; ++t) {
      std::size_t r = row_of(t);
      double dot = 0;
      for (int d = 0; d < head_dim; ++d) {
        dot += q[g * head_dim + d] * (static_cast<double>(load_kv(k, r + d, dtype)) * k_scale);
      }
      logits[t] = dot * scale;
      mx = std::max(mx, logits[t]);
    }
    double sum = 0;
    for (int t = 0; t < n; ++t) {
      double p = std::exp(logits[t] - mx);
      sum += p;
      std::size_t r = row_of(t);
      for (int d = 0; d < head_dim; ++d) {
        const double pv = p * (static_cast<double>(load_kv(v, r + d, dtype)) * v_scale);
        o[d] += pv;
        if (sp != nullptr) sp[d] += pv * pv;
      }
    }
    for (int d = 0; d < head_dim; ++d) o[d] /= sum;
    if (sp != nullptr) {
      for (int d = 0; d < head_dim; ++d) sp[d] = std::sqrt(sp[d]) / sum;
    }
  }
}

std::vector<double> load_q(const void* q, std::size_t row0, int group, int head_dim, ActDtype a) {
  std::vector<double> out(static_cast<std::size_t>(group) * head_dim);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = load_act(q, row0 + i, a);
  return out;
}

double kscale(KvDtype d, float s) { return d == KvDtype::kFP8E4M3 ? s : 1.0; }

// Decode over any KV layout: row_of(s, t, h) is the element index of (sequence s, token t,
// KV head h, dim 0) in K and V.
template <typename RowOf>
void decode(const void* q, double* out, const std::int32_t* context_lens, int num_seqs,
            int num_q_heads, int num_kv_heads, int D, double sm_scale, const void* k, const void* v,
            KvDtype dtype, float k_scale, float v_scale, RowOf row_of) {
  const int group = num_q_heads / num_kv_heads;
  for (int s = 0; s < num_seqs; ++s) {
    for (int h = 0; h < num_kv_heads; ++h) {
      std::size_t row0 = (static_cast<std::size_t>(s) * num_q_heads + h * group) * D;
      auto qv = load_q(q, row0, group, D, act_dtype(dtype));
      attend(
          qv, group, context_lens[s], D, sm_scale, k, v, dtype, kscale(dtype, k_scale),
          kscale(dtype, v_scale), [&](int t) { return row_of(s, t, h); }, out + row0, D);
    }
  }
}

}  // namespace

void paged_decode(const DecodeArgs& a, double* out) {
  decode(a.q, out, a.context_lens, a.num_seqs, a.num_q_heads, a.num_kv_heads, a.head_dim,
         a.sm_scale, a.kv.k_cache, a.kv.v_cache, a.kv.dtype, a.kv.k_scale, a.kv.v_scale,
         [&](int s, int t, int h) { return paged_row(a.kv, a.num_kv_heads, a.head_dim, s, t, h); });
}

void contiguous_decode(const ContiguousDecodeArgs& a, double* out) {
  decode(a.q, out, a.context_lens, a.num_seqs, a.num_q_heads, a.num_kv_heads, a.head_dim,
         a.sm_scale, a.k, a.v, a.dtype, a.k_scale, a.v_scale, [&](int s, int t, int h) {
           return ((static_cast<std::size_t>(s) * a.max_context + t) * a.num_kv_heads + h) *
                  a.head_dim;
         });
}

void paged_prefill(const PrefillArgs& a, double* out, double* spread) {
  const int group = a.num_q_heads / a.num_kv_heads;
  const int D = a.head_dim;
  const ActDtype act = act_dtype(a.kv.dtype);
  for (int s = 0; s < a.num_seqs; ++s) {
    int q_len = a.q_indptr[s + 1] - a.q_indptr[s];
    int prefix = a.context_lens[s] - q_len;
    for (int i = 0; i < q_len; ++i) {
      int pos = prefix + i;  // attends to positions 0..pos
      std::size_t token = static_cast<std::size_t>(a.q_indptr[s]) + i;
      for (int h = 0; h < a.num_kv_heads; ++h) {
        std::size_t row0 = (token * a.num_q_heads + h * group) * D;
        auto q = load_q(a.q, row0, group, D, act);
        attend(
            q, group, pos + 1, D, a.sm_scale, a.kv.k_cache, a.kv.v_cache, a.kv.dtype,
            kscale(a.kv.dtype, a.kv.k_scale), kscale(a.kv.dtype, a.kv.v_scale),
            [&](int t) { return paged_row(a.kv, a.num_kv_heads, D, s, t, h); }, out + row0, D,
            spread == nullptr ? nullptr : spread + row0);
      }
    }
  }
}

void kv_write(const KvWriteArgs& a) {
  const ActDtype act = act_dtype(a.dtype);
  const std::size_t row = static_cast<std::size_t>(a.num_kv_heads) * a.head_dim;
  for (int i = 0; i < a.num_tokens; ++i) {
    std::int64_t slot = a.slot_mapping[i];
    if (slot < 0) continue;
    if (slot >= static_cast<std::int64_t>(a.num_blocks) * a.block_size) {
      if (a.bad_slots != nullptr) ++*a.bad_slots;
      continue;
    }
    for (std::size_t e = 0; e < row; ++e) {
      std::size_t src = static_cast<std::size_t>(i) * row + e;
      std::size_t dst = static_cast<std::size_t>(slot) * row + e;
      float k = load_act(a.k, src, act);
      float v = load_act(a.v, src, act);
      if (a.dtype == KvDtype::kFP8E4M3) {
        static_cast<std::uint8_t*>(a.k_cache)[dst] = float_to_fp8e4m3(k / a.k_scale);
        static_cast<std::uint8_t*>(a.v_cache)[dst] = float_to_fp8e4m3(v / a.v_scale);
      } else {
        // Same activation and cache dtype: the bits are copied.
        static_cast<std::uint16_t*>(a.k_cache)[dst] = static_cast<const std::uint16_t*>(a.k)[src];
        static_cast<std::uint16_t*>(a.v_cache)[dst] = static_cast<const std::uint16_t*>(a.v)[src];
      }
    }
  }
}

void dense_attention(const double* q, const double* k, const double* v, int n, int head_dim,
                     double scale, double* out) {
  for (int d = 0; d < head_dim; ++d) out[d] = 0;
  if (n <= 0) return;
  std::vector<double> w(n);
  for (int j = 0; j < n; ++j) {
    double dot = 0;
    for (int d = 0; d < head_dim; ++d) dot += q[d] * k[static_cast<std::size_t>(j) * head_dim + d];
    w[j] = dot * scale;
  }
  double mx = w[0];
  for (double x : w) mx = std::max(mx, x);
  double sum = 0;
  for (double& x : w) sum += (x = std::exp(x - mx));
  for (int j = 0; j < n; ++j) {
    for (int d = 0; d < head_dim; ++d) {
      out[d] += w[j] / sum * v[static_cast<std::size_t>(j) * head_dim + d];
    }
  }
}

std::vector<double> gather_kv(const PagedKv& kv, int num_kv_heads, int head_dim, int seq,
                              int kv_head, int n, bool value) {
  std::vector<double> out(static_cast<std::size_t>(n) * head_dim);
  const void* cache = value ? kv.v_cache : kv.k_cache;
  double scale = kscale(kv.dtype, value ? kv.v_scale : kv.k_scale);
  for (int t = 0; t < n; ++t) {
    int block =
        kv.block_table[static_cast<std::size_t>(seq) * kv.max_blocks_per_seq + t / kv.block_size];
    int slot = block * kv.block_size + t % kv.block_size;
    for (int d = 0; d < head_dim; ++d) {
      std::size_t i = (static_cast<std::size_t>(slot) * num_kv_heads + kv_head) * head_dim + d;
      out[static_cast<std::size_t>(t) * head_dim + d] = load_kv(cache, i, kv.dtype) * scale;
    }
  }
  return out;
}

}  // namespace kvfleet::kernels::ref
