// The 8 instances of ktune::families::Sm80SimtF32 (the whole family in one part).
// One family part per translation unit: the registrar variable is named after the part number.
#include "ktune/gemm/families.hpp"
#include "ktune/gemm/instantiate.cuh"

KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm80SimtF32, 0, 1)
