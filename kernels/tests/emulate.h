#pragma once
// A CPU emulation of the CUDA kernels' arithmetic, in fp32 as they compute: decode walks each
// sequence's context in partitions of kDecodePartitionTokens with an online softmax in log2
// units (exp2f), splits the partitions among num_splits parts and combines them with weights
// l_i · 2^(m_i − max) as split_reduce_kernel does; prefill walks keys in tiles of 32 with an
// online softmax per row. Outputs are rounded once to the activation dtype.
//
// It exists to prove the tolerance (tolerance.h): the correct emulation must pass the comparison
// the GPU tests use, and each injected bug (the kind a kernel really gets wrong) must fail it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/attention.h"
#include "kernels/ref/numeric.h"

namespace kvfleet::kernels::testing {

enum class Bug {
  kNone,
  kPartitionBoundary,  // the last token of every partition but the last is dropped (off by one)
  kSoftmaxScale,       // the softmax scale is 1% too large
  kDroppedGqaHead,     // a group's last query head reuses the previous head's query
  kGqaMapping,         // query head h reads KV head h % num_kv_heads instead of h / group
  kSplitWeights,       // the split reduction ignores the partial sums l_i
  kCausalDiagonal,     // prefill: a query token does not attend to its own position
  kCausalOneAhead,     // prefill: a query token also attends to the next position
};

inline const char* bug_name(Bug b) {
  switch (b) {
    case Bug::kNone:
      return "none";
    case Bug::kPartitionBoundary:
      return "partition_boundary";
    case Bug::kSoftmaxScale:
      return "softmax_scale";
    case Bug::kDroppedGqaHead:
      return "dropped_gqa_head";
    case Bug::kGqaMapping:
      return "gqa_mapping";
    case Bug::kSplitWeights:
      return "split_weights";
    case Bug::kCausalDiagonal:
      return "causal_diagonal";
    case Bug::kCausalOneAhead:
      return "causal_one_ahead";
  }
  return "?";
}

namespace detail {

inline float kv_at(const PagedKv& kv, int num_kv_heads, int D, int s, int t, int h, int d,
                   bool value, bool scaled = true) {
  const std::int32_t b =
      kv.block_table[static_cast<std::size_t>(s) * kv.max_blocks_per_seq + t / kv.block_size];
  const std::size_t slot = static_cast<std::size_t>(b) * kv.block_size + t % kv.block_size;
  const std::size_t i = (slot * num_kv_heads + h) * D + d;
  const float x = ref::load_kv(value ? kv.v_cache : kv.k_cache, i, kv.dtype);
  if (kv.dtype != KvDtype::kFP8E4M3 || !scaled) return x;
  return x * (value ? kv.v_scale : kv.k_scale);
}

// The first n tokens of sequence s's K or V for KV head h as floats: [n, D]; fp8 times its scale
// in fp32 (prefill dequantises on load) or, with scaled = false, the raw fp8 values (decode folds
// the scales into the queries and the output).
inline std::vector<float> gather(const PagedKv& kv, int num_kv_heads, int D, int s, int h, int n,
                                 bool value, bool scaled = true) {
  std::vector<float> out(static_cast<std::size_t>(std::max(n, 0)) * D);
  for (int t = 0; t < n; ++t) {
    for (int d = 0; d < D; ++d)
      out[static_cast<std::size_t>(t) * D + d] =
          kv_at(kv, num_kv_heads, D, s, t, h, d, value, scaled);
  }
  return out;
}

// The query rows of one (sequence or token) row for a KV head's group, scaled into log2 units,
// with the query-head bugs applied. kv_head_of[g] receives the KV head each query head reads.
inline void load_group_q(const void* q, std::size_t q_row, int num_q_heads, int num_kv_heads,
                         int kvh, int group, int D, ActDtype act, float scale_log2, Bug bug,
                         std::vector<float>* qs, std::vector<int>* kv_head_of) {
  qs->assign(static_cast<std::size_t>(group) * D, 0);
  kv_head_of->assign(group, kvh);
  for (int g = 0; g < group; ++g) {
    int src = g;
    if (bug == Bug::kDroppedGqaHead && group > 1 && g == group - 1) src = g - 1;
    const int qh = kvh * group + g;
    if (bug == Bug::kGqaMapping) (*kv_head_of)[g] = qh % num_kv_heads;
    for (int d = 0; d < D; ++d) {
      const std::size_t i = (q_row * num_q_heads + kvh * group + src) * D + d;
      (*qs)[g * D + d] = ref::load_act(q, i, act) * scale_log2;
    }
  }
}

// One query row's running softmax state over chunks of keys, as a kernel keeps it: the running
// max m (log2 units), the running sum l and the unnormalised output acc.
struct OnlineRow {
  float m = -std::numeric_limits<float>::infinity();
  float l = 0;
  std::vector<float> acc, p;
  explicit OnlineRow(int D) : acc(D, 0.0f) {}
  // Keys first .. first + n − 1 of K and V ([tokens, D]) for the query q (already scaled).
  // Tokens whose entry in `dropped` is set are left out (an injected bug). round_weights:
  // the weights go into the weighted sum rounded to `act` (tensor cores), the sum l stays fp32.
  void chunk(const float* q, const std::vector<float>& K, const std::vector<float>& V, int first,
             int n, const std::vector<char>* dropped = nullptr, bool round_weights = false,
             ActDtype act = ActDtype::kBF16) {
    const int D = static_cast<int>(acc.size());
    p.assign(std::max(n, 0), 0.0f);
    float mx = -std::numeric_limits<float>::infinity();
    for (int j = 0; j < n; ++j) {
      float dot = 0;
      for (int d = 0; d < D; ++d) {
        dot = std::fma(q[d], K[static_cast<std::size_t>(first + j) * D + d], dot);
      }
      p[j] = dropped != nullptr && (*dropped)[first + j] ? -std::numeric_limits<float>::infinity()
                                                         : dot;
      mx = std::max(mx, p[j]);
    }
    const float m_new = std::max(m, mx);
    if (m_new == -std::numeric_limits<float>::infinity()) return;  // nothing to add
    float sum = 0;
    for (int j = 0; j < n; ++j) sum += (p[j] = std::exp2(p[j] - m_new));
    const float al = std::exp2(m - m_new);
    l = l * al + sum;
    m = m_new;
    if (round_weights) {
      for (int j = 0; j < n; ++j) {
        const std::uint16_t b = ref::to_act(p[j], act);
        p[j] = ref::load_act(&b, 0, act);
      }
    }
    for (int d = 0; d < D; ++d) {
      acc[d] *= al;
      for (int j = 0; j < n; ++j) {
        acc[d] = std::fma(p[j], V[static_cast<std::size_t>(first + j) * D + d], acc[d]);
      }
    }
  }
  float out(int d) const { return l > 0 ? acc[d] / l : 0.0f; }
};

}  // namespace detail

// Decode as the kernel computes it (kernels/cuda/decode.cuh): each (KV head, sequence, split)
// range of partitions is cut into chunks of 4 KB of K and V; warp w takes chunks w, w + 4, ... and
// keeps its own online softmax, updated every `sub` tokens; the warps then meet, weighted by
// 2^(m_w − max). The queries carry sm_scale·log2(e) and, for fp8, k_scale; fp8 K and V stay raw and
// v_scale multiplies the output. Splits are combined as split_reduce_kernel does.
inline std::vector<std::uint16_t> emulate_decode(const DecodeArgs& a, int splits, Bug bug) {
  constexpr int P = kDecodePartitionTokens;
  constexpr int kWarps = 4;
  const int D = a.head_dim;
  const int group = a.num_q_heads / a.num_kv_heads;
  const bool fp8 = a.kv.dtype == KvDtype::kFP8E4M3;
  const ActDtype act = act_dtype(a.kv.dtype);
  // The kernel's shape (DecodeShape): 8 elements per lane, D/8 lanes per token.
  const int tokens_per_step = 32 / (D / 8);
  const int chunk = 4096 / (2 * D * static_cast<int>(kv_bytes(a.kv.dtype)));
  const int width = decode_group_width(group);
  const int sub = std::min(chunk / tokens_per_step, width >= 8 ? 2 : 4) * tokens_per_step;
  const float scale = bug == Bug::kSoftmaxScale ? a.sm_scale * 1.01f : a.sm_scale;
  const float q_scale = scale * 1.4426950408889634f * (fp8 ? a.kv.k_scale : 1.0f);
  const float v_scale = fp8 ? a.kv.v_scale : 1.0f;
  std::vector<std::uint16_t> out(static_cast<std::size_t>(a.num_seqs) * a.num_q_heads * D);
  std::vector<float> qs, part_out, part_ml;
  std::vector<int> kv_of;
  for (int s = 0; s < a.num_seqs; ++s) {
    const int ctx = a.context_lens[s];
    const int parts = (ctx + P - 1) / P;
    const int per = (parts + splits - 1) / splits;
    std::vector<char> dropped(std::max(ctx, 1), 0);
    if (bug == Bug::kPartitionBoundary) {
      for (int t = P - 1; t < ctx && t / P < parts - 1; t += P) dropped[t] = 1;
    }
    for (int kvh = 0; kvh < a.num_kv_heads; ++kvh) {
      detail::load_group_q(a.q, s, a.num_q_heads, a.num_kv_heads, kvh, group, D, act, q_scale, bug,
                           &qs, &kv_of);
      part_out.assign(static_cast<std::size_t>(group) * splits * D, 0);
      part_ml.assign(static_cast<std::size_t>(group) * splits * 2, 0);
      for (int g = 0; g < group; ++g) {
        const int h = kv_of[g];
        const auto K = detail::gather(a.kv, a.num_kv_heads, D, s, h, ctx, false, false);
        const auto V = detail::gather(a.kv, a.num_kv_heads, D, s, h, ctx, true, false);
        for (int split = 0; split < splits; ++split) {
          const int t_begin = std::min(ctx, split * per * P);
          const int t_end = std::min(ctx, t_begin + per * P);
          std::vector<detail::OnlineRow> warps(kWarps, detail::OnlineRow(D));
          for (int t0 = t_begin, c = 0; t0 < t_end; t0 += chunk, ++c) {
            for (int t = t0; t < std::min(t0 + chunk, t_end); t += sub) {
              warps[c % kWarps].chunk(&qs[g * D], K, V, t, std::min(sub, t_end - t), &dropped);
            }
          }
          float mx = -std::numeric_limits<float>::infinity();
          for (const auto& w : warps) mx = std::max(mx, w.m);
          float den = 0;
          std::vector<float> num(D, 0.0f);
          if (mx != -std::numeric_limits<float>::infinity()) {
            for (const auto& w : warps) {
              const float f =
                  w.m == -std::numeric_limits<float>::infinity() ? 0.0f : std::exp2(w.m - mx);
              for (int d = 0; d < D; ++d) num[d] = std::fma(f, w.acc[d], num[d]);
              den = std::fma(f, w.l, den);
            }
          }
          for (int d = 0; d < D; ++d) {
            part_out[(static_cast<std::size_t>(g) * splits + split) * D + d] =
                den > 0 ? num[d] / den * v_scale : 0.0f;
          }
          part_ml[(static_cast<std::size_t>(g) * splits + split) * 2] = mx;
          part_ml[(static_cast<std::size_t>(g) * splits + split) * 2 + 1] = den;
        }
        // Split reduction (a weight of 1 for one split).
        const float* ml = &part_ml[static_cast<std::size_t>(g) * splits * 2];
        float mmax = -std::numeric_limits<float>::infinity();
        for (int i = 0; i < splits; ++i) {
          if (ml[2 * i + 1] > 0) mmax = std::max(mmax, ml[2 * i]);
        }
        const std::size_t row = (static_cast<std::size_t>(s) * a.num_q_heads + kvh * group + g);
        for (int d = 0; d < D; ++d) {
          float num = 0, den = 0;
          for (int i = 0; i < splits; ++i) {
            const float li = ml[2 * i + 1];
            if (li > 0) {
              const float w = (bug == Bug::kSplitWeights ? 1.0f : li) * std::exp2(ml[2 * i] - mmax);
              num = std::fma(w, part_out[(static_cast<std::size_t>(g) * splits + i) * D + d], num);
              den += w;
            }
          }
          out[row * D + d] = ref::to_act(den > 0 ? num / den : 0.0f, act);
        }
      }
    }
  }
  return out;
}

// Chunked prefill as the kernel computes it; out: act-dtype bits [num_q_tokens, num_q_heads, D].
// The CUDA-core kernel walks keys in tiles of 32 in fp32; the tensor-core kernel (tensor_cores)
// in tiles of 64, with the weights rounded to the activation dtype for the weighted sum.
inline std::vector<std::uint16_t> emulate_prefill(const PrefillArgs& a, Bug bug,
                                                  bool tensor_cores = false) {
  const int T = tensor_cores ? 64 : 32;  // keys per tile
  const int D = a.head_dim;
  const int group = a.num_q_heads / a.num_kv_heads;
  const ActDtype act = act_dtype(a.kv.dtype);
  const float scale = bug == Bug::kSoftmaxScale ? a.sm_scale * 1.01f : a.sm_scale;
  const float scale_log2 = scale * 1.4426950408889634f;
  std::vector<std::uint16_t> out(static_cast<std::size_t>(a.num_q_tokens) * a.num_q_heads * D);
  std::vector<float> qs;
  std::vector<int> kv_of;
  for (int s = 0; s < a.num_seqs; ++s) {
    const int q_len = a.q_indptr[s + 1] - a.q_indptr[s];
    const int ctx = a.context_lens[s];
    std::vector<std::vector<float>> Ks(a.num_kv_heads), Vs(a.num_kv_heads);
    for (int h = 0; h < a.num_kv_heads && q_len > 0; ++h) {
      Ks[h] = detail::gather(a.kv, a.num_kv_heads, D, s, h, ctx, false);
      Vs[h] = detail::gather(a.kv, a.num_kv_heads, D, s, h, ctx, true);
    }
    for (int i = 0; i < q_len; ++i) {
      const int pos = ctx - q_len + i;
      int last = pos;  // the last key attended to
      if (bug == Bug::kCausalDiagonal) last = pos - 1;
      if (bug == Bug::kCausalOneAhead) last = std::min(pos + 1, ctx - 1);
      const std::size_t token = static_cast<std::size_t>(a.q_indptr[s]) + i;
      for (int kvh = 0; kvh < a.num_kv_heads; ++kvh) {
        detail::load_group_q(a.q, token, a.num_q_heads, a.num_kv_heads, kvh, group, D, act,
                             scale_log2, bug, &qs, &kv_of);
        for (int g = 0; g < group; ++g) {
          const std::vector<float>& K = Ks[kv_of[g]];
          const std::vector<float>& V = Vs[kv_of[g]];
          detail::OnlineRow r(D);
          for (int k0 = 0; k0 <= last; k0 += T) {
            r.chunk(&qs[g * D], K, V, k0, std::min(T, last + 1 - k0), nullptr, tensor_cores, act);
          }
          const std::size_t row = token * a.num_q_heads + kvh * group + g;
          for (int d = 0; d < D; ++d) out[row * D + d] = ref::to_act(r.out(d), act);
        }
      }
    }
  }
  return out;
}

// Act-dtype bits as doubles, as the GPU tests download them.
inline std::vector<double> act_to_double(const std::vector<std::uint16_t>& bits, ActDtype act) {
  std::vector<double> out(bits.size());
  for (std::size_t i = 0; i < bits.size(); ++i) out[i] = ref::load_act(bits.data(), i, act);
  return out;
}

}  // namespace kvfleet::kernels::testing
