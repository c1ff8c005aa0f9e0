// ktune/gemm/kernel/schedule.cuh — which output tile and which K range a block computes. Blocks walk
// the tile grid in groups of `group` tile-rows, column by column inside a group, so that consecutive
// blocks share A and B tiles in L2. With split-K, blockIdx.y is the slice of the K loop.
//
// Plain integer arithmetic, host-callable, so host tests check it at the limits (test/host/
// validation_limits_test.cpp).
#pragma once

#if defined(__CUDACC__)
#define KTUNE_SCHEDULE_FN __host__ __device__ __forceinline__ constexpr
#else
#define KTUNE_SCHEDULE_FN inline constexpr
#endif

namespace ktune::kernel {

struct TileCoord { int m, n; };

// The raster group actually used: at least 1, at most the grid's height. A group taller than the
// grid visits the tiles exactly as a group of tiles_m does, and the clamp keeps group · tiles_n at most
// tiles_m · tiles_n, which the launchers keep below 2^31 ("too many output tiles"), so 32-bit math
// cannot overflow whatever the caller's group (before, group 1024 with N ≥ 2^27 wrapped around).
KTUNE_SCHEDULE_FN int effective_raster_group(int tiles_m, int group) {
  return group < 1 ? 1 : (group < tiles_m ? group : (tiles_m < 1 ? 1 : tiles_m));
}

// Tile of block `block` (0 ≤ block < tiles_m · tiles_n ≤ 2^31 − 1).
KTUNE_SCHEDULE_FN TileCoord grouped_raster(int block, int tiles_m, int tiles_n, int group) {
  const int g = effective_raster_group(tiles_m, group);
  const int per_group = g * tiles_n;  // ≤ tiles_m · tiles_n
  const int group_id = block / per_group;
  const int first_m = group_id * g;   // ≤ block / tiles_n < tiles_m
  const int left = tiles_m - first_m;
  const int rows = left < g ? left : g;
  const int in_group = block - group_id * per_group;
  return {first_m + in_group % rows, in_group / rows};
}

// K-tiles [first, first + count) of slice `slice` of `splits` (as even as possible; a slice may be empty
// when there are more slices than k-tiles). Same split as ktune::split_k_first_tile on the host.
struct KRange { int first, count; };
KTUNE_SCHEDULE_FN KRange k_slice(int k_tiles, int slice, int splits) {
  if (splits <= 1) return {0, k_tiles};
  const int first = static_cast<int>(static_cast<long long>(k_tiles) * slice / splits);
  const int end = static_cast<int>(static_cast<long long>(k_tiles) * (slice + 1) / splits);
  return {first, end - first};
}

}  // namespace ktune::kernel
