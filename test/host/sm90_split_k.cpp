// Host tests: split-K as a launch option of the sm90 (wgmma) instances — their workspace (serial
// counters per consumer-warpgroup tile), the variants the tuner times (split counts only where the
// output tiles leave most of the 132 SMs idle, never together with a cluster of 2), the tactic names
// and the cost model's ranking; conv's gemm1x1 route (the sm90 GEMM) gets the same split variants. On a
// fake H200; no GPU needed.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <utility>

#include "fake_device.hpp"
#include "conv_problem.hpp"
#include "conv_tactic_check.hpp"
#include "ktune/conv.hpp"
#include "ktune/conv/tactics.hpp"
#include "ktune/gemm.hpp"
#include "ktune/gemm/split_k.hpp"
#include "ktune/gemm/tactics.hpp"

using namespace ktune;
using ktune::test::check_conv_tactic_round_trip;
using ktune::test::conv_problem;

namespace {

DeviceInfo sm90_h200() { return ktune::test::fake_h200(); }

GemmDesc bf16_tn(std::int64_t m, std::int64_t n, std::int64_t k) { return ktune::test::bf16_tn_desc(m, n, k); }

// A registered sm90 bf16 'tn' instance with this block tile (cooperative), or null.
const GemmKernelEntry* sm90_entry(int tm, int tn, bool pingpong = false) {
  for (const GemmKernelEntry& e : gemm_table().entries())
    if (!is_route(e) && e.config.math == MathOp::wgmma_bf16 && e.config.a_layout == Layout::row && e.config.b_layout == Layout::col &&
        e.config.tile.m == tm && e.config.tile.n == tn && (e.config.schedule == WgSchedule::pingpong) == pingpong)
      return &e;
  return nullptr;
}

}  // namespace

TEST_CASE("sm90 split-K: every wgmma instance takes split_k, its workspace counts warpgroup tiles") {
  int n = 0;
  for (const GemmKernelEntry& e : gemm_table().entries()) {
    if (!is_wgmma(e.config.math) || is_route(e)) continue;
    if (is_swap_ab(e.config)) {  // swap AB: no split-K (no workspace function; test/host/swap_ab.cpp)
      CHECK_FALSE(supports_split_k(e.config));
      CHECK((e.workspace_size == nullptr));
      continue;
    }
    CAPTURE(e.name);
    ++n;
    CHECK(supports_split_k(e.config));
    REQUIRE(bool(e.workspace_size));
    const GemmDesc d = bf16_tn(1000, 520, 4096);
    GemmLaunchOptions o;
    CHECK(e.workspace_size(d, o) == 0);
    for (SplitKMode mode : {SplitKMode::serial, SplitKMode::parallel}) {
      o.split_k = 7;
      o.split_mode = mode;
      const SplitKLayout l = split_k_layout(e.config, d, o);
      CHECK(e.workspace_size(d, o) == l.total_bytes);
      CHECK(l.partial_ld == 520);
      CHECK(l.total_bytes == l.partials_offset + std::size_t{7} * 1000 * 520 * 4);
      // Serial: split_k_counters_per_tile counters per WM×WN warpgroup tile, 256-byte padded.
      const std::int64_t subtiles = ((1000 + e.config.warp.m - 1) / e.config.warp.m) * ((520 + e.config.warp.n - 1) / e.config.warp.n);
      const std::size_t counters = static_cast<std::size_t>(subtiles * split_k_counters_per_tile(7) * 4 + 255) / 256 * 256;
      CHECK(l.semaphore_bytes == (mode == SplitKMode::serial ? counters : 0));
      CHECK(check_launch_options(e, o).ok());
    }
  }
  MESSAGE(n << " sm90 instances");
}

