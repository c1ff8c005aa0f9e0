// Host tests: the sm90 launch policy (gemm/sm90_launch_policy.hpp): which dimension a cluster of 2 pairs.
// No GPU needed.
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
  CHECK(sm90_pairs_along_m(sm90_tile(128, 256)));        // BN > BM: pair along M, sharing B
  CHECK(sm90_pairs_along_m(sm90_tile(128, 128)));        // equal: along M
  CHECK_FALSE(sm90_pairs_along_m(sm90_tile(256, 128)));  // BM > BN: pair along N, sharing A
  static_assert(sm90_pairs_along_m(sm90_tile(64, 256)), "usable at compile time");
}
