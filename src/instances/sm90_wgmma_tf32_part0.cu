// Part 0 of 2 of ktune::families::Sm90WgmmaTf32 (3 instances, all 'tn'): the surviving configurations
// whose index % 2 == 0. Hopper TMA + wgmma tf32 kernels: sm_90a code only (other targets compile a
// trapping body and the launcher refuses them). See include/ktune/gemm/kernel/sm90/kernel.cuh.
#include "ktune/gemm/families.hpp"
#include "ktune/gemm/instantiate.cuh"

KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm90WgmmaTf32, 0, 2)
