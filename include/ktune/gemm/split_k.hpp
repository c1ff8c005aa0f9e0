// ktune/gemm/split_k.hpp — split-K as a launch option of the sm80 (mma.sync, SIMT) instances: the
// workspace layout the kernels and the host agree on, and the few split counts worth timing.
//
// Workspace (split_k > 1), from its start:
//   serial mode only: split_k_counters_per_tile 32-bit arrival counters per output tile (one per group
//                     of split_k_group_slices slices, then one for the tile), padded to 256 bytes. Used only when
//                     ktune's own per-stream counters (ktune/workspace.hpp) cannot be had (first
//                     use while capturing a graph); then zeroed in-stream before the launch, so any
//                     workspace works whatever it held
//   both modes:       split_k fp32 partial matrices M × ld, ld = N rounded up to 4 (16-byte rows)
//   cluster mode:     (split_cluster C) nothing when split_k = C; else tiles × C counters (as serial's,
//                     padded to 256 bytes) and split_k / C partial matrices, one per cluster
//                     (kernel/cluster_split_k.cuh)
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ktune/arch.hpp"
#include "ktune/dispatch.hpp"
#include "ktune/gemm/kernel/schedule.cuh"
#include "ktune/gemm/split_k_support.hpp"

namespace ktune {

// The fixed summation order of the slices' partial sums (both modes, so they give the same bits run to
// run and as each other): slices in groups of split_k_group_slices, each group added in slice order,
// then the group sums in group order.
inline constexpr int split_k_group_slices = 4;
constexpr int split_k_groups(int split_k) { return (split_k + split_k_group_slices - 1) / split_k_group_slices; }
// Serial mode's arrival counters per output tile: one per slice group (its last slice adds the group),
// and one for the tile (the last group adds the group sums and applies the epilogue).
constexpr int split_k_counters_per_tile(int split_k) { return 1 + split_k_groups(split_k); }

struct SplitKLayout {
  std::size_t semaphore_bytes = 0;  // at offset 0
  std::size_t partials_offset = 0;  // bytes; 256-byte aligned
  std::int64_t partial_ld = 0;      // floats between partial rows
  std::size_t total_bytes = 0;      // 0: no workspace needed
};

// Cluster mode (SplitKMode::cluster, split_cluster CTAs per cluster): split_k / split_cluster cluster
// sums per tile; with more than one, one arrival counter per (tile, cluster rank: the part of the tile that
// rank adds) and one fp32 partial matrix per cluster. A single cluster per tile needs no workspace.
constexpr int cluster_split_k_groups(int split_k, int split_cluster) { return split_cluster > 1 ? split_k / split_cluster : split_k; }

constexpr SplitKLayout split_k_layout(std::int64_t m, std::int64_t n, int tile_m, int tile_n, int split_k,
                                      SplitKMode mode, int split_cluster = 1) {
  SplitKLayout l;
  if (split_k <= 1 || m <= 0 || n <= 0) return l;
  const bool cluster = mode == SplitKMode::cluster;
  const int matrices = cluster ? cluster_split_k_groups(split_k, split_cluster) : split_k;
  if (matrices <= 1) return l;  // one cluster per tile: everything stays in the cluster
  const std::int64_t tiles = ((m + tile_m - 1) / tile_m) * ((n + tile_n - 1) / tile_n);
  const std::int64_t counters = tiles * (cluster ? split_cluster : split_k_counters_per_tile(split_k));
  l.semaphore_bytes = mode != SplitKMode::parallel ? static_cast<std::size_t>((counters * 4 + 255) / 256 * 256) : 0;
  l.partials_offset = l.semaphore_bytes;
  l.partial_ld = (n + 3) / 4 * 4;
  l.total_bytes = l.partials_offset + static_cast<std::size_t>(matrices) * static_cast<std::size_t>(m) *
                                          static_cast<std::size_t>(l.partial_ld) * sizeof(float);
  return l;
}

// An instance's workspace. Serial mode's counters are per output tile for the sm80 kernels, per
// consumer-warpgroup tile (config.warp) for the sm90 ones, whose warpgroups each finish their own part
// of a tile (kernel/sm90/split_k.cuh).
inline SplitKLayout split_k_layout(const GemmConfig& c, const GemmDesc& d, const GemmLaunchOptions& o) {
  const bool per_warpgroup = is_wgmma(c.math);
  return split_k_layout(d.m, d.n, per_warpgroup ? c.warp.m : c.tile.m, per_warpgroup ? c.warp.n : c.tile.n, o.split_k,
                        o.split_mode, o.split_cluster);
}

namespace detail {
// Blocks of an instance with resources r resident at once on dev (registers, shared memory, threads).
inline double resident_slots(const GemmResources& r, const DeviceInfo& dev) {
  const ArchTraits* arch = arch_for_cc(dev.cc);
  const int regs = arch ? arch->regs_per_sm : 65536, smem = arch ? arch->smem_per_sm_bytes : dev.smem_optin_bytes;
  const int per_sm = std::max(1, std::min({regs / std::max(1, r.registers * r.threads),
                                           smem / std::max(1, r.smem_bytes + 1024), 2048 / std::max(1, r.threads)}));
  return double(std::max(1, dev.sm_count)) * per_sm;
}
// Estimated time of a split count (arbitrary units): waves of (tiles × splits) blocks, each running
// its share of the k-tiles plus a fixed cost for storing and re-reading an fp32 partial tile.
inline double split_k_estimate(std::int64_t tiles, std::int64_t k_tiles, int splits, double slots) {
  const double blocks = double(tiles) * splits;
  const double waves = std::ceil(blocks / slots);
  const double per_block = std::ceil(double(k_tiles) / splits) + (splits > 1 ? 2.0 : 0.0);
  return waves * per_block;
}
}  // namespace detail

// The cluster size proposed for s slices in cluster mode: the largest portable size (8, 4 or 2) that
// divides s; 1 (none) for odd s.
constexpr int cluster_split_k_size(int s) { return s % 8 == 0 ? 8 : s % 4 == 0 ? 4 : s % 2 == 0 ? 2 : 1; }

// The launch options worth timing for this instance and problem: {split_k = 1} first, always; when the
// output tiles fill less than about one wave of the device and K is long, the split count s* with the
// best estimate and its half in serial mode, and s*, s*/2 and 2·s* in parallel mode (which wins on most
// shapes: the serial reduction's fence/atomic chain is on the critical path; the estimate's one-wave
// s* was often one step too many: H200, 64x64x65536 32x64x128 @split64p 9.8 us vs its s* 128p 10.1).
// Cluster mode on sm90 devices at s* and s*/2: sm80 small-M instances in clusters of
// cluster_split_k_size(s); sm90 instances one cluster per tile, s* capped at cluster_split_k_limit. At
// most 8 options, no duplicates.
// (This form: for a split-capable configuration c with resources r; conv's gemm1x1 route uses it.)
inline std::vector<GemmLaunchOptions> split_k_variants(const GemmConfig& c, const GemmResources& r, const GemmDesc& desc,
                                                       const DeviceInfo& dev) {
  std::vector<GemmLaunchOptions> out(1);
  const GemmDesc d = resolved(desc);
  const std::int64_t tiles = ((d.m + c.tile.m - 1) / c.tile.m) * ((d.n + c.tile.n - 1) / c.tile.n);
  const std::int64_t k_tiles = (d.k + c.tile.k - 1) / c.tile.k;
  const double slots = detail::resident_slots(r, dev);
  if (double(tiles) >= 0.75 * slots || k_tiles < 4) return out;
  const int max_s = static_cast<int>(std::min<std::int64_t>(max_split_k, k_tiles / 2));
  int best = 1;
  double best_cost = detail::split_k_estimate(tiles, k_tiles, 1, slots);
  for (int s = 2; s <= max_s; ++s)
    if (const double cost = detail::split_k_estimate(tiles, k_tiles, s, slots); cost < best_cost) {
      best_cost = cost;
      best = s;
    }
  if (best == 1) return out;
  auto add = [&](int s, SplitKMode mode) {
    if (s < 2 || s > max_s || (mode == SplitKMode::serial && !supports_serial_split_k(c))) return;
    // Cluster mode: sm80 clusters of cluster_split_k_size(s); sm90 one cluster of s CTAs per tile.
    const int cl = mode != SplitKMode::cluster ? 1 : cluster_split_k_across_clusters(c) ? cluster_split_k_size(s) : s;
    if (mode == SplitKMode::cluster && (cl < 2 || cl > cluster_split_k_limit(c) || dev.cc < 90)) return;
    // A cluster waits for its slowest CTA: only where all of them run in one wave (H200 s7-batchA,
    // 1568x512x2048 64x128: 100 tiles @split2c2 19.4 us vs 11.5 unsplit; fitting ones ~ parallel mode).
    if (mode == SplitKMode::cluster && double(tiles) * s > slots) return;
    for (const GemmLaunchOptions& o : out)
      if (o.split_k == s && o.split_mode == mode) return;
    GemmLaunchOptions o;
    o.split_k = s;
    o.split_mode = mode;
    o.split_cluster = cl;
    out.push_back(o);
  };
  const int twice = std::min(2 * best, max_s);
  add(best, SplitKMode::serial);
  add(best / 2, SplitKMode::serial);
  add(best, SplitKMode::parallel);
  add(best / 2, SplitKMode::parallel);
  add(twice, SplitKMode::parallel);
  const int cluster_best = cluster_split_k_across_clusters(c) ? best : std::min(best, cluster_split_k_limit(c));
  add(cluster_best, SplitKMode::cluster);
  add(cluster_best / 2, SplitKMode::cluster);
  return out;
}
inline std::vector<GemmLaunchOptions> split_k_variants(const GemmKernelEntry& e, const GemmDesc& desc,
                                                       const DeviceInfo& dev) {
  if (e.workspace_size == nullptr || is_route(e)) return std::vector<GemmLaunchOptions>(1);  // routes need workspace for copies
  return split_k_variants(e.config, e.resources, desc, dev);
}

// ---- Stream-K (GemmLaunchOptions::stream_k, sm90 wgmma instances; kernel/schedule.cuh) -------------
// Where tiles % CTAs leaves the last wave partial, the CTAs share the k-iterations of the last tiles
// evenly instead. With at least one full wave, the stream-K region is the partial wave plus one full
// wave (tiles % ctas + ctas tiles: every CTA gets more than one tile of iterations, so a tile has at
// most two pieces and no CTA's range is a sliver of one tile); with fewer tiles than CTAs, every tile is
// stream-K over at most tiles·k_tiles / stream_k_min_iters CTAs (but at least one CTA per tile).
inline constexpr int stream_k_min_iters = 4;

// The schedule of tiles × k_tiles over at most `slots` resident CTAs; false (out untouched) when the
// problem does not fit its 32-bit arithmetic or there is nothing to run.
constexpr bool plan_stream_k(std::int64_t tiles, std::int64_t k_tiles, std::int64_t slots, kernel::StreamKSchedule& out) {
  if (tiles <= 0 || k_tiles <= 0 || slots <= 0) return false;
  slots = std::min<std::int64_t>(slots, kernel::stream_k_max_ctas);
  kernel::StreamKSchedule s;
  s.k_tiles = static_cast<int>(std::min<std::int64_t>(k_tiles, 0x7fffffff));
  const std::int64_t full = tiles / slots, rem = tiles % slots;
  std::int64_t sk_tiles = 0, ctas = slots;
  if (rem == 0) {
    sk_tiles = 0;  // whole waves: data-parallel only
  } else if (full >= 1) {
    sk_tiles = rem + slots;
  } else {
    sk_tiles = tiles;
    ctas = std::max(tiles, std::min(slots, tiles * k_tiles / stream_k_min_iters));
  }
  const std::int64_t dp = tiles - sk_tiles, iters = sk_tiles * k_tiles;
  if (k_tiles > 0x7fffffff || dp + iters > 0x7fffffff) return false;
  s.dp_tiles = static_cast<int>(dp);
  s.ctas = static_cast<int>(ctas);
  s.q = static_cast<int>(iters / ctas);
  s.r = static_cast<int>(iters % ctas);
  out = s;
  return true;
}

// Warpgroup sub-tiles of one output tile (each consumer warpgroup finishes its own; ping-pong: 1).
constexpr int stream_k_subtiles(const GemmConfig& c) { return (c.tile.m / c.warp.m) * (c.tile.n / c.warp.n); }

// Workspace of a stream-K launch over `ctas` CTAs: one flag per (CTA, warpgroup sub-tile) (used only
// when ktune's per-stream counters cannot be had; zeroed in stream then), padded to 256 bytes, then one
// fp32 partial per (CTA, sub-tile) (a CTA leaves at most one piece for another CTA to add), WM×WN floats
// each with rows warp.n apart.
constexpr SplitKLayout stream_k_layout(const GemmConfig& c, std::int64_t ctas) {
  SplitKLayout l;
  if (ctas <= 0) return l;
  l.semaphore_bytes = static_cast<std::size_t>((ctas * stream_k_subtiles(c) * 4 + 255) / 256 * 256);
  l.partials_offset = l.semaphore_bytes;
  l.partial_ld = c.warp.n;
  l.total_bytes = l.partials_offset + static_cast<std::size_t>(ctas) * c.tile.m * c.tile.n * sizeof(float);
  return l;
}

// The CTAs a stream-K launch of instance (c, r) runs on dev; 0 if it cannot run (plan_stream_k).
// max_ctas (GemmLaunchOptions) lowers it; more than are resident is refused by the launcher (a CTA
// waits for the pieces of CTAs after it: all must be resident at once).
inline int stream_k_ctas(const GemmConfig& c, const GemmResources& r, const GemmDesc& desc, const DeviceInfo& dev, int max_ctas) {
  const GemmDesc d = resolved(desc);
  const std::int64_t tiles = ((d.m + c.tile.m - 1) / c.tile.m) * ((d.n + c.tile.n - 1) / c.tile.n);
  const std::int64_t k_tiles = (d.k + c.tile.k - 1) / c.tile.k;
  std::int64_t slots = static_cast<std::int64_t>(detail::resident_slots(r, dev));
  if (max_ctas > 0) slots = std::min<std::int64_t>(slots, max_ctas);
  kernel::StreamKSchedule s;
  return plan_stream_k(tiles, k_tiles, slots, s) ? s.ctas : 0;
}

// Is stream-K worth timing for this instance and problem? Where the tiles leave at least 10% of the
// CTA-waves idle (a last wave at most 90% full) and a tile has at least 2 k-tiles to share. (H200,
// s6-batchB: @sk was 5-9% slower than the instance's default at 4096^3, 3% idle, so near-full last waves
// are not worth its tuning time.)
inline bool stream_k_worth_timing(const GemmConfig& c, const GemmResources& r, const GemmDesc& desc, const DeviceInfo& dev) {
  if (!supports_stream_k(c) || dev.cc != 90) return false;
  const GemmDesc d = resolved(desc);
  const std::int64_t tiles = ((d.m + c.tile.m - 1) / c.tile.m) * ((d.n + c.tile.n - 1) / c.tile.n);
  const std::int64_t k_tiles = (d.k + c.tile.k - 1) / c.tile.k;
  const double slots = detail::resident_slots(r, dev);
  if (k_tiles < 2 || tiles <= 0) return false;
  const double waves = std::ceil(double(tiles) / slots);
  return (waves * slots - double(tiles)) / (waves * slots) >= 0.10 && waves <= 16;
}

}  // namespace ktune
