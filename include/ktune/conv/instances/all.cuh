// ktune/conv/instances/all.cuh — register every default conv family in one translation unit.
// Include this in exactly one .cu file of a program that calls ktune::conv2d() (or compile
// src/instances/conv_*.cu, one family per translation unit, for parallel builds). The 1x1 route's GEMM-table
// tiles (gemm_table_kernels families) run the GEMM instances: register those too (ktune/gemm/instances/all.cuh).
#pragma once
#include "ktune/conv/families.hpp"
#include "ktune/conv/instantiate.cuh"

namespace ktune::detail {
[[maybe_unused]] inline const bool default_conv_families_registered = [] {
  register_conv_family<families::Sm80ConvOptimized>();
  register_conv_family<families::Sm80ConvOptimizedWide>();
  register_conv_family<families::Sm80ConvAnalytic>();
  register_conv_family<families::Sm80ConvFewChannels>();
  register_conv_family<families::Sm80ConvFewChannels3>();
  register_conv_family<families::Sm80ConvStem>();
  register_conv_family<families::Sm90ConvGemm1x1>();
  register_conv_family<families::Sm90ConvGemm1x1PingPong>();
  register_conv_family<families::Sm90ConvGemm1x1Swap>();
  register_conv_family<families::Sm90ConvIm2col>();
  register_conv_family<families::Sm90ConvIm2colPingPong>();
  register_conv_family<families::Sm90ConvIm2colSwap>();
  return true;
}();
}  // namespace ktune::detail
