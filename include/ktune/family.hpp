// ktune/family.hpp — a kernel family is the cartesian product of its parameter lists, filtered at
// compile time by the constraint model. Only the survivors are ever instantiated.
//
// A family is a struct with these static members (see gemm/families.hpp):
//   name, arch (ArchTraits), maths[], a_layouts[], b_layouts[], tiles[], warps[], stages[], aligns[]
// and optionally schedules[] (sm90 consumer schedules, WgSchedule; without it: cooperative only).
#pragma once
#include <array>
#include <cstddef>
#include <string_view>

#include "ktune/gemm/resource_model.hpp"

namespace ktune {

template <class T, std::size_t N>
constexpr std::size_t extent_of(const T (&)[N]) { return N; }

// The family's consumer schedules: F::schedules, or cooperative only.
inline constexpr WgSchedule cooperative_only[] = {WgSchedule::cooperative};
template <class F>
constexpr const auto& schedules_of() {
  if constexpr (requires { F::schedules; }) return F::schedules;
  else return cooperative_only;
}

template <class F>
inline constexpr std::size_t family_size = extent_of(schedules_of<F>()) * extent_of(F::maths) * extent_of(F::a_layouts) * extent_of(F::b_layouts) *
                                           extent_of(F::tiles) * extent_of(F::warps) * extent_of(F::stages) *
                                           extent_of(F::aligns);

struct CandidateConfig {
  GemmConfig config;
  Verdict verdict;
};

// Every point of the family's parameter space with the constraint model's verdict.
template <class F>
constexpr std::array<CandidateConfig, family_size<F>> enumerate_family() {
  std::array<CandidateConfig, family_size<F>> out{};
  std::size_t i = 0;
  for (MathOp m : F::maths)
    for (Layout la : F::a_layouts)
      for (Layout lb : F::b_layouts)
        for (TileShape t : F::tiles)
          for (WarpShape w : F::warps)
            for (int s : F::stages)
              for (int a : F::aligns)
                for (WgSchedule sch : schedules_of<F>()) {
                  GemmConfig c{F::arch.cc, m, la, lb, t, w, s, a, sch};
                  out[i++] = {c, validate(c, F::arch)};
                }
  return out;
}

template <class F>
inline constexpr std::size_t valid_count = [] {
  std::size_t n = 0;
  for (const auto& c : enumerate_family<F>()) n += c.verdict.ok() ? 1 : 0;
  return n;
}();

// The survivors, in enumeration order: these and only these become kernel instances.
template <class F>
constexpr std::array<GemmConfig, valid_count<F>> valid_configs() {
  std::array<GemmConfig, valid_count<F>> out{};
  std::size_t i = 0;
  for (const auto& c : enumerate_family<F>())
    if (c.verdict.ok()) out[i++] = c.config;
  return out;
}

}  // namespace ktune
