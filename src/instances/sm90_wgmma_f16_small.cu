// ktune::families::Sm90WgmmaF16Small (TMA + wgmma f16/bf16, 64/128-row tiles), every surviving configuration.
// Few, large translation units: each one pays ~12 s of CPU (two architectures) to parse ktune's
// headers before its first instance, so the families are split only as far as 2 cores need.
#include "ktune/gemm/families.hpp"
#include "ktune/gemm/instantiate.cuh"

KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm90WgmmaF16Small, 0, 1)
