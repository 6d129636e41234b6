// The probes when kvfleet is built without CUDA.
#include "kernels/probes.h"

namespace kvfleet::kernels {
namespace {
Status absent(const char* what) {
  return Status::Error(std::string(what) +
                       ": kvfleet was built without CUDA (KVFLEET_WITH_CUDA=OFF)");
}
}  // namespace
Status device_info(DeviceInfo*) { return absent("device info"); }
Status measure_copy_bandwidth(std::size_t, int, CopyBandwidth*) { return absent("copy bandwidth"); }
Status time_gemm(const GemmShape&, int, int, double*) { return absent("GEMM timing"); }
}  // namespace kvfleet::kernels
