// ktune::families::Sm80MmaF16Small (mma.sync f16/bf16, 64-row tiles), Sm80MmaF16SmallM and Sm80MmaF16SmallM32
// (16/32-row tiles for M <= 64), every surviving configuration.
// Few, large translation units: each one pays ~12 s of CPU (two architectures) to parse ktune's headers
// before its first instance, so the families are split only as far as 2 cores need (these three were two
// TUs until session 12: the 10-minute test build).
#include "ktune/gemm/families.hpp"
#include "ktune/gemm/instantiate.cuh"

KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm80MmaF16Small, 0, 1)
KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm80MmaF16SmallM, 0, 1)
KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm80MmaF16SmallM32, 0, 1)
