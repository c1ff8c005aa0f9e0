// Part 2 of 3 of conv2d family ktune::families::Sm90ConvIm2col (any filter: TMA im2col + wgmma on the
// Hopper GEMM kernel; sm_90a code only, other targets compile a trapping body). See
// include/ktune/conv/families.hpp and include/ktune/conv/kernel/sm90_conv.cuh.
#include "ktune/conv/families.hpp"
#include "ktune/conv/instantiate.cuh"

KTUNE_REGISTER_CONV_FAMILY_PART(ktune::families::Sm90ConvIm2col, 2, 3)
