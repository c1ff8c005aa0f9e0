// ktune/gemm/route/default_routes.cuh — which routes ktune registers (tuning policy): the repack route
// in front of the fastest aligned tiles, for every f16/bf16 layout. Hopper: the two wgmma tiles that
// won on the H200 (256x128 at 4096³, 128x256 at 8192³; notes/sm90-gemm.md) and the small family's
// 128x128; elsewhere one mma.sync tile. Each route is one table entry and compiles no GEMM kernel (the inner instance is looked up by
// name), so routes cost little build time; the copy kernel is the only code.
#pragma once
#include <utility>

#include "ktune/gemm/families.hpp"
#include "ktune/gemm/route/repack_route.cuh"

namespace ktune::route {

// The repack routes of family F's instances with this tile, warp tile and stage count, for each of the
// family's maths and layouts that the constraint model kept (at least one must survive).
template <class F, TileShape Tile, WarpShape Warp, int Stages>
void register_repack_routes_for_tile(GemmTable& table = gemm_table()) {
  constexpr std::size_t maths = extent_of(F::maths), las = extent_of(F::a_layouts), lbs = extent_of(F::b_layouts);
  constexpr auto config = [](std::size_t i) {
    return GemmConfig{F::arch.cc, F::maths[i / (las * lbs)], F::a_layouts[(i / lbs) % las], F::b_layouts[i % lbs],
                      Tile, Warp, Stages, repack_vector};
  };
  static_assert([&] {
    for (std::size_t i = 0; i < maths * las * lbs; ++i)
      if (family_instantiates<F>(config(i))) return true;
    return false;
  }(), "no instance of the family has this tile, warp tile and stage count");
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (
        [&] {
          if constexpr (family_instantiates<F>(config(I))) register_repack_routes<F, config(I)>(table);
        }(),
        ...);
  }(std::make_index_sequence<maths * las * lbs>{});
}

inline void register_default_routes(GemmTable& table = gemm_table()) {
  register_repack_routes_for_tile<families::Sm90WgmmaF16, TileShape{256, 128, 64}, WarpShape{128, 128}, 4>(table);
  register_repack_routes_for_tile<families::Sm90WgmmaF16, TileShape{128, 256, 64}, WarpShape{64, 256}, 4>(table);
  // More, smaller tiles for mid-size problems (e.g. 3000x5000x700: 960 tiles of 128x128 fill 132 SMs
  // in 7.3 waves, 480 of 256x128 in 3.6); the family has 'tn' and 'tt' only.
  register_repack_routes_for_tile<families::Sm90WgmmaF16Small, TileShape{128, 128, 64}, WarpShape{64, 128}, 5>(table);
  register_repack_routes_for_tile<families::Sm80MmaF16, TileShape{128, 256, 32}, WarpShape{64, 64}, 4>(table);
}

}  // namespace ktune::route
