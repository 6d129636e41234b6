// How a scenario's pool becomes the setup of each of its engines.
#include "sim/simulation/simulation.h"

namespace kvfleet::sim {

// Engine `r` (rank r % dp of replica r / dp) of pool `p`.
ReplicaSetup replica_setup(const Scenario& sc, std::size_t p, int r, const CostContext& ctx) {
  const PoolConfig& pc = sc.config.pools[p];
  const Scenario::PoolInfo& info = sc.pools[p];
  const int dp = pc.data_parallel;
  ReplicaSetup setup;
  setup.name = pc.engine_name(r / dp, r % dp);
  setup.engine = pc.engine;
  setup.memory = info.memory;
  setup.max_model_len = info.max_model_len;
  setup.host_link_Bps = info.gpu.host_link_Bps;
  setup.gpus = pc.gpus_per_replica();
  setup.pipeline_stages = pc.pipeline_parallel;
  setup.p2p_Bps = info.gpu.interconnect_Bps;
  setup.p2p_latency_s = info.gpu.interconnect_latency_s;
  setup.activation_bytes_per_token = 2.0 * info.model.hidden_size;
  setup.work = WorkModel(ctx);
  setup.check_invariants = sc.config.simulation.check_invariants;
  setup.fast_decode = sc.config.simulation.fast_decode;
  setup.frontend = pc.frontend;
  setup.step_time_scale = pc.step_time_scale;
  return setup;
}

}  // namespace kvfleet::sim
