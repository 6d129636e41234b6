// The launchers of kernels/attention.h: validate, resolve split-KV, look the kernel up in the
// dispatch table (tables.h) and launch it on the caller's stream.
#include <sstream>
#include <string>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/tables.h"

namespace kvfleet::kernels {
namespace cuda {

Status cuda_error(cudaError_t e, const char* expr, const char* file, int line) {
  std::ostringstream os;
  os << "CUDA error " << cudaGetErrorName(e) << " (" << cudaGetErrorString(e) << ") in " << expr
     << " at " << file << ":" << line;
  return Status::Error(os.str());
}

Status kv_write_dispatch(const KvWriteArgs& a, cudaStream_t stream);

namespace {

const DecodeTable& decode_table(KvDtype d) {
  return d == KvDtype::kF16 ? kDecodeF16 : d == KvDtype::kBF16 ? kDecodeBF16 : kDecodeFP8;
}
const PrefillTable& prefill_table(KvDtype d) {
  return d == KvDtype::kF16 ? kPrefillF16 : d == KvDtype::kBF16 ? kPrefillBF16 : kPrefillFP8;
}

// Resolves num_splits: an explicit request must fit the workspace; the automatic choice
// shrinks to what the workspace holds.
Status choose_splits(int requested, int num_sms_hint, CtasPerSmFn ctas_per_sm, int num_seqs,
                     int num_kv_heads, int max_context, int* splits) {
  int sms = num_sms_hint;
  if (requested == 0 && sms <= 0) {
    int dev = 0;
    KVF_CUDA_TRY(cudaGetDevice(&dev));
    KVF_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  }
  *splits = decode_splits(requested, num_seqs, num_kv_heads, max_context, sms,
                          requested == 0 ? ctas_per_sm() : 1);
  return Status::Ok();
}

Status resolve_splits(const char* what, int requested, int num_sms_hint, CtasPerSmFn ctas_per_sm,
                      int num_seqs, int num_q_heads, int num_kv_heads, int head_dim,
                      int max_context, const void* workspace, std::size_t workspace_bytes,
                      int* splits) {
  int n = 1;
  if (Status s = choose_splits(requested, num_sms_hint, ctas_per_sm, num_seqs, num_kv_heads,
                               max_context, &n);
      !s) {
    return s;
  }
  const std::size_t have = workspace == nullptr ? 0 : workspace_bytes;
  if (requested == 0) {
    while (n > 1 && decode_workspace_bytes(n, num_seqs, num_q_heads, head_dim) > have) --n;
  } else if (decode_workspace_bytes(n, num_seqs, num_q_heads, head_dim) > have) {
    std::ostringstream os;
    os << what << ": " << n << " splits need a workspace of "
       << decode_workspace_bytes(n, num_seqs, num_q_heads, head_dim) << " bytes, got " << have;
    return Status::Error(os.str());
  }
  *splits = n;
  return Status::Ok();
}

Status check_grid(const char* what, int num_seqs) {
  if (num_seqs > kMaxGridYZ) {
    return Status::Error(std::string(what) + ": num_seqs above " + std::to_string(kMaxGridYZ) +
                         " is not supported");
  }
  return Status::Ok();
}

}  // namespace
}  // namespace cuda

bool cuda_available() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

namespace cuda {
namespace {
const PagedDecodeEntry& entry_for(const DecodeArgs& a) {
  return decode_table(a.kv.dtype)
      .paged[head_index(a.head_dim)][group_index(a.num_q_heads / a.num_kv_heads)];
}
const ContiguousDecodeEntry& entry_for(const ContiguousDecodeArgs& a) {
  return decode_table(a.dtype)
      .contiguous[head_index(a.head_dim)][group_index(a.num_q_heads / a.num_kv_heads)];
}
}  // namespace
}  // namespace cuda

Status paged_decode_splits(const DecodeArgs& a, int* splits) {
  if (Status s = validate(a); !s) return s;
  return cuda::choose_splits(a.num_splits, a.num_sms, cuda::entry_for(a).ctas_per_sm, a.num_seqs,
                             a.num_kv_heads, a.max_context_len, splits);
}

Status contiguous_decode_splits(const ContiguousDecodeArgs& a, int* splits) {
  if (Status s = validate(a); !s) return s;
  return cuda::choose_splits(a.num_splits, a.num_sms, cuda::entry_for(a).ctas_per_sm, a.num_seqs,
                             a.num_kv_heads, a.max_context, splits);
}

Status paged_decode(const DecodeArgs& a, Stream stream) {
  if (Status s = validate(a); !s) return s;
  if (Status s = cuda::check_grid("paged decode", a.num_seqs); !s) return s;
  const auto& e = cuda::entry_for(a);
  int splits = 1;
  if (Status s = cuda::resolve_splits("paged decode", a.num_splits, a.num_sms, e.ctas_per_sm,
                                      a.num_seqs, a.num_q_heads, a.num_kv_heads, a.head_dim,
                                      a.max_context_len, a.workspace, a.workspace_bytes, &splits);
      !s) {
    return s;
  }
  return e.launch(a, splits, stream);
}

Status contiguous_decode(const ContiguousDecodeArgs& a, Stream stream) {
  if (Status s = validate(a); !s) return s;
  if (Status s = cuda::check_grid("contiguous decode", a.num_seqs); !s) return s;
  const auto& e = cuda::entry_for(a);
  int splits = 1;
  if (Status s = cuda::resolve_splits("contiguous decode", a.num_splits, a.num_sms, e.ctas_per_sm,
                                      a.num_seqs, a.num_q_heads, a.num_kv_heads, a.head_dim,
                                      a.max_context, a.workspace, a.workspace_bytes, &splits);
      !s) {
    return s;
  }
  return e.launch(a, splits, stream);
}

Status paged_prefill(const PrefillArgs& a, Stream stream) {
  if (Status s = validate(a); !s) return s;
  if (Status s = cuda::check_grid("paged prefill", a.num_seqs); !s) return s;
  const auto& t = cuda::prefill_table(a.kv.dtype);
  const int hi = cuda::head_index(a.head_dim);
  return (a.path == PrefillPath::kCudaCores ? t.paged[hi] : t.paged_mma[hi])(a, stream);
}

Status kv_write(const KvWriteArgs& a, Stream stream) {
  if (Status s = validate(a); !s) return s;
  return cuda::kv_write_dispatch(a, stream);
}

}  // namespace kvfleet::kernels
