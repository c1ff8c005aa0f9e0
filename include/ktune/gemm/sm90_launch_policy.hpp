// ktune/gemm/sm90_launch_policy.hpp — launch choices of the sm90 (TMA + wgmma) GEMM instances that are
// tuning policy rather than kernel code (kernel/sm90/mainloop.cuh applies them). Host and device, constexpr.
//
// Cluster size: an sm90 instance launches in clusters of 1 unless GemmLaunchOptions::cluster = 2 (the
// tuner's `@cl2` tactic). Measured on the H200 (s4-batchB, cuBLASLt-paired timing, bf16 4096^3 and
// 8192^3): clusters of 2 ran within ±0.6% of cluster 1 on 128x256, 256x128 and 128x128 tiles and 3-9%
// slower with ping-pong consumers, so multicast is not the default.
#pragma once
#include "ktune/gemm/config.hpp"

namespace ktune {

// Clusters of 2 CTAs pair adjacent tiles that share the larger operand tile: along M (sharing B's tile)
// when BN ≥ BM, else along N (sharing A's). Each CTA of the pair loads half of the shared tile and
// multicasts it into both (kernel/sm90/mainloop.cuh).
constexpr bool sm90_pairs_along_m(const GemmConfig& c) { return c.tile.n >= c.tile.m; }

}  // namespace ktune
