// ktune-sm90-probes instances, part 2: ping-pong + TMA store bf16 (see variants.cuh).
#include "variants.cuh"

namespace {
using namespace ktune;
using namespace ktune::probes;
[[maybe_unused]] const bool registered = [] {
  add_variant<Variant<tn(MathOp::wgmma_bf16, {128, 128, 64}, {128, 128}, 6, 8), true, true>>(
      "ktune_gemm_sm90_wgmma_bf16_tn_pp_tmast_128x128x64_w128x128_s6_a8");
  return true;
}();
}  // namespace
