// Conv2d fprop family ktune::families::Sm80ConvOptimized, all of its surviving configurations (at most 8 per
// translation unit; see include/ktune/conv/families.hpp and include/ktune/conv/instantiate.cuh).
#include "ktune/conv/families.hpp"
#include "ktune/conv/instantiate.cuh"

KTUNE_REGISTER_CONV_FAMILY_PART(ktune::families::Sm80ConvOptimized, 0, 1)
