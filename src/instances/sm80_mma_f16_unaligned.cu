// ktune::families::Sm80MmaF16Unaligned (mma.sync f16/bf16, 2-byte element copies for rows that are not 16-byte aligned), every surviving configuration.
// Few, large translation units: each one pays ~12 s of CPU (two architectures) to parse ktune's
// headers before its first instance, so the families are split only as far as 2 cores need.
#include "ktune/gemm/families.hpp"
#include "ktune/gemm/instantiate.cuh"

KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm80MmaF16Unaligned, 0, 1)
