// ktune-sm90-probes instance (one per TU: they compile in parallel): tf32 operands through a TFLOAT32 tensor map (does the TMA round fp32 to tf32? compare the errors vs float64) — see variants.cuh.
#include "variants.cuh"

KTUNE_SM90_PROBE("ktune_gemm_sm90_wgmma_tf32_tn_tf32map_128x256x32_w64x256_s4_a4", Variant<tn(MathOp::wgmma_tf32, {128, 256, 32}, {64, 256}, 4, 4), false, false, true>)
