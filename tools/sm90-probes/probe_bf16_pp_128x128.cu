// ktune-sm90-probes instance (one per TU: they compile in parallel): ping-pong consumers, bf16 — see variants.cuh.
#include "variants.cuh"

KTUNE_SM90_PROBE("ktune_gemm_sm90_wgmma_bf16_tn_pp_128x128x64_w128x128_s6_a8", Variant<tn(MathOp::wgmma_bf16, {128, 128, 64}, {128, 128}, 6, 8), true>)
