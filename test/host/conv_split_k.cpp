// Host tests: split-K of the Hopper conv routes (tma_im2col and gemm1x1) as the tuner sees it — which
// instances take split_k, the split counts conv_launch_variants proposes (only where the output tiles
// leave CTA slots idle and K has k-tiles to split; never more splits than k-tiles; serial mode only on
// warpgroup tiles up to 64x128), that the estimate prefers them to the whole K there, and that every
// proposal is a valid, parseable tactic. On a fake H200 with the real conv table; no GPU needed.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>
#include <vector>

#include "conv_problem.hpp"
#include "conv_tactic_check.hpp"
#include "fake_device.hpp"
#include "ktune/conv.hpp"
#include "ktune/conv/tactics.hpp"

using namespace ktune;
using ktune::test::check_conv_tactic_round_trip;
using ktune::test::conv_problem;

namespace {

// The split-K proposals of an instance on a problem (its non-default launches with split_k > 1).
std::vector<ConvLaunchOptions> split_proposals(const ConvKernelEntry& e, const Conv2dDesc& d, const DeviceInfo& dev) {
  std::vector<ConvLaunchOptions> out;
  for (const ConvLaunchOptions& o : conv_launch_variants(e, d, dev))
    if (o.split_k > 1) out.push_back(o);
  return out;
}

// One launch-suffix token (ck<N>, pk<N>): `accepted` ("<token>@rg16", canonical order) parses into
// `field` == value and raster group 16 and prints back as itself; none of `rejected` parses. Returns the
// last rejection's reason.
struct SuffixSpellings {
  const char* accepted;
  int ConvLaunchOptions::*field;
  int value;
  std::vector<const char*> rejected;
};

std::string check_suffix_spellings(const SuffixSpellings& s) {
  ConvLaunchOptions o;
  std::string why;
  CHECK(parse_conv_launch_suffix(s.accepted, o, why));
  CHECK(o.*s.field == s.value);
  CHECK(o.raster_group == 16);
  CHECK(launch_suffix(o) == s.accepted);
  for (const char* r : s.rejected) {
    CAPTURE(r);
    CHECK_FALSE(parse_conv_launch_suffix(r, o, why));
  }
  return why;
}

// One launch option's value checks: each of `bad` is an invalid argument, `good` is valid alone and
// invalid together with `other` = 2 (an option it excludes).
void check_option_values(int ConvLaunchOptions::*field, std::initializer_list<int> bad, int good,
                         int ConvLaunchOptions::*other) {
  for (int v : bad) {
    ConvLaunchOptions o;
    o.*field = v;
    CAPTURE(v);
    CHECK(check_conv_launch_options(o).code() == StatusCode::invalid_argument);
  }
  ConvLaunchOptions o;
  o.*field = good;
  CHECK(check_conv_launch_options(o).ok());
  o.*other = 2;
  CHECK(check_conv_launch_options(o).code() == StatusCode::invalid_argument);
}

// The launches conv_launch_variants proposes for d (into f16, bias + ReLU) on dev that pass keep(o), each
// f16 instance that takes d in turn (its name captured): each(entry, d, o) checks one. Returns how many.
template <class Keep, class Each>
int check_f16_proposals(Conv2dDesc d, const DeviceInfo& dev, Keep keep, Each each) {
  d.type = d.out_type = DType::f16;
  d.epilogue = bias_activation(Activation::relu);
  int proposed = 0;
  for (const ConvKernelEntry& e : conv_table().entries()) {
    if (e.config.operand() != DType::f16 || !can_implement(e, d, ConvAlignment{8, 8, 8}, &dev).ok()) continue;
    CAPTURE(e.name);
    for (const ConvLaunchOptions& o : conv_launch_variants(e, d, dev)) {
      if (!keep(o)) continue;
      ++proposed;
      each(e, d, o);
    }
  }
  return proposed;
}

}  // namespace

TEST_CASE("conv split-K: the Hopper routes and the mma.sync optimized 128x128 tile take split_k, others do not") {
  int hopper = 0, sm80 = 0;
  for (const ConvKernelEntry& e : conv_table().entries()) {
    CAPTURE(e.name);
    const bool sm80_split = e.config.iterator == ConvIterator::optimized && e.config.gemm.tile.m == 128 && e.config.gemm.tile.n == 128;
    // (The swap-AB gemm1x1 instances take none: the GEMM's swap kernel has no split-K.)
    CHECK(conv_supports_split_k(e.config) == ((is_sm90_iterator(e.config.iterator) && !is_swap_ab(e.config.gemm)) || sm80_split));
    hopper += is_sm90_iterator(e.config.iterator);
    sm80 += sm80_split;
  }
  CHECK(hopper > 0);
  CHECK(sm80 > 0);
}

