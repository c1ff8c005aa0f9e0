// 8 of the 48 instances of ktune::families::Sm80MmaF16, part 0 of 6 (survivors with index % 6 == 0).
// One family part per translation unit: the registrar variable is named after the part number.
#include "ktune/gemm/families.hpp"
#include "ktune/gemm/instantiate.cuh"

KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm80MmaF16, 0, 6)
