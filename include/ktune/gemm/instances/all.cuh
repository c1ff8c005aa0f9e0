// ktune/gemm/instances/all.cuh — register every default GEMM family in one translation unit.
// Include this in exactly one .cu file of a program that calls ktune::gemm(). For faster parallel
// builds, use KTUNE_REGISTER_GEMM_FAMILY_PART in several translation units instead (src/instances/).
#pragma once
#include "ktune/gemm/families.hpp"
#include "ktune/gemm/instantiate.cuh"
#include "ktune/gemm/route/default_routes.cuh"

namespace ktune::detail {
[[maybe_unused]] inline const bool default_gemm_families_registered = [] {
  register_family<families::Sm80MmaF16>();
  register_family<families::Sm80MmaF16Deep>();
  register_family<families::Sm80MmaF16Small>();
  register_family<families::Sm80MmaF16SmallM>();
  register_family<families::Sm80MmaF16SmallM32>();
  register_family<families::Sm80MmaF16Unaligned>();
  register_family<families::Sm80MmaTf32>();
  register_family<families::Sm80MmaTf32Unaligned>();
  register_family<families::Sm80SimtF32>();
  register_family<families::Sm90WgmmaF16>();
  register_family<families::Sm90WgmmaF16Small>();
  register_family<families::Sm90WgmmaF16PingPong>();
  register_family<families::Sm90WgmmaF16N64>();
  register_family<families::Sm90WgmmaF16N64Deep>();
  register_family<families::Sm90WgmmaTf32>();
  register_family<families::Sm90WgmmaTf32PingPong>();
  route::register_default_routes();  // after the families: routes run registered instances
  return true;
}();
}  // namespace ktune::detail