TEST_CASE("conv split-K: proposals on the ResNet-50 layers at N = 32 (fake H200)") {
  const DeviceInfo dev = ktune::test::fake_h200();
  // (problem, whether some tma_im2col instance gets split proposals)
  struct Layer {
    Conv2dDesc d;
    bool im2col_split;
  };
  const Layer layers[] = {
      {conv_problem(32, 7, 7, 512, 512, 3, 3, 1, 1), true},      // 28-104 tiles for 132 SMs, 72 k-tiles
      {conv_problem(32, 7, 7, 2048, 512, 1, 1, 0, 0), true},     // 32 k-tiles
      {conv_problem(32, 56, 56, 64, 64, 3, 3, 1, 1), false},     // thousands of tiles
      {conv_problem(32, 56, 56, 64, 256, 1, 1, 0, 0), false},    // 1 k-tile
      {conv_problem(32, 7, 7, 512, 2048, 1, 1, 0, 0), false},    // 8 k-tiles, ~2 full rounds
  };
  for (const Layer& l : layers) {
    Conv2dDesc d = l.d;
    d.type = d.out_type = DType::f16;
    d.epilogue = bias_activation(Activation::relu);
    bool im2col_split = false;
    for (const ConvKernelEntry& e : conv_table().entries()) {
      if (e.config.operand() != DType::f16 || !is_sm90_iterator(e.config.iterator)) continue;
      if (!can_implement(e, d, ConvAlignment{8, 8, 8}, &dev).ok()) continue;
      CAPTURE(e.name);
      const auto v = conv_launch_variants(e, d, dev);
      REQUIRE(!v.empty());
      CHECK(is_default_launch(v.front()));
      const double k_tiles = sm90_conv_k_tiles(e, d);
      int parallel = 0;
      for (const ConvLaunchOptions& o : split_proposals(e, d, dev)) {
        CAPTURE(o.split_k);
        CHECK(o.split_k <= k_tiles);  // no proposal leaves a slice empty
        CHECK(sm90_conv_split_estimate(e, d, dev, o.split_k) < sm90_conv_split_estimate(e, d, dev, 1));
        if (o.split_mode == SplitKMode::serial) CHECK(supports_serial_split_k(e.config.gemm));
        else ++parallel;
        check_conv_tactic_round_trip(e, o, d, dev);
        if (e.config.iterator == ConvIterator::tma_im2col) im2col_split = true;
      }
      CHECK(parallel <= 3);
      // No duplicates.
      for (std::size_t i = 0; i < v.size(); ++i)
        for (std::size_t j = i + 1; j < v.size(); ++j) CHECK_FALSE(same_launch(v[i], v[j]));
    }
    CAPTURE(d.h);
    CAPTURE(d.c);
    CAPTURE(d.k);
    CHECK(im2col_split == l.im2col_split);
  }
}

TEST_CASE("conv split-K: the estimate — whole K when the grid is full, fewer rounds of shorter slices when not") {
  const DeviceInfo dev = ktune::test::fake_h200();
  Conv2dDesc d = conv_problem(32, 7, 7, 512, 512, 3, 3, 1, 1);
  d.type = d.out_type = DType::f16;
  for (const ConvKernelEntry& e : conv_table().entries()) {
    if (e.config.iterator != ConvIterator::tma_im2col || e.config.operand() != DType::f16) continue;
    if (e.config.gemm.tile.m != 128 || e.config.gemm.tile.n != 128) continue;
    // 52 tiles of 128x128, 72 k-tiles: whole = one round of 72; split 2 = one round of 36 + partials.
    CHECK(sm90_conv_split_estimate(e, d, dev, 1) == doctest::Approx(72.0));
    CHECK(sm90_conv_split_estimate(e, d, dev, 2) < 50.0);
    const auto v = split_proposals(e, d, dev);
    REQUIRE(!v.empty());
    CHECK(v.front().split_mode == SplitKMode::parallel);
  }
  // 56x56 maps fill the device many times over: no proposal from any instance.
  Conv2dDesc big = conv_problem(32, 56, 56, 256, 128, 1, 1, 0, 0);
  big.type = big.out_type = DType::f16;
  for (const ConvKernelEntry& e : conv_table().entries())
    if (is_sm90_iterator(e.config.iterator)) CHECK(split_proposals(e, big, dev).empty());
}

