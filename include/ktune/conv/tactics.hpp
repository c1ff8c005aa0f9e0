// ktune/conv/tactics.hpp — conv tactics: a conv instance plus the launch options it runs with, the
// unit the tuner ranks, measures, pins and caches for conv2d keys (as ktune/gemm/tactics.hpp is for
// GEMM). Conv launch options (ConvLaunchOptions): the raster group, which every conv kernel honours
// (mma.sync and the sm90 routes), and split-K, which the Hopper routes (gemm1x1, tma_im2col) take.
//
//   ktune_conv2d_fprop_sm80_f16_optimized_128x64x32_w32x32_s4_a8          default options (raster group 8)
//   ktune_conv2d_fprop_sm80_f16_optimized_128x64x32_w32x32_s4_a8@rg16     raster group 16
//   conv_gemm1x1+ktune_gemm_sm90_..._a8@split4p                           split-K 4, parallel reduction
//   ktune_conv2d_fprop_sm90_wgmma_f16_tma_im2col_128x128x64_..._a8@split2s  split-K 2, serial (in-kernel) sum
//   ktune_conv2d_fprop_sm90_wgmma_f16_tma_im2col_128x64x64_..._a8@ck2       cluster split-K 2
//   ktune_conv2d_fprop_sm90_wgmma_f16_tma_im2col_128x64x64_..._a8@mc8       multicast clusters of 8
//   ktune_conv2d_fprop_sm80_f16_optimized_128x128x32_w64x64_s4_a8@pk2      persistent grid, 2 CTAs per SM
//
// Ranking (conv_rank_less): the order the heuristic conv choice uses, so rank 1 is exactly what the
// Heuristic policy (and select_conv) runs: gather rank, then the measured tile policy of the mma.sync
// families, then the cost model (sm90_conv_cost for the Hopper routes, the GEMM model on the implicit
// GEMM for mma.sync), then the name.
#pragma once
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "ktune/conv/dispatch.hpp"
#include "ktune/gemm/sm90_launch_policy.hpp"
#include "ktune/gemm/split_k.hpp"
#include "ktune/gemm/tactics.hpp"

