// Host tests: the sm90 launch policy (gemm/sm90_launch_policy.hpp): which dimension a cluster of 2 pairs;
// when the GEMM launchers launch programmatically (gemm/kernel/pdl.hpp). No GPU needed.
#include <doctest/doctest.h>

#include "ktune/gemm/kernel/pdl.hpp"
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

TEST_CASE("programmatic dependent launch: the switch values and the size rule (KTUNE_SM90_PDL, KTUNE_SM80_PDL)") {
  using kernel::PdlMode;
  CHECK(kernel::pdl_mode_of(nullptr) == PdlMode::small_only);
  CHECK(kernel::pdl_mode_of("") == PdlMode::small_only);
  CHECK(kernel::pdl_mode_of("0") == PdlMode::off);
  CHECK(kernel::pdl_mode_of("1") == PdlMode::on);
  CHECK(kernel::pdl_mode_of("2") == PdlMode::on);
  GemmDesc d;
  auto shape = [&](std::int64_t m, std::int64_t n, std::int64_t k) -> const GemmDesc& {
    d.m = m;
    d.n = n;
    d.k = k;
    return d;
  };
  // 2^33: 2048^3 programmatic, one more row not; the decode shapes (32×28672×8192 = 7.5e9) are.
  CHECK(kernel::pdl_wanted(PdlMode::small_only, shape(2048, 2048, 2048)));
  CHECK_FALSE(kernel::pdl_wanted(PdlMode::small_only, shape(2049, 2048, 2048)));
  CHECK(kernel::pdl_wanted(PdlMode::small_only, shape(32, 28672, 8192)));
  CHECK_FALSE(kernel::pdl_wanted(PdlMode::small_only, shape(4096, 4096, 4096)));
  CHECK(kernel::pdl_wanted(PdlMode::on, shape(4096, 4096, 4096)));
  CHECK_FALSE(kernel::pdl_wanted(PdlMode::off, shape(1, 64, 64)));
}
