// Every instance of ktune::families::Sm80MmaTf32Unaligned, in one translation unit.
// One family part per translation unit (the registrar variable is named after the part number);
// the parts compile in parallel. See include/ktune/gemm/instantiate.cuh.
#include "ktune/gemm/families.hpp"
#include "ktune/gemm/instantiate.cuh"

KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm80MmaTf32Unaligned, 0, 1)
