// ktune/conv/tactics.hpp — conv tactics: a conv instance plus the launch options it runs with, the
// unit the tuner ranks, measures, pins and caches for conv2d keys (as ktune/gemm/tactics.hpp is for
// GEMM). The only conv launch option is the raster group (ConvLaunchOptions), which every conv kernel
// honours (mma.sync and the sm90 routes).
//
//   ktune_conv2d_fprop_sm80_f16_optimized_128x64x32_w32x32_s4_a8          default options (raster group 8)
//   ktune_conv2d_fprop_sm80_f16_optimized_128x64x32_w32x32_s4_a8@rg16     raster group 16
//
// Ranking (conv_rank_less): the order the heuristic conv choice uses, so rank 1 is exactly what the
// Heuristic policy (and select_conv) runs: gather rank, then the measured tile policy of the mma.sync
// families, then the cost model (sm90_conv_cost for the Hopper routes, the GEMM model on the implicit
// GEMM for mma.sync), then the name.
#pragma once
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "ktune/conv/dispatch.hpp"
#include "ktune/gemm/tactics.hpp"

namespace ktune {

struct ConvTactic {
  const ConvKernelEntry* entry = nullptr;
  ConvLaunchOptions launch{};
  std::string name;  // conv_tactic_name(entry->name, launch)
};

inline bool is_default_launch(const ConvLaunchOptions& o) { return o.raster_group == ConvLaunchOptions{}.raster_group; }

// "rg16" for a non-default raster group; "" for default options.
inline std::string launch_suffix(const ConvLaunchOptions& o) {
  return is_default_launch(o) ? std::string() : "rg" + std::to_string(o.raster_group);
}

inline std::string conv_tactic_name(std::string_view instance, const ConvLaunchOptions& o) {
  std::string n(instance);
  const std::string suffix = launch_suffix(o);
  if (!suffix.empty()) n += tactic_separator + suffix;
  return n;
}

inline constexpr int conv_max_raster_group = 64;

// Inverse of launch_suffix(ConvLaunchOptions): "rg<N>", N in [1, 64] without leading zeros, N ≠ 8
// (the default has no suffix): every option set has one name.
inline bool parse_conv_launch_suffix(std::string_view s, ConvLaunchOptions& out, std::string& why) {
  auto bad = [&](std::string w) {
    why = std::move(w);
    return false;
  };
  if (s.size() < 3 || s.substr(0, 2) != "rg") return bad("conv launch options '" + std::string(s) + "' are not 'rg<N>'");
  const std::string_view num = s.substr(2);
  int v = 0;
  const auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
  if (ec != std::errc{} || p != num.data() + num.size() || num[0] == '0' || v < 1 || v > conv_max_raster_group)
    return bad("conv raster group '" + std::string(num) + "' is not an integer in [1, " + std::to_string(conv_max_raster_group) + "]");
  if (v == ConvLaunchOptions{}.raster_group)
    return bad("raster group " + std::to_string(v) + " is the default (omit the launch options)");
  out.raster_group = v;
  return true;
}

// Output tiles of an instance on a problem (rows × columns of the implicit GEMM's tile grid).
inline void conv_tile_grid(const ConvKernelEntry& e, const Conv2dDesc& d, double& rows, double& cols) {
  const ConvShape s = conv_shape(d);
  rows = std::ceil(double(s.m) / std::max(1, e.config.gemm.tile.m));
  cols = std::ceil(double(d.k) / std::max(1, e.config.gemm.tile.n));
}

// The launch options worth timing for an instance on a problem, default first: a raster group of 16
// when the grid has several tile columns, at least 32 tile rows and 4 waves (L2 reuse of the filters
// across more rows; with one column grouping changes nothing).
inline std::vector<ConvLaunchOptions> conv_launch_variants(const ConvKernelEntry& e, const Conv2dDesc& d, const DeviceInfo& dev) {
  std::vector<ConvLaunchOptions> v{ConvLaunchOptions{}};
  double rows = 0, cols = 0;
  conv_tile_grid(e, d, rows, cols);
  if (cols >= 2 && rows >= 32 && rows * cols >= 4.0 * std::max(1, dev.sm_count)) v.push_back(ConvLaunchOptions{16});
  return v;
}

inline bool is_conv_launch_variant(const ConvKernelEntry& e, const ConvLaunchOptions& o, const Conv2dDesc& d, const DeviceInfo& dev) {
  for (const ConvLaunchOptions& x : conv_launch_variants(e, d, dev))
    if (x.raster_group == o.raster_group) return true;
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
