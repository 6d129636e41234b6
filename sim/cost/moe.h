#pragma once
// Mixture-of-experts routing, in expectation: how many distinct experts a step's tokens activate
// and how the token-expert pairs fall on the GPUs that hold the experts. Routing is taken as
// uniform (each token picks experts_per_token distinct experts of num_experts, all equally
// likely), which is what load-balanced routers train towards; real traffic is somewhat more
// skewed, so the busiest GPU is if anything underestimated. moe_test.cpp checks the formulas
// against a brute-force simulation of top-k routing.
#include "sim/model/presets.h"

namespace kvfleet::sim {

// Expected load of one MoE layer on the busiest of `gpus` GPUs holding num_experts / gpus
// experts each, for `tokens` routed tokens.
struct MoeLoad {
  double pairs = 0;    // token-expert pairs it computes
  double experts = 0;  // distinct experts of its own that at least one token activates
};
MoeLoad moe_busiest_gpu(double tokens, int num_experts, int experts_per_token, int gpus);

// E[number of experts among `local` given ones that `tokens` tokens activate].
double expected_distinct_experts(double tokens, int num_experts, int experts_per_token, int local);

// Seconds one MoE layer spends moving tokens between `ranks` data-parallel ranks: vLLM's
// default all2all backend (allgather_reducescatter) gathers every rank's `tokens_per_rank`
// hidden states before the experts and reduce-scatters the outputs after them, each a ring of
// ranks − 1 steps over the interconnect. 0 for one rank.
double moe_dispatch_combine_s(double tokens_per_rank, int ranks, double bytes_per_token,
                              double link_Bps, double link_latency_s);

// E[max of n independent standard normals] (n ≥ 1; 0 for n = 1).
double expected_max_of_normals(int n);

}  // namespace kvfleet::sim
