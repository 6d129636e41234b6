// The launchers and probes when kvfleet is built without CUDA: each says so instead of running.
#include "kernels/attention.h"
#include "kernels/probes.h"

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
Status paged_decode_splits(const DecodeArgs&, int*) { return absent("paged decode"); }
Status contiguous_decode_splits(const ContiguousDecodeArgs&, int*) {
  return absent("contiguous decode");
}
Status paged_prefill(const PrefillArgs&, Stream) { return absent("paged prefill"); }
Status kv_write(const KvWriteArgs&, Stream) { return absent("kv write"); }
Status device_info(DeviceInfo*) { return absent("device info"); }
Status measure_copy_bandwidth(std::size_t, int, CopyBandwidth*) { return absent("copy bandwidth"); }
Status time_gemm(const GemmShape&, int, int, double*) { return absent("GEMM timing"); }
Status time_decode(const AttentionShape&, int, double*) { return absent("decode timing"); }
Status time_prefill(const AttentionShape&, int, double*) { return absent("prefill timing"); }
Status time_kv_write(int, int, int, KvDtype, int, double*) { return absent("KV write timing"); }
}  // namespace kvfleet::kernels
