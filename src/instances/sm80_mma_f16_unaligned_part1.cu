// 8 of the 16 instances of ktune::families::Sm80MmaF16Unaligned, part 1 of 2 (survivors with index % 2 == 1).
// One family part per translation unit: the registrar variable is named after the part number.
#include "ktune/gemm/families.hpp"
#include "ktune/gemm/instantiate.cuh"

KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm80MmaF16Unaligned, 1, 2)
