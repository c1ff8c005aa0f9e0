// Host tests: the sm90 launch policy (gemm/sm90_launch_policy.hpp): which dimension a cluster of 2 pairs
// and when an sm90 instance launches in clusters of 2 by default. No GPU needed.
#include <doctest/doctest.h>

#include "ktune/gemm/sm90_launch_policy.hpp"

using namespace ktune;

namespace {

constexpr GemmConfig sm90_tile(int bm, int bn) {
  GemmConfig c;
  c.arch_cc = 90;
  c.math = MathOp::wgmma_bf16;
  c.tile = {bm, bn, 64};
  c.warp = {bm == 256 ? 128 : 64, bn == 256 ? 256 : 128};
  c.stages = 4;
  return c;
}

}  // namespace

TEST_CASE("sm90 launch policy: pairs share the larger operand tile") {
  CHECK(sm90_pairs_along_m(sm90_tile(128, 256)));   // BN > BM: pair along M, sharing B
  CHECK(sm90_pairs_along_m(sm90_tile(128, 128)));   // equal: along M
  CHECK_FALSE(sm90_pairs_along_m(sm90_tile(256, 128)));  // BM > BN: pair along N, sharing A
}

TEST_CASE("sm90 launch policy: clusters of 2 by default only where tiles are plentiful and pair without much padding") {
  const GemmConfig wide = sm90_tile(128, 256), tall = sm90_tile(256, 128);
  // 4096^3: 32 x 16 tiles of 128x256 (pairs along M), 16 x 32 of 256x128 (along N).
  CHECK(sm90_default_cluster(wide, 32, 16, 132) == 2);
  CHECK(sm90_default_cluster(tall, 16, 32, 132) == 2);
  // Fewer tiles than multiprocessors: cluster 1.
  CHECK(sm90_default_cluster(wide, 8, 16, 132) == 1);
  // One tile along the pairing dimension: nothing to pair.
  CHECK(sm90_default_cluster(wide, 1, 200, 132) == 1);
  CHECK(sm90_default_cluster(tall, 200, 1, 132) == 1);
  // An odd count pads one tile per pair column: paired only from sm90_min_pair_tiles_if_odd tiles on.
  CHECK(sm90_default_cluster(wide, 3, 64, 132) == 1);
  CHECK(sm90_default_cluster(wide, sm90_min_pair_tiles_if_odd + 1, 64, 132) == 2);
  CHECK(sm90_default_cluster(wide, 2, 66, 132) == 2);
  static_assert(sm90_default_cluster(sm90_tile(128, 256), 64, 32, 132) == 2, "usable at compile time");
}
