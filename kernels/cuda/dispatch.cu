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

int head_index(int d) { return d == 64 ? 0 : d == 128 ? 1 : 2; }
int block_index(int b) { return b == 8 ? 0 : b == 16 ? 1 : b == 32 ? 2 : 3; }

const DecodeTable& decode_table(KvDtype d) {
  return d == KvDtype::kF16 ? kDecodeF16 : d == KvDtype::kBF16 ? kDecodeBF16 : kDecodeFP8;
}
const PrefillTable& prefill_table(KvDtype d) {
  return d == KvDtype::kF16 ? kPrefillF16 : d == KvDtype::kBF16 ? kPrefillBF16 : kPrefillFP8;
}

// Resolves num_splits: an explicit request must fit the workspace; the automatic choice
// shrinks to what the workspace holds.
Status resolve_splits(const char* what, int requested, int num_sms_hint, int num_seqs,
                      int num_q_heads, int num_kv_heads, int head_dim, int max_context,
                      const void* workspace, std::size_t workspace_bytes, int* splits) {
  int sms = num_sms_hint;
  if (requested == 0 && sms <= 0) {
    int dev = 0;
    KVF_CUDA_TRY(cudaGetDevice(&dev));
    KVF_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  }
  int n = decode_splits(requested, num_seqs, num_kv_heads, max_context, sms);
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

Status paged_decode(const DecodeArgs& a, Stream stream) {
  if (Status s = validate(a); !s) return s;
  if (Status s = cuda::check_grid("paged decode", a.num_seqs); !s) return s;
  int splits = 1;
  if (Status s = cuda::resolve_splits("paged decode", a.num_splits, a.num_sms, a.num_seqs,
                                      a.num_q_heads, a.num_kv_heads, a.head_dim, a.max_context_len,
                                      a.workspace, a.workspace_bytes, &splits);
      !s) {
    return s;
  }
  const auto fn = cuda::decode_table(a.kv.dtype)
                      .paged[cuda::head_index(a.head_dim)][cuda::block_index(a.kv.block_size)];
  return fn(a, splits, stream);
}

Status contiguous_decode(const ContiguousDecodeArgs& a, Stream stream) {
  if (Status s = validate(a); !s) return s;
  if (Status s = cuda::check_grid("contiguous decode", a.num_seqs); !s) return s;
  int splits = 1;
  if (Status s = cuda::resolve_splits("contiguous decode", a.num_splits, a.num_sms, a.num_seqs,
                                      a.num_q_heads, a.num_kv_heads, a.head_dim, a.max_context,
                                      a.workspace, a.workspace_bytes, &splits);
      !s) {
    return s;
  }
  return cuda::decode_table(a.dtype).contiguous[cuda::head_index(a.head_dim)](a, splits, stream);
}

Status paged_prefill(const PrefillArgs& a, Stream stream) {
  if (Status s = validate(a); !s) return s;
  if (Status s = cuda::check_grid("paged prefill", a.num_seqs); !s) return s;
  return cuda::prefill_table(a.kv.dtype).paged[cuda::head_index(a.head_dim)](a, stream);
}

Status kv_write(const KvWriteArgs& a, Stream stream) {
  if (Status s = validate(a); !s) return s;
  return cuda::kv_write_dispatch(a, stream);
}

}  // namespace kvfleet::kernels
