// Host tests: stream-K tile scheduling (GemmLaunchOptions::stream_k, the sm90 wgmma instances). The
// schedule's arithmetic (kernel/schedule.cuh, gemm/split_k.hpp's plan_stream_k) is walked for every
// CTA as the kernel walks it, at small sizes and at the 32-bit limits: every (tile, k-tile) computed
// exactly once, only a CTA's first stream-K segment starts inside a tile, each tile's first piece adds
// exactly the later pieces (each flag consumed once), no CTA empty. Then the workspace, names, option
// checks, the variants the tuner times and the cost model. On a fake H200; no GPU needed.
#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "fake_device.hpp"
#include "ktune/gemm.hpp"
#include "ktune/gemm/split_k.hpp"
#include "ktune/gemm/tactics.hpp"

using namespace ktune;
using ktune::kernel::KRange;
using ktune::kernel::StreamKSchedule;

namespace {

// A registered sm90 bf16 'tn' cooperative instance with this block tile, or null.
const GemmKernelEntry* sk_sm90_entry(int tm, int tn) {
  for (const GemmKernelEntry& e : gemm_table().entries())
    if (!is_route(e) && e.config.math == MathOp::wgmma_bf16 && e.config.a_layout == Layout::row && e.config.b_layout == Layout::col &&
        e.config.tile.m == tm && e.config.tile.n == tn && e.config.schedule != WgSchedule::pingpong)
      return &e;
  return nullptr;
}

// Walks every CTA of schedule s over `tiles` tiles as the kernel does and checks the invariants.
// `exhaustive`: also mark every k-tile (small problems); otherwise count iterations only.
void check_walk(const StreamKSchedule& s, std::int64_t tiles, bool exhaustive) {
  CAPTURE(s.dp_tiles);
  CAPTURE(s.k_tiles);
  CAPTURE(s.ctas);
  CAPTURE(s.q);
  CAPTURE(s.r);
  const std::int64_t K = s.k_tiles;
  std::vector<int> covered(exhaustive ? static_cast<std::size_t>(tiles * K) : 0, 0);
  std::int64_t iterations = 0;
  std::map<int, int> flags;                // CTA → set by its later piece (1), consumed (0)
  std::vector<int> pieces_added;           // CTAs whose pieces some first piece added
  std::vector<int> later_piece_of_cta(static_cast<std::size_t>(s.ctas), 0);
  for (int b = 0; b < s.ctas; ++b) {
    CAPTURE(b);
    int segments = 0, sk_segments = 0;
    for (int w = kernel::stream_k_first(s, b); kernel::stream_k_more(s, b, w); w = kernel::stream_k_next(s, b, w)) {
      REQUIRE(++segments < 1000000);
      const int tile = kernel::stream_k_tile(s, w);
      const KRange kr = kernel::stream_k_range(s, b, w);
      REQUIRE(tile >= 0);
      REQUIRE(tile < tiles);
      REQUIRE(kr.first >= 0);
      REQUIRE(kr.count >= 1);
      REQUIRE(kr.first + kr.count <= K);
      iterations += kr.count;
      if (exhaustive)
        for (int k = kr.first; k < kr.first + kr.count; ++k) ++covered[static_cast<std::size_t>(tile * K + k)];
      if (w < s.dp_tiles) {
        CHECK(kr.first == 0);
        CHECK(kr.count == K);
        CHECK(w % s.ctas == b);
        CHECK(sk_segments == 0);  // data-parallel tiles first
        continue;
      }
      ++sk_segments;
      if (kr.first > 0) {  // a later piece: only as the CTA's first stream-K segment
        CHECK(sk_segments == 1);
        later_piece_of_cta[static_cast<std::size_t>(b)] = 1;
        flags[b] = 1;
      } else if (kr.count < K) {  // a first piece: the CTA's last segment; adds CTAs b + 1, ... (kernel's loop)
        CHECK_FALSE(kernel::stream_k_more(s, b, kernel::stream_k_next(s, b, w)));
        const int tile_end = w - s.dp_tiles + s.k_tiles;
        int covered_to = kr.first + kr.count;
        for (int c = b + 1; c < s.ctas && kernel::stream_k_begin(s, c) < tile_end; ++c) {
          pieces_added.push_back(c);
          // c's first segment continues this tile where the previous piece ended (k order)
          const int wseg = s.dp_tiles + kernel::stream_k_begin(s, c);
          CHECK(kernel::stream_k_tile(s, wseg) == tile);
          CHECK(kernel::stream_k_range(s, c, wseg).first == covered_to);
          covered_to += kernel::stream_k_range(s, c, wseg).count;
        }
        CHECK(covered_to == K);
      }
    }
    if (s.q > 0) CHECK(sk_segments >= 1);  // no CTA idle while there are stream-K iterations
  }
  CHECK(iterations == tiles * K);
  if (exhaustive)
    for (std::size_t i = 0; i < covered.size(); ++i) {
      CAPTURE(i);
      REQUIRE(covered[i] == 1);
    }
  // Every later piece is added by exactly one first piece, and nothing else is awaited.
  std::vector<int> added(static_cast<std::size_t>(s.ctas), 0);
  for (int c : pieces_added) ++added[static_cast<std::size_t>(c)];
  for (int b = 0; b < s.ctas; ++b) {
    CAPTURE(b);
    CHECK(added[static_cast<std::size_t>(b)] == later_piece_of_cta[static_cast<std::size_t>(b)]);
  }
}

StreamKSchedule plan(std::int64_t tiles, std::int64_t k_tiles, std::int64_t slots) {
  StreamKSchedule s;
  REQUIRE(plan_stream_k(tiles, k_tiles, slots, s));
  return s;
}

}  // namespace

