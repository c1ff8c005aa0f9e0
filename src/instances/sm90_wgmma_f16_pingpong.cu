// ktune::families::Sm90WgmmaF16PingPong (TMA + wgmma f16/bf16, ping-pong consumers) and, since session 11,
// Sm90WgmmaF16Swap / Sm90WgmmaF16Swap2Wg (the transposed problem D^T = B·A^T, 'tn' only; tiles in the
// swapped orientation), every surviving configuration. The swap families had a TU of their own (22.8 s of
// CPU in the 2-core test build, ~7 of them the headers): this was the smallest sm90 TU (70.9 s).
#include "ktune/gemm/families.hpp"
#include "ktune/gemm/instantiate.cuh"

KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm90WgmmaF16PingPong, 0, 1)
KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm90WgmmaF16Swap, 0, 1)
KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm90WgmmaF16Swap2Wg, 0, 1)
