// ktune/gemm/split_k_support.hpp — which instances take which split-K / stream-K / cluster launch options:
// named predicates on a GemmConfig, shared by the launch-option checks (dispatch.hpp), the workspace and
// proposals (split_k.hpp, tactics.hpp) and the kernels, so each rule is written once.
#pragma once
#include "ktune/gemm/config.hpp"
#include "ktune/types.hpp"

namespace ktune {

// Tiles of at least 128x128 over 16-byte vectors of 16-bit operands (families::Sm80MmaF16) leave
// split-K to the smaller-tile families: a problem with few enough such tiles to want slices is served as
// well by the 64-row and 16/32-row instances with slices (H200, every tactic on 7 decode shapes: the
// best split of a 128-row aligned f16/bf16 instance was within 2% of another tactic), and a split-capable
// instance costs ~8 s more CPU to compile (notes/build-time.md). tf32 and unaligned tiles keep it (there
// it wins: tf32 decode 0.045 vs 0.084 ms).
constexpr bool large_aligned_16bit_tile(const GemmConfig& c) {
  return size_of(c.operand()) == 2 && c.align * 2 >= 16 && c.tile.m >= 128 && c.tile.n >= 128;
}

// Instances whose kernel takes split_k > 1: the sm80 mma.sync ones but the large aligned 16-bit tiles
// (SIMT instances run at their 128-register cap, where the split-K epilogue spills), and every wgmma
// instance (its persistent kernel walks (tile, k-slice) units: kernel/sm90/split_k.cuh).
// Swap-AB instances take none of split-K, stream-K or cluster split-K (their transposed store is the
// only epilogue path they have: kernel/sm90/kernel.cuh).
constexpr bool supports_split_k(const GemmConfig& c) {
  if (c.schedule == WgSchedule::swap_ab) return false;
  return is_wgmma(c.math) || (uses_tensor_cores(c.math) && !large_aligned_16bit_tile(c));
}

// Serial mode (the in-kernel reduction) where it costs no spills: every sm80 split-capable instance; sm90
// instances whose consumer warpgroup tile is at most 64x128 (64 accumulator registers). With 128
// accumulators (64x256, 128x128 warpgroup tiles) the serial path spilled 20 bytes (H200 s5-batchA/B),
// and it was the slowest tactic there anyway (128x4096x4096 128x256 @split4s 49.2 us vs @split4p 21.3):
// those take parallel mode only. The sm90 reduction (kernel/sm90/split_k.cuh: serial_split_k_sum) also
// walks the sub-tile in batches of 4 × 128 four-column groups: WM·WN a multiple of 2048 (64x112, a probe
// tile, is not).
constexpr bool supports_serial_split_k(const GemmConfig& c) {
  return !is_wgmma(c.math) || (c.warp.m * c.warp.n <= 64 * 128 && c.warp.m * c.warp.n % 2048 == 0);
}

// Cluster mode (SplitKMode::cluster): the split_k slices of a tile run in thread-block clusters of
// split_cluster CTAs that add their accumulators through distributed shared memory. Two kernels take it:
//   sm80 mma.sync tiles of at most 32 rows (families Sm80MmaF16SmallM/M32, the decode and one-tile long-K
//     instances; kernel/cluster_split_k.cuh): clusters of 2..16 CTAs, several clusters per tile allowed
//     (the last cluster to arrive adds the clusters' sums); needs an sm90 device and the kernel's sm_90
//     image, which the launcher checks;
//   sm90 wgmma, cooperative, warpgroup tiles up to 64x128 (warp_specialized_gemm's ClusterK path,
//     kernel/sm90/cluster_k.cuh, as conv's @ck): one cluster per tile (split_k == split_cluster), as many
//     CTAs as rank 0's ring holds the other ranks' fp32 tiles, up to 8 (128x128 warpgroup tiles: rank 0's
//     sum spilled 8 bytes in conv's form).
// The largest split_cluster an instance takes (1: no cluster mode).
constexpr int cluster_split_k_limit(const GemmConfig& c) {
  if (is_wgmma(c.math)) {
    if (c.warp.m * c.warp.n > 64 * 128 || c.schedule != WgSchedule::cooperative) return 1;
    const long ring = long(c.stages) * (c.tile.m + c.tile.n) * c.tile.k * size_of(c.operand());
    const long n = 1 + ring / (long(c.tile.m) * c.tile.n * 4);
    return static_cast<int>(n < 8 ? n : 8);
  }
  return uses_tensor_cores(c.math) && supports_split_k(c) && c.tile.m <= 32 ? 16 : 1;
}
constexpr bool supports_cluster_split_k(const GemmConfig& c) { return cluster_split_k_limit(c) > 1; }
// Can several clusters share a tile (split_k > split_cluster)? The sm80 form only.
constexpr bool cluster_split_k_across_clusters(const GemmConfig& c) { return !is_wgmma(c.math); }
// Largest split_cluster accepted at all: 8 is the portable cluster size, 16 needs the non-portable
// attribute, which the sm80 launcher sets (and refuses the launch where no such cluster can be resident).
inline constexpr int max_split_cluster = 16;

// Instances whose kernel takes stream_k: sm90 wgmma instances with consumer warpgroup tiles up to 64x128
// (64 accumulator registers; sm90_wgmma_f16_small: 128x128 and 64x128 tiles). With 128 accumulators
// (64x256, 128x128 warpgroup tiles) the piece's role held across the mainloop and the fixup's branch
// made ptxas spill 2 registers (68-76 bytes of spill stores per kernel, session 6), as serial split-K
// did (supports_serial_split_k): compiled out there, and the launcher refuses it.
constexpr bool supports_stream_k(const GemmConfig& c) {
  return is_wgmma(c.math) && c.warp.m * c.warp.n <= 64 * 128 && c.schedule != WgSchedule::swap_ab;
}

// Instances that take GemmLaunchOptions::cluster = 2 (conv: multicast = 2), the sm90 kernel's clusters of 2
// CTAs sharing an operand by TMA multicast (other kernels ignore the option): all but the swap-AB ones. On
// the H200 clusters of 2 made both swap tiles slower (0.70-1.03x, as probes), so they are refused there
// and never proposed.
constexpr bool supports_clusters(const GemmConfig& c) { return c.schedule != WgSchedule::swap_ab; }

}  // namespace ktune
