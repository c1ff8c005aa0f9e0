// ktune-sm90-probes instance (one per TU: they compile in parallel): TMA-store epilogue (fp32 D: 16x32 boxes), cooperative, tf32 — see variants.cuh.
#include "variants.cuh"

KTUNE_SM90_PROBE("ktune_gemm_sm90_wgmma_tf32_tn_tmast_128x256x32_w64x256_s4_a4", Variant<tn(MathOp::wgmma_tf32, {128, 256, 32}, {64, 256}, 4, 4), false, true>)
