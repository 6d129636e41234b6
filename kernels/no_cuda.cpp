// The launchers when kvfleet is built without CUDA: each says so instead of running.
#include "kernels/attention.h"

namespace kvfleet::kernels {
namespace {
Status absent(const char* what) {
  return Status::Error(std::string(what) +
                       ": kvfleet was built without CUDA (KVFLEET_WITH_CUDA=OFF)");
}
}  // namespace
bool cuda_available() { return false; }
Status paged_decode(const DecodeArgs&, Stream) { return absent("paged decode"); }
Status contiguous_decode(const ContiguousDecodeArgs&, Stream) {
  return absent("contiguous decode");
}
Status paged_prefill(const PrefillArgs&, Stream) { return absent("paged prefill"); }
Status kv_write(const KvWriteArgs&, Stream) { return absent("kv write"); }
}  // namespace kvfleet::kernels
