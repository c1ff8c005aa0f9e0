// The mma.sync conv2d fprop families (include/ktune/conv/families.hpp): analytic, optimized, the
// first-layer few-channel ones (C = 4 and C = 3) and the first-layer stem (Sm80ConvStem, kernel/stem.cuh:
// C = 4 and C = 3; its own TU until session 7: 36 s of CPU, ~10 of them the headers), every surviving
// configuration.
// Few, large translation units: each one pays ~12 s of CPU (two architectures) to parse ktune's
// headers before its first instance, so the families are split only as far as 2 cores need.
#include "ktune/conv/families.hpp"
#include "ktune/conv/instantiate.cuh"

KTUNE_REGISTER_CONV_FAMILY_PART(ktune::families::Sm80ConvAnalytic, 0, 1)
KTUNE_REGISTER_CONV_FAMILY_PART(ktune::families::Sm80ConvFewChannels, 0, 1)
KTUNE_REGISTER_CONV_FAMILY_PART(ktune::families::Sm80ConvFewChannels3, 0, 1)
KTUNE_REGISTER_CONV_FAMILY_PART(ktune::families::Sm80ConvOptimized, 0, 1)
KTUNE_REGISTER_CONV_FAMILY_PART(ktune::families::Sm80ConvOptimizedWide, 0, 1)
KTUNE_REGISTER_CONV_FAMILY_PART(ktune::families::Sm80ConvStem, 0, 1)