TEST_CASE("conv cluster split-K: limits, proposals, names, refusals") {
  const DeviceInfo dev = ktune::test::fake_h200();
  // Only tma_im2col with cooperative warpgroup tiles up to 64x128 (128x128 spilled; not ping-pong or swap AB),
  // bounded by rank 0's ring.
  for (const ConvKernelEntry& e : conv_table().entries()) {
    CAPTURE(e.name);
    const int limit = conv_cluster_k_limit(e.config);
    const GemmConfig& g = e.config.gemm;
    if (e.config.iterator != ConvIterator::tma_im2col || g.warp.m * g.warp.n > 64 * 128 ||
        g.schedule != WgSchedule::cooperative) {
      CHECK(limit == 1);
      continue;
    }
    CHECK(limit >= 2);
    CHECK(limit <= conv_max_cluster_k);
    CHECK(long(limit - 1) * g.tile.m * g.tile.n * 4 <= long(g.stages) * (g.tile.m + g.tile.n) * g.tile.k * 2);
  }
  const int proposed = check_f16_proposals(
      conv_problem(32, 7, 7, 512, 512, 3, 3, 1, 1), dev, [](const ConvLaunchOptions& o) { return o.cluster_k > 1; },
      [&](const ConvKernelEntry& e, const Conv2dDesc& d, const ConvLaunchOptions& o) {
        CHECK(o.split_k == 1);
        CHECK(o.cluster_k <= conv_cluster_k_limit(e.config));
        double rows = 0, cols = 0;  // one wave of clusters
        conv_tile_grid(e, d, rows, cols);
        CHECK(rows * cols * o.cluster_k <= double(dev.sm_count) * sm90_conv_ctas_per_sm(e, dev));
        CHECK(check_conv_launch_options(o).ok());
        CHECK(sm90_conv_cluster_k_estimate(e, d, dev, o.cluster_k) < sm90_conv_cluster_k_estimate(e, d, dev, 1));
        const std::string name = check_conv_tactic_round_trip(e, o, d, dev);
        CHECK(name == std::string(e.name) + "@ck" + std::to_string(o.cluster_k));
      });
  CHECK(proposed > 0);
  // Names: canonical order split, ck, rg; ranges; split and ck exclude each other.
  check_suffix_spellings({"ck4@rg16", &ConvLaunchOptions::cluster_k, 4, {"rg16@ck4", "ck1", "ck9", "ck02", "split2p@ck2"}});
  // Out of range or combined with split_k: invalid before anything is tuned or launched.
  check_option_values(&ConvLaunchOptions::cluster_k, {0, -1, conv_max_cluster_k + 1}, 2, &ConvLaunchOptions::split_k);
}

TEST_CASE("conv persistent grid: which instances, proposals, names, refusals") {
  const DeviceInfo dev = ktune::test::fake_h200();
  int supported = 0;
  for (const ConvKernelEntry& e : conv_table().entries()) {
    CAPTURE(e.name);
    const bool want = e.config.iterator == ConvIterator::optimized && e.config.gemm.tile.m == 128;
    CHECK(conv_supports_persistent(e.config) == want);
    supported += want;
  }
  CHECK(supported == 6);  // 128x64, 128x128, 128x256 (Sm80ConvOptimizedWide) x f16/bf16
  // Proposed where the tiles take more than one wave of resident CTAs, at the estimated occupancy.
  struct Layer {
    Conv2dDesc d;
    bool many_tiles;  // every supporting instance has more tiles than 132 x its CTAs per multiprocessor
  };
  const Layer layers[] = {{conv_problem(32, 56, 56, 64, 64, 1, 1, 0, 0), true},
                          {conv_problem(32, 28, 28, 128, 512, 1, 1, 0, 0), true},
                          {conv_problem(1, 7, 7, 512, 512, 3, 3, 1, 1), false}};
  for (const Layer& l : layers) {
    const int proposed = check_f16_proposals(
        l.d, dev, [](const ConvLaunchOptions& o) { return o.persistent != 0; },
        [&](const ConvKernelEntry& e, const Conv2dDesc& d, const ConvLaunchOptions& o) {
          CHECK(conv_supports_persistent(e.config));
          CHECK(o.persistent == conv_persistent_ctas_per_sm(e.config));
          CHECK(o.persistent <= conv_max_persistent);
          double rows = 0, cols = 0;
          conv_tile_grid(e, d, rows, cols);
          CHECK(rows * cols > double(dev.sm_count) * o.persistent);
          const std::string name = check_conv_tactic_round_trip(e, o, d, dev);
          CHECK(name == std::string(e.name) + "@pk" + std::to_string(o.persistent));
        });
    CAPTURE(l.d.h);
    CAPTURE(l.d.k);
    CHECK((proposed == 3) == l.many_tiles);
    if (!l.many_tiles) CHECK(proposed == 0);
  }
  // Names: canonical order (split, ck, mc, pk, rg), ranges, exclusions.
  const std::string why =
      check_suffix_spellings({"pk2@rg16", &ConvLaunchOptions::persistent, 2, {"rg16@pk2", "pk0", "pk5", "pk02", "split2p@pk2"}});
  CHECK(why.find("pk<N> excludes") != std::string::npos);
  check_option_values(&ConvLaunchOptions::persistent, {-1, conv_max_persistent + 1}, 1, &ConvLaunchOptions::split_k);
}

