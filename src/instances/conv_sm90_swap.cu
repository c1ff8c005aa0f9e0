// The Hopper conv2d fprop 1x1 route on the GEMM's swap-AB instances (include/ktune/conv/families.hpp
// Sm90ConvGemm1x1Swap: y^T = w·x^T, tiles in the swapped orientation), every surviving configuration.
// Its own translation unit, so that it compiles beside conv_sm90.cu on 2 cores.
#include "ktune/conv/families.hpp"
#include "ktune/conv/instantiate.cuh"

KTUNE_REGISTER_CONV_FAMILY_PART(ktune::families::Sm90ConvGemm1x1Swap, 0, 1)
