#include "sim/engine/preemption.h"

namespace kvfleet::sim {
namespace {

// vLLM v1: the KV is freed and computed again when the request is scheduled next.
class Recompute final : public PreemptionPolicy {
 public:
  struct Config {
    template <class V>
    void visit(V&) {}
  };
  Recompute(const Config&, const HostSwapSpace&) {}
  bool keep(double) override { return false; }
};

// vLLM v0's swap: the whole sequence's KV is copied to host memory when it fits there (each GPU
// moves its own shard), else it is recomputed; it is copied back when the request resumes.
class Swap final : public PreemptionPolicy {
 public:
  struct Config {
    template <class V>
    void visit(V&) {}
  };
  Swap(const Config&, const HostSwapSpace& host) : host_(host) {}
  bool keep(double bytes) override {
    if (bytes <= 0 || host_.link_Bps <= 0 || used_ + bytes > host_.capacity_bytes) return false;
    used_ += bytes;
    return true;
  }
  void release(double bytes) override { used_ -= bytes; }
  double host_bytes() const override { return used_; }
  double host_capacity_bytes() const override { return host_.capacity_bytes; }
  void clear() override { used_ = 0; }

 private:
  HostSwapSpace host_;
  double used_ = 0;
};

}  // namespace

const PreemptionRegistry& preemption_registry() {
  static const PreemptionRegistry r = [] {
    PreemptionRegistry reg("preemption mode", "recompute");
    reg.add<Recompute>("recompute",
                       "The preempted request's KV is freed and computed again when it runs "
                       "next (vLLM v1).");
    reg.add<Swap>("swap",
                  "Its KV is copied to host memory over the host link when it fits in "
                  "swap_space_gib, and copied back when it resumes; else it is recomputed "
                  "(vLLM v0).");
    return reg;
  }();
  return r;
}

std::unique_ptr<PreemptionPolicy> make_preemption_policy(const std::string& name,
                                                         const HostSwapSpace& host) {
  return preemption_registry().make(name, host);
}

}  // namespace kvfleet::sim
