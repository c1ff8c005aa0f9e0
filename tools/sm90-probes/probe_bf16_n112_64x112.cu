// ktune-sm90-probes instance (one per TU: they compile in parallel): a non-power-of-two N tile, bf16 'tn',
// 64x112x64, one consumer warpgroup (m64n112k16), 9 stages (the most that fit 227 KB) — see variants.cuh.
// cuBLASLt's 1568x512x2048 kernel (ResNet L13, nvjet_sm90_hsh_64x112_64x9_4x2) has the same tile area and
// depth; in ktune's row-major orientation this tile gives 25 x 5 = 125 CTAs there (one wave).
#include "variants.cuh"

KTUNE_SM90_PROBE("ktune_gemm_sm90_wgmma_bf16_tn_n112_64x112x64_w64x112_s9_a8",
                 Variant<tn(MathOp::wgmma_bf16, {64, 112, 64}, {64, 112}, 9, 8), false>)
