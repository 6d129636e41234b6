// Argument validation, the dispatch table's supported set, and the split-KV choice: host code
// shared by the CUDA launchers and the CPU references.
#include "kernels/attention.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <sstream>
#include <utility>

namespace kvfleet::kernels {

std::string_view to_string(KvDtype d) {
  switch (d) {
    case KvDtype::kF16:
      return "fp16";
    case KvDtype::kBF16:
      return "bf16";
    case KvDtype::kFP8E4M3:
      return "fp8";
  }
  return "?";
}

bool parse_kv_dtype(std::string_view name, KvDtype* out) {
  if (name == "fp16" || name == "f16" || name == "half") {
    *out = KvDtype::kF16;
  } else if (name == "bf16") {
    *out = KvDtype::kBF16;
  } else if (name == "fp8" || name == "fp8_e4m3" || name == "e4m3") {
    *out = KvDtype::kFP8E4M3;
  } else {
    return false;
  }
  return true;
}

namespace {

template <typename... T>
Status fail(const T&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return Status::Error(os.str());
}

bool is_dtype(KvDtype d) {
  return d == KvDtype::kF16 || d == KvDtype::kBF16 || d == KvDtype::kFP8E4M3;
}

Status check_heads(const char* what, int num_q_heads, int num_kv_heads) {
  if (num_kv_heads <= 0) return fail(what, ": num_kv_heads must be positive, got ", num_kv_heads);
  if (num_q_heads <= 0 || num_q_heads % num_kv_heads != 0) {
    return fail(what, ": num_q_heads (", num_q_heads,
                ") must be a positive multiple of num_kv_heads (", num_kv_heads, ")");
  }
  int group = num_q_heads / num_kv_heads;
  if (group > kMaxGroup) {
    return fail(what, ": group size num_q_heads / num_kv_heads = ", group,
                " is not supported (1 to ", kMaxGroup, ")");
  }
  return Status::Ok();
}

Status check_paged(const char* what, const PagedKv& kv, int head_dim, bool need_table) {
  if (Status s = check_supported(kv.dtype, head_dim, kv.block_size); !s) {
    return fail(what, ": ", s.message);
  }
  if (kv.k_cache == nullptr || kv.v_cache == nullptr)
    return fail(what, ": kv.k_cache/v_cache is null");
  if (kv.num_blocks <= 0)
    return fail(what, ": kv.num_blocks must be positive, got ", kv.num_blocks);
  if (need_table && (kv.block_table == nullptr || kv.max_blocks_per_seq <= 0)) {
    return fail(what, ": kv.block_table is null or kv.max_blocks_per_seq (", kv.max_blocks_per_seq,
                ") is not positive");
  }
  if (kv.dtype == KvDtype::kFP8E4M3 && !(kv.k_scale > 0 && kv.v_scale > 0)) {
    return fail(what, ": fp8 KV needs positive kv.k_scale and kv.v_scale");
  }
  return Status::Ok();
}

bool aligned(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % kPointerAlignment == 0; }

// The first of the named pointers that is not 16-byte aligned, as an error.
Status check_aligned(const char* what,
                     std::initializer_list<std::pair<const char*, const void*>> pointers) {
  for (const auto& [name, p] : pointers) {
    if (!aligned(p)) {
      return fail(what, ": ", name, " (", p, ") is not aligned to ", kPointerAlignment,
                  " bytes; the kernels read it in 16-byte vectors");
    }
  }
  return Status::Ok();
}

}  // namespace

Status check_supported(KvDtype dtype, int head_dim, int block_size) {
  if (!is_dtype(dtype))
    return fail("kv dtype ", static_cast<int>(dtype), " is not fp16, bf16 or fp8");
  if (head_dim != 64 && head_dim != 128 && head_dim != 256) {
    return fail("head_dim ", head_dim, " is not supported (64, 128 or 256)");
  }
  if (block_size != 8 && block_size != 16 && block_size != 32 && block_size != 64) {
    return fail("block_size ", block_size, " is not supported (8, 16, 32 or 64)");
  }
  return Status::Ok();
}

Status validate(const DecodeArgs& a) {
  if (a.q == nullptr || a.out == nullptr || a.context_lens == nullptr) {
    return fail("paged decode: q, out and context_lens must not be null");
  }
  if (a.num_seqs < 0) return fail("paged decode: num_seqs must not be negative, got ", a.num_seqs);
  if (Status s = check_heads("paged decode", a.num_q_heads, a.num_kv_heads); !s) return s;
  if (Status s = check_paged("paged decode", a.kv, a.head_dim, true); !s) return s;
  const long table_tokens = static_cast<long>(a.kv.max_blocks_per_seq) * a.kv.block_size;
  if (a.max_context_len < 0 || a.max_context_len > table_tokens) {
    return fail("paged decode: max_context_len ", a.max_context_len,
                " must lie in 0..max_blocks_per_seq × block_size = ", table_tokens);
  }
  if (a.num_splits < 0 || a.num_splits > kMaxSplits) {
    return fail("paged decode: num_splits ", a.num_splits, " must lie in 0..", kMaxSplits);
  }
  return check_aligned("paged decode", {{"q", a.q},
                                        {"kv.k_cache", a.kv.k_cache},
                                        {"kv.v_cache", a.kv.v_cache},
                                        {"workspace", a.workspace}});
}

Status validate(const ContiguousDecodeArgs& a) {
  if (a.q == nullptr || a.out == nullptr || a.context_lens == nullptr || a.k == nullptr ||
      a.v == nullptr) {
    return fail("contiguous decode: q, out, k, v and context_lens must not be null");
  }
  if (a.num_seqs < 0) return fail("contiguous decode: num_seqs must not be negative");
  if (Status s = check_heads("contiguous decode", a.num_q_heads, a.num_kv_heads); !s) return s;
  if (Status s = check_supported(a.dtype, a.head_dim, 16); !s) {
    return fail("contiguous decode: ", s.message);
  }
  if (a.max_context < 0) return fail("contiguous decode: max_context must not be negative");
  if (a.dtype == KvDtype::kFP8E4M3 && !(a.k_scale > 0 && a.v_scale > 0)) {
    return fail("contiguous decode: fp8 KV needs positive k_scale and v_scale");
  }
  if (a.num_splits < 0 || a.num_splits > kMaxSplits) {
    return fail("contiguous decode: num_splits ", a.num_splits, " must lie in 0..", kMaxSplits);
  }
  return check_aligned("contiguous decode",
                       {{"q", a.q}, {"k", a.k}, {"v", a.v}, {"workspace", a.workspace}});
}

Status validate(const PrefillArgs& a) {
  if (a.q == nullptr || a.out == nullptr || a.q_indptr == nullptr || a.context_lens == nullptr) {
    return fail("paged prefill: q, out, q_indptr and context_lens must not be null");
  }
  if (a.num_seqs < 0 || a.num_q_tokens < 0 || a.max_q_len < 0) {
    return fail("paged prefill: num_seqs, num_q_tokens and max_q_len must not be negative");
  }
  if (a.path != PrefillPath::kTensorCores && a.path != PrefillPath::kCudaCores) {
    return fail("paged prefill: path ", static_cast<int>(a.path),
                " is not tensor cores (0) or CUDA cores (1)");
  }
  if (Status s = check_heads("paged prefill", a.num_q_heads, a.num_kv_heads); !s) return s;
  if (Status s = check_paged("paged prefill", a.kv, a.head_dim, true); !s) return s;
  return check_aligned("paged prefill",
                       {{"q", a.q}, {"kv.k_cache", a.kv.k_cache}, {"kv.v_cache", a.kv.v_cache}});
}

Status validate(const KvWriteArgs& a) {
  if (a.k == nullptr || a.v == nullptr || a.slot_mapping == nullptr || a.k_cache == nullptr ||
      a.v_cache == nullptr) {
    return fail("kv write: k, v, slot_mapping, k_cache and v_cache must not be null");
  }
  if (a.num_tokens < 0 || a.num_kv_heads <= 0 || a.num_blocks <= 0) {
    return fail("kv write: num_tokens must not be negative, num_kv_heads and num_blocks positive");
  }
  if (Status s = check_supported(a.dtype, a.head_dim, a.block_size); !s) {
    return fail("kv write: ", s.message);
  }
  if (a.dtype == KvDtype::kFP8E4M3 && !(a.k_scale > 0 && a.v_scale > 0)) {
    return fail("kv write: fp8 KV needs positive k_scale and v_scale");
  }
  return check_aligned("kv write",
                       {{"k", a.k}, {"v", a.v}, {"k_cache", a.k_cache}, {"v_cache", a.v_cache}});
}

int decode_splits(int requested, int num_seqs, int num_kv_heads, int max_context_len, int num_sms,
                  int ctas_per_sm) {
  const int parts =
      std::max(1, (max_context_len + kDecodePartitionTokens - 1) / kDecodePartitionTokens);
  const int cap = std::min(parts, kMaxSplits);
  if (requested > 0) return std::min(requested, cap);
  const long units = static_cast<long>(num_seqs) * num_kv_heads;
  const long slots = static_cast<long>(num_sms) * std::max(1, ctas_per_sm);
  if (units <= 0 || slots <= 0 || units >= slots) return 1;
  // The busy fraction of the slots over the waves n splits take.
  auto fill = [&](int n) {
    const long ctas = units * n;
    const long waves = (ctas + slots - 1) / slots;
    return static_cast<double>(ctas) / static_cast<double>(waves * slots);
  };
  int best = 1;
  double best_fill = fill(1);
  // Each count of partitions per split gives ⌈parts / per⌉ non-empty splits.
  for (int per = parts; per >= 1; --per) {
    const int n = (parts + per - 1) / per;
    if (n > cap) break;
    if (n == best) continue;
    const double f = fill(n);
    if (f > best_fill * 1.05) {
      best = n;
      best_fill = f;
    }
  }
  return best;
}

std::size_t decode_workspace_bytes(int splits, int num_seqs, int num_q_heads, int head_dim) {
  if (splits <= 1) return 0;
  return static_cast<std::size_t>(num_seqs) * num_q_heads * splits * (head_dim + 2) * sizeof(float);
}

}  // namespace kvfleet::kernels
