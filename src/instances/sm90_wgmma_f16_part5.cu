// Part 5 of 6 of ktune::families::Sm90WgmmaF16 (24 instances): the surviving configurations whose
// index % 6 == 5. Hopper TMA + wgmma kernels: sm_90a code only (other targets compile a trapping
// body and the launcher refuses them). See include/ktune/gemm/kernel/sm90/kernel.cuh.
#include "ktune/gemm/families.hpp"
#include "ktune/gemm/instantiate.cuh"

KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm90WgmmaF16, 5, 6)
