#pragma once
// kvfleet::kernels: paged-attention kernels, their launch arguments and their dispatch table.
//
// This header needs no CUDA headers, so CPU-only code (the references in ref/, the calibration
// pipeline's CPU backend, tests) shares the argument structs with the CUDA launchers. Every
// pointer in an argument struct is non-owning; the launchers allocate nothing, take the caller's
// stream, and return a Status instead of throwing. The CPU references take the same structs with
// host pointers.
//
// Layouts (row-major, innermost last):
//   query, output (decode)   [num_seqs, num_q_heads, head_dim]            act dtype
//   query, output (prefill)  [num_q_tokens, num_q_heads, head_dim]        act dtype
//   K cache, V cache         [num_blocks, block_size, num_kv_heads, head_dim]  kv dtype
//   block table              [num_seqs, max_blocks_per_seq]               int32 block ids
//   contiguous K, V          [num_seqs, max_context, num_kv_heads, head_dim]   kv dtype
// Grouped-query attention: num_q_heads = num_kv_heads × group, and query head h reads KV head
// h / group (the group's query heads are consecutive). Token t of sequence s lives in block
// block_table[s][t / block_size] at slot t % block_size; blocks may repeat and come in any order.
//
// Dtypes: the KV dtype decides the activation (query/output) dtype: fp16 KV with fp16
// activations, bf16 KV with bf16 activations, fp8 e4m3 KV (per-tensor scales k_scale, v_scale:
// real value = stored value × scale) with bf16 activations. Softmax and accumulation are fp32 on
// the GPU and double in the references.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

struct CUstream_st;