TEST_CASE("sm90 split-K: launch variants where the tiles leave SMs idle, not with clusters, canonical names") {
  const DeviceInfo dev = sm90_h200();
  const GemmKernelEntry* big = sm90_entry(128, 256);
  const GemmKernelEntry* pp = sm90_entry(128, 128, true);
  REQUIRE(big != nullptr);
  // 1024^3: 32 tiles of 128x256 for 132 SMs, 16 k-tiles: split counts offered, both modes.
  const auto v = launch_variants(*big, bf16_tn(1024, 1024, 1024), dev);
  std::string seen;
  for (const GemmLaunchOptions& o : v) seen += " " + tactic_name("", o);
  INFO(big->name << " registers " << big->resources.registers << " threads " << big->resources.threads << " smem "
                 << big->resources.smem_bytes << " workspace_size " << bool(big->workspace_size) << " route " << is_route(*big)
                 << "; variants:" << seen << "; split_k_variants(config): "
                 << split_k_variants(big->config, big->resources, bf16_tn(1024, 1024, 1024), dev).size());
  int splits = 0, parallel = 0;
  for (const GemmLaunchOptions& o : v) {
    CHECK_FALSE((o.split_k > 1 && o.cluster == 2));  // split-K runs in clusters of 1
    if (o.split_k > 1) {
      ++splits;
      parallel += o.split_mode == SplitKMode::parallel;
      CHECK(o.split_k * 32 <= 2 * 132);  // about one or two waves of (tile, slice) units
      const std::string name = tactic_name(big->name, o);
      std::string_view inst, suffix;
      split_tactic_name(name, inst, suffix);
      CHECK(inst == big->name);
      GemmLaunchOptions back;
      std::string why;
      CHECK_MESSAGE(parse_launch_suffix(suffix, back, why), why);
      CHECK(same_launch(back, o));
      CHECK(is_launch_variant(*big, o, bf16_tn(1024, 1024, 1024), dev));
    }
  }
  CHECK(splits >= 2);
  CHECK(parallel == splits);  // 64x256 warpgroup tile: parallel mode only (supports_serial_split_k)
  CHECK_FALSE(supports_serial_split_k(big->config));
  // 4096^3 (512 tiles): no split. Short K (one k-tile): nothing to split.
  for (const GemmLaunchOptions& o : launch_variants(*big, bf16_tn(4096, 4096, 4096), dev)) CHECK(o.split_k == 1);
  for (const GemmLaunchOptions& o : launch_variants(*big, bf16_tn(128, 1024, 64), dev)) CHECK(o.split_k == 1);
  // 128x4096x4096 (16 tiles, 64 k-tiles) and the conv 1x1 GEMM 1568x512x2048 (52 tiles of 128x128).
  bool any = false;
  for (const GemmLaunchOptions& o : launch_variants(*big, bf16_tn(128, 4096, 4096), dev)) any |= o.split_k > 1;
  CHECK(any);
  if (pp != nullptr) {
    any = false;
    for (const GemmLaunchOptions& o : launch_variants(*pp, bf16_tn(1568, 512, 2048), dev)) any |= o.split_k > 1;
    CHECK(any);
  }
}

TEST_CASE("sm90 split-K: the cost model ranks a split ahead of the unsplit tactic only on a partial wave") {
  const DeviceInfo dev = sm90_h200();
  const GemmKernelEntry* big = sm90_entry(128, 256);
  REQUIRE(big != nullptr);
  const GemmDesc small = bf16_tn(128, 4096, 4096), large = bf16_tn(4096, 4096, 4096);
  double best_small = 1.0;
  for (const GemmLaunchOptions& o : launch_variants(*big, small, dev))
    if (o.split_k > 1) best_small = std::min(best_small, tactic_cost_factor(*big, o, small, dev));
  CHECK(best_small < 0.5);  // 16 tiles on 132 SMs: a split of ~8 is several times faster in the model
  GemmLaunchOptions o;
  o.split_k = 4;
  o.split_mode = SplitKMode::parallel;
  CHECK(tactic_cost_factor(*big, o, large, dev) > 1.0);
}

TEST_CASE("sm90 split-K through conv: the gemm1x1 route offers split variants on 7x7-map layers, names parse back") {
  const DeviceInfo dev = sm90_h200();
  // ResNet-50 stage 5 1x1 layers at N = 32: M = 32·49 = 1568, (C, K) = (2048, 512): 52 tiles of 128x128,
  // 32 k-tiles, split; (512, 2048): 104 or more tiles, 8 k-tiles: the estimate keeps it whole.
  for (const auto& [d, want_split] : {std::pair{conv_problem(32, 7, 7, 2048, 512, 1, 1, 0, 0), true},
                                      std::pair{conv_problem(32, 7, 7, 512, 2048, 1, 1, 0, 0), false}}) {
    int gemm1x1 = 0, with_split = 0;
    for (const ConvKernelEntry& e : conv_table().entries()) {
      const auto v = conv_launch_variants(e, d, dev);
      CHECK(is_default_launch(v.front()));
      bool split = false;
      for (const ConvLaunchOptions& o : v) {
        if (o.split_k <= 1) continue;
        split = true;
        CHECK(conv_supports_split_k(e.config));
        check_conv_tactic_round_trip(e, o, d, dev);
      }
      if (e.config.iterator == ConvIterator::gemm1x1) {
        ++gemm1x1;
        with_split += split;
      }
    }
    CHECK(gemm1x1 > 0);
    CHECK((with_split > 0) == want_split);
  }
  // Suffixes: canonical forms only.
  ConvLaunchOptions o;
  std::string why;
  CHECK(parse_conv_launch_suffix("split4p@rg16", o, why));
  CHECK(o.split_k == 4);
  CHECK(o.split_mode == SplitKMode::parallel);
  CHECK(o.raster_group == 16);
  CHECK(launch_suffix(o) == "split4p@rg16");
  CHECK_FALSE(parse_conv_launch_suffix("rg16@split4p", o, why));
  CHECK_FALSE(parse_conv_launch_suffix("split1s", o, why));
  CHECK_FALSE(parse_conv_launch_suffix("split04s", o, why));
  CHECK_FALSE(parse_conv_launch_suffix("split4x", o, why));
  CHECK_FALSE(parse_conv_launch_suffix("rg8", o, why));
  CHECK_FALSE(parse_conv_launch_suffix("", o, why));
  CHECK(check_conv_launch_options(ConvLaunchOptions{8, max_split_k + 1}).code() == StatusCode::invalid_argument);
}
