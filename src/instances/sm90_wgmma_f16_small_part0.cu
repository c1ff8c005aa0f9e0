// Part 0 of 2 of ktune::families::Sm90WgmmaF16Small (8 instances): the surviving configurations whose
// index % 2 == 0. Hopper TMA + wgmma kernels (sm_90a code only), smaller tiles for small problems.
#include "ktune/gemm/families.hpp"
#include "ktune/gemm/instantiate.cuh"

KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm90WgmmaF16Small, 0, 2)