TEST_CASE("stream-K schedule: every k-tile once, later pieces added once in k order, no idle CTA") {
  for (std::int64_t slots : {1, 2, 3, 7, 132, 264})
    for (std::int64_t tiles : {1, 2, 3, 5, 131, 132, 133, 263, 264, 265, 512, 1000})
      for (std::int64_t k : {1, 2, 3, 4, 7, 16, 64, 129}) {
        CAPTURE(slots);
        CAPTURE(tiles);
        CAPTURE(k);
        const StreamKSchedule s = plan(tiles, k, slots);
        CHECK(s.ctas <= slots);
        CHECK(s.ctas >= 1);
        if (tiles % slots == 0) {  // whole waves: data-parallel only
          CHECK(s.dp_tiles == tiles);
          CHECK(s.q == 0);
          CHECK(s.r == 0);
        } else if (tiles > slots) {  // one full wave and the partial one are stream-K
          CHECK(s.dp_tiles == tiles - tiles % slots - slots);
          CHECK(s.ctas == slots);
        } else {  // fewer tiles than CTAs: all stream-K, at least stream_k_min_iters each (or one tile each)
          CHECK(s.dp_tiles == 0);
          CHECK(s.ctas >= tiles);
          CHECK((s.ctas == tiles || tiles * k / s.ctas >= stream_k_min_iters));
        }
        check_walk(s, tiles, true);
      }
}

TEST_CASE("stream-K schedule: H200 shapes (128x256 tiles on 132 CTAs)") {
  // bf16 4096^3: 16 x 32 = 512 tiles of 64 k-tiles: 2 waves data-parallel, 116 + 132 tiles streamed.
  StreamKSchedule s = plan(512, 64, 132);
  CHECK(s.dp_tiles == 264);
  CHECK(s.ctas == 132);
  CHECK(std::int64_t{s.q} * 132 + s.r == 248 * 64);
  check_walk(s, 512, true);
  // 128x4096x4096: 16 tiles x 64 k-tiles over 132 CTAs (1024 / 4 = 256 > 132: all of them).
  s = plan(16, 64, 132);
  CHECK(s.ctas == 132);
  check_walk(s, 16, true);
  // 1024^3: 32 tiles x 16 k-tiles: 512 / stream_k_min_iters = 128 CTAs.
  s = plan(32, 16, 132);
  CHECK(s.ctas == 128);
  check_walk(s, 32, true);
}

