// ktune::families::Sm90WgmmaF16Swap and Sm90WgmmaF16Swap2Wg (TMA + wgmma f16/bf16 on the transposed
// problem D^T = B·A^T, 'tn' only; tiles in the swapped orientation), every surviving configuration.
#include "ktune/gemm/families.hpp"
#include "ktune/gemm/instantiate.cuh"

KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm90WgmmaF16Swap, 0, 1)
KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm90WgmmaF16Swap2Wg, 0, 1)
