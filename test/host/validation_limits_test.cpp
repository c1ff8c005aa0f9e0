// Host tests: what fuzzing found (test/fuzz/, corpus files bug_*) in argument validation and the cache. Byte
// extents that overflow 64 bits or wrap around the address space, enum values outside the
// enumerations, the tuning-cache line of an M bucketed to 2^31, and merge order; launch options
// outside their ranges; the kernels' 32-bit raster and split-K index math at its limits. Pointers are
// fake addresses.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "gemm_problem.hpp"
#include "ktune/device.hpp"
#include "ktune/dispatch.hpp"
#include "ktune/gemm/kernel/schedule.cuh"
#include "ktune/gemm/tactics.hpp"
#include "ktune/problem.hpp"
#include "ktune/tuner/cache.hpp"
#include "ktune/tuner/key.hpp"

using namespace ktune;

namespace {

constexpr std::int64_t kMaxDim = (std::int64_t{1} << 31) - 257;

GemmDesc f16_tn(std::int64_t m, std::int64_t n, std::int64_t k) { return ktune::test::tn_problem(DType::f16, m, n, k); }

// Buffers 1 TiB apart.
GemmOperands far_ops() {
  GemmOperands o;
  o.a = reinterpret_cast<const void*>(std::uintptr_t{1} << 40);
  o.b = reinterpret_cast<const void*>(std::uintptr_t{2} << 40);
  o.c = reinterpret_cast<const void*>(std::uintptr_t{3} << 40);
  o.d = reinterpret_cast<void*>(std::uintptr_t{4} << 40);
  o.bias = reinterpret_cast<const void*>(std::uintptr_t{5} << 40);
  o.residual = reinterpret_cast<const void*>(std::uintptr_t{6} << 40);
  return o;
}

void check(const Status& s, StatusCode code, const std::string& fragment) {
  CAPTURE(s.to_string());
  CHECK(s.code() == code);
  CHECK(s.message().find(fragment) != std::string::npos);
}

}  // namespace

TEST_CASE("validate: a leading dimension whose byte extent overflows 64 bits is rejected, not computed") {
  // (M-1)·ldd·4 > 2^63 (this was signed overflow in the overlap check).
  GemmDesc d = f16_tn(1024, 1024, 1024);
  d.d_type = DType::f32;
  d.ldd = std::int64_t{1} << 61;
  check(validate(d, far_ops()), StatusCode::invalid_argument, "D does not fit in the address space");
  d = f16_tn(1024, 1024, 1024);
  d.lda = std::int64_t{1} << 62;
  check(validate(d, far_ops()), StatusCode::invalid_argument, "A does not fit in the address space");
  d = f16_tn(1024, 1024, 1024);
  d.epilogue.beta = 1.0f;
  d.ldc = INT64_MAX;
  check(validate(d, far_ops()), StatusCode::invalid_argument, "C does not fit in the address space");
  d = f16_tn(1024, 1024, 1024);
  d.epilogue.residual = true;
  d.ldr = INT64_MAX / 2;
  check(validate(d, far_ops()), StatusCode::invalid_argument, "residual does not fit in the address space");
  // C and the residual are not looked at when the epilogue does not read them.
  d = f16_tn(1024, 1024, 1024);
  d.ldc = INT64_MAX;
  d.ldr = INT64_MAX;
  CHECK(validate(d, far_ops()).ok());
}

TEST_CASE("validate: the largest dimensions are checked without overflow") {
  // M = N = 2^31 - 257 in f32: D spans ~2^64 bytes.
  GemmDesc d = f16_tn(kMaxDim, kMaxDim, 64);
  d.d_type = DType::f32;
  check(validate(d, far_ops()), StatusCode::invalid_argument, "D does not fit in the address space");
  // Large but addressable: M = 2^31 - 257, N = 8 (D is 2^36 bytes), far-apart buffers.
  d = f16_tn(kMaxDim, 8, 64);
  CHECK(validate(d, far_ops()).ok());
}

