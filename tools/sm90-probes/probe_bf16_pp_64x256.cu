// ktune-sm90-probes instance (one per TU: they compile in parallel): ping-pong consumers, bf16 — see variants.cuh.
#include "variants.cuh"

KTUNE_SM90_PROBE("ktune_gemm_sm90_wgmma_bf16_tn_pp_64x256x64_w64x256_s5_a8", Variant<tn(MathOp::wgmma_bf16, {64, 256, 64}, {64, 256}, 5, 8), true>)
