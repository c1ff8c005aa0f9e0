// tools/ktune-profile/default_families.hpp — the default GEMM families ktune-profile lists (--list)
// and explains (--explain): ktune/gemm/families.hpp, in the order they are shown; and the default conv2d
// families it lists (ktune/conv/families.hpp, as conv/instances/all.cuh registers them). A family that is
// registered in a dispatch table but missing here shows up in --list as "also registered".
#pragma once
#include <tuple>

#include "ktune/conv/families.hpp"
#include "ktune/gemm/families.hpp"

namespace ktune::profile {

using DefaultFamilies =
    std::tuple<families::Sm80MmaF16, families::Sm80MmaF16Deep, families::Sm80MmaF16Small, families::Sm80MmaF16SmallM, families::Sm80MmaF16SmallM32,
               families::Sm80MmaF16Unaligned, families::Sm80MmaTf32,
               families::Sm80MmaTf32Unaligned, families::Sm80SimtF32, families::Sm90WgmmaF16, families::Sm90WgmmaF16Small,
               families::Sm90WgmmaF16PingPong, families::Sm90WgmmaF16N64, families::Sm90WgmmaF16N64Deep, families::Sm90WgmmaF16Swap,
               families::Sm90WgmmaF16Swap2Wg, families::Sm90WgmmaTf32,
               families::Sm90WgmmaTf32PingPong>;

using DefaultConvFamilies =
    std::tuple<families::Sm80ConvOptimized, families::Sm80ConvOptimizedWide, families::Sm80ConvAnalytic, families::Sm80ConvFewChannels,
               families::Sm80ConvFewChannels3, families::Sm80ConvStem, families::Sm90ConvGemm1x1, families::Sm90ConvGemm1x1PingPong,
               families::Sm90ConvGemm1x1Swap, families::Sm90ConvIm2col, families::Sm90ConvIm2colPingPong, families::Sm90ConvIm2colSwap>;

}  // namespace ktune::profile
