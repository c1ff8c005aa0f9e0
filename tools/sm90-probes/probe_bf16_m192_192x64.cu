// ktune-sm90-probes instance (one per TU: they compile in parallel): bf16 'tn' 192x64x64, one consumer
// warpgroup of 192x64 (3 m64 blocks of m64n64k16), 6 stages (the most that fit 227 KB) — see variants.cuh.
// cuBLASLt's 6272x256x1024 kernel (ResNet L10, nvjet_sm90_hsh_128x96_64x7_1x2, grid 2 x 66) tiles ktune's
// N by 128 and M by 96; ktune's wgmma runs M in m64 blocks, so the same tile area and CTA count in ktune's
// orientation is 192x64: 33 x 4 = 132 CTAs on that shape, one wave.
#include "variants.cuh"

KTUNE_SM90_PROBE("ktune_gemm_sm90_wgmma_bf16_tn_m192_192x64x64_w192x64_s6_a8",
                 Variant<tn(MathOp::wgmma_bf16, {192, 64, 64}, {192, 64}, 6, 8), false>)
