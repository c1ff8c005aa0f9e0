// ktune/gemm/tactics.hpp — a tactic is an instance plus the launch options it runs with: the unit the
// tuner ranks, measures, pins and caches. Instances are compiled; launch options (split-K, the sm90
// cluster size, the raster group, programmatic dependent launch) are runtime knobs of the same compiled
// kernel, so one instance yields several tactics without new instantiations.
//
// Names are stable and readable, for logs, reports and the cache: the instance name for default
// options, then one "@knob" per non-default option in a fixed order:
//   ktune_gemm_sm80_f16_tn_128x128x32_w64x64_s4_a8               default options
//   ktune_gemm_sm80_f16_tn_128x128x32_w64x64_s4_a8@split4s       split-K 4, serial (in-kernel) reduction
//   ktune_gemm_sm80_f16_tn_128x128x32_w64x64_s4_a8@split8p       split-K 8, parallel (second kernel)
//   ktune_gemm_sm80_bf16_tn_32x64x128_w16x32_s4_a8@split64c8     split-K 64 in clusters of 8 CTAs
//   ktune_gemm_sm90_wgmma_bf16_tn_128x256x64_..._a8@cl2          cluster of 2 CTAs (TMA multicast)
//   ktune_gemm_sm90_wgmma_bf16_tn_128x256x64_..._a8@sk           stream-K tile schedule
//   ...@rg16 / ...@ctas66                                        raster group 16 / at most 66 CTAs
//   ...@pdl / ...@nopdl                                          always / never a programmatic launch
//                                                                (default: the rule, kernel/pdl.hpp)
//
// launch_variants() says which options are worth timing for an instance on a problem (default options
// first); tactic_cost_factor() is how the cost model ranks a variant against the instance's default.
#pragma once
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ktune/arch.hpp"
#include "ktune/dispatch.hpp"
#include "ktune/gemm/heuristic.hpp"
#include "ktune/problem.hpp"

#if __has_include("ktune/gemm/split_k.hpp")
#include "ktune/gemm/split_k.hpp"
#define KTUNE_TACTICS_HAVE_SPLIT_K_VARIANTS 1
#else
#define KTUNE_TACTICS_HAVE_SPLIT_K_VARIANTS 0
#endif

