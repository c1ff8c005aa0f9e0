// Host tests: the sm90 launch policy (gemm/sm90_launch_policy.hpp): which dimension a cluster of 2 pairs;
// when the GEMM launchers launch programmatically (gemm/kernel/pdl.hpp: the switch, the size rule, the
// per-launch PdlChoice and the tuner's PDL twin). No GPU needed.
#include <doctest/doctest.h>

#include "ktune/dispatch.hpp"
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

// A problem of these sizes (the PDL rules read only M·N·K).
GemmDesc shape(std::int64_t m, std::int64_t n, std::int64_t k) {
  GemmDesc d;
  d.m = m;
  d.n = n;
  d.k = k;
  return d;
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
  // 2^33: 2048^3 programmatic, one more row not; the decode shapes (32×28672×8192 = 7.5e9) are.
  CHECK(kernel::pdl_wanted(PdlMode::small_only, shape(2048, 2048, 2048)));
  CHECK_FALSE(kernel::pdl_wanted(PdlMode::small_only, shape(2049, 2048, 2048)));
  CHECK(kernel::pdl_wanted(PdlMode::small_only, shape(32, 28672, 8192)));
  CHECK_FALSE(kernel::pdl_wanted(PdlMode::small_only, shape(4096, 4096, 4096)));
  CHECK(kernel::pdl_wanted(PdlMode::on, shape(4096, 4096, 4096)));
  CHECK_FALSE(kernel::pdl_wanted(PdlMode::off, shape(1, 64, 64)));
}

TEST_CASE("programmatic dependent launch: the per-launch choice over the switch and the rule (pdl_launch)") {
  using kernel::PdlMode;
  GemmDesc small, large;  // 2^33 exactly (the rule's last programmatic size), and 4096^3
  small.m = small.n = small.k = 2048;
  large.m = large.n = large.k = 4096;
  struct Row {
    PdlChoice choice;
    PdlMode env;
    bool small, large;  // programmatic?
  };
  const Row rows[] = {
      {PdlChoice::rule, PdlMode::small_only, true, false}, {PdlChoice::rule, PdlMode::on, true, true},
      {PdlChoice::rule, PdlMode::off, false, false},       {PdlChoice::on, PdlMode::small_only, true, true},
      {PdlChoice::on, PdlMode::on, true, true},            {PdlChoice::on, PdlMode::off, true, true},
      {PdlChoice::off, PdlMode::small_only, false, false}, {PdlChoice::off, PdlMode::on, false, false},
      {PdlChoice::off, PdlMode::off, false, false},
  };
  for (const Row& r : rows) {
    CAPTURE(static_cast<int>(r.choice));
    CAPTURE(static_cast<int>(r.env));
    CHECK(kernel::pdl_launch(r.choice, r.env, small) == r.small);
    CHECK(kernel::pdl_launch(r.choice, r.env, large) == r.large);
    // `rule` is exactly the switch's rule.
    if (r.choice == PdlChoice::rule) CHECK(kernel::pdl_launch(r.choice, r.env, large) == kernel::pdl_wanted(r.env, large));
  }
  CHECK(GemmLaunchOptions{}.pdl == PdlChoice::rule);  // the default launch is today's behaviour
}

TEST_CASE("programmatic dependent launch: the tuner's twin is the rule's opposite, under the rule and up to 2^35 (pdl_twin)") {
  using kernel::PdlMode;
  // Programmatic by the rule (≤ 2^33): the twin is @nopdl.
  CHECK(kernel::pdl_twin(PdlMode::small_only, shape(1, 4096, 4096)) == PdlChoice::off);
  CHECK(kernel::pdl_twin(PdlMode::small_only, shape(32, 11008, 4096)) == PdlChoice::off);
  CHECK(kernel::pdl_twin(PdlMode::small_only, shape(2048, 2048, 2048)) == PdlChoice::off);
  // Plain by the rule, short enough for PDL to matter (2^33 < M·N·K ≤ 2^35): the twin is @pdl.
  CHECK(kernel::pdl_twin(PdlMode::small_only, shape(2049, 2048, 2048)) == PdlChoice::on);
  CHECK(kernel::pdl_twin(PdlMode::small_only, shape(4096, 4096, 2048)) == PdlChoice::on);  // 2^35 exactly
  // Longer: no twin.
  CHECK(kernel::pdl_twin(PdlMode::small_only, shape(4096, 4096, 2049)) == PdlChoice::rule);
  CHECK(kernel::pdl_twin(PdlMode::small_only, shape(4096, 4096, 4096)) == PdlChoice::rule);
  // The switch set (KTUNE_SM90_PDL / KTUNE_SM80_PDL = 0 or 1): it decides, no twin.
  for (PdlMode env : {PdlMode::on, PdlMode::off}) {
    CHECK(kernel::pdl_twin(env, shape(1, 4096, 4096)) == PdlChoice::rule);
    CHECK(kernel::pdl_twin(env, shape(4096, 4096, 2048)) == PdlChoice::rule);
  }
}
