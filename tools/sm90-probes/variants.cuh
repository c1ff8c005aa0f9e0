// tools/sm90-probes/variants.cuh — experimental sm90 instances for ktune-sm90-probes only (never in the
// library's default table): the Hopper kernel with schedule options that kernel/sm90/kernel.cuh reads
// from the instance type (schedule_of / uses_tf32_tensor_map), registered under their own names.
//   _pp_      ping-pong consumers: two consumer warpgroups take turns on whole tiles
//   _tmast_   4 KB of epilogue staging per consumer warp (4 buffers for the asynchronous TMA store of
//             16-bit D instead of the default 2)
//   _f32map_  tf32 operands through a FLOAT32 tensor map (truncated by the tensor core) instead of the
//             default TFLOAT32 one (rounded by the TMA)
//   _n112_, _n96_, _m192_  tile shapes no family has (notes/sm90-gemm.md "Session 10"): warpgroup tiles
//             64x112 and 64x96 (wgmma N not a power of two; K-major B only) and 192x64 (three m64 blocks)
//   _swap_    swap AB (Sm90Schedule::swap_ab): the kernel runs the transposed problem D^T = B·A^T, so the
//             name's tile and warp shape are in that SWAPPED orientation: _swap_64x112x64_w64x112_ is 64
//             along our N (output channels) x 112 along our M (wgmma N = 112 runs along M, which the
//             unswapped kernel can only tile by 64s); the epilogue stores the tile transposed. 'tn' bf16/f16
//             with 16-bit D, any built-in epilogue (can_implement refuses the rest), no split-K or clusters.
//             Default families since then: gemm/families.hpp Sm90WgmmaF16Swap / Swap2Wg.
#pragma once
#include <string_view>

#include "ktune/gemm/instantiate.cuh"

namespace ktune::probes {

// SwapAB marks the configuration itself (WgSchedule::swap_ab, as the default families
// Sm90WgmmaF16Swap/Swap2Wg do), so the constraint model's swap_ab_operands rule and can_implement's
// checks (dispatch.hpp: swap_ab_implements) apply to the probe too.
constexpr GemmConfig with_swap_ab(GemmConfig c, bool swap) {
  if (swap) c.schedule = WgSchedule::swap_ab;
  return c;
}

template <GemmConfig Cfg, bool PingPong, bool TmaStore = false, bool Tf32Map = true, bool SwapAB = false>
struct Variant {
  static constexpr GemmConfig value = with_swap_ab(Cfg, SwapAB);
  static constexpr bool pingpong = PingPong;
  static constexpr bool tma_store = TmaStore;
  static constexpr bool tma_tf32 = Tf32Map;
};

template <class V>
void add_variant(std::string_view name) {
  static_assert(validate(V::value, sm90).ok(), "variant rejected by the constraint model");
  static_assert(kernel::sm90::sm90_kernel_smem_bytes<V> <= 227 * 1024, "variant exceeds shared memory");
  GemmKernelEntry e{};
  e.name = name;
  e.family = "sm90_probe";
  e.config = V::value;
  e.resources = estimate_resources(V::value);
  e.resources.threads = kernel::sm90::sm90_kernel_threads<V>;
  e.resources.smem_bytes = kernel::sm90::sm90_kernel_smem_bytes<V>;
  e.launch = &kernel::sm90::launch_builtin<V>;
  e.attributes = &kernel::sm90::attributes_of<V>;
  gemm_table().add(e);
}

constexpr GemmConfig tn(MathOp m, TileShape t, WarpShape w, int stages, int align) {
  return GemmConfig{90, m, Layout::row, Layout::col, t, w, stages, align};
}

}  // namespace ktune::probes

// Registers one probe instance at static initialisation (one per translation unit: probe_*.cu).
#define KTUNE_SM90_PROBE(name, ...)                                                \
  namespace {                                                                     \
  [[maybe_unused]] const bool ktune_probe_registered = [] {                       \
    using namespace ::ktune;                                                      \
    using namespace ::ktune::probes;                                              \
    add_variant<__VA_ARGS__>(name);                                               \
    return true;                                                                  \
  }();                                                                            \
  }