namespace ktune {

struct GemmTactic {
  const GemmKernelEntry* entry = nullptr;
  GemmLaunchOptions launch{};
  std::string name;  // tactic_name(entry->name, launch)
};

// Do two option sets launch the same way? (The split mode only matters when K is split. PdlChoice::rule
// differs from on and off even where the rule would give the same: the names differ, and the rule's
// outcome depends on the environment.)
inline bool same_launch(const GemmLaunchOptions& a, const GemmLaunchOptions& b) {
  return a.raster_group == b.raster_group && a.cluster == b.cluster && a.max_ctas == b.max_ctas &&
         a.split_k == b.split_k && (a.split_k <= 1 || (a.split_mode == b.split_mode && a.split_cluster == b.split_cluster)) &&
         a.stream_k == b.stream_k && a.pdl == b.pdl;
}
inline bool is_default_launch(const GemmLaunchOptions& o) { return same_launch(o, GemmLaunchOptions{}); }

inline constexpr char tactic_separator = '@';

// "split4s@cl2" for the non-default options, in a fixed order; "" for default options.
inline std::string launch_suffix(const GemmLaunchOptions& o) {
  const GemmLaunchOptions def{};
  std::string s;
  auto add = [&](std::string_view knob, int v, std::string_view tail = {}) {
    if (!s.empty()) s += tactic_separator;
    s += knob;
    s += std::to_string(v);
    s += tail;
  };
  if (o.split_k != def.split_k)
    add("split", o.split_k,
        o.split_mode == SplitKMode::parallel  ? std::string("p")
        : o.split_mode == SplitKMode::cluster ? "c" + std::to_string(o.split_cluster)
                                              : std::string("s"));
  if (o.stream_k) {
    if (!s.empty()) s += tactic_separator;
    s += "sk";
  }
  if (o.cluster != def.cluster) add("cl", o.cluster);
  if (o.raster_group != def.raster_group) add("rg", o.raster_group);
  if (o.max_ctas != def.max_ctas) add("ctas", o.max_ctas);
  if (o.pdl != def.pdl) {
    if (!s.empty()) s += tactic_separator;
    s += o.pdl == PdlChoice::on ? "pdl" : "nopdl";
  }
  return s;
}

inline std::string tactic_name(std::string_view instance, const GemmLaunchOptions& o) {
  std::string n(instance);
  const std::string suffix = launch_suffix(o);
  if (!suffix.empty()) n += tactic_separator + suffix;
  return n;
}

// "inst@split4s" → instance "inst", suffix "split4s" (empty when there is no separator).
inline void split_tactic_name(std::string_view name, std::string_view& instance, std::string_view& suffix) {
  const auto at = name.find(tactic_separator);
  instance = name.substr(0, at);
  suffix = at == std::string_view::npos ? std::string_view{} : name.substr(at + 1);
}

// A launch knob "<prefix><integer><tail>" (e.g. "split4s": 4 and "s"): false when the prefix differs or
// no integer follows, or it has a leading zero ("split04s"). 0 and negative values parse, so the caller's
// range check can say what is wrong with "rg0" (GEMM and conv launch suffixes).
inline bool launch_knob_number(std::string_view knob, std::string_view prefix, std::string_view& tail, int& v) {
  if (knob.substr(0, prefix.size()) != prefix) return false;
  const std::string_view num = knob.substr(prefix.size());
  const auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
  if (ec != std::errc{} || p == num.data() || (num[0] == '0' && p - num.data() > 1)) return false;
  tail = num.substr(static_cast<std::size_t>(p - num.data()));
  return true;
}

// Inverse of launch_suffix; accepts only the canonical spelling (so every option set has one name).
inline bool parse_launch_suffix(std::string_view s, GemmLaunchOptions& out, std::string& why) {
  GemmLaunchOptions o{};
  std::string_view rest = s;
  while (!rest.empty()) {
    const auto at = rest.find(tactic_separator);
    std::string_view knob = rest.substr(0, at);
    rest = at == std::string_view::npos ? std::string_view{} : rest.substr(at + 1);
    if (at != std::string_view::npos && rest.empty()) {
      why = "launch options '" + std::string(s) + "' end with '@'";
      return false;
    }
    auto number = [&](std::string_view prefix, std::string_view& tail, int& v) { return launch_knob_number(knob, prefix, tail, v); };
    std::string_view tail;
    int v = 0;
    if (knob == "sk") {
      o.stream_k = true;
    } else if (knob == "pdl" || knob == "nopdl") {
      o.pdl = knob == "pdl" ? PdlChoice::on : PdlChoice::off;
    } else if (number("split", tail, v) && v >= 2 && v <= max_split_k && (tail == "s" || tail == "p")) {
      o.split_k = v;
      o.split_mode = tail == "p" ? SplitKMode::parallel : SplitKMode::serial;
    } else if (std::string_view cl_tail; number("split", tail, v) && v >= 2 && v <= max_split_k &&
               launch_knob_number(tail, "c", cl_tail, o.split_cluster) && cl_tail.empty() && o.split_cluster >= 2 &&
               o.split_cluster <= max_split_cluster && v % o.split_cluster == 0) {
      o.split_k = v;  // split<N>c<C>: cluster mode, C CTAs per cluster
      o.split_mode = SplitKMode::cluster;
    } else if (number("cl", tail, v) && tail.empty() && v >= 1 && v <= 2) {
      o.cluster = v;
    } else if (number("rg", tail, v) && tail.empty() && v >= 1 && v <= max_raster_group) {
      o.raster_group = v;
    } else if (number("ctas", tail, v) && tail.empty() && v >= 1) {
      o.max_ctas = v;
    } else {
      why = "unknown launch option '" + std::string(knob) + "' (split<N>s|p|c<C>, sk, cl<N>, rg<N>, ctas<N>, pdl, nopdl)";
      return false;
    }
  }
  if (o.stream_k && o.split_k > 1) {
    why = "launch options '" + std::string(s) + "': stream-K (sk) and split-K exclude each other";
    return false;
  }
  if (launch_suffix(o) != s) {
    why = "launch options '" + std::string(s) + "' are not in canonical form (expected '" + launch_suffix(o) + "')";
    return false;
  }
  out = o;
  return true;
}

namespace detail {
inline void add_variant(std::vector<GemmLaunchOptions>& v, const GemmLaunchOptions& o) {
  if (std::none_of(v.begin(), v.end(), [&](const GemmLaunchOptions& x) { return same_launch(x, o); })) v.push_back(o);
}
// (In the kernel's orientation: a swap-AB instance's rows run along the problem's N.)
inline std::int64_t tiles_of(const GemmConfig& c, const GemmDesc& d, std::int64_t* tiles_m = nullptr) {
  const std::int64_t km = is_swap_ab(c) ? d.n : d.m, kn = is_swap_ab(c) ? d.m : d.n;
  const std::int64_t tm = (km + c.tile.m - 1) / c.tile.m, tn = (kn + c.tile.n - 1) / c.tile.n;
  if (tiles_m) *tiles_m = tm;
  return tm * tn;
}
}  // namespace detail

// Raster groups other than the default are timed only where the grid is many waves of many tile rows:
// elsewhere every group size visits the same tiles in nearly the same order.
inline constexpr int alternative_raster_group = 16;

// The launch options worth timing for this instance on this (resolved) problem, default options first.
inline std::vector<GemmLaunchOptions> launch_variants(const GemmKernelEntry& e, const GemmDesc& d, const DeviceInfo& dev) {
  std::vector<GemmLaunchOptions> v{GemmLaunchOptions{}};
#if KTUNE_TACTICS_HAVE_SPLIT_K_VARIANTS
  for (const GemmLaunchOptions& o : split_k_variants(e, d, dev)) detail::add_variant(v, o);
#endif
#if KTUNE_TACTICS_HAVE_SPLIT_K_VARIANTS
  // sm90: stream-K where the last wave of tiles leaves CTAs idle.
  if (e.workspace_size != nullptr && !is_route(e) && stream_k_worth_timing(e.config, e.resources, d, dev)) {
    GemmLaunchOptions o;
    o.stream_k = true;
    detail::add_variant(v, o);
  }
#endif
  std::int64_t tiles_m = 0;
  const std::int64_t tiles = detail::tiles_of(e.config, d, &tiles_m);
  // sm90: a cluster of 2 CTAs shares one operand by TMA multicast; it needs two tiles to pair.
  if (is_wgmma(e.config.math) && dev.cc == 90 && tiles >= 2 && supports_clusters(e.config)) {
    GemmLaunchOptions o;
    o.cluster = 2;
    detail::add_variant(v, o);
  }
  if (tiles_m >= 2 * alternative_raster_group && tiles >= 4 * std::max(1, dev.sm_count)) {
    GemmLaunchOptions o;
    o.raster_group = alternative_raster_group;
    detail::add_variant(v, o);
  }
  // Programmatic dependent launch (compute capability ≥ 9.0; kernel instances, not routes): each variant's
  // twin with the choice opposite to the rule's for this problem (kernel::pdl_twin: only under the size
  // rule and for M·N·K ≤ 2^35, where the microsecond PDL hides is ≳ 1% of the GEMM). Its effect on the
  // sm80 kernel has no size pattern (H200, graph replay: +5-9% or -3 to -9% on decode shapes), and the
  // tuner times short candidates in chains of back-to-back launches, which is where PDL shows. Each twin
  // directly follows its variant. (An sm80 instance built without an sm_90 image launches its @pdl twin
  // plainly: timed for nothing, harmless.) sm80 instances only: on the sm90 kernel the rule's PDL helped
  // every short shape measured (session 9: 1024³, 256³, 128×4096×4096, 1568×512×2048), and twins of every
  // sm90 variant took a third of the tuner's 48 slots, pushing out measured winners (s10-batchD,
  // 64x64x65536: the pick ran 1.15x the exhaustive best).
  if (dev.cc >= 90 && !is_route(e) && !is_wgmma(e.config.math)) {
    const PdlChoice twin = kernel::pdl_twin(kernel::sm80_pdl_mode(), d);
    if (twin != PdlChoice::rule) {
      std::vector<GemmLaunchOptions> with;
      with.reserve(2 * v.size());
      for (const GemmLaunchOptions& o : v) {
        with.push_back(o);
        GemmLaunchOptions t = o;
        t.pdl = twin;
        with.push_back(t);
      }
      v = std::move(with);
    }
  }
  return v;
}

// Is `o` one of launch_variants(e, d, dev)? (A cached tactic is applied only if this build would
// consider it for the problem.)
inline bool is_launch_variant(const GemmKernelEntry& e, const GemmLaunchOptions& o, const GemmDesc& d, const DeviceInfo& dev) {
  const auto v = launch_variants(e, d, dev);
  return std::any_of(v.begin(), v.end(), [&](const GemmLaunchOptions& x) { return same_launch(x, o); });
}

// The cost model's view of a variant, as a factor on the instance's cost with default options (lower
// is better). Split-K trades K-steps per tile for more tiles in flight plus the partial sums' traffic;
// knobs the model cannot see (cluster, raster) rank just behind the default, so that equal costs keep
// the default first and the variants are measured right after their instance.
inline double tactic_cost_factor(const GemmKernelEntry& e, const GemmLaunchOptions& o, const GemmDesc& d, const DeviceInfo& dev) {
  double f = 1.0;
  if (o.split_k > 1) {
    const GemmConfig& c = e.config;
    const double slots = double(std::max(1, dev.sm_count)) * blocks_per_sm(e.resources, dev);
    const double tiles = double(detail::tiles_of(c, d));
    const double k_steps = std::ceil(double(d.k) / c.tile.k);
    const double s = o.split_k;
    // Each slice writes (and the reduction reads back) an fp32 tile: in units of one k-step's loads.
    const double partial_steps = 2.0 * c.tile.m * c.tile.n * 4.0 / (double(c.tile.m + c.tile.n) * c.tile.k * size_of(c.operand()));
    const double unsplit = std::ceil(tiles / slots) * k_steps;
    // Cluster mode: the tile crosses distributed shared memory (counted as half a partial) and only the
    // clusters' sums go through L2; no second kernel.
    const double cluster_partial = o.split_mode == SplitKMode::cluster
                                       ? partial_steps * (0.5 + (s > o.split_cluster ? 1.0 / o.split_cluster : 0.0))
                                       : partial_steps;
    const double split = std::ceil(tiles * s / slots) * (std::ceil(k_steps / s) + cluster_partial) +
                         (o.split_mode == SplitKMode::parallel ? 1.0 : 0.0);
    f = split / std::max(1.0, unsplit);
  }
  // Stream-K: the same k-steps spread over every slot, plus about one partial tile stored and added per
  // CTA; never ahead of the instance's default (H200 s6-batchB: @sk was slower than the default on every
  // shape timed, 1024^3 64x128 13.2 vs 7.9 us), so a top-k cut keeps it right behind its instance.
  if (o.stream_k) {
    const GemmConfig& c = e.config;
    const double slots = double(std::max(1, dev.sm_count)) * blocks_per_sm(e.resources, dev);
    const double tiles = double(detail::tiles_of(c, d));
    const double k_steps = std::ceil(double(d.k) / c.tile.k);
    const double partial_steps = 2.0 * c.tile.m * c.tile.n * 4.0 / (double(c.tile.m + c.tile.n) * c.tile.k * size_of(c.operand()));
    const double unsplit = std::ceil(tiles / slots) * k_steps;
    const double streamed = std::ceil(tiles * k_steps / slots) + (std::fmod(tiles, slots) != 0.0 ? partial_steps : 0.0);
    f *= std::max(1.0, streamed / std::max(1.0, unsplit)) * 1.004;
  }
  if (o.cluster != GemmLaunchOptions{}.cluster) f *= 1.001;
  if (o.raster_group != GemmLaunchOptions{}.raster_group) f *= 1.002;
  if (o.max_ctas != GemmLaunchOptions{}.max_ctas) f *= 1.003;
  if (o.pdl != GemmLaunchOptions{}.pdl) f *= 1.0005;  // the PDL twin: right behind its variant
  return f;
}

}  // namespace ktune
