// Part 0 of 6 of ktune::families::Sm80MmaF16: the surviving configurations whose index % 6 == 0.
// One family part per translation unit (the registrar variable is named after the part number);
// the parts compile in parallel. See include/ktune/gemm/instantiate.cuh.
#include "ktune/gemm/families.hpp"
#include "ktune/gemm/instantiate.cuh"

KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm80MmaF16, 0, 6)