TEST_CASE("validate: an operand that wraps around the end of the address space is rejected") {
  GemmDesc d = f16_tn(256, 256, 256);
  GemmOperands o = far_ops();
  o.d = reinterpret_cast<void*>(UINTPTR_MAX - 1023);  // 2-byte aligned, 256×256×2 bytes do not fit
  check(validate(d, o), StatusCode::invalid_argument, "D does not fit in the address space");
  o = far_ops();
  o.b = reinterpret_cast<const void*>(UINTPTR_MAX - 15);
  check(validate(d, o), StatusCode::invalid_argument, "B does not fit in the address space");
  // Ending just below the top of the address space fits (ending at 2^64 itself does not: the end
  // address must be representable).
  o = far_ops();
  o.a = reinterpret_cast<const void*>(UINTPTR_MAX - (256 * 256 * 2 + 1));
  CHECK(validate(d, o).ok());
  o.a = reinterpret_cast<const void*>(UINTPTR_MAX - (256 * 256 * 2 - 1));  // ends at 2^64
  check(validate(d, o), StatusCode::invalid_argument, "A does not fit in the address space");
}

TEST_CASE("validate: enum values outside their enumerations are invalid arguments") {
  const GemmOperands o = far_ops();
  GemmDesc d = f16_tn(128, 128, 128);
  d.ab_type = static_cast<DType>(7);
  check(validate(d, o), StatusCode::invalid_argument, "unknown element type");
  d = f16_tn(128, 128, 128);
  d.d_type = static_cast<DType>(0xF2);
  check(validate(d, o), StatusCode::invalid_argument, "unknown element type");
  d = f16_tn(128, 128, 128);
  d.b_layout = static_cast<Layout>(2);
  check(validate(d, o), StatusCode::invalid_argument, "unknown layout");
  d = f16_tn(128, 128, 128);
  d.epilogue.activation = static_cast<Activation>(9);
  check(validate(d, o), StatusCode::invalid_argument, "unknown activation");
  d = f16_tn(128, 128, 128);
  d.compute = static_cast<Compute>(3);
  check(validate(d, o), StatusCode::invalid_argument, "unknown compute type");
  // f32 operands keep their specific answer.
  d.ab_type = DType::f32;
  check(validate(d, o), StatusCode::unsupported, "unknown compute type for f32 operands");
}

TEST_CASE("tuner cache: the pow2 bucket of M in (2^30, 2^31) is 2^31, and its cache line reads back") {
  using namespace ktune::tuner;
  GemmDesc d = f16_tn((std::int64_t{1} << 30) + 1, 1024, 1024);
  const GemmOperands o = far_ops();
  REQUIRE(validate(d, o).ok());
  const ProblemKey key = make_key(d, alignment_of(d, o), MBucketing::pow2);
  CHECK(key.m == std::int64_t{1} << 31);
  CacheEntry e;
  e.key = key;
  e.id = CacheIdentity{"dev", "0.1.0", "0123456789abcdef"};
  e.instance = "ktune_gemm_sm80_f16_tn_128x256x32_w64x64_s4_a8";
  e.ms = 1.5;
  e.tflops = 1.0;
  CacheEntry back;
  std::string why;
  REQUIRE_MESSAGE(parse_entry_line(to_line(e), back, why), why);
  CHECK(back.key == key);
  // 2^31 is still out of range for exact keys, and for N and K.
  std::string line = to_line(e);
  line.replace(line.find("\"pow2\""), 6, "\"exact\"");
  CHECK_FALSE(parse_entry_line(line, back, why));
  e.key.m = 1024;
  e.key.n = std::int64_t{1} << 31;
  CHECK_FALSE(parse_entry_line(to_line(e), back, why));
}

TEST_CASE("tuner cache: merging entries that differ only in tflops does not depend on the order") {
  using namespace ktune::tuner;
  CacheEntry a;
  a.key.m = a.key.n = a.key.k = 4096;
  a.id = CacheIdentity{"dev", "0.1.0", "0123456789abcdef"};
  a.instance = "ktune_gemm_sm80_f16_tn_128x256x32_w64x64_s4_a8";
  a.ms = 0.9;
  a.tflops = 152.6;
  CacheEntry b = a;
  b.tflops = 15.26;  // e.g. a hand-edited line
  CacheStore ab, ba;
  ab.insert(a);
  ab.insert(b);
  ba.insert(b);
  ba.insert(a);
  CHECK(ab.serialize() == ba.serialize());
  CHECK(ab.find(a.key, a.id)->tflops == 152.6);
}

