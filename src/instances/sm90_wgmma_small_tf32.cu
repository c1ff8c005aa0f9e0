// ktune::families::Sm90WgmmaF16Small (TMA + wgmma f16/bf16, 64/128-row tiles), Sm90WgmmaTf32 (TMA +
// wgmma tf32) and Sm90WgmmaTf32PingPong (tf32, ping-pong consumers; its own TU until session 7: 21.6 s of
// CPU, ~7 of them the headers), every surviving configuration; since session 9 also Sm90WgmmaF16N64 and
// Sm90WgmmaF16N64Deep ('tn' 128x64 s8 and 64x64 s12, cuBLASLt's small-shape tiles; bf16, and f16 since
// session 16).
// Few, large translation units: each one pays ~12 s of CPU (two architectures; ~7 s for these sm_90a-only
// ones) to parse ktune's headers before its first instance, so the families are split only as far as 2
// cores need. (The two families had a TU each: 60.4 + 42.5 s of CPU apart, 86.7 s together, load ~3.)
#include "ktune/gemm/families.hpp"
#include "ktune/gemm/instantiate.cuh"

KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm90WgmmaF16Small, 0, 1)
KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm90WgmmaTf32, 0, 1)
KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm90WgmmaTf32PingPong, 0, 1)
KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm90WgmmaF16N64, 0, 1)
KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm90WgmmaF16N64Deep, 0, 1)
