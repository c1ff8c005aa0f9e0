// Part 0 of 2 of conv2d family ktune::families::Sm90ConvGemm1x1 (1x1, stride 1, unpadded convolutions
// run by the Hopper GEMM kernel; sm_90a code only, other targets compile a trapping body). See
// include/ktune/conv/families.hpp and include/ktune/conv/kernel/sm90_conv.cuh.
#include "ktune/conv/families.hpp"
#include "ktune/conv/instantiate.cuh"

KTUNE_REGISTER_CONV_FAMILY_PART(ktune::families::Sm90ConvGemm1x1, 0, 2)
