// Host tests: GemmConfig and ConvConfig compare member-wise (TileShape and WarpShape have ==, so the
// defaulted operator== of both configs is not deleted), at compile time and at run time.
#include <doctest/doctest.h>

#include <type_traits>

#include "ktune/conv/config.hpp"
#include "ktune/gemm/config.hpp"

using namespace ktune;

namespace {

constexpr GemmConfig kBase{};

template <class T>
concept EqualityComparable = requires(const T& a, const T& b) {
  { a == b } -> std::same_as<bool>;
  { a != b } -> std::same_as<bool>;
};
static_assert(EqualityComparable<TileShape> && EqualityComparable<WarpShape>);
static_assert(EqualityComparable<GemmConfig> && EqualityComparable<ConvConfig>);
static_assert(kBase == GemmConfig{});  // usable in constant expressions
static_assert(TileShape{128, 128, 32} != TileShape{128, 128, 64});

// One field of a GemmConfig changed.
template <class F>
GemmConfig changed(F f) {
  GemmConfig c = kBase;
  f(c);
  return c;
}

}  // namespace

TEST_CASE("config equality: GemmConfig compares every field, tile and warp shapes included") {
  CHECK(kBase == GemmConfig{});
  const GemmConfig variants[] = {
      changed([](GemmConfig& c) { c.arch_cc = 90; }),
      changed([](GemmConfig& c) { c.math = MathOp::mma_bf16; }),
      changed([](GemmConfig& c) { c.a_layout = Layout::col; }),
      changed([](GemmConfig& c) { c.b_layout = Layout::row; }),
      changed([](GemmConfig& c) { c.tile.m = 64; }),
      changed([](GemmConfig& c) { c.tile.n = 256; }),
      changed([](GemmConfig& c) { c.tile.k = 64; }),
      changed([](GemmConfig& c) { c.warp.m = 32; }),
      changed([](GemmConfig& c) { c.warp.n = 32; }),
      changed([](GemmConfig& c) { c.stages = 4; }),
      changed([](GemmConfig& c) { c.align = 4; }),
  };
  for (const GemmConfig& v : variants) {
    CAPTURE(instance_name(v).view());
    CHECK(v != kBase);
    CHECK_FALSE(v == kBase);
    CHECK(v == v);
  }
  // Equal configs have equal names, and the other way round for these.
  for (const GemmConfig& x : variants)
    for (const GemmConfig& y : variants) CHECK((x == y) == (instance_name(x).view() == instance_name(y).view()));
}

TEST_CASE("config equality: ConvConfig compares its GEMM mainloop, iterator and channels") {
  ConvConfig a;
  ConvConfig b = a;
  CHECK(a == b);
  b.gemm.tile.k = 64;
  CHECK(a != b);
  b = a;
  b.gemm.warp.m = 32;
  CHECK(a != b);
  b = a;
  b.iterator = ConvIterator::analytic;
  CHECK(a != b);
  b = a;
  b.channels = 3;
  CHECK(a != b);
}
