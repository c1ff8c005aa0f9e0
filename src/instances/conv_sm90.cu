// The Hopper conv2d fprop routes (include/ktune/conv/families.hpp): 1x1 convolutions as a GEMM on the
// sm90 kernel (also on its swap-AB instances, Sm90ConvGemm1x1Swap: y^T = w·x^T, tiles in the swapped
// orientation) and the TMA im2col families (cooperative, ping-pong, swap-AB), every surviving configuration.
// The 1x1 route's tiles are the GEMM table's own instances (conv/family.hpp gemm_table_kernels): no kernel here.
// Few, large translation units: each one pays ~7 s of CPU (sm_90a only) to parse ktune's headers before
// its first instance, so the families are split only as far as 2 cores need. (The swap route had a TU of
// its own in ac0431e: 29.3 s of CPU in the 2-core test build.)
#include "ktune/conv/families.hpp"
#include "ktune/conv/instantiate.cuh"

KTUNE_REGISTER_CONV_FAMILY_PART(ktune::families::Sm90ConvGemm1x1, 0, 1)
KTUNE_REGISTER_CONV_FAMILY_PART(ktune::families::Sm90ConvGemm1x1PingPong, 0, 1)
KTUNE_REGISTER_CONV_FAMILY_PART(ktune::families::Sm90ConvGemm1x1Swap, 0, 1)
KTUNE_REGISTER_CONV_FAMILY_PART(ktune::families::Sm90ConvIm2col, 0, 1)
KTUNE_REGISTER_CONV_FAMILY_PART(ktune::families::Sm90ConvIm2colPingPong, 0, 1)
KTUNE_REGISTER_CONV_FAMILY_PART(ktune::families::Sm90ConvIm2colSwap, 0, 1)
#if defined(KTUNE_EXPERIMENTAL_CONV_K32) && KTUNE_EXPERIMENTAL_CONV_K32
KTUNE_REGISTER_CONV_FAMILY_PART(ktune::families::Sm90ConvIm2colPingPongK32, 0, 1)  // BK = 32 (families.hpp)
#endif