namespace ktune {

struct ConvTactic {
  const ConvKernelEntry* entry = nullptr;
  ConvLaunchOptions launch{};
  std::string name;  // conv_tactic_name(entry->name, launch)
};

// Do two option sets launch the same way? (The split mode only matters when K is split.)
inline bool same_launch(const ConvLaunchOptions& a, const ConvLaunchOptions& b) {
  return a.raster_group == b.raster_group && a.split_k == b.split_k && (a.split_k <= 1 || a.split_mode == b.split_mode) &&
         a.cluster_k == b.cluster_k && a.multicast == b.multicast && a.persistent == b.persistent;
}
inline bool is_default_launch(const ConvLaunchOptions& o) { return same_launch(o, ConvLaunchOptions{}); }

// "split4p", "ck2", "mc2", "ck2@mc2", "rg16", "split4p@rg16" for non-default options (the GEMM's order, cluster
// split-K after split-K, multicast after both); "" for default options.
inline std::string launch_suffix(const ConvLaunchOptions& o) {
  std::string s;
  auto add = [&](const std::string& knob) {
    if (!s.empty()) s += tactic_separator;
    s += knob;
  };
  if (o.split_k > 1) add("split" + std::to_string(o.split_k) + (o.split_mode == SplitKMode::parallel ? "p" : "s"));
  if (o.cluster_k > 1) add("ck" + std::to_string(o.cluster_k));
  if (o.multicast > 1) add("mc" + std::to_string(o.multicast));
  if (o.persistent > 0) add("pk" + std::to_string(o.persistent));
  if (o.raster_group != ConvLaunchOptions{}.raster_group) add("rg" + std::to_string(o.raster_group));
  return s;
}

inline std::string conv_tactic_name(std::string_view instance, const ConvLaunchOptions& o) {
  std::string n(instance);
  const std::string suffix = launch_suffix(o);
  if (!suffix.empty()) n += tactic_separator + suffix;
  return n;
}

inline constexpr int conv_max_raster_group = 64;

// Inverse of launch_suffix(ConvLaunchOptions): "split<N>s|p" (N in [2, max_split_k]), "ck<N>" (N in [2,
// conv_max_cluster_k]), "mc<N>" (N in 2, 4, 8) and "rg<N>" (N in [1, 64], not the default 8), '@'-separated in that order,
// no leading zeros: every option set has one name.
inline bool parse_conv_launch_suffix(std::string_view s, ConvLaunchOptions& out, std::string& why) {
  auto bad = [&](std::string w) {
    why = std::move(w);
    return false;
  };
  ConvLaunchOptions o;
  std::string_view rest = s;
  while (!rest.empty()) {
    const auto at = rest.find(tactic_separator);
    const std::string_view knob = rest.substr(0, at);
    rest = at == std::string_view::npos ? std::string_view{} : rest.substr(at + 1);
    if (at != std::string_view::npos && rest.empty()) return bad("conv launch options '" + std::string(s) + "' end with '@'");
    auto number = [&](std::string_view prefix, std::string_view& tail, int& v) {
      return launch_knob_number(knob, prefix, tail, v);  // "rg0": range error below
    };
    std::string_view tail;
    int v = 0;
    if (number("split", tail, v) && v >= 2 && v <= max_split_k && (tail == "s" || tail == "p")) {
      o.split_k = v;
      o.split_mode = tail == "p" ? SplitKMode::parallel : SplitKMode::serial;
    } else if (number("ck", tail, v) && tail.empty()) {
      if (v < 2 || v > conv_max_cluster_k)
        return bad("conv cluster_k '" + std::to_string(v) + "' is not an integer in [2, " + std::to_string(conv_max_cluster_k) + "]");
      o.cluster_k = v;
    } else if (number("mc", tail, v) && tail.empty()) {
      if (v != 2 && v != 4 && v != 8) return bad("conv multicast '" + std::to_string(v) + "' is not 2, 4 or 8 (CTAs per cluster)");
      o.multicast = v;
    } else if (number("pk", tail, v) && tail.empty()) {
      if (v < 1 || v > conv_max_persistent)
        return bad("conv persistent '" + std::to_string(v) + "' is not an integer in [1, " + std::to_string(conv_max_persistent) + "]");
      o.persistent = v;
    } else if (number("rg", tail, v) && tail.empty()) {
      if (v < 1 || v > conv_max_raster_group)
        return bad("conv raster group '" + std::to_string(v) + "' is not an integer in [1, " + std::to_string(conv_max_raster_group) + "]");
      if (v == ConvLaunchOptions{}.raster_group)
        return bad("raster group " + std::to_string(v) + " is the default (omit the launch options)");
      o.raster_group = v;
    } else {
      return bad("conv launch options '" + std::string(s) + "': unknown option '" + std::string(knob) + "' (split<N>s|p, ck<N>, mc<N>, pk<N>, rg<N>)");
    }
  }
  if (o.split_k > 1 && o.cluster_k > 1) return bad("conv launch options '" + std::string(s) + "': split<N> and ck<N> exclude each other");
  if (o.multicast > 1 && o.split_k > 1) return bad("conv launch options '" + std::string(s) + "': mc<N> excludes split<N>");
  if (o.multicast * o.cluster_k > conv_max_cluster)
    return bad("conv launch options '" + std::string(s) + "': ck<N>@mc<M> is a cluster of N × M CTAs, at most " +
               std::to_string(conv_max_cluster));
  if (o.persistent > 0 && (o.split_k > 1 || o.cluster_k > 1 || o.multicast > 1))
    return bad("conv launch options '" + std::string(s) + "': pk<N> excludes split<N>, ck<N> and mc<N>");
  if (s.empty() || launch_suffix(o) != s)
    return bad("conv launch options '" + std::string(s) + "' are not in canonical form (expected '" + launch_suffix(o) + "')");
  out = o;
  return true;
}

// Output tiles of an instance on a problem (rows × columns of the implicit GEMM's tile grid).
inline void conv_tile_grid(const ConvKernelEntry& e, const Conv2dDesc& d, double& rows, double& cols) {
  const ConvShape s = conv_shape(d);
  const TileShape pt = problem_tile(e.config.gemm);  // (swap AB: the tile in the problem's orientation)
  rows = std::ceil(double(s.m) / std::max(1, pt.m));
  cols = std::ceil(double(d.k) / std::max(1, pt.n));
}

// Estimated time of a Hopper conv instance (gemm1x1, tma_im2col) with its K split `splits` ways, in
// k-tiles of that instance. The persistent kernel walks tiles × splits (tile, k-slice) units over `slots`
// resident CTAs: ⌈units / slots⌉ rounds of ⌈k_tiles / splits⌉ k-tiles. A split adds, per round, the
// unit's fp32 partial store (BM·BN·4 bytes, counted as `partial` k-tiles: those bytes over one k-tile's
// operand bytes (BM + BN)·BK·2); the reduction's reads of every partial spread over the multiprocessors;
// and a fixed 4 k-tiles for the reduction's launch (or the serial chain of counters). H200 evidence that
// this overhead is real: 1568x512x2048 (the 7x7 2048->512 1x1 layer) 128x128 13.39 us whole, 13.91 us
// @split2p (notes/split-k.md).
inline double sm90_conv_split_estimate(const ConvKernelEntry& e, const Conv2dDesc& d, const DeviceInfo& dev, int splits) {
  double rows = 0, cols = 0;
  conv_tile_grid(e, d, rows, cols);
  const GemmConfig& g = e.config.gemm;
  const double sms = std::max(1, dev.sm_count), slots = sms * sm90_conv_ctas_per_sm(e, dev);
  const double k_tiles = sm90_conv_k_tiles(e, d), units = rows * cols * splits;
  const double rounds = std::ceil(units / slots);
  const double t = rounds * std::ceil(k_tiles / splits);
  if (splits <= 1) return t;
  const double partial = double(g.tile.m) * g.tile.n * 4.0 / (double(g.tile.m + g.tile.n) * g.tile.k * 2.0);
  return t + rounds * partial + std::ceil(units / sms) * partial + 4.0;
}

// Estimated time of a tma_im2col instance split `ck` ways inside clusters (cluster_k; 1: whole K), in
// k-tiles: every CTA runs one (tile, slice) unit, so ⌈tiles·ck / slots⌉ waves of ⌈k_tiles / ck⌉ k-tiles,
// plus one k-tile for the exchange through distributed shared memory.
inline double sm90_conv_cluster_k_estimate(const ConvKernelEntry& e, const Conv2dDesc& d, const DeviceInfo& dev, int ck) {
  double rows = 0, cols = 0;
  conv_tile_grid(e, d, rows, cols);
  const double slots = double(std::max(1, dev.sm_count)) * sm90_conv_ctas_per_sm(e, dev);
  const double k_tiles = sm90_conv_k_tiles(e, d);
  return std::ceil(rows * cols * ck / slots) * std::ceil(k_tiles / ck) + (ck > 1 ? 1.0 : 0.0);
}

// What the split proposals share: the instance's grid leaves more than 15% of its last round's CTA slots
// idle and K has 4 or more k-tiles (else none); then the split counts n in
// [2, max_n] (those `allowed`) whose estimate beats the whole K (estimate(1)), best first, at most `count`.
template <class Estimate, class Allowed>
std::vector<int> conv_best_splits(const ConvKernelEntry& e, const Conv2dDesc& d, const DeviceInfo& dev, int max_n,
                                  std::size_t count, Estimate estimate, Allowed allowed) {
  std::vector<int> out;
  double rows = 0, cols = 0;
  conv_tile_grid(e, d, rows, cols);
  const double slots = double(std::max(1, dev.sm_count)) * sm90_conv_ctas_per_sm(e, dev);
  const double tiles = rows * cols, k_tiles = sm90_conv_k_tiles(e, d);
  if (k_tiles < 4 || tiles >= 0.85 * slots * std::ceil(tiles / slots)) return out;
  const double whole = estimate(1);
  std::vector<std::pair<double, int>> better;
  for (int n = 2; n <= max_n && n <= k_tiles; ++n)
    if (allowed(n, tiles, slots))
      if (const double t = estimate(n); t < whole) better.emplace_back(t, n);
  std::stable_sort(better.begin(), better.end());
  for (std::size_t i = 0; i < better.size() && i < count; ++i) out.push_back(better[i].second);
  return out;
}

// Split-K launch options worth timing for a Hopper conv instance: none unless the unsplit grid leaves
// more than 15% of its last round's CTA slots idle (the 7x7-map layers of ResNet-50 at N = 32, M = 1568:
// 28-104 tiles for 132 multiprocessors) and K has 4 or more k-tiles; then the three split counts of
// best estimate that beat the unsplit estimate, in parallel mode, and the best one in serial mode
// where the instance has it (warpgroup tiles up to 64x128). The tuner measures them.
inline std::vector<ConvLaunchOptions> conv_split_variants(const ConvKernelEntry& e, const Conv2dDesc& d, const DeviceInfo& dev) {
  std::vector<ConvLaunchOptions> out;
  // (The mma.sync instances' split-K is timed by ktune-conv-bench --splits; not proposed to the tuner yet.)
  if (!conv_supports_split_k(e.config) || !is_sm90_iterator(e.config.iterator)) return out;
  const std::vector<int> best = conv_best_splits(
      e, d, dev, std::min(max_split_k, 64), 3, [&](int s) { return sm90_conv_split_estimate(e, d, dev, s); },
      [](int, double, double) { return true; });
  for (int s : best) {
    ConvLaunchOptions o;
    o.split_k = s;
    o.split_mode = SplitKMode::parallel;
    out.push_back(o);
  }
  if (!best.empty() && supports_serial_split_k(e.config.gemm)) {
    ConvLaunchOptions o;
    o.split_k = best.front();
    o.split_mode = SplitKMode::serial;
    out.push_back(o);
  }
  return out;
}

// The largest multicast cluster the tuner times (conv_multicast_variants): 2 by default. Clusters of 4
// and 8 are correct and sanitizer-clean on the H200 (s14, f27993f) but were never faster than pairs there:
// 7² 3×3 512→512 (N = 32), 128x64, one run (s14a): @mc2 21.1 µs, @mc4 21.5, @mc8 22.7 (one arrival per
// warpgroup), whole K 22.6; the tuner with the switch at 8 picked the same tactics as at 2 on all 15
// ResNet-50 layers. ktune-conv-bench --multicast and explicit options
// (@mc4, @mc8) reach them. A/B switch, read once: KTUNE_CONV_TUNED_MULTICAST=1 (no multicast
// proposals), 2, 4 or 8.
inline int conv_tuned_multicast_max() {
  static const int v = [] {
    const char* s = std::getenv("KTUNE_CONV_TUNED_MULTICAST");
    const int x = s != nullptr ? std::atoi(s) : 2;
    return x == 1 || x == 2 || x == 4 || x == 8 ? x : 2;
  }();
  return v;
}

// Cluster split-K options worth timing for an instance (tma_im2col): as for conv_split_variants, only
// where the unsplit grid leaves CTA slots idle, the two cluster sizes (up to conv_cluster_k_limit) of best
// estimate that beat the whole K, and only sizes whose tiles × ck CTAs run in one wave (H200 s6-batchA:
// every multi-wave cluster launch was far slower than the whole K, e.g. 14x14 1024->256 1x1 128x128 @ck2
// (2 waves) 19.7 us vs 9.7, @ck4 42.0; one wave: 7x7 3x3 512->512 128x128 @ck2 21.2 vs 25.8). Not in
// multicast groups (@ck2@mc2: explicit options and ktune-conv-bench --splits --multicast reach them): never
// faster on the H200 (s14, N = 32: 7² 3×3 512→512 128x128 @ck2 20.3 µs, @ck2@mc2 22.2; 7² 2048→512 12.4 vs 12.9).
inline std::vector<ConvLaunchOptions> conv_cluster_k_variants(const ConvKernelEntry& e, const Conv2dDesc& d, const DeviceInfo& dev) {
  std::vector<ConvLaunchOptions> out;
  const int limit = conv_cluster_k_limit(e.config);
  if (limit < 2) return out;
  const std::vector<int> best = conv_best_splits(
      e, d, dev, limit, 2, [&](int ck) { return sm90_conv_cluster_k_estimate(e, d, dev, ck); },
      [](int ck, double tiles, double slots) { return tiles * ck <= slots; });
  for (int ck : best) {
    ConvLaunchOptions o;
    o.cluster_k = ck;
    out.push_back(o);
  }
  return out;
}

// Multicast clusters (multicast = 2, 4, 8 up to conv_multicast_limit and max_multicast) worth timing for a Hopper conv
// instance: where K is long (32 or more k-tiles: the operand boxes from L2, not the stores, are the
// traffic), the grid is one partial wave (tiles, padded to whole clusters, ≤ resident CTAs) and the
// clustered tile dimension has at least as many tiles as the cluster has CTAs. H200 s7-batchA (N = 32,
// f16, bias + ReLU; pairs): faster only there, 7² 3×3 512→512 tma_im2col 128x64 21.74 vs 23.82 µs, 7² 1×1
// 2048→512 gemm1x1 128x64 11.61 vs 13.26; slower by 2-25% on 14², 28² and 56² layers and on 7² 512→2048
// (8 k-tiles): e.g. 14² 1024→256 128x128 10.65 vs 10.15. cuDNN runs 7² 3×3 512→512 (N = 32) as 128x64
// tiles in clusters of 8 along N sharing the im2col box (ncu, s13-batchA: 18.9 µs).
inline std::vector<ConvLaunchOptions> conv_multicast_variants(const ConvKernelEntry& e, const Conv2dDesc& d, const DeviceInfo& dev,
                                                              int max_multicast = conv_tuned_multicast_max()) {
  std::vector<ConvLaunchOptions> out;
  const int limit = std::min(conv_multicast_limit(e.config), max_multicast);
  if (limit < 2) return out;
  double rows = 0, cols = 0;
  conv_tile_grid(e, d, rows, cols);
  const bool along_m = sm90_pairs_along_m(e.config.gemm);
  const double pair_dim = along_m ? rows : cols, other = along_m ? cols : rows;
  const double slots = double(std::max(1, dev.sm_count)) * sm90_conv_ctas_per_sm(e, dev);
  if (sm90_conv_k_tiles(e, d) < 32) return out;
  for (int mc = 2; mc <= limit; mc *= 2) {
    if (pair_dim < mc || std::ceil(pair_dim / mc) * mc * other > slots) continue;
    ConvLaunchOptions o;
    o.multicast = mc;
    out.push_back(o);
  }
  return out;
}

// A persistent grid (persistent = CTAs per multiprocessor, conv_persistent_ctas_per_sm) worth
// timing for an mma.sync instance that has one (conv_supports_persistent): when its tiles take more than
// one wave of resident CTAs, so some CTA runs two or more tiles and the next tile's fill can hide under
// the current one's epilogue. (Not GPU-measured when it was proposed: ktune-conv-bench --sm80 --tactics.)
inline std::vector<ConvLaunchOptions> conv_persistent_variants(const ConvKernelEntry& e, const Conv2dDesc& d, const DeviceInfo& dev) {
  std::vector<ConvLaunchOptions> out;
  if (!conv_supports_persistent(e.config)) return out;
  double rows = 0, cols = 0;
  conv_tile_grid(e, d, rows, cols);
  const int per_sm = conv_persistent_ctas_per_sm(e.config);
  if (rows * cols <= double(std::max(1, dev.sm_count)) * per_sm) return out;
  ConvLaunchOptions o;
  o.persistent = per_sm;
  out.push_back(o);
  return out;
}

// The launch options worth timing for an instance on a problem, default first: a raster group of 16
// when the grid has several tile columns, at least 32 tile rows and 4 waves (L2 reuse of the filters
// across more rows; with one column grouping changes nothing); for the Hopper routes, the split counts
// of conv_split_variants, (tma_im2col) the cluster sizes of conv_cluster_k_variants and the multicast
// pairs of conv_multicast_variants; for the mma.sync 128-row tiles, the persistent grid of
// conv_persistent_variants.
inline std::vector<ConvLaunchOptions> conv_launch_variants(const ConvKernelEntry& e, const Conv2dDesc& d, const DeviceInfo& dev) {
  std::vector<ConvLaunchOptions> v{ConvLaunchOptions{}};
  double rows = 0, cols = 0;
  conv_tile_grid(e, d, rows, cols);
  if (cols >= 2 && rows >= 32 && rows * cols >= 4.0 * std::max(1, dev.sm_count)) v.push_back(ConvLaunchOptions{16});
  for (const ConvLaunchOptions& o : conv_cluster_k_variants(e, d, dev)) v.push_back(o);
  for (const ConvLaunchOptions& o : conv_split_variants(e, d, dev)) v.push_back(o);
  for (const ConvLaunchOptions& o : conv_multicast_variants(e, d, dev)) v.push_back(o);
  for (const ConvLaunchOptions& o : conv_persistent_variants(e, d, dev)) v.push_back(o);
  return v;
}

inline bool is_conv_launch_variant(const ConvKernelEntry& e, const ConvLaunchOptions& o, const Conv2dDesc& d, const DeviceInfo& dev) {
  for (const ConvLaunchOptions& x : conv_launch_variants(e, d, dev))
    if (same_launch(x, o)) return true;
  return false;
}

// The heuristic's sort key of an instance on a problem (lower is better); see the header.
struct ConvRankKey {
  int gather = 0, mismatch = 0;
  double cost = 0;
  friend bool operator<(const ConvRankKey& a, const ConvRankKey& b) {
    return std::tie(a.gather, a.mismatch, a.cost) < std::tie(b.gather, b.mismatch, b.cost);
  }
};

inline ConvRankKey conv_rank_key(const ConvKernelEntry& e, const Conv2dDesc& d, const DeviceInfo& dev) {
  ConvRankKey k;
  k.gather = gather_rank(e.config);
  k.mismatch = conv_tile_mismatch(e.config, d, dev);
  k.cost = is_sm90_iterator(e.config.iterator) ? sm90_conv_cost(e, d, dev) : heuristic_cost(e, d, dev);
  if (std::isnan(k.cost)) k.cost = std::numeric_limits<double>::infinity();
  return k;
}

// Candidates in heuristic order (best first; ties by name, so the order never depends on the table's).
inline void sort_conv_candidates(std::vector<const ConvKernelEntry*>& c, const Conv2dDesc& d, const DeviceInfo& dev) {
  std::vector<std::pair<ConvRankKey, const ConvKernelEntry*>> scored;
  scored.reserve(c.size());
  for (const ConvKernelEntry* e : c) scored.emplace_back(conv_rank_key(*e, d, dev), e);
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) {
    if (a.first < b.first) return true;
    if (b.first < a.first) return false;
    return a.second->name < b.second->name;
  });
  for (std::size_t i = 0; i < c.size(); ++i) c[i] = scored[i].second;
}

}  // namespace ktune
