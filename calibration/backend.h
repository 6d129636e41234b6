#pragma once
// Where calibration measures: the local GPU through kvfleet's kernels and cuBLASLt, or the CPU
// through the kernels' references and Eigen (the same pipeline, testable without a GPU; its times
// describe this CPU, not a GPU).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/attention.h"
#include "kernels/probes.h"

namespace kvfleet::calibration {

struct Timing {
  double median_s = 0;
  double spread_s = 0;  // half the p10–p90 range of the repetitions (0 when not measured)
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Facts about the device for the profile's metadata (name, memory, versions, clocks...).
  virtual std::vector<std::pair<std::string, std::string>> describe() = 0;
  // D[m, n] = A[m, k] · B[k, n] in the activation dtype (bf16 on the GPU, fp32 on the CPU).
  virtual Timing gemm(int m, int n, int k) = 0;
  // One layer's attention for `s` (kernels/probes.h): decode of s.batch × s.context, or one
  // prefill chunk of s.chunk over s.prefix.
  virtual Timing decode(const kernels::AttentionShape& s) = 0;
  virtual Timing prefill(const kernels::AttentionShape& s) = 0;
  virtual Timing kv_write(int tokens, int kv_heads, int head_dim, kernels::KvDtype d) = 0;
};

// Throws std::runtime_error when no GPU is usable (built without CUDA, or no device).
std::unique_ptr<Backend> make_gpu_backend(int iters);
std::unique_ptr<Backend> make_cpu_backend(int iters);

}  // namespace kvfleet::calibration
