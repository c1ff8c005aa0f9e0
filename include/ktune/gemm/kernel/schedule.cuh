// ktune/gemm/kernel/schedule.cuh — which output tile and which K range a block computes. Blocks walk
// the tile grid in groups of `group` tile-rows, column by column inside a group, so that consecutive
// blocks share A and B tiles in L2. With split-K, blockIdx.y is the slice of the K loop.
#pragma once

namespace ktune::kernel {

struct TileCoord { int m, n; };

__device__ __forceinline__ TileCoord grouped_raster(int block, int tiles_m, int tiles_n, int group) {
  const int per_group = group * tiles_n;
  const int group_id = block / per_group;
  const int first_m = group_id * group;
  const int rows = min(tiles_m - first_m, group);
  const int in_group = block - group_id * per_group;
  return {first_m + in_group % rows, in_group / rows};
}

// K-tiles [first, first + count) of slice `slice` of `splits` (as even as possible; a slice may be empty
// when there are more slices than k-tiles). Same split as ktune::split_k_first_tile on the host.
struct KRange { int first, count; };
__device__ __forceinline__ KRange k_slice(int k_tiles, int slice, int splits) {
  if (splits <= 1) return {0, k_tiles};
  const int first = static_cast<int>(static_cast<long long>(k_tiles) * slice / splits);
  const int end = static_cast<int>(static_cast<long long>(k_tiles) * (slice + 1) / splits);
  return {first, end - first};
}

}  // namespace ktune::kernel
