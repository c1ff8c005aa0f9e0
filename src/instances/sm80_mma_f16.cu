// ktune::families::Sm80MmaF16 and Sm80MmaF16Deep (mma.sync f16/bf16, large tiles, no split-K) and
// Sm80MmaF16Unaligned (2-byte element copies for rows that are not 16-byte aligned), every surviving
// configuration.
// Few, large translation units: each one pays ~12 s of CPU (two architectures) to parse ktune's
// headers before its first instance, so the families are split only as far as 2 cores need. (One TU,
// not two halves, since its instances lost split-K: 52.9 s of CPU vs 36.8 + 35.2 for the halves, back to
// back on the 2-core machine; the unaligned family joined it in session 11, when Sm80MmaF16 lost its
// 8 instances with 32x64 warps: ~100 s of CPU together, as large as the largest other sm80 TU.)
#include "ktune/gemm/families.hpp"
#include "ktune/gemm/instantiate.cuh"

KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm80MmaF16, 0, 1)
KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm80MmaF16Deep, 0, 1)
KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm80MmaF16Unaligned, 0, 1)
