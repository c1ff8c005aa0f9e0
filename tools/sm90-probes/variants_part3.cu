// ktune-sm90-probes instances, part 3: tf32 — ping-pong, and a TFLOAT32 tensor map (does the TMA round
// fp32 to tf32 instead of the tensor core's truncation? compare the relative errors) (see variants.cuh).
#include "variants.cuh"

namespace {
using namespace ktune;
using namespace ktune::probes;
[[maybe_unused]] const bool registered = [] {
  add_variant<Variant<tn(MathOp::wgmma_tf32, {128, 128, 32}, {128, 128}, 6, 4), true>>(
      "ktune_gemm_sm90_wgmma_tf32_tn_pp_128x128x32_w128x128_s6_a4");
  add_variant<Variant<tn(MathOp::wgmma_tf32, {128, 256, 32}, {64, 256}, 4, 4), false, false, true>>(
      "ktune_gemm_sm90_wgmma_tf32_tn_tf32map_128x256x32_w64x256_s4_a4");
  return true;
}();
}  // namespace
