// ktune-sm90-probes instances, part 1: TMA-store epilogue, cooperative bf16 (see variants.cuh).
#include "variants.cuh"

namespace {
using namespace ktune;
using namespace ktune::probes;
[[maybe_unused]] const bool registered = [] {
  add_variant<Variant<tn(MathOp::wgmma_bf16, {256, 128, 64}, {128, 128}, 4, 8), false, true>>(
      "ktune_gemm_sm90_wgmma_bf16_tn_tmast_256x128x64_w128x128_s4_a8");
  add_variant<Variant<tn(MathOp::wgmma_bf16, {128, 256, 64}, {64, 256}, 4, 8), false, true>>(
      "ktune_gemm_sm90_wgmma_bf16_tn_tmast_128x256x64_w64x256_s4_a8");
  return true;
}();
}  // namespace