namespace kvfleet::kernels {

using Stream = CUstream_st*;  // a cudaStream_t; nullptr is the legacy default stream

enum class KvDtype : int { kF16 = 0, kBF16 = 1, kFP8E4M3 = 2 };
enum class ActDtype : int { kF16 = 0, kBF16 = 1 };

std::string_view to_string(KvDtype d);
// Parses "fp16" | "bf16" | "fp8" (also "fp8_e4m3"); false when the name is none of them.
bool parse_kv_dtype(std::string_view name, KvDtype* out);
inline ActDtype act_dtype(KvDtype kv) {
  return kv == KvDtype::kF16 ? ActDtype::kF16 : ActDtype::kBF16;
}
inline std::size_t kv_bytes(KvDtype kv) { return kv == KvDtype::kFP8E4M3 ? 1 : 2; }
inline constexpr std::size_t kActBytes = 2;

// The outcome of a launch or a validation: ok, or a message naming what was wrong.
struct Status {
  bool ok = true;
  std::string message;
  static Status Ok() { return {}; }
  static Status Error(std::string m) { return {false, std::move(m)}; }
  explicit operator bool() const { return ok; }
};

// The paged KV cache that a kernel reads (decode, prefill) or writes (KV write).
struct PagedKv {
  const void* k_cache = nullptr;              // [num_blocks, block_size, num_kv_heads, head_dim]
  const void* v_cache = nullptr;              // [num_blocks, block_size, num_kv_heads, head_dim]
  const std::int32_t* block_table = nullptr;  // [num_seqs, max_blocks_per_seq]
  int num_blocks = 0;
  int block_size = 16;  // tokens per block: 8, 16, 32 or 64
  int max_blocks_per_seq = 0;
  KvDtype dtype = KvDtype::kBF16;
  float k_scale = 1.0f;  // fp8 only: real K = stored × k_scale
  float v_scale = 1.0f;
};

// Decode: one query token per sequence attends to its context_lens[s] cached tokens (the
// query's own K and V already written). context_lens[s] = 0 gives a zero output row.
struct DecodeArgs {
  const void* q = nullptr;                     // [num_seqs, num_q_heads, head_dim]
  void* out = nullptr;                         // [num_seqs, num_q_heads, head_dim]
  const std::int32_t* context_lens = nullptr;  // [num_seqs]
  int num_seqs = 0;
  int num_q_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 128;       // 64, 128 or 256
  float sm_scale = 0;       // softmax scale, usually 1/sqrt(head_dim)
  int max_context_len = 0;  // an upper bound of context_lens, known on the host (sizes the grid)
  PagedKv kv;
  // Split-KV: 0 chooses automatically (split when sequences × KV heads leave SMs idle), 1 never
  // splits, N > 1 splits each sequence's context into N parts reduced by a second kernel.
  int num_splits = 0;
  int num_sms = 0;            // SM count for the automatic choice; 0 asks the device
  void* workspace = nullptr;  // caller-owned, decode_workspace_bytes() long, for split-KV
  std::size_t workspace_bytes = 0;
};

// Contiguous-KV decode, the baseline that shows what paging costs: identical math.
struct ContiguousDecodeArgs {
  const void* q = nullptr;                     // [num_seqs, num_q_heads, head_dim]
  void* out = nullptr;                         // [num_seqs, num_q_heads, head_dim]
  const void* k = nullptr;                     // [num_seqs, max_context, num_kv_heads, head_dim]
  const void* v = nullptr;                     // [num_seqs, max_context, num_kv_heads, head_dim]
  const std::int32_t* context_lens = nullptr;  // [num_seqs], each ≤ max_context
  int num_seqs = 0;
  int num_q_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 128;
  int max_context = 0;
  float sm_scale = 0;
  KvDtype dtype = KvDtype::kBF16;
  float k_scale = 1.0f;
  float v_scale = 1.0f;
  int num_splits = 0;
  int num_sms = 0;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
};

// Which prefill kernel runs: tensor cores (mma, FlashAttention-2 style; the default) or the
// CUDA-core kernel kept as a reference path (fp32 throughout, several times slower).
enum class PrefillPath : int { kTensorCores = 0, kCudaCores = 1 };

// Chunked prefill: sequence s brings q_len = q_indptr[s+1] − q_indptr[s] new query tokens whose
// K and V are already in the cache as the last q_len of its context_lens[s] tokens. Query token i
// of the chunk sits at position context_lens[s] − q_len + i and attends causally to positions
// 0..that position.
struct PrefillArgs {
  const void* q = nullptr;                     // [num_q_tokens, num_q_heads, head_dim]
  void* out = nullptr;                         // [num_q_tokens, num_q_heads, head_dim]
  const std::int32_t* q_indptr = nullptr;      // [num_seqs + 1], q_indptr[0] = 0
  const std::int32_t* context_lens = nullptr;  // [num_seqs], each ≥ its q_len
  int num_seqs = 0;
  int num_q_tokens = 0;
  int num_q_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 128;
  float sm_scale = 0;
  int max_q_len = 0;  // an upper bound of the chunks' q_len, known on the host
  PagedKv kv;
  PrefillPath path = PrefillPath::kTensorCores;
};

// KV write (vLLM's reshape_and_cache): token i's K and V go to slot slot_mapping[i] =
// block × block_size + offset of the caches; a negative slot skips the token (padding). fp8
// caches store fp8(x / scale), rounded to nearest even and saturated to ±448.
struct KvWriteArgs {
  const void* k = nullptr;                     // [num_tokens, num_kv_heads, head_dim] act dtype
  const void* v = nullptr;                     // [num_tokens, num_kv_heads, head_dim] act dtype
  const std::int64_t* slot_mapping = nullptr;  // [num_tokens]
  void* k_cache = nullptr;                     // [num_blocks, block_size, num_kv_heads, head_dim]
  void* v_cache = nullptr;                     // [num_blocks, block_size, num_kv_heads, head_dim]
  int num_tokens = 0;
  int num_kv_heads = 0;
  int head_dim = 128;
  int num_blocks = 0;
  int block_size = 16;
  KvDtype dtype = KvDtype::kBF16;
  float k_scale = 1.0f;
  float v_scale = 1.0f;
  // Optional: a counter the kernel increments (atomically) once per token whose slot lies past
  // the cache (slot ≥ num_blocks × block_size); such tokens are skipped, never written.
  std::int32_t* bad_slots = nullptr;
};

// KV write arguments in one call (host or device pointers alike).
inline KvWriteArgs kv_write_args(const void* k, const void* v, const std::int64_t* slots,
                                 void* k_cache, void* v_cache, int tokens, int heads, int head_dim,
                                 int blocks, int block_size, KvDtype dtype, float k_scale,
                                 float v_scale) {
  KvWriteArgs a;
  a.k = k;
  a.v = v;
  a.slot_mapping = slots;
  a.k_cache = k_cache;
  a.v_cache = v_cache;
  a.num_tokens = tokens;
  a.num_kv_heads = heads;
  a.head_dim = head_dim;
  a.num_blocks = blocks;
  a.block_size = block_size;
  a.dtype = dtype;
  a.k_scale = k_scale;
  a.v_scale = v_scale;
  return a;
}

// Alignment: q, k and v (the caches, or contiguous K and V) and the split-KV workspace (when
// given) must start on 16 bytes, since the kernels read them in 16-byte vectors (a misaligned
// vector load faults and leaves the CUDA context unusable); validate() names the pointer otherwise.
// A slice into a fused QKV buffer qualifies only when its byte offset is a multiple of 16.
inline constexpr std::size_t kPointerAlignment = 16;

// The dispatch table: which (dtype, head_dim, block_size) have compiled kernels. Every launcher
// checks its arguments here first; the message names the field and the supported values.
Status check_supported(KvDtype dtype, int head_dim, int block_size);
Status validate(const DecodeArgs& a);
Status validate(const ContiguousDecodeArgs& a);
Status validate(const PrefillArgs& a);
Status validate(const KvWriteArgs& a);

inline constexpr int kDecodePartitionTokens = 256;  // tokens per split-KV partition
inline constexpr int kMaxSplits = 64;
inline constexpr int kMaxGroup = 8;  // query heads per KV head
// The group width a decode kernel is compiled for: the narrowest of 1, 2, 4, 8 that holds the
// group (a group of 3 runs on the 4-wide kernel with one head masked).
inline int decode_group_width(int group) {
  return group <= 1 ? 1 : group == 2 ? 2 : group <= 4 ? 4 : 8;
}

// CUDA's limit on grid.y and grid.z. Decode and prefill put sequences on grid.y (validated);
// prefill's query tiles go on grid.z, capped here, and the kernel strides over tiles past the cap
// so that a chunk of any length runs.
inline constexpr int kMaxGridYZ = 65535;
inline int prefill_grid_z(int max_q_len, int tokens_per_tile) {
  const long tiles = (static_cast<long>(max_q_len) + tokens_per_tile - 1) / tokens_per_tile;
  return static_cast<int>(tiles < 1 ? 1 : tiles > kMaxGridYZ ? kMaxGridYZ : tiles);
}

// The number of splits the decode launcher uses: an explicit request, capped at the context's
// partitions and kMaxSplits; or the automatic choice (requested = 0). The automatic choice splits
// only when the CTAs (sequences × KV heads) do not fill the GPU's num_sms × ctas_per_sm slots,
// and then picks the count that fills the last wave best (the fraction of slots busy over the
// waves), never empty splits (the count is ⌈partitions / partitions-per-split⌉) and no more than
// needed (a count is taken over a smaller one only when it fills at least 5% better).
// The launchers pass the kernel's occupancy as ctas_per_sm (paged_decode_splits() tells it).
// The workspace it needs: num_seqs × num_q_heads × splits × (head_dim + 2) floats, 0 when it
// does not split.
int decode_splits(int requested, int num_seqs, int num_kv_heads, int max_context_len, int num_sms,
                  int ctas_per_sm = 1);
std::size_t decode_workspace_bytes(int splits, int num_seqs, int num_q_heads, int head_dim);

// CUDA launchers (kernels/cuda/, present when built with CUDA). Asynchronous on `stream`; a
// returned error is a validation failure or a launch error, with the CUDA error's name.
bool cuda_available();  // compiled with CUDA and at least one device visible
Status paged_decode(const DecodeArgs& a, Stream stream);
// The split count paged_decode() / contiguous_decode() would use for these arguments on the
// current device (workspace not considered), so that callers can size the workspace.
Status paged_decode_splits(const DecodeArgs& a, int* splits);
Status contiguous_decode_splits(const ContiguousDecodeArgs& a, int* splits);
Status contiguous_decode(const ContiguousDecodeArgs& a, Stream stream);
Status paged_prefill(const PrefillArgs& a, Stream stream);
Status kv_write(const KvWriteArgs& a, Stream stream);

}  // namespace kvfleet::kernels
