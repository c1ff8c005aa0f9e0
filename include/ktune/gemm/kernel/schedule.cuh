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

// K-tiles [first, first + count) of slice `slice` of `splits` (at most 256; ≤ 1: no split):
// [k·s/S, k·(s+1)/S), as even as possible (a slice may be empty when there are more slices than
// k-tiles). Every split-K kernel (sm80, sm90, conv) takes its slice from here. In 32-bit arithmetic:
// with k = q·S + r, k·s/S = q·s + r·s/S (r·s < 2^16); a 64-bit division was a subroutine call in the
// sm90 persistent kernel, whose ABI cost registers (spills).
struct KRange { int first, count; };
KTUNE_SCHEDULE_FN KRange k_slice(int k_tiles, int slice, int splits) {
  if (splits <= 1) return {0, k_tiles};
  const int q = k_tiles / splits, r = k_tiles % splits;
  const int first = q * slice + r * slice / splits, end = q * (slice + 1) + r * (slice + 1) / splits;
  return {first, end - first};
}

// ---- Stream-K (GemmLaunchOptions::stream_k; the sm90 persistent kernel) ------------------------------
// A data-parallel + stream-K hybrid over `ctas` resident CTAs: the first dp_tiles tiles (in raster
// order) are whole-tile work, CTA b taking b, b + ctas, ...; the k-iterations of the remaining tiles
// (tile-major: iteration i is k-tile i % k_tiles of stream-K tile i / k_tiles) are cut into `ctas`
// contiguous ranges as even as possible, [begin(b), begin(b + 1)), which may span tile boundaries.
// A CTA walks its data-parallel tiles, then the segments of its range (one per tile it touches). So
// only a CTA's first segment can start inside a tile ("a non-first piece": stored as an fp32 partial
// and flagged), and a tile's first piece belongs to the CTA whose range covers its k-tile 0, which
// computes it as its last segment and then adds the tile's other pieces (CTAs b + 1, b + 2, ..., in
// k order: a fixed order, so the results are bit-identical run to run) and applies the epilogue.
// Work index w: w < dp_tiles is a data-parallel tile; w >= dp_tiles the segment that starts at
// stream-K iteration w - dp_tiles. All values fit in 32 bits (the planner, gemm/split_k.hpp, refuses
// dp_tiles + stream-K iterations >= 2^31 and keeps ctas <= stream_k_max_ctas).
struct StreamKSchedule {
  int dp_tiles = 0;  // tiles [0, dp_tiles): data-parallel
  int k_tiles = 1;   // k-iterations per tile
  int ctas = 1;      // the grid; every CTA has a non-empty range unless no tile is left to stream-K
  int q = 0, r = 0;  // stream-K iterations = q·ctas + r
};
inline constexpr int stream_k_max_ctas = 32768;  // r·b < ctas² ≤ 2^30

// First stream-K iteration of CTA b (0 ≤ b ≤ ctas): q·b + ⌊r·b / ctas⌋ = ⌊(q·ctas + r)·b / ctas⌋.
KTUNE_SCHEDULE_FN int stream_k_begin(const StreamKSchedule& s, int b) { return s.q * b + s.r * b / s.ctas; }
KTUNE_SCHEDULE_FN int stream_k_first(const StreamKSchedule& s, int b) {
  return b < s.dp_tiles ? b : s.dp_tiles + stream_k_begin(s, b);
}
// Is w (reached from stream_k_first by stream_k_next) still CTA b's work?
KTUNE_SCHEDULE_FN bool stream_k_more(const StreamKSchedule& s, int b, int w) {
  return w < s.dp_tiles || w - s.dp_tiles < stream_k_begin(s, b + 1);
}
KTUNE_SCHEDULE_FN int stream_k_next(const StreamKSchedule& s, int b, int w) {
  if (w < s.dp_tiles) return w + s.ctas < s.dp_tiles ? w + s.ctas : s.dp_tiles + stream_k_begin(s, b);
  return w + (s.k_tiles - (w - s.dp_tiles) % s.k_tiles);  // the next tile boundary (stream_k_more ends the walk)
}
// Tile index (raster order) and k-tiles of work w of CTA b.
KTUNE_SCHEDULE_FN int stream_k_tile(const StreamKSchedule& s, int w) {
  return w < s.dp_tiles ? w : s.dp_tiles + (w - s.dp_tiles) / s.k_tiles;
}
KTUNE_SCHEDULE_FN KRange stream_k_range(const StreamKSchedule& s, int b, int w) {
  if (w < s.dp_tiles) return {0, s.k_tiles};
  const int it = w - s.dp_tiles, first = it % s.k_tiles, end = stream_k_begin(s, b + 1);
  const int left = s.k_tiles - first;
  return {first, end - it < left ? end - it : left};
}

}  // namespace ktune::kernel
