// ktune-sm90-probes instance (one per TU: they compile in parallel): tf32 operands through a FLOAT32
// tensor map (the tensor core truncates fp32 to tf32; the default instances' TFLOAT32 map rounds, as
// cuBLASLt does) — see variants.cuh.
#include "variants.cuh"

KTUNE_SM90_PROBE("ktune_gemm_sm90_wgmma_tf32_tn_f32map_128x256x32_w64x256_s4_a4",
                 Variant<tn(MathOp::wgmma_tf32, {128, 256, 32}, {64, 256}, 4, 4), false, false, false>)
