// Host-side pieces of the CUDA tuning backend: number conversions, synthetic data, repeat control,
// and its behaviour on a machine without a GPU.
#include <doctest/doctest.h>

#include <cmath>
#include <set>

#include "ktune/tuner/cuda_backend.hpp"
#include "ktune/tuner/default.hpp"
#include "tuner_fake.hpp"

using namespace ktune::tuner;
using namespace ktune_test;

TEST_CASE("tuner backend: f16 and bf16 host conversions round-trip and round to nearest even") {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const auto x = static_cast<std::uint16_t>(h);
    const float f = host_fp::from_f16(x);
    if (std::isnan(f)) {
      CHECK(std::isnan(host_fp::from_f16(host_fp::to_f16(f))));
      continue;
    }
    REQUIRE(host_fp::to_f16(f) == x);
    const float g = host_fp::from_bf16(x);
    if (!std::isnan(g)) REQUIRE(host_fp::to_bf16(g) == x);
  }
  CHECK(host_fp::to_f16(1.0f) == 0x3c00);
  CHECK(host_fp::to_f16(65504.0f) == 0x7bff);
  CHECK(host_fp::to_f16(65520.0f) == 0x7c00);   // rounds to infinity
  CHECK(host_fp::to_f16(1.0f + 1.0f / 2048) == 0x3c00);  // tie to even
  CHECK(host_fp::to_f16(1.0f + 3.0f / 2048) == 0x3c02);
  CHECK(host_fp::from_f16(host_fp::to_f16(std::ldexp(1.0f, -24))) == std::ldexp(1.0f, -24));  // smallest subnormal
  CHECK(host_fp::to_f16(std::ldexp(1.0f, -26)) == 0);
  CHECK(host_fp::to_bf16(1.0f + 1.0f / 256) == 0x3f80);  // tie to even
  CHECK(host_fp::to_bf16(1.0f + 3.0f / 256) == 0x3f82);
  CHECK(host_fp::from_bf16(host_fp::to_bf16(-2.5f)) == -2.5f);
}

TEST_CASE("tuner backend: synthetic inputs are non-zero, varied and exact in their type") {
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    CAPTURE(to_string(t));
    const std::vector<float> p = ktune::tuner::detail::make_pattern(t, 1);
    CHECK(p.size() == ktune::tuner::detail::pattern_period);
    std::set<float> distinct(p.begin(), p.end());
    CHECK(distinct.size() > (t == DType::bf16 ? 200u : 1500u));
    double mean = 0;
    for (float v : p) {
      REQUIRE(v != 0.0f);
      REQUIRE(std::abs(v) <= 1.0f);
      if (t == DType::f16) REQUIRE(host_fp::from_f16(host_fp::to_f16(v)) == v);
      if (t == DType::bf16) REQUIRE(host_fp::from_bf16(host_fp::to_bf16(v)) == v);
      mean += v;
    }
    CHECK(std::abs(mean / double(p.size())) < 0.02);  // centred
    CHECK(ktune::tuner::detail::make_pattern(t, 1) == p);            // reproducible
    CHECK(ktune::tuner::detail::make_pattern(t, 2) != p);            // per-operand
  }
  // Alignment offsets give exactly the requested vector width.
  for (int es : {2, 4})
    for (int v = 1; v * es <= 16; v *= 2) {
      const std::size_t off = ktune::tuner::detail::misalign_bytes(v, es);
      const void* p = reinterpret_cast<const void*>(std::uintptr_t{0x10000} + off);
      CHECK(operand_alignment(p, 4096, 4096, es) == v);
    }
}

TEST_CASE("tuner backend: the repeat rule stops when stable, on budget, at the cap, or when clearly slower") {
  RepeatPolicy p;
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> s = {1.0, 1.001, 0.999, 1.0, 1.002};
  CHECK(next_step(s, p, 1, 0, inf) == RepeatDecision::stable);
  std::vector<double> noisy = {1.0, 1.3, 0.8, 1.2, 0.9};
  CHECK(next_step(noisy, p, 1, 0, inf) == RepeatDecision::more);
  CHECK(next_step(noisy, p, 100, 50, inf) == RepeatDecision::budget);
  std::vector<double> many(50, 1.0);
  many[1] = 2.0;
  many[2] = 0.1;
  CHECK(next_step(many, p, 1, 0, inf) != RepeatDecision::more);
  std::vector<double> lots;
  for (int i = 0; i < 50; ++i) lots.push_back(i % 2 ? 1.0 : 2.0);
  CHECK(next_step(lots, p, 1, 0, inf) == RepeatDecision::max_repeats);
  CHECK(next_step(s, p, 1, 0, 0.5) == RepeatDecision::slower_than_best);
  CHECK(next_step(std::vector<double>{1.0, 1.0}, p, 1, 0, inf) == RepeatDecision::more);  // below min_repeats
  const SampleStats st = stats_of(std::vector<double>{5, 1, 3, 2, 4});
  CHECK(st.median == 3);
  CHECK(st.min == 1);
  CHECK(st.p25 == 2);
  CHECK(st.p75 == 4);
  CHECK(st.rel_spread() == doctest::Approx(2.0 / 3.0));
}

TEST_CASE("tuner backend: without a GPU the default tuner reports an error instead of crashing") {
  if (ktune::cuda_device_count() > 0) return;  // covered by the GPU tests there
  CudaBackend b;
  int dev = -1;
  CHECK_FALSE(b.current_device(dev).ok());
  CHECK(b.is_capturing(nullptr));  // unknown capture state counts as capturing: never benchmark
  const Problem p = f16_problem();
  const ktune::GemmKernelEntry* e = nullptr;
  CHECK_FALSE(ktune::default_tuner().select(p.desc, p.ops, nullptr, e).ok());
  CHECK(e == nullptr);
  CHECK(ktune::tune_pending().ok());
}