TEST_CASE("stream-K schedule: 32-bit limits") {
  StreamKSchedule s;
  CHECK_FALSE(plan_stream_k(0, 4, 132, s));
  CHECK_FALSE(plan_stream_k(4, 0, 132, s));
  CHECK_FALSE(plan_stream_k(4, 4, 0, s));
  // dp_tiles + stream-K iterations must stay below 2^31.
  const std::int64_t big_k = (std::int64_t{1} << 31) / 2;  // 2 tiles x 2^30 k-tiles = 2^31 iterations
  CHECK_FALSE(plan_stream_k(2, big_k, 132, s));
  CHECK(plan_stream_k(1, big_k, 132, s));  // 2^30 iterations over 132 CTAs
  check_walk(s, 1, false);
  CHECK_FALSE(plan_stream_k(1, std::int64_t{1} << 31, 132, s));  // k_tiles itself beyond int
  // Many tiles, one k-tile each: tiles up to 2^31 - 1 with whole waves only, or the last waves streamed.
  CHECK(plan_stream_k(0x7fffffff, 1, 132, s));
  CHECK(std::int64_t{s.dp_tiles} + std::int64_t{s.q} * s.ctas + s.r == 0x7fffffff);
  // Near the limit with a partial wave: the walk's indices (w + k_tiles) stay below 2^31.
  REQUIRE(plan_stream_k(0x7fffffff / 64, 64, 132, s));
  CHECK(std::int64_t{s.dp_tiles} + (std::int64_t{s.q} * s.ctas + s.r) < (std::int64_t{1} << 31));
  for (int b : {0, 1, 65, 130, 131}) {  // the last CTAs' walks (their data-parallel tiles then stream-K)
    CAPTURE(b);
    int w = kernel::stream_k_first(s, b), n = 0;
    std::int64_t its = 0;
    for (; kernel::stream_k_more(s, b, w) && n < 100000000; w = kernel::stream_k_next(s, b, w), ++n) its += kernel::stream_k_range(s, b, w).count;
    CHECK(w > 0);  // no wrap-around
    CHECK(its == std::int64_t{s.dp_tiles / s.ctas} * 64 + kernel::stream_k_begin(s, b + 1) - kernel::stream_k_begin(s, b));
  }
  // CTAs beyond stream_k_max_ctas are not used (r·b must fit in 32 bits).
  REQUIRE(plan_stream_k(100000, 3, 1000000, s));
  CHECK(s.ctas <= kernel::stream_k_max_ctas);
  check_walk(s, 100000, false);
}

