// ktune/gemm/kernel/schedule.cuh — which output tile a block computes. Blocks walk the tile grid in
// groups of `group` tile-rows, column by column inside a group, so that consecutive blocks share A
// and B tiles in L2.
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

}  // namespace ktune::kernel
