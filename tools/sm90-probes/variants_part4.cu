// ktune-sm90-probes instances, part 4: tf32 with the TMA-store epilogue (fp32 D: 16x32 boxes),
// cooperative and ping-pong (see variants.cuh).
#include "variants.cuh"

namespace {
using namespace ktune;
using namespace ktune::probes;
[[maybe_unused]] const bool registered = [] {
  add_variant<Variant<tn(MathOp::wgmma_tf32, {128, 256, 32}, {64, 256}, 4, 4), false, true>>(
      "ktune_gemm_sm90_wgmma_tf32_tn_tmast_128x256x32_w64x256_s4_a4");
  add_variant<Variant<tn(MathOp::wgmma_tf32, {128, 128, 32}, {128, 128}, 6, 4), true, true>>(
      "ktune_gemm_sm90_wgmma_tf32_tn_pp_tmast_128x128x32_w128x128_s6_a4");
  return true;
}();
}  // namespace