TEST_CASE("stream-K: workspace, names, option checks") {
  const GemmKernelEntry* e = sk_sm90_entry(128, 128);  // sm90_wgmma_f16_small, warpgroup tiles 64x128
  REQUIRE(e != nullptr);
  CHECK(supports_stream_k(e->config));
  // One flag and one WM×WN fp32 partial per (CTA, warpgroup sub-tile).
  const SplitKLayout l = stream_k_layout(e->config, 132);
  CHECK(l.semaphore_bytes == (132 * stream_k_subtiles(e->config) * 4 + 255) / 256 * 256);
  CHECK(l.partials_offset == l.semaphore_bytes);
  CHECK(l.partial_ld == e->config.warp.n);
  CHECK(l.total_bytes == l.partials_offset + std::size_t{132} * 128 * 128 * 4);
  CHECK(stream_k_subtiles(e->config) == e->config.consumer_warpgroups());
  CHECK(stream_k_layout(e->config, 0).total_bytes == 0);

  GemmLaunchOptions o;
  o.stream_k = true;
  CHECK(launch_suffix(o) == "sk");
  CHECK(tactic_name("inst", o) == "inst@sk");
  o.raster_group = 16;
  CHECK(launch_suffix(o) == "sk@rg16");
  GemmLaunchOptions back;
  std::string why;
  REQUIRE(parse_launch_suffix("sk@rg16", back, why));
  CHECK(same_launch(back, o));
  CHECK_FALSE(same_launch(back, GemmLaunchOptions{}));
  CHECK_FALSE(parse_launch_suffix("rg16@sk", back, why));  // not canonical
  CHECK_FALSE(parse_launch_suffix("sk2", back, why));
  CHECK_FALSE(parse_launch_suffix("split4p@sk", back, why));  // exclude each other
  CHECK(why.find("exclude") != std::string::npos);

  GemmLaunchOptions both;
  both.stream_k = true;
  both.split_k = 4;
  CHECK(check_launch_option_ranges(both).code() == StatusCode::invalid_argument);
  GemmLaunchOptions sk;
  sk.stream_k = true;
  CHECK(check_launch_options(*e, sk).ok());
  // 128 accumulators per consumer thread (64x256 / 128x128 warpgroup tiles): compiled out (spills), refused.
  int big = 0;
  for (const GemmKernelEntry& x : gemm_table().entries())
    if (is_wgmma(x.config.math) && !is_route(x)) {
      CAPTURE(x.name);
      CHECK(supports_stream_k(x.config) == (x.config.warp.m * x.config.warp.n <= 64 * 128 && !is_swap_ab(x.config)));
      if (!supports_stream_k(x.config)) {
        ++big;
        CHECK(check_launch_options(x, sk).code() == StatusCode::unsupported);
        CHECK_FALSE(stream_k_worth_timing(x.config, x.resources, ktune::test::bf16_tn_desc(4096, 4096, 4096), ktune::test::fake_h200()));
      }
    }
  CHECK(big > 0);
  for (const GemmKernelEntry& x : gemm_table().entries())
    if (!is_wgmma(x.config.math)) {
      CAPTURE(x.name);
      CHECK(check_launch_options(x, sk).code() == StatusCode::unsupported);
    }
}

TEST_CASE("stream-K: variants where the last wave is partial, ranked by the cost model") {
  const DeviceInfo dev = ktune::test::fake_h200();
  const GemmKernelEntry* e = sk_sm90_entry(128, 128);
  REQUIRE(e != nullptr);
  auto has_sk = [&](const GemmDesc& d) {
    for (const GemmLaunchOptions& o : launch_variants(*e, d, dev))
      if (o.stream_k) return true;
    return false;
  };
  const GemmDesc cube = ktune::test::bf16_tn_desc(4096, 4096, 4096);  // 1024 tiles: 7.76 waves, 3% idle
  CHECK_FALSE(has_sk(cube));
  CHECK_FALSE(has_sk(ktune::test::bf16_tn_desc(3000, 4096, 4096)));  // 24 x 32 = 768 tiles: 5.8 waves, 3% idle
  CHECK(has_sk(ktune::test::bf16_tn_desc(128 * 10, 128 * 20, 4096))); // 200 tiles: 2 waves, 24% idle
  CHECK(has_sk(ktune::test::bf16_tn_desc(1024, 1024, 1024)));        // 64 tiles
  CHECK(has_sk(ktune::test::bf16_tn_desc(128, 4096, 4096)));         // 32 tiles
  CHECK_FALSE(has_sk(ktune::test::bf16_tn_desc(128 * 12, 128 * 22, 4096)));  // 264 tiles: two whole waves
  CHECK_FALSE(has_sk(ktune::test::bf16_tn_desc(4096, 4096, 64)));    // one k-tile: nothing to share
  GemmLaunchOptions sk;
  sk.stream_k = true;
  // Never ahead of the instance's default (measured slower on the H200), just behind it.
  for (const GemmDesc& d : {cube, ktune::test::bf16_tn_desc(128, 4096, 4096), ktune::test::bf16_tn_desc(1024, 1024, 1024)}) {
    CHECK(tactic_cost_factor(*e, sk, d, dev) > 1.0);
    CHECK(tactic_cost_factor(*e, sk, d, dev) < 1.01);
  }
  // sm80 instances never get the variant.
  for (const GemmKernelEntry& x : gemm_table().entries())
    if (!is_wgmma(x.config.math) && !is_route(x)) {
      for (const GemmLaunchOptions& o : launch_variants(x, cube, dev)) CHECK_FALSE(o.stream_k);
      break;
    }
}
