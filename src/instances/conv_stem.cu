// The first-layer stem conv family (include/ktune/conv/families.hpp: Sm80ConvStem; kernel/stem.cuh):
// C = 4 and C = 3, f16 and bf16, every surviving configuration.
#include "ktune/conv/families.hpp"
#include "ktune/conv/instantiate.cuh"

KTUNE_REGISTER_CONV_FAMILY_PART(ktune::families::Sm80ConvStem, 0, 1)
