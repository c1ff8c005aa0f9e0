// ktune/conv/families.hpp — the default conv2d fprop families (sm80 mma.sync and sm90 TMA + wgmma, f16
// and bf16 with fp32 accumulation). Tuning policy, kept apart from kernel code: the constraint model
// prunes the product and the host tests list what survived. Instance counts are kept modest (build
// time): 22 mma.sync (4 of them stems), 17 Hopper (7 of them, on the 1x1 route, the GEMM table's own kernels).
#pragma once
#include "ktune/arch.hpp"
#include "ktune/conv/family.hpp"

namespace ktune::families {

// Block shapes were chosen by timing 14 candidates on an H200 over the 15 ResNet-50 layers of
// shared/ANCHORS.md at N = 32 (notes/conv2d.md): 128x64x32 (8 warps of 32x32) was fastest on 10 of
// the 14 C % 8 == 0 layers, 64x64x64 on the deep-reduction layers with few output tiles (7x7 and
// 14x14 maps); 128x128 and 128x256 tiles with 64x64 warps were never competitive then (1 block per SM,
// the staged epilogue). Session 8 (register epilogue, B by the k-tile iterator): see Sm80ConvOptimizedWide.

// C % 8 == 0 (every ResNet layer after the first): 16-byte vectors, tap carried across k-tiles. 64x64x64
// serves the deep reductions on few output tiles (14x14 / 7x7 maps at N = 32); the 128-row tiles are
// Sm80ConvOptimizedWide's (128x64 w32x32 lost to 128x64 w64x32 on all 14 C % 8 layers in s8-batchA: dropped).
struct Sm80ConvOptimized {
  static constexpr std::string_view name = "sm80_conv_optimized";
  static constexpr const ArchTraits& arch = sm80;
  static constexpr MathOp maths[] = {MathOp::mma_f16, MathOp::mma_bf16};
  static constexpr ConvIteratorSpec iterators[] = {{ConvIterator::optimized, 8, 0}};
  static constexpr ConvBlockShape blocks[] = {{{64, 64, 64}, {32, 32}}};
  static constexpr int stages[] = {4};
};

// C % 8 == 0 with the sm80 GEMM family's warp tiles (64x64, and 64x32 for 64-channel outputs): the best
// mma.sync instance on 13 of the 14 C % 8 ResNet-50 layers (H200 s8-batchA, N = 32, f16, bias + ReLU;
// notes/conv2d.md): 128x64 w64x32 on the 56x56 / 28x28 layers with K = 64 or 128 outputs and short
// reductions (15.0 us vs 19.5 for 128x64 w32x32 on 56^2 64->64 1x1), 128x128 on 56^2 256->128, 28^2
// 128->512, 14^2 256->1024 and (split-K 4) 7^2 3x3 512->512, 128x256 on 7^2 512->2048. 256x128 w64x64
// and 256x64 w64x32 were timed there too and never won (dropped). bf16 twins since session 9 (same tiles,
// same policy: conv_tile_mismatch).
struct Sm80ConvOptimizedWide {
  static constexpr std::string_view name = "sm80_conv_optimized_wide";
  static constexpr const ArchTraits& arch = sm80;
  static constexpr MathOp maths[] = {MathOp::mma_f16, MathOp::mma_bf16};
  static constexpr ConvIteratorSpec iterators[] = {{ConvIterator::optimized, 8, 0}};
  static constexpr ConvBlockShape blocks[] = {{{128, 128, 32}, {64, 64}}, {{128, 256, 32}, {64, 64}}, {{128, 64, 32}, {64, 32}}};
  static constexpr int stages[] = {4};
};

// Any C: vector width by C's alignment (C % 4, C % 2, or scalar 2-byte loads); the tap is recomputed
// by division every k-tile.
struct Sm80ConvAnalytic {
  static constexpr std::string_view name = "sm80_conv_analytic";
  static constexpr const ArchTraits& arch = sm80;
  static constexpr MathOp maths[] = {MathOp::mma_f16, MathOp::mma_bf16};
  static constexpr ConvIteratorSpec iterators[] = {
      {ConvIterator::analytic, 4, 0}, {ConvIterator::analytic, 2, 0}, {ConvIterator::analytic, 1, 0}};
  static constexpr ConvBlockShape blocks[] = {{{128, 64, 32}, {32, 32}}};
  static constexpr int stages[] = {4};
};

// First layers with C = 4: one 8-byte vector per filter tap, tap arithmetic with a compile-time C.
struct Sm80ConvFewChannels {
  static constexpr std::string_view name = "sm80_conv_few_channels";
  static constexpr const ArchTraits& arch = sm80;
  static constexpr MathOp maths[] = {MathOp::mma_f16, MathOp::mma_bf16};
  static constexpr ConvIteratorSpec iterators[] = {{ConvIterator::few_channels, 4, 4}};
  static constexpr ConvBlockShape blocks[] = {{{128, 64, 32}, {32, 32}}};
  static constexpr int stages[] = {4};
};

// First layers with C = 3: 2-byte loads packed into 16-byte shared-memory stores. 256-row tiles
// (8 warps of 64x32) were 24% faster than 128x64 on the 224x224 7x7 stride-2 stem.
struct Sm80ConvFewChannels3 {
  static constexpr std::string_view name = "sm80_conv_few_channels3";
  static constexpr const ArchTraits& arch = sm80;
  static constexpr MathOp maths[] = {MathOp::mma_f16, MathOp::mma_bf16};
  static constexpr ConvIteratorSpec iterators[] = {{ConvIterator::few_channels, 1, 3}};
  static constexpr ConvBlockShape blocks[] = {{{256, 64, 32}, {64, 32}}};
  static constexpr int stages[] = {3};
};

// First-layer stems (C = 4 or 3, stride_w 2, filters up to 8x8, K ≤ 64; the ResNet-50 7x7/2 conv):
// input rows staged once per tile, the filter resident, A fragments read straight from the rows
// (conv/stem.hpp, kernel/stem.cuh). 4 warps of 64x64 (256-pixel tiles): two CTAs per multiprocessor
// on a 224x224 image, 1568 tiles at N = 32 = 5.94 waves of 264.
struct Sm80ConvStem {
  static constexpr std::string_view name = "sm80_conv_stem";
  static constexpr const ArchTraits& arch = sm80;
  static constexpr MathOp maths[] = {MathOp::mma_f16, MathOp::mma_bf16};
  static constexpr ConvIteratorSpec iterators[] = {{ConvIterator::stem, 4, 4}, {ConvIterator::stem, 1, 3}};
  static constexpr ConvBlockShape blocks[] = {{{256, 64, 32}, {64, 64}, 2}};
  static constexpr int stages[] = {2};
};

// ---- Hopper (sm_90a): the GEMM's TMA + wgmma warp-specialized persistent kernel ------------------------
// Block shapes: one wgmma warpgroup tile per consumer (WM×WN, WN = one instruction's N); two consumer
// warpgroups but for 64x64 (one, 104 registers, two CTAs per multiprocessor). At N = 32 the ResNet-50
// layers have N = K = 64..2048 output channels and N·P·Q = 100352 (56x56 maps) down to 1568 (7x7): tiles
// of 128x64 / 64x64 fill 132 multiprocessors on the small maps and waste nothing at K = 64; 128x128 and
// 256x128 (the sm90 GEMM's fastest shape, 0.92x cuBLAS at 4096^3) serve the large ones (cuDNN's own
// Hopper conv kernels use 128x128x64 and 256x128x64). Stages: the most that fit one CTA per
// multiprocessor (two for 64x64). Kept few: every sm90 instance costs ~10 s of build. The choice among
// them is sm90_conv_cost (conv/dispatch.hpp).

// 1×1, stride 1, no padding (9 of the 15 ResNet-50 layers): the sm90 GEMM kernel itself, as the GEMM table's
// own instances (gemm_table_kernels: the route launches those entries, no kernel is compiled for it): 256x128
// (Sm90WgmmaF16, the large 1×1 layers) and 128x128 s5 (Sm90WgmmaF16Small). No 128x64 tile: the TMA im2col
// route's 128x64 (the same wgmma tile, loading 1×1 layers as well) is the one the tuner took on every H200 run.
// (Until session 14 the 128x128 tile had 6 stages and its own kernel, compiled here for ~10 s of CPU per type
// in the 10-minute test build; the tuner picked it on none of the 90 bench_conv problems of the H200 runs since
// the ping-pong tiles (220a233, a279b84, 372d63c), on one of 30 at 4d6d459.)
// 128x256 (Sm90WgmmaF16's other tile): one wave where 256x128 takes two on 28² 128->512 at N = 32 (12.0 vs
// 12.3 µs, H200 s18); the GEMM table's 128x64 s8 and 64x64 s12 were timed here too and never came close.
struct Sm90ConvGemm1x1 {
  static constexpr std::string_view name = "sm90_conv_gemm1x1";
  static constexpr const ArchTraits& arch = sm90;
  static constexpr MathOp maths[] = {MathOp::wgmma_f16, MathOp::wgmma_bf16};
  static constexpr ConvIteratorSpec iterators[] = {{ConvIterator::gemm1x1, 8, 0}};
  static constexpr ConvBlockShape blocks[] = {{{256, 128, 64}, {128, 128}, 4},
                                              {{128, 256, 64}, {64, 256}, 4},
                                              {{128, 128, 64}, {64, 128}, 5}};
  static constexpr int stages[] = {4};
  static constexpr bool gemm_table_kernels = true;  // Sm90WgmmaF16 / Sm90WgmmaF16Small's entries
};

// The same route on the GEMM's ping-pong 64x256 tile (Sm90WgmmaF16PingPong), for the short-K, wide layers
// (14² 256->1024: as a bf16 GEMM, 6272x1024x256 ran 9.5 µs on it, the cooperative tiles 11.3-12.1 µs; as a
// conv at N = 32 0.93x -> 1.08x cuDNN fused; H200 s12). pp 128x128 (its other tile): second to 64x256 on
// 14² 256->1024 and 7² 512->2048 at N = 32 and 256, within 2-8% (H200 s18). f16 and bf16 (the GEMM table has both).
struct Sm90ConvGemm1x1PingPong {
  static constexpr std::string_view name = "sm90_conv_gemm1x1_pingpong";
  static constexpr const ArchTraits& arch = sm90;
  static constexpr MathOp maths[] = {MathOp::wgmma_f16, MathOp::wgmma_bf16};
  static constexpr ConvIteratorSpec iterators[] = {{ConvIterator::gemm1x1, 8, 0}};
  static constexpr ConvBlockShape blocks[] = {{{64, 256, 64}, {64, 256}, 5, WgSchedule::pingpong},
                                              {{128, 128, 64}, {128, 128}, 5, WgSchedule::pingpong}};
  static constexpr int stages[] = {5};
  static constexpr bool gemm_table_kernels = true;  // Sm90WgmmaF16PingPong's entries
};

// 1×1, stride 1, no padding on the GEMM's swap-AB instances (gemm/families.hpp Sm90WgmmaF16Swap and
// Swap2Wg: the kernel runs y^T = w·x^T, tiles in that SWAPPED orientation, 64x112 = 64 output channels x
// 112 pixels, 128x96 = 128 channels x 96 pixels; the epilogue stores each tile transposed). For the layers
// with few output channels and pixels (7² and 14² maps at N = 32), where their tiles fit one wave: H200,
// bf16 GEMM 1568x512x2048 (7² 2048->512) 64x112 1.07x cuBLASLt, 6272x256x1024 (14² 1024->256) 128x96
// 0.99x with bias+ReLU, against 0.89x / 0.84x for the best default GEMM instance (as GEMM probes: not yet
// timed as conv instances). 16-bit y, every built-in epilogue; no split-K, multicast or cluster_k. f16 and bf16:
// the GEMM table's own entries, so no build time (until session 18 f16 only, from when the route compiled them).
struct Sm90ConvGemm1x1Swap {
  static constexpr std::string_view name = "sm90_conv_gemm1x1_swap";
  static constexpr const ArchTraits& arch = sm90;
  static constexpr MathOp maths[] = {MathOp::wgmma_f16, MathOp::wgmma_bf16};
  static constexpr ConvIteratorSpec iterators[] = {{ConvIterator::gemm1x1, 8, 0}};
  static constexpr ConvBlockShape blocks[] = {{{64, 112, 64}, {64, 112}, 9, WgSchedule::swap_ab},
                                              {{128, 96, 64}, {64, 96}, 7, WgSchedule::swap_ab}};
  static constexpr int stages[] = {9};
  static constexpr bool gemm_table_kernels = true;  // Sm90WgmmaF16Swap / Swap2Wg's entries
};

// Any filter, stride ≤ 8, C % 8 == 0: A by TMA im2col, B by a 3-D TMA map over the KRSC filters.
// 256x64 (two 128x64 warpgroup tiles): the many-wave 3x3 layers with few filters, where the boxes read from
// L2 are the limit (every tile re-reads its im2col rows per filter tap and the whole filter slice): 20 KB per
// 128 pixel rows and 64-deep k-tile against 24 KB on 128x64. H200 s17: 56² 64→64 3×3 at N = 256 155.4 µs
// against 181.5 on pp 128x64 (cuDNN fused ~126), at N = 32 22.4 against 24.6.
struct Sm90ConvIm2col {
  static constexpr std::string_view name = "sm90_conv_tma_im2col";
  static constexpr const ArchTraits& arch = sm90;
  static constexpr MathOp maths[] = {MathOp::wgmma_f16, MathOp::wgmma_bf16};
  static constexpr ConvIteratorSpec iterators[] = {{ConvIterator::tma_im2col, 8, 0}};
  static constexpr ConvBlockShape blocks[] = {{{64, 64, 64}, {64, 64}, 6},
                                              {{128, 64, 64}, {64, 64}, 6},
                                              {{128, 128, 64}, {64, 128}, 6},
                                              {{256, 64, 64}, {128, 64}, 5},
                                              {{256, 128, 64}, {128, 128}, 4}};
  static constexpr int stages[] = {6};
};

// The TMA im2col route with ping-pong consumers: two warpgroups take turns on whole tiles, each one's
// epilogue under the other's mainloop (the GEMM's WgSchedule::pingpong). For layers with few k-tiles per
// tile and few output channels (56² 64->64 3x3: 9 k-tiles, N = 64; N = 256: 0.72x cuDNN fused on the
// cooperative 128x64 tile, whose epilogue stalls both consumers; 0.77x on pp 128x64, H200 s12). 256x64: each
// warpgroup a whole 256x64 tile (four m64n64 blocks, 168 registers), the im2col box of 256 pixels sharing one
// filter box (cuDNN's Hopper fprop has this schedule: tilesize256x64x64, warpgroupsize1x1x1). H200 s18, 56²
// 64->64 3x3: 132.7 µs at N = 256 (cooperative 256x64 156.4, cuDNN fused ~126), 21.1 at N = 32 (22.7); 56²
// 64->64 1x1 at N = 32 9.0 (9.5). (A swap-AB 64x256 im2col tile, 212 registers, was timed beside it and never
// won: 164.8 µs on that 3x3 layer at N = 256.) f16 only: bf16 twins compile (4 kernels, 140-168 registers, 0
// spills, session 18) but wait for a GPU run before they join the default table.
struct Sm90ConvIm2colPingPong {
  static constexpr std::string_view name = "sm90_conv_tma_im2col_pingpong";
  static constexpr const ArchTraits& arch = sm90;
  static constexpr MathOp maths[] = {MathOp::wgmma_f16};
  static constexpr ConvIteratorSpec iterators[] = {{ConvIterator::tma_im2col, 8, 0}};
  static constexpr ConvBlockShape blocks[] = {{{128, 64, 64}, {128, 64}, 7, WgSchedule::pingpong},
                                              {{128, 128, 64}, {128, 128}, 5, WgSchedule::pingpong},
                                              {{256, 64, 64}, {256, 64}, 5, WgSchedule::pingpong}};
  static constexpr int stages[] = {7};
};

// The TMA im2col route on the GEMM's swap-AB schedule: the kernel runs y^T = w·im2col(x)^T, so the filter
// box is wgmma's A (64 filters) and the im2col box its B (112 pixels, wgmma N = 112), one consumer warpgroup,
// 9 stages; the epilogue stores each tile transposed (the GEMM's store_tile_swapped). Tile in that SWAPPED
// orientation: 64x112 = 64 output channels x 112 output pixels. For the 3x3 layers with few pixels and long
// K: H200 session 16, f16 GEMM 1568x512x4608 (7² 3×3 512→512 at N = 32 as a GEMM) ran 17.7 µs on the GEMM's
// swap 64x112 against 24.7 on 128x128 and 20.3 on 64x128, while the im2col route's best tactic took 21.3
// (cuDNN fused 16.4-16.9). f16 only (as the ping-pong family); no split-K, multicast or cluster split-K (the swap
// kernel's limits).
struct Sm90ConvIm2colSwap {
  static constexpr std::string_view name = "sm90_conv_tma_im2col_swap";
  static constexpr const ArchTraits& arch = sm90;
  static constexpr MathOp maths[] = {MathOp::wgmma_f16};
  static constexpr ConvIteratorSpec iterators[] = {{ConvIterator::tma_im2col, 8, 0}};
  static constexpr ConvBlockShape blocks[] = {{{64, 112, 64}, {64, 112}, 9, WgSchedule::swap_ab}};
  static constexpr int stages[] = {9};
};

// Experimental, not in the default table (src/instances/conv_sm90.cu registers it only when compiled with
// KTUNE_EXPERIMENTAL_CONV_K32=1; scripts/gpu-requests/conv-k32): the ping-pong 256x64 tile with BK = 32 (32
// channels per k-tile, 64-byte swizzle rows, 20 KB stages, 10 of them), the shape of cuDNN's fastest Hopper kernel
// on 56² 3x3 64->64 (`tilesize256x64x32_warpgroupsize1x1x1`, 127 µs at N = 256 against 134.6 for ktune's BK = 64
// tile under ncu, session 18). Twice the k-tiles: finer steps through the ring, twice the barrier traffic.
struct Sm90ConvIm2colPingPongK32 {
  static constexpr std::string_view name = "sm90_conv_tma_im2col_pingpong_k32";
  static constexpr const ArchTraits& arch = sm90;
  static constexpr MathOp maths[] = {MathOp::wgmma_f16};
  static constexpr ConvIteratorSpec iterators[] = {{ConvIterator::tma_im2col, 8, 0}};
  static constexpr ConvBlockShape blocks[] = {{{256, 64, 32}, {256, 64}, 10, WgSchedule::pingpong}};
  static constexpr int stages[] = {10};
};

}  // namespace ktune::families
