// ktune-sm90-probes instance (one per TU: they compile in parallel): ping-pong consumers, tf32 — see variants.cuh.
#include "variants.cuh"

KTUNE_SM90_PROBE("ktune_gemm_sm90_wgmma_tf32_tn_pp_128x128x32_w128x128_s6_a4", Variant<tn(MathOp::wgmma_tf32, {128, 128, 32}, {128, 128}, 6, 4), true>)
