// ktune-sm90-probes instance (one per TU: they compile in parallel): TMA-store epilogue, cooperative, bf16 — see variants.cuh.
#include "variants.cuh"

KTUNE_SM90_PROBE("ktune_gemm_sm90_wgmma_bf16_tn_tmast_256x128x64_w128x128_s4_a8", Variant<tn(MathOp::wgmma_bf16, {256, 128, 64}, {128, 128}, 4, 8), false, true>)