TEST_CASE("launch options outside their ranges are invalid arguments, and every cached tactic is in range") {
  GemmKernelEntry e;
  e.name = "ktune_gemm_test_entry";
  GemmLaunchOptions o;
  CHECK(check_launch_options(e, o).ok());
  for (int rg : {0, -1, max_raster_group + 1, std::numeric_limits<int>::max(), std::numeric_limits<int>::min()}) {
    CAPTURE(rg);
    o = {};
    o.raster_group = rg;
    check(check_launch_options(e, o), StatusCode::invalid_argument, "raster_group must be in [1, 1024]");
  }
  for (int cl : {-1, 3, 8}) {
    CAPTURE(cl);
    o = {};
    o.cluster = cl;
    check(check_launch_options(e, o), StatusCode::invalid_argument, "cluster must be 0");
  }
  o = {};
  o.max_ctas = -1;
  check(check_launch_options(e, o), StatusCode::invalid_argument, "max_ctas must not be negative");
  for (int ok_value : {0, 1, 2}) {
    o = {};
    o.cluster = ok_value;
    CHECK(check_launch_options(e, o).ok());
  }
  o = {};
  o.raster_group = max_raster_group;
  o.max_ctas = 1 << 20;
  CHECK(check_launch_options(e, o).ok());
  // What the cache's tactic parser accepts, check_launch_options accepts (an entry that a cache may
  // hold never fails at launch for its options).
  for (const char* suffix : {"cl1", "cl2", "rg1", "rg16", "rg1024", "ctas1", "ctas100000", "cl2@rg16@ctas64"}) {
    CAPTURE(suffix);
    GemmLaunchOptions parsed;
    std::string why;
    if (!parse_launch_suffix(suffix, parsed, why)) continue;  // not canonical: the parser's business
    CHECK(check_launch_options(e, parsed).ok());
  }
}

namespace {

// The raster order in 64-bit arithmetic with the caller's group as given: what grouped_raster must
// compute, without the clamp and without any chance of overflow.
kernel::TileCoord raster_reference(std::int64_t block, std::int64_t tiles_m, std::int64_t tiles_n, std::int64_t group) {
  const std::int64_t per_group = group * tiles_n;
  const std::int64_t group_id = block / per_group;
  const std::int64_t first_m = group_id * group;
  const std::int64_t rows = std::min(tiles_m - first_m, group);
  const std::int64_t in_group = block - group_id * per_group;
  return {static_cast<int>(first_m + in_group % rows), static_cast<int>(in_group / rows)};
}

}  // namespace

TEST_CASE("grouped_raster: every block gets its own tile, for every group, on small grids") {
  for (int tm = 1; tm <= 13; ++tm)
    for (int tn = 1; tn <= 11; ++tn)
      for (int g : {1, 2, 3, 8, 16, 1024, std::numeric_limits<int>::max()}) {
        CAPTURE(tm);
        CAPTURE(tn);
        CAPTURE(g);
        std::vector<int> seen(static_cast<std::size_t>(tm * tn), 0);
        for (int b = 0; b < tm * tn; ++b) {
          const kernel::TileCoord t = kernel::grouped_raster(b, tm, tn, g);
          const kernel::TileCoord r = raster_reference(b, tm, tn, g);
          REQUIRE(t.m == r.m);
          REQUIRE(t.n == r.n);
          REQUIRE(t.m >= 0);
          REQUIRE(t.m < tm);
          REQUIRE(t.n >= 0);
          REQUIRE(t.n < tn);
          ++seen[static_cast<std::size_t>(t.m * tn + t.n)];
        }
        for (int v : seen) REQUIRE(v == 1);
      }
}

