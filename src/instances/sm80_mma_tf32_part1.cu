// Part 1 of 2 of ktune::families::Sm80MmaTf32: the surviving configurations whose index % 2 == 1.
// One family part per translation unit (the registrar variable is named after the part number);
// the parts compile in parallel. See include/ktune/gemm/instantiate.cuh.
#include "ktune/gemm/families.hpp"
#include "ktune/gemm/instantiate.cuh"

KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm80MmaTf32, 1, 2)
