// ktune-sm90-probes instance (one per TU: they compile in parallel): swap AB (variants.cuh: _swap_), bf16
// 'tn', tile 64x112x64 in the SWAPPED orientation (64 along our N, 112 along our M), one consumer warpgroup
// (m64n112k16), 9 stages (the most that fit 227 KB). cuBLASLt's 1568x512x2048 kernel (ResNet L13,
// nvjet_sm90_hsh_64x112_64x9_4x2): its column-major "64x112" is 64 along our N and 112 along our M, grid
// 512/64 x 1568/112 = 8 x 14 = 112 CTAs; this probe gives the same grid.
// Named ..._probe since the default families Sm90WgmmaF16Swap/Swap2Wg register the same configuration
// under the plain name (the dispatch table keeps one entry per name).
#include "variants.cuh"

KTUNE_SM90_PROBE("ktune_gemm_sm90_wgmma_bf16_tn_swap_64x112x64_w64x112_s9_a8_probe",
                 Variant<tn(MathOp::wgmma_bf16, {64, 112, 64}, {64, 112}, 9, 8), false, false, true, true>)
