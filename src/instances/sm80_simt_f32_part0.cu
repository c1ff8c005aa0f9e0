// Part 0 of 2 of ktune::families::Sm80SimtF32: the surviving configurations whose index % 2 == 0.
// One family part per translation unit (the registrar variable is named after the part number);
// the parts compile in parallel. See include/ktune/gemm/instantiate.cuh.
#include "ktune/gemm/families.hpp"
#include "ktune/gemm/instantiate.cuh"

KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm80SimtF32, 0, 2)
