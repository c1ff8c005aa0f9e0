// ktune-sm90-probes instance (one per TU: they compile in parallel): swap AB (variants.cuh: _swap_), bf16
// 'tn', tile 128x96x64 in the SWAPPED orientation (128 along our N, 96 along our M), two consumer
// warpgroups of 64x96 (m64n96k16, each 64 of our N x 96 of our M), 7 stages (the most that fit 227 KB).
// cuBLASLt's 6272x256x1024 kernel (ResNet L10, nvjet_sm90_hsh_128x96_64x7_1x2): 128 along our N, 96 along
// our M, grid 256/128 x 6272/96 = 2 x 66 = 132 CTAs (one wave); this probe gives the same grid.
// Named ..._probe since the default families Sm90WgmmaF16Swap/Swap2Wg register the same configuration
// under the plain name (the dispatch table keeps one entry per name).
#include "variants.cuh"

KTUNE_SM90_PROBE("ktune_gemm_sm90_wgmma_bf16_tn_swap_128x96x64_w64x96_s7_a8_probe",
                 Variant<tn(MathOp::wgmma_bf16, {128, 96, 64}, {64, 96}, 7, 8), false, false, true, true>)
