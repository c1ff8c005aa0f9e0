// ktune-sm90-probes instance (one per TU: they compile in parallel): a non-power-of-two N tile, bf16 'tn',
// 128x96x64, two consumer warpgroups of 64x96 (m64n96k16), 7 stages (the most that fit 227 KB) — see
// variants.cuh. The tile of cuBLASLt's 6272x256x1024 kernel (ResNet L10, nvjet_sm90_hsh_128x96_64x7_1x2)
// as written; note that cuBLASLt's 128 runs along ktune's N there (its grid 2 x 66), so in ktune's
// orientation this tile gives 49 x 3 = 147 CTAs on that shape (two waves): 192x64 is the one-wave analog.
#include "variants.cuh"

KTUNE_SM90_PROBE("ktune_gemm_sm90_wgmma_bf16_tn_n96_128x96x64_w64x96_s7_a8",
                 Variant<tn(MathOp::wgmma_bf16, {128, 96, 64}, {64, 96}, 7, 8), false>)
