// ktune-sm90-probes instance (one per TU: they compile in parallel): TMA-store epilogue, cooperative, bf16 — see variants.cuh.
#include "variants.cuh"

KTUNE_SM90_PROBE("ktune_gemm_sm90_wgmma_bf16_tn_tmast_128x256x64_w64x256_s4_a8", Variant<tn(MathOp::wgmma_bf16, {128, 256, 64}, {64, 256}, 4, 8), false, true>)
