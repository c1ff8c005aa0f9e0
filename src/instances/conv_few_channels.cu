// Conv2d fprop first-layer families ktune::families::Sm80ConvFewChannels (C = 4) and
// Sm80ConvFewChannels3 (C = 3), all of their surviving configurations (see
// include/ktune/conv/families.hpp and include/ktune/conv/instantiate.cuh).
#include "ktune/conv/families.hpp"
#include "ktune/conv/instantiate.cuh"

KTUNE_REGISTER_CONV_FAMILY_PART(ktune::families::Sm80ConvFewChannels, 0, 1)
KTUNE_REGISTER_CONV_FAMILY_PART(ktune::families::Sm80ConvFewChannels3, 0, 1)
