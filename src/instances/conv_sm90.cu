// The Hopper conv2d fprop routes (include/ktune/conv/families.hpp): 1x1 convolutions as a GEMM on the
// sm90 kernel and the TMA im2col family, every surviving configuration.
// Few, large translation units: each one pays ~12 s of CPU (two architectures) to parse ktune's
// headers before its first instance, so the families are split only as far as 2 cores need.
#include "ktune/conv/families.hpp"
#include "ktune/conv/instantiate.cuh"

KTUNE_REGISTER_CONV_FAMILY_PART(ktune::families::Sm90ConvGemm1x1, 0, 1)
KTUNE_REGISTER_CONV_FAMILY_PART(ktune::families::Sm90ConvIm2col, 0, 1)
