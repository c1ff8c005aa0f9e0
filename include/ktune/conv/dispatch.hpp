// ktune/conv/dispatch.hpp — the conv dispatch table: every instantiated conv kernel, its metadata,
// whether it can run a problem (and why not), and how to launch it. Host code; listing and querying
// work on a machine without a GPU.
#pragma once
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "ktune/arch.hpp"
#include "ktune/conv/config.hpp"
#include "ktune/conv/problem.hpp"
#include "ktune/conv/stem.hpp"
#include "ktune/dispatch.hpp"
#include "ktune/gemm/heuristic.hpp"
#include "ktune/gemm/sm90_launch_policy.hpp"

namespace ktune {

struct ConvLaunchOptions {
  int raster_group = 8;  // output tiles are visited in groups of this many tile-rows, for L2 reuse
  // Split-K of the implicit GEMM (K = C·R·S), as GemmLaunchOptions::split_k / split_mode: the Hopper
  // routes take it (gemm1x1 is the sm90 GEMM; tma_im2col runs the same kernel body and slices its
  // (tap, channel block) k-tiles: gemm/kernel/sm90/split_k.cuh); the partials live in ktune's per-stream
  // GEMM workspace pool (ktune/workspace.hpp).
  int split_k = 1;
  SplitKMode split_mode = SplitKMode::serial;
  // Split-K inside a thread-block cluster (tma_im2col only; gemm/kernel/sm90/cluster_k.cuh): the
  // cluster's cluster_k CTAs split one output tile's k-tiles and rank 0 adds the others' accumulators
  // from distributed shared memory: no workspace, no second kernel. 1: off. Not with split_k > 1.
  int cluster_k = 1;
  // 2, 4 or 8: clusters of that many CTAs on adjacent output tiles that share an operand box (the filters
  // along M when BN ≥ BM, else the im2col / x box); each CTA loads its share of it and multicasts it into
  // all, so a cluster of c reads (c−1)/c of the shared box fewer from L2 per CTA (the Hopper routes, up to
  // conv_multicast_limit; 1: off). Not with split_k > 1. With cluster_k > 1 (tma_im2col): clusters of
  // multicast × cluster_k CTAs (at most conv_max_cluster CTAs), groups of `multicast` adjacent tiles that share
  // boxes, the groups splitting K.
  int multicast = 1;
  // > 0: a persistent grid of this many CTAs per multiprocessor (at most the kernel's occupancy) walks the
  // output tiles, issuing each next tile's first k-tiles under the current tile's register epilogue
  // (conv_supports_persistent: the mma.sync optimized 128-row tiles). 0: one CTA per tile. Not with split_k > 1.
  int persistent = 0;
};

// Largest cluster_k: the portable cluster size (8 CTAs); an instance's ring may hold fewer partials
// (conv_cluster_k_limit).
inline constexpr int conv_max_cluster_k = 8;
// Largest ConvLaunchOptions::multicast: the portable cluster size.
inline constexpr int conv_max_multicast = 8;
// Largest cluster of CTAs (multicast × cluster_k): the portable cluster size.
inline constexpr int conv_max_cluster = 8;
// Largest ConvLaunchOptions::persistent (CTAs per multiprocessor): the mma.sync conv tiles fit at most 3.
inline constexpr int conv_max_persistent = 4;

// Launch options a caller may set: out of range is an invalid argument, never clamped silently
// (ktune::conv2d checks them before it tunes or launches). The ranges are the GEMM's (dispatch.hpp).
inline Status check_conv_launch_options(const ConvLaunchOptions& o) {
  if (o.raster_group < 1 || o.raster_group > max_raster_group)
    return error(StatusCode::invalid_argument, "conv raster_group must be in [1, " + std::to_string(max_raster_group) +
                                                   "], got " + std::to_string(o.raster_group));
  if (o.split_k < 1 || o.split_k > max_split_k)
    return error(StatusCode::invalid_argument, "conv split_k must be in [1, " + std::to_string(max_split_k) + "], got " +
                                                   std::to_string(o.split_k));
  if (o.split_mode != SplitKMode::serial && o.split_mode != SplitKMode::parallel)
    return error(StatusCode::invalid_argument, "unknown conv split_mode");
  if (o.cluster_k < 1 || o.cluster_k > conv_max_cluster_k)
    return error(StatusCode::invalid_argument, "conv cluster_k must be in [1, " + std::to_string(conv_max_cluster_k) +
                                                   "], got " + std::to_string(o.cluster_k));
  if (o.cluster_k > 1 && o.split_k > 1)
    return error(StatusCode::invalid_argument, "conv cluster_k > 1 and split_k > 1 exclude each other");
  if (o.multicast != 1 && o.multicast != 2 && o.multicast != 4 && o.multicast != 8)
    return error(StatusCode::invalid_argument, "conv multicast must be 1, 2, 4 or 8, got " + std::to_string(o.multicast));
  if (o.multicast > 1 && o.split_k > 1)
    return error(StatusCode::invalid_argument, "conv multicast > 1 excludes split_k > 1");
  if (o.multicast * o.cluster_k > conv_max_cluster)
    return error(StatusCode::invalid_argument, "conv multicast × cluster_k must be at most " + std::to_string(conv_max_cluster) +
                                                   " CTAs per cluster, got " + std::to_string(o.multicast) + " × " + std::to_string(o.cluster_k));
  if (o.persistent < 0 || o.persistent > conv_max_persistent)
    return error(StatusCode::invalid_argument, "conv persistent must be in [0, " + std::to_string(conv_max_persistent) +
                                                   "] CTAs per multiprocessor, got " + std::to_string(o.persistent));
  if (o.persistent > 0 && (o.split_k > 1 || o.cluster_k > 1 || o.multicast > 1))
    return error(StatusCode::invalid_argument, "conv persistent > 0 excludes split_k > 1, cluster_k > 1 and multicast > 1");
  return {};
}

// Conv instances that take split_k > 1: the Hopper routes (the sm90 GEMM kernel and its im2col form) and
// the mma.sync optimized 128x128 tile (conv_kernel.cuh: the sm80 GEMM's split-K tail). H200 s8-batchA: split-K
// won only on 7x7 3x3 512->512 (128x128 @split4p 33.9 us vs 40.6 for the best whole-K instance) and tied on
// 7x7 2048->512; the tail on the other optimized tiles cost ~11 s of CPU in conv_sm80.cu (83 -> 72 s).
constexpr bool conv_supports_split_k(const ConvConfig& c) {
  if (is_swap_ab(c.gemm)) return false;  // (the GEMM's swap-AB instances: gemm/split_k_support.hpp)
  return c.iterator == ConvIterator::gemm1x1 || c.iterator == ConvIterator::tma_im2col ||
         (c.iterator == ConvIterator::optimized && c.gemm.tile.m == 128 && c.gemm.tile.n == 128);
}

// Conv instances that take multicast = 2 (clusters of 2 CTAs sharing a box): the Hopper routes on a GEMM
// configuration that runs in clusters (supports_clusters: not the swap-AB ones).
constexpr bool conv_supports_multicast(const ConvConfig& c) {
  return is_sm90_iterator(c.iterator) && supports_clusters(c.gemm);
}

// The largest multicast cluster an instance takes (1: none): 2 on the gemm1x1 route (the GEMM's clusters of
// 2); on tma_im2col up to conv_max_multicast CTAs, as long as each CTA's share of the shared box (BN filters
// when the clusters run along M, else BM pixels; mainloop.cuh sm90_pairs_along_m) is whole 8-row swizzle
// atoms: 64-wide shared boxes take 8, as do 128 and 256.
constexpr int conv_multicast_limit(const ConvConfig& c) {
  if (!conv_supports_multicast(c)) return 1;
  if (c.iterator != ConvIterator::tma_im2col) return 2;
  const int shared_rows = sm90_pairs_along_m(c.gemm) ? c.gemm.tile.n : c.gemm.tile.m;
  int mc = conv_max_multicast;
  while (mc > 2 && (shared_rows % (8 * mc) != 0)) mc /= 2;
  return shared_rows % 16 == 0 ? mc : 1;
}

// Conv instances that take ConvLaunchOptions::persistent > 0 (kernel/conv_kernel.cuh
// conv2d_fprop_persistent_kernel): the mma.sync optimized iterator on 128-row tiles with the filters by the
// k-tile iterator, the tiles of the short-reduction layers where every CTA runs fill -> 2-4 k-tiles ->
// epilogue once and nothing overlaps the fill (notes/conv2d.md, session 8).
constexpr bool conv_supports_persistent(const ConvConfig& c) {
  return c.iterator == ConvIterator::optimized && c.gemm.tile.m == 128 && conv_b_iterated(c);
}

// CTAs per multiprocessor a persistent grid of the instance keeps (the persistent kernel's launch bound
// and the tuner's @pk<N>): those of the one-tile kernel as ptxas compiles it (sm_90a: 128x64 w64x32 162
// registers -> 3, 128x128 w64x64 244 -> 2, 128x256 with 256 threads -> 1). Unbounded, the tile loop's
// state took 128x64 to 188 registers (2 CTAs); the register model (conv_resources) is too coarse for this.
constexpr int conv_persistent_ctas_per_sm(const ConvConfig& c) {
  if (c.gemm.threads() > 128) return 1;
  return c.gemm.warp.m * c.gemm.warp.n <= 64 * 32 ? 3 : 2;
}

// The largest cluster_k an instance takes (1: none): tma_im2col with warpgroup tiles up to 64x128 (with
// 128 accumulator registers per thread, 128x128 warpgroup tiles, rank 0's sum spilled 8 bytes: sm_90a
// ptxas), as many CTAs as rank 0's ring (stages × (BM + BN)·BK·2 bytes) holds fp32 partial tiles (BM·BN·4
// bytes) of the other ranks, up to 8: 64x64 s6: 7, 128x64 s6: 5, 128x128 s6: 4. Cooperative consumers
// only (the cluster's ranks split one tile; ping-pong consumers each own a tile).
constexpr int conv_cluster_k_limit(const ConvConfig& c) {
  if (c.iterator != ConvIterator::tma_im2col || c.gemm.warp.m * c.gemm.warp.n > 64 * 128 ||
      c.gemm.schedule != WgSchedule::cooperative)
    return 1;
  const GemmConfig& g = c.gemm;
  const long ring = long(g.stages) * (g.tile.m + g.tile.n) * g.tile.k * 2, partial = long(g.tile.m) * g.tile.n * 4;
  const long n = 1 + ring / partial;
  return static_cast<int>(n < conv_max_cluster_k ? n : conv_max_cluster_k);
}

struct ConvKernelEntry {
  std::string_view name;
  std::string_view family;
  ConvConfig config;
  GemmResources resources;  // the constraint model's estimate
  // Launch on `stream`; assumes validate() and can_implement() accepted the problem.
  Status (*launch)(const Conv2dDesc&, const Conv2dOperands&, const ConvLaunchOptions&, cudaStream_t) = nullptr;
  cudaError_t (*attributes)(cudaFuncAttributes*) = nullptr;
  // gemm1x1 entries of a gemm_table_kernels family (conv/family.hpp): the GEMM table entry they launch,
  // nullptr when the program did not register it (then can_implement says so and nothing launches).
  const GemmKernelEntry* (*gemm_entry)() = nullptr;
};

// TMA im2col encodes the filter window as a bounding box whose corner offsets are signed 8-bit
// (4-D tensors: [-128, 127]), the filter taps as unsigned 8-bit offsets (assumed [0, 255]) and the
// convolution stride as the traversal stride (≤ 8).
inline Status tma_im2col_limits(const Conv2dDesc& d) {
  auto n = [](long long v) { return std::to_string(v); };
  const std::int64_t span_h = d.dil_h * (d.r - 1), span_w = d.dil_w * (d.s - 1);
  if (d.stride_h > 8 || d.stride_w > 8)
    return error(StatusCode::unsupported, "tma_im2col supports strides up to 8, problem has " + n(d.stride_h) + "x" + n(d.stride_w));
  if (d.pad_h > 128 || d.pad_w > 128)
    return error(StatusCode::unsupported, "tma_im2col supports padding up to 128, problem has " + n(d.pad_h) + "x" + n(d.pad_w));
  if (span_h > 255 || span_w > 255 || d.pad_h - span_h < -128 || d.pad_w - span_w < -128 || d.pad_h - span_h > 127 ||
      d.pad_w - span_w > 127)
    return error(StatusCode::unsupported, "tma_im2col: the dilated filter extent (" + n(span_h + 1) + "x" + n(span_w + 1) +
                                              ") with padding " + n(d.pad_h) + "x" + n(d.pad_w) +
                                              " exceeds the TMA im2col bounding-box offsets (8-bit)");
  return {};
}

// The GEMM this convolution runs as (for the cost model, the gemm1x1 route's swap-AB check and for reports).
inline GemmDesc implicit_gemm_of(const Conv2dDesc& d) {
  const ConvShape s = conv_shape(d);
  GemmDesc g;
  g.m = s.m;
  g.n = d.k;
  g.k = s.kgemm;
  g.ab_type = d.type;
  g.a_layout = Layout::row;
  g.b_layout = Layout::col;
  g.d_type = d.out_type;
  g.epilogue = d.epilogue;
  return g;
}

// What a swap-AB Hopper conv instance runs (the transposed store: 16-bit y, the GEMM's swap_ab_implements),
// on d's implicit GEMM; every other instance: ok. can_implement and the im2col launcher both ask it.
inline Status conv_swap_ab_implements(const ConvConfig& c, const Conv2dDesc& d) {
  if (!is_swap_ab(c.gemm)) return {};
  const Status s = swap_ab_implements(implicit_gemm_of(d));
  if (s.ok()) return s;
  return error(s.code(), "swap-AB " + std::string(to_string(c.iterator)) + " instance (y is its GEMM's D: 16-bit y only): " +
                             s.message());
}

// Can this instance run this (already validated) problem on this device? The reason says why not.
inline Status can_implement(const ConvKernelEntry& e, const Conv2dDesc& d, const ConvAlignment& al,
                            const DeviceInfo* dev) {
  const ConvConfig& c = e.config;
  auto n = [](long long v) { return std::to_string(v); };
  if (!math_implements(c.gemm.math, required_math(d)))
    return error(StatusCode::unsupported, "instance computes " + std::string(to_string(c.gemm.math)) + ", problem needs " +
                                              std::string(to_string(required_math(d))));
  switch (c.iterator) {
    case ConvIterator::gemm1x1:
      if (d.r != 1 || d.s != 1)
        return error(StatusCode::unsupported, "gemm1x1 runs 1x1 filters only, problem has " + n(d.r) + "x" + n(d.s));
      if (d.stride_h != 1 || d.stride_w != 1)
        return error(StatusCode::unsupported, "gemm1x1 needs stride 1, problem has stride " + n(d.stride_h) + "x" + n(d.stride_w));
      if (d.pad_h != 0 || d.pad_w != 0)
        return error(StatusCode::unsupported, "gemm1x1 needs no padding, problem has " + n(d.pad_h) + "x" + n(d.pad_w));
      if (e.gemm_entry != nullptr && e.gemm_entry() == nullptr)
        return error(StatusCode::no_instance, "gemm1x1 runs the GEMM table's instance " + std::string(instance_name(c.gemm).view()) +
                                                  ", which this program did not register (src/instances/sm90_*.cu or "
                                                  "ktune/gemm/instances/all.cuh)");
      [[fallthrough]];
    case ConvIterator::tma_im2col:
      if (d.c % c.gemm.align != 0)
        return error(StatusCode::misaligned, std::string(to_string(c.iterator)) + " loads x and w with TMA, whose row " +
                                                 "strides must be multiples of 16 bytes: needs C % " + n(c.gemm.align) +
                                                 " == 0, C = " + n(d.c));
      if (c.iterator == ConvIterator::tma_im2col) {
        KTUNE_RETURN_IF_ERROR(tma_im2col_limits(d));
      }
      KTUNE_RETURN_IF_ERROR(conv_swap_ab_implements(c, d));
      break;
    case ConvIterator::few_channels:
      if (d.c != c.channels)
        return error(StatusCode::unsupported,
                     "few_channels iterator is specialized for C = " + n(c.channels) + ", problem has C = " + n(d.c));
      break;
    case ConvIterator::stem:
      KTUNE_RETURN_IF_ERROR(stem_can_implement(c, d, dev != nullptr ? dev->smem_optin_bytes : 0));
      break;
    case ConvIterator::optimized:
    case ConvIterator::analytic:
      if (d.c % c.gemm.align != 0)
        return error(StatusCode::misaligned, std::string(to_string(c.iterator)) + " iterator with " + n(c.gemm.align) +
                                                 "-element vectors needs C % " + n(c.gemm.align) + " == 0, C = " + n(d.c));
      break;
  }
  if (al.x % c.gemm.align != 0 || al.w % c.gemm.align != 0)
    return error(StatusCode::misaligned, "instance needs " + n(c.gemm.align) + "-element vectors, x allows " + n(al.x) +
                                             ", w allows " + n(al.w));
  return device_runs(c.gemm, e.resources, dev);
}

using ConvTable = KernelTable<ConvKernelEntry, Conv2dDesc, ConvAlignment>;

// The process-wide table that conv instance TUs register into (see conv/instantiate.cuh).
inline ConvTable& conv_table() {
  static ConvTable table;
  return table;
}

// How fast an instance's A gather is, as a rank (lower is faster): the Hopper routes (a 1×1 GEMM, then
// TMA im2col; can_implement admits them on cc 9.0 only), the optimized iterator, then the
// few-channels one, then the analytic one by vector width. Among the candidates of a problem the best
// rank wins; the GEMM cost model on the implicit GEMM then chooses among its tiles.
constexpr int gather_rank(const ConvConfig& c) {
  switch (c.iterator) {
    case ConvIterator::gemm1x1: return 0;
    case ConvIterator::stem: return 0;  // C ≤ 4 only, where neither Hopper route applies
    case ConvIterator::tma_im2col: return 1;
    case ConvIterator::optimized: return 2;
    case ConvIterator::few_channels: return 3;
    case ConvIterator::analytic: return 4 + (c.gemm.align >= 8 ? 0 : c.gemm.align >= 4 ? 1 : c.gemm.align >= 2 ? 2 : 3);
  }
  return 9;
}

// Tile policy of the mma.sync conv instances, measured on an H200 (the 15 ResNet-50 layers of
// shared/ANCHORS.md at N = 32, f16, bias + ReLU, every instance timed; notes/conv2d.md, s8-batchA):
// - a deep reduction (R·S·C ≥ 1024) on too few 128x64 tiles for 2 per multiprocessor (the 14x14 / 7x7
//   maps): 64x64x64 w32x32 (more CTAs, half the k-tiles); 28x28 3x3 128->128 (392 tiles, one wave of three
//   128x64 w64x32 CTAs per multiprocessor) stays on 128x64 (28.5 us, the best there);
// - else 128-row tiles with BK = 32, the widest that the output channels K fill: 128x256 w64x64 from
//   K = 2048 (7x7 512->2048: 18.9 us vs 21.2 for 128x128), 128x128 w64x64 from K = 256 and at K = 128 when
//   its tiles make two waves of two CTAs per multiprocessor (56x56 256->128: 39.6 us), else 128x64 w64x32
//   (three CTAs per multiprocessor: 28x28 128->128 3x3 28.5 us, the 128x128 tiles there fill 196 of 264
//   slots).
struct ConvTileWant {
  TileShape tile;
  WarpShape warp;
};

inline bool conv_deep_and_few(const Conv2dDesc& d, const DeviceInfo& dev) {
  const ConvShape s = conv_shape(d);
  const double tiles_128x64 = double((s.m + 127) / 128) * double((d.k + 63) / 64);
  return s.kgemm >= 1024 && tiles_128x64 < 2.0 * std::max(1, dev.sm_count);
}

// 128x128 tiles at K = 128: only when they make two waves of two CTAs per multiprocessor.
inline bool conv_128x128_fills(const Conv2dDesc& d, const DeviceInfo& dev) {
  const ConvShape s = conv_shape(d);
  const double tiles_128x128 = double((s.m + 127) / 128) * double((d.k + 127) / 128);
  return tiles_128x128 >= 4.0 * std::max(1, dev.sm_count);
}

inline ConvTileWant conv_sm80_tile_want(const Conv2dDesc& d, const DeviceInfo& dev) {
  if (conv_deep_and_few(d, dev)) return {{64, 64, 64}, {32, 32}};
  if (d.k >= 2048) return {{128, 256, 32}, {64, 64}};
  if (d.k >= 256 || (d.k >= 128 && conv_128x128_fills(d, dev))) return {{128, 128, 32}, {64, 64}};
  return {{128, 64, 32}, {64, 32}};
}

// 0 for the wanted shape, one more per differing tile dimension or warp shape (a build without the wanted
// instance falls back to the nearest); the GEMM cost model breaks ties. The stem and the Hopper routes
// have their own policies.
inline int conv_tile_mismatch(const ConvConfig& c, const Conv2dDesc& d, const DeviceInfo& dev) {
  if (is_sm90_iterator(c.iterator) || c.iterator == ConvIterator::stem) return 0;
  const ConvTileWant w = conv_sm80_tile_want(d, dev);
  const GemmConfig& g = c.gemm;
  return (g.tile.m != w.tile.m) + (g.tile.n != w.tile.n) + (g.tile.k != w.tile.k) +
         (g.warp != w.warp);
}

// Relative time (lower is better) of a Hopper conv instance (routes gemm1x1, tma_im2col) on a problem.
// The persistent grid runs ⌈tiles / slots⌉ rounds, a slot per CTA resident on a multiprocessor (one, or
// two for the 64x64 tile: by shared memory); a round costs the tile's MMA work (BM·BN per k-tile, the
// k-tiles being R·S·⌈C/64⌉) times the CTAs sharing a multiprocessor over the efficiency of the
// consumer warpgroup's tile, plus a fixed cost (pipeline fill, epilogue tail) of one 128x128 k-tile.
// Efficiencies follow the warp tile's operand reuse, calibrated on the sm90 GEMM (H200, 4096^3:
// 256x128 with 128x128 warpgroup tiles 721 TF/s, 128x128 with 64x128 595 TF/s); 64x64 and the
// one-consumer tile are estimates. A model (the tuner measures): it ranks, it does not predict times.
// Swap-AB tiles (Sm90ConvGemm1x1Swap): 0.7, from their GEMM timings (1568x512x2048 64x112 1.07x
// cuBLASLt where the best default instance ran 0.89x; 6272x256x1024 128x96 0.99x vs 0.84x), so that they
// lead where their tiles fit one wave and the default tiles do not. Ping-pong tiles run in pairs, one per
// consumer warpgroup (sm90_conv_cost): a CTA's odd last tile keeps one warpgroup busy (H200 s18, 14²
// 1024->256 at N = 32: the 1x1 route's pp 128x128, one tile per CTA, 9.7 µs against 9.1 on the cooperative
// 128x128 and 7.3 on swap 128x96).
inline constexpr double sm90_one_consumer_rate = 0.85;  // one busy consumer warpgroup vs two
inline double sm90_conv_efficiency(const GemmConfig& g) {
  if (is_swap_ab(g)) return 0.7;
  const double reuse = double(g.warp.m) * g.warp.n / double(g.warp.m + g.warp.n);  // 32, 42.7, 51.2, 64
  const double eff = reuse >= 64 ? 1.0 : reuse >= 51 ? 0.9 : reuse >= 42 ? 0.82 : 0.6;
  return g.consumer_warpgroups() == 1 ? sm90_one_consumer_rate * eff : eff;
}

// CTAs of a Hopper conv instance resident on one multiprocessor (by shared memory and threads).
inline int sm90_conv_ctas_per_sm(const ConvKernelEntry& e, const DeviceInfo& dev) {
  const ArchTraits* arch = arch_for_cc(dev.cc);
  const int smem_per_sm = arch ? arch->smem_per_sm_bytes : dev.smem_optin_bytes;
  return std::max(1, std::min(smem_per_sm / (e.resources.smem_bytes + 1024), 2048 / std::max(1, e.config.gemm.threads())));
}

// K-tiles of a Hopper conv instance's implicit GEMM: R·S taps × ⌈C / BK⌉ channel blocks (gemm1x1: R = S = 1).
inline double sm90_conv_k_tiles(const ConvKernelEntry& e, const Conv2dDesc& d) {
  return double(d.r * d.s) * std::ceil(double(d.c) / e.config.gemm.tile.k);
}

inline double sm90_conv_cost(const ConvKernelEntry& e, const Conv2dDesc& d, const DeviceInfo& dev) {
  const GemmConfig& g = e.config.gemm;
  const ConvShape s = conv_shape(d);
  const TileShape pt = problem_tile(g);  // (swap AB: the tile in the problem's orientation)
  const double tiles = std::ceil(double(s.m) / pt.m) * std::ceil(double(d.k) / pt.n);
  const int per_sm = sm90_conv_ctas_per_sm(e, dev);
  const double per_cta = std::ceil(tiles / (double(std::max(1, dev.sm_count)) * per_sm));  // rounds
  const double k_tiles = sm90_conv_k_tiles(e, d);
  const double tile_time = double(g.tile.m) * g.tile.n * k_tiles / sm90_conv_efficiency(g);
  if (g.schedule != WgSchedule::pingpong) return per_cta * (per_sm * tile_time + 128.0 * 128.0);
  // Ping-pong: the two consumer warpgroups each run a whole tile, so a CTA takes its tiles in pairs (at the
  // multiprocessor's rate, the epilogues hidden: one fixed cost per pair); an odd last tile runs alone on
  // one warpgroup (sm90_one_consumer_rate).
  const double pairs = std::floor(per_cta / 2), lone = per_cta - 2 * pairs;
  return per_sm * tile_time * (2 * pairs + lone / sm90_one_consumer_rate) + std::ceil(per_cta / 2) * 128.0 * 128.0;
}

// Relative cost (lower is better) of the implicit GEMM for this instance's tiles (GEMM model).
inline double heuristic_cost(const ConvKernelEntry& e, const Conv2dDesc& d, const DeviceInfo& dev) {
  const GemmKernelEntry g{e.name, e.family, e.config.gemm, e.resources};
  return heuristic_cost(g, implicit_gemm_of(d), dev);
}

}  // namespace ktune
