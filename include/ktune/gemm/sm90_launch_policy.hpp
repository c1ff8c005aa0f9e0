// ktune/gemm/sm90_launch_policy.hpp — launch defaults of the sm90 (TMA + wgmma) GEMM instances: tuning
// policy, kept apart from the kernel (kernel/sm90/kernel.cuh applies it; gemm/tactics.hpp offers the
// tuner the other choice). Host and device, constexpr.
#pragma once
#include <cstdint>

#include "ktune/gemm/config.hpp"

namespace ktune {

// Clusters of 2 CTAs pair adjacent tiles that share the larger operand tile: along M (sharing B's tile)
// when BN ≥ BM, else along N (sharing A's). Each CTA of the pair loads half of the shared tile and
// multicasts it into both (kernel/sm90/mainloop.cuh).
constexpr bool sm90_pairs_along_m(const GemmConfig& c) { return c.tile.n >= c.tile.m; }

// An odd number of tiles along the pairing dimension makes the last pair of each column compute one
// padded tile (TMA reads zeros past the edge): at most 1 in 8 wasted before pairing is the default.
inline constexpr std::int64_t sm90_min_pair_tiles_if_odd = 8;

// Cluster size an sm90 instance launches with when GemmLaunchOptions::cluster is 0. Pairs need two
// tiles along the pairing dimension, little padding, and enough tiles to occupy every multiprocessor
// (with fewer, the L2 traffic the multicast saves is not what limits the GEMM).
constexpr int sm90_default_cluster(const GemmConfig& c, std::int64_t tiles_m, std::int64_t tiles_n, int sm_count) {
  const std::int64_t pair_dim = sm90_pairs_along_m(c) ? tiles_m : tiles_n;
  const bool little_padding = pair_dim % 2 == 0 || pair_dim >= sm90_min_pair_tiles_if_odd;
  const bool fills_device = tiles_m * tiles_n >= sm_count;
  return pair_dim >= 2 && little_padding && fills_device ? 2 : 1;
}

}  // namespace ktune