TEST_CASE("grouped_raster: 32-bit math at the limits (tile counts up to 2^31 - 1, groups up to INT_MAX)") {
  constexpr int kIntMax = std::numeric_limits<int>::max();
  // Grids whose tile count is at most 2^31 - 1 (the launchers reject more: "too many output tiles").
  // 1023 x 2^21: N = 2^27 with 64-wide tiles, where group 1024 used to compute 1024 · 2^21 = 2^31.
  const std::pair<int, int> grids[] = {{1, kIntMax}, {kIntMax, 1}, {1023, 1 << 21}, {46340, 46340}, {65535, 32768}, {2, (1 << 30) - 1}};
  for (const auto& [tm, tn] : grids) {
    const std::int64_t tiles = std::int64_t{tm} * tn;
    REQUIRE(tiles <= kIntMax);
    for (int g : {1, 8, 16, 64, 1024, 46341, kIntMax}) {
      CAPTURE(tm);
      CAPTURE(tn);
      CAPTURE(g);
      // Blocks at both ends, around the first group boundaries and spread over the whole grid.
      std::vector<std::int64_t> blocks{0, 1, tiles / 2, tiles - 2, tiles - 1};
      const std::int64_t per_group = std::min<std::int64_t>(g, tm) * tn;
      for (std::int64_t b : {per_group - 1, per_group, per_group + 1, 2 * per_group - 1, 2 * per_group}) blocks.push_back(b);
      std::uint64_t x = 0x9E3779B97F4A7C15ull;
      for (int i = 0; i < 64; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        blocks.push_back(static_cast<std::int64_t>(x % static_cast<std::uint64_t>(tiles)));
      }
      for (std::int64_t b : blocks) {
        if (b < 0 || b >= tiles) continue;
        CAPTURE(b);
        const kernel::TileCoord t = kernel::grouped_raster(static_cast<int>(b), tm, tn, g);
        const kernel::TileCoord r = raster_reference(b, tm, tn, g);
        CHECK(t.m == r.m);
        CHECK(t.n == r.n);
        CHECK((t.m >= 0 && t.m < tm && t.n >= 0 && t.n < tn));
      }
    }
  }
  // A group below 1 (never passed by the launchers, which map it to 8) still stays in the grid.
  const kernel::TileCoord t = kernel::grouped_raster(5, 3, 4, 0);
  CHECK((t.m >= 0 && t.m < 3 && t.n >= 0 && t.n < 4));
  CHECK(kernel::effective_raster_group(3, -7) == 1);
  CHECK(kernel::effective_raster_group(3, 1024) == 3);
  CHECK(kernel::effective_raster_group(4096, 1024) == 1024);
}

// (The one split of every split-K kernel: sm80, sm90 and conv.)
TEST_CASE("k_slice: slices cover every k-tile once, as evenly as possible, up to 2^31 - 1 k-tiles and 256 slices") {
  constexpr int kIntMax = std::numeric_limits<int>::max();
  for (int k_tiles : {1, 2, 7, 64, 65, 255, 256, 257, 65536, kIntMax - 1, kIntMax})
    for (int splits : {1, 2, 3, 5, 7, 8, 128, 255, 256}) {
      CAPTURE(k_tiles);
      CAPTURE(splits);
      std::int64_t next = 0;
      int lo = kIntMax, hi = 0;
      for (int s = 0; s < splits; ++s) {
        const kernel::KRange r = kernel::k_slice(k_tiles, s, splits);
        REQUIRE(r.first == next);
        REQUIRE(r.count >= 0);
        next += r.count;
        lo = std::min(lo, r.count);
        hi = std::max(hi, r.count);
      }
      CHECK(next == k_tiles);
      CHECK(hi - lo <= 1);
      // Exactly [k·s/S, k·(s+1)/S) (the 64-bit form of the split).
      for (int s : {0, splits / 2, splits - 1})
        CHECK(kernel::k_slice(k_tiles, s, splits).first == static_cast<std::int64_t>(k_tiles) * s / splits);
    }
  CHECK(kernel::k_slice(40, 0, 0).count == 40);  // split_k ≤ 1 (kernel parameters of an unsplit launch): every k-tile
}

TEST_CASE("device_bit: one bit per ordinal below 64, none beyond (those devices are checked every time)") {
  CHECK(device_bit(0) == 1u);
  CHECK(device_bit(5) == 32u);
  CHECK(device_bit(63) == (std::uint64_t{1} << 63));
  CHECK(device_bit(64) == 0u);  // not ordinal 0's bit
  CHECK(device_bit(65) == 0u);
  CHECK(device_bit(-1) == 0u);
}