TEST_CASE("conv multicast clusters: limits, proposals on 7x7 3x3 512->512, names, refusals") {
  const DeviceInfo dev = ktune::test::fake_h200();
  // tma_im2col takes clusters of up to 8 (each CTA's share of the shared box whole 8-row atoms), gemm1x1
  // the GEMM's pairs, swap-AB and mma.sync none.
  int eights = 0;
  for (const ConvKernelEntry& e : conv_table().entries()) {
    CAPTURE(e.name);
    const int limit = conv_multicast_limit(e.config);
    if (!conv_supports_multicast(e.config)) {
      CHECK(limit == 1);
    } else if (e.config.iterator == ConvIterator::gemm1x1) {
      CHECK(limit == 2);
    } else {
      const GemmConfig& g = e.config.gemm;
      const int shared_rows = sm90_pairs_along_m(g) ? g.tile.n : g.tile.m;
      CHECK(limit >= 2);
      CHECK(limit <= conv_max_multicast);
      CHECK(shared_rows % (8 * limit) == 0);
      eights += limit == 8;
    }
  }
  CHECK(eights > 0);
  // 7x7 3x3 512->512 at N = 32 (72 k-tiles, 1568 pixels: one partial wave): up to clusters of 8, the 128x64
  // tile clusters along N (8 tile columns) in 2, 4 and 8 (cuDNN's choice: clusters of 8), each padded grid
  // in one wave; the tuner's own proposals stop at conv_tuned_multicast_max() (2 unless KTUNE_CONV_TUNED_MULTICAST).
  Conv2dDesc d = conv_problem(32, 7, 7, 512, 512, 3, 3, 1, 1);
  d.type = d.out_type = DType::f16;
  d.epilogue = bias_activation(Activation::relu);
  bool eight_on_128x64 = false;
  int proposed = 0;
  for (const ConvKernelEntry& e : conv_table().entries()) {
    if (e.config.operand() != DType::f16 || !can_implement(e, d, ConvAlignment{8, 8, 8}, &dev).ok()) continue;
    CAPTURE(e.name);
    for (const ConvLaunchOptions& o : conv_multicast_variants(e, d, dev, conv_max_multicast)) {
      ++proposed;
      CHECK(o.multicast <= conv_multicast_limit(e.config));
      CHECK(check_conv_launch_options(o).ok());
      double rows = 0, cols = 0;
      conv_tile_grid(e, d, rows, cols);
      const bool along_m = sm90_pairs_along_m(e.config.gemm);
      const double along = along_m ? rows : cols, other = along_m ? cols : rows;
      CHECK(along >= o.multicast);
      CHECK(std::ceil(along / o.multicast) * o.multicast * other <= double(dev.sm_count) * sm90_conv_ctas_per_sm(e, dev));
      CHECK(conv_tactic_name(e.name, o) == std::string(e.name) + "@mc" + std::to_string(o.multicast));
      eight_on_128x64 |= o.multicast == 8 && e.config.gemm.tile.m == 128 && e.config.gemm.tile.n == 64 &&
                         e.config.iterator == ConvIterator::tma_im2col;
    }
    for (const ConvLaunchOptions& o : conv_launch_variants(e, d, dev)) {
      CHECK(o.multicast <= conv_tuned_multicast_max());
      if (o.multicast > 1) check_conv_tactic_round_trip(e, o, d, dev);
    }
  }
  CHECK(proposed >= 3);
  CHECK(eight_on_128x64);
  // Names: mc2 / mc4 / mc8 only, canonical order; out of range, with split-K or in clusters of more than 8
  // CTAs with cluster split-K: invalid.
  const std::string why = check_suffix_spellings(
      {"mc8@rg16", &ConvLaunchOptions::multicast, 8, {"rg16@mc8", "mc1", "mc3", "mc16", "mc08", "ck2@mc8", "mc2@ck2", "split2p@mc4"}});
  CHECK(why.find("mc<N> excludes") != std::string::npos);
  check_option_values(&ConvLaunchOptions::multicast, {0, 3, 6, 16}, 4, &ConvLaunchOptions::split_k);
  // Multicast groups that split K: clusters of mc × ck ≤ 8 CTAs, named ck before mc.
  ConvLaunchOptions both;
  std::string both_why;
  REQUIRE(parse_conv_launch_suffix("ck2@mc4", both, both_why));
  CHECK(both.cluster_k == 2);
  CHECK(both.multicast == 4);
  CHECK(check_conv_launch_options(both).ok());
  CHECK(launch_suffix(both) == "ck2@mc4");
  both.cluster_k = 4;
  CHECK(check_conv_launch_options(both).code() == StatusCode::invalid_argument);  // 16 CTAs
  CHECK_FALSE(parse_conv_launch_suffix("ck4@mc4", both, both_why));
  CHECK(both_why.find("at most 8") != std::string::npos);
}
