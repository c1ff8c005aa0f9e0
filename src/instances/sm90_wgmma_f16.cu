// ktune::families::Sm90WgmmaF16 (TMA + wgmma f16/bf16), every surviving configuration.
// Few, large translation units: each one pays ~7 s of CPU (sm_90a) to parse ktune's headers before its
// first instance, so the families are split only as far as 2 cores need (this family was two halves until
// session 12: the 10-minute test build).
#include "ktune/gemm/families.hpp"
#include "ktune/gemm/instantiate.cuh"

KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm90WgmmaF16, 0, 1)
