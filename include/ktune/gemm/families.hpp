// ktune/gemm/families.hpp — the default GEMM kernel families: each family's whole parameter space at
// a glance. This is tuning policy (which points to instantiate per architecture), kept apart from
// kernel code; the constraint model prunes the product and `ktune-profile --list` shows why.
#pragma once
#include "ktune/arch.hpp"
#include "ktune/gemm/config.hpp"

namespace ktune::families {

using enum MathOp;
using enum Layout;

// Tensor cores through mma.sync, f16/bf16 operands with 16-byte aligned rows: the fast path for
// problems that fill the GPU with 128-row tiles. Two tiles (128x128x64 ran 5-12% slower on the H200, and
// each instance costs build time), 64x64 warp tiles only: the 32x64 ones (128x128 of 8 warps; 128x256 of
// 16 warps exceeds the register file) were slower than 128x128 w64x64 on every problem of ktune-profile
// in sessions 8-11 (H200), so their 8 instances (~24 s of the 2-core test build) were dropped in
// session 11. Small tiles with 32x64 warps: Sm80MmaF16Small.
struct Sm80MmaF16 {
  static constexpr std::string_view name = "sm80_mma_f16";
  static constexpr const ArchTraits& arch = sm80;
  static constexpr MathOp maths[] = {mma_f16, mma_bf16};
  static constexpr Layout a_layouts[] = {row, col};
  static constexpr Layout b_layouts[] = {row, col};
  static constexpr TileShape tiles[] = {{128, 256, 32}, {128, 128, 32}};
  static constexpr WarpShape warps[] = {{64, 64}};
  static constexpr int stages[] = {4};
  static constexpr int aligns[] = {8};
};

// Deeper k-tiles for large 'tn' problems: BK = 64, 3 stages (144 KB; 4 would exceed sm_80's 163 KB), one
// barrier per 64 of K instead of 32. The best sm80 instance of ktune-profile on the H200 (bf16 tn 4096³:
// 423.6 TF/s in s7-verify, 413.0 in s8-batchA; Sm80MmaF16's 128x256x32 s4 414.2 / 406.4). 256x128x64 was
// dropped in session 8: slower than 128x256x64 on every default problem of s7-verify and s8-batchA (4096³
// bf16 408.7 / 381.4, f16 368.7 vs 389.6, 4096x11008x4096 398.4 vs 406.6; notes/sm80-mma.md). Its own
// family because a family is a product: 3 stages of BK = 32 tiles would add instances, not swap them.
struct Sm80MmaF16Deep {
  static constexpr std::string_view name = "sm80_mma_f16_deep";
  static constexpr const ArchTraits& arch = sm80;
  static constexpr MathOp maths[] = {mma_f16, mma_bf16};
  static constexpr Layout a_layouts[] = {row};
  static constexpr Layout b_layouts[] = {col};
  static constexpr TileShape tiles[] = {{128, 256, 64}};
  static constexpr WarpShape warps[] = {{64, 64}};
  static constexpr int stages[] = {3};
  static constexpr int aligns[] = {8};
};

// The same for problems too small to fill 132 multiprocessors with 128-row tiles.
struct Sm80MmaF16Small {
  static constexpr std::string_view name = "sm80_mma_f16_small";
  static constexpr const ArchTraits& arch = sm80;
  static constexpr MathOp maths[] = {mma_f16, mma_bf16};
  static constexpr Layout a_layouts[] = {row, col};
  static constexpr Layout b_layouts[] = {row, col};
  static constexpr TileShape tiles[] = {{64, 128, 32}, {64, 64, 64}};
  static constexpr WarpShape warps[] = {{32, 64}};
  static constexpr int stages[] = {4};
  static constexpr int aligns[] = {8};
};

// Decode-like problems (M ≤ 64: a few activation rows times a large weight matrix): 16- and 32-row
// tiles of 16-row warps side by side along N, so each block streams a wide slab of B and wastes little
// of M. Memory-bound: meant to run with split-K (launch option) so that enough blocks stream the
// weights; activations row-major, weights either way.
struct Sm80MmaF16SmallM {
  static constexpr std::string_view name = "sm80_mma_f16_small_m";
  static constexpr const ArchTraits& arch = sm80;
  static constexpr MathOp maths[] = {mma_f16, mma_bf16};
  static constexpr Layout a_layouts[] = {row};
  static constexpr Layout b_layouts[] = {col, row};
  static constexpr TileShape tiles[] = {{16, 128, 64}, {16, 64, 128}, {32, 64, 128}};
  static constexpr WarpShape warps[] = {{16, 32}};
  static constexpr int stages[] = {4};
  static constexpr int aligns[] = {8};
};

// M = 32 decode with the widest weight matrices: 32x128 tiles of 32x32 warps (2 m16 rows per warp, 4
// warps). On the H200 32x28672x8192 ran 117.4 us with it, 120.9 with 32x64x128 of 16x32 warps; the
// other 32-row combinations (32x128x64 of 16x32 warps, 32x64x128 of 32x32 warps) never won.
struct Sm80MmaF16SmallM32 {
  static constexpr std::string_view name = "sm80_mma_f16_small_m32";
  static constexpr const ArchTraits& arch = sm80;
  static constexpr MathOp maths[] = {mma_f16, mma_bf16};
  static constexpr Layout a_layouts[] = {row};
  static constexpr Layout b_layouts[] = {col, row};
  static constexpr TileShape tiles[] = {{32, 128, 64}};
  static constexpr WarpShape warps[] = {{32, 32}};
  static constexpr int stages[] = {4};
  static constexpr int aligns[] = {8};
};

// f16/bf16 operands whose rows are not 16-byte aligned (odd K, odd leading dimensions): 2-byte
// element copies, so every alignment has an instance. No 4-byte (align 2) variant: the repack routes
// (route/default_routes.cuh: copy to aligned scratch, then an aligned instance) beat it on every
// measured shape (H200, f16/bf16 tn and nn 3000x5000x700: 1.7x with the sm80 128x256 route, 3.4x with
// the sm90 ones; notes/build-time.md), and each instance costs ~10 s of build. ('nt' has no sm80
// route: on an sm80 GPU a 4-byte-aligned 'nt' problem runs this align-1 instance.)
struct Sm80MmaF16Unaligned {
  static constexpr std::string_view name = "sm80_mma_f16_unaligned";
  static constexpr const ArchTraits& arch = sm80;
  static constexpr MathOp maths[] = {mma_f16, mma_bf16};
  static constexpr Layout a_layouts[] = {row, col};
  static constexpr Layout b_layouts[] = {row, col};
  static constexpr TileShape tiles[] = {{128, 128, 32}};
  static constexpr WarpShape warps[] = {{32, 64}, {64, 64}};
  static constexpr int stages[] = {3};
  static constexpr int aligns[] = {1};
};

// tf32 tensor cores on f32 operands with 16-byte aligned rows.
struct Sm80MmaTf32 {
  static constexpr std::string_view name = "sm80_mma_tf32";
  static constexpr const ArchTraits& arch = sm80;
  static constexpr MathOp maths[] = {mma_tf32};
  static constexpr Layout a_layouts[] = {row, col};
  static constexpr Layout b_layouts[] = {row, col};
  static constexpr TileShape tiles[] = {{128, 128, 32}};
  static constexpr WarpShape warps[] = {{32, 64}};
  static constexpr int stages[] = {3};
  static constexpr int aligns[] = {4};
};

// tf32 on f32 operands with only 4-byte aligned rows: scalar copies keep a live address each, so
// the k-tile is halved to stay inside 255 registers (BK=32 spilled on sm90a for k-major A).
struct Sm80MmaTf32Unaligned {
  static constexpr std::string_view name = "sm80_mma_tf32_unaligned";
  static constexpr const ArchTraits& arch = sm80;
  static constexpr MathOp maths[] = {mma_tf32};
  static constexpr Layout a_layouts[] = {row, col};
  static constexpr Layout b_layouts[] = {row, col};
  static constexpr TileShape tiles[] = {{128, 128, 16}};
  static constexpr WarpShape warps[] = {{32, 64}};
  static constexpr int stages[] = {3};
  static constexpr int aligns[] = {1};
};

// Exact fp32 on CUDA cores (FFMA), register-blocked.
struct Sm80SimtF32 {
  static constexpr std::string_view name = "sm80_simt_f32";
  static constexpr const ArchTraits& arch = sm80;
  static constexpr MathOp maths[] = {simt_f32};
  static constexpr Layout a_layouts[] = {row, col};
  static constexpr Layout b_layouts[] = {row, col};
  static constexpr TileShape tiles[] = {{128, 128, 16}};
  static constexpr WarpShape warps[] = {{32, 64}};
  static constexpr int stages[] = {3};
  static constexpr int aligns[] = {4, 1};
};

// Hopper (sm_90a only, selected on compute capability 9.0): TMA loads into 128-byte-swizzled shared
// memory, wgmma with fp32 accumulators, one producer and one or two consumer warpgroups with
// setmaxnreg, a ring of `stages` slots with mbarrier parity waits, persistent grid with grouped raster.
// `warps` are the tiles of one consumer warpgroup (WM×WN: WM/64 wgmma m64nWNk16 per k16 step). Every
// layout works (MN-major operands use wgmma's transpose bits); TMA needs 16-byte aligned rows.
struct Sm90WgmmaF16 {
  static constexpr std::string_view name = "sm90_wgmma_f16";
  static constexpr const ArchTraits& arch = sm90;
  static constexpr MathOp maths[] = {wgmma_f16, wgmma_bf16};
  static constexpr Layout a_layouts[] = {row, col};
  static constexpr Layout b_layouts[] = {row, col};
  static constexpr TileShape tiles[] = {{128, 256, 64}, {256, 128, 64}};
  static constexpr WarpShape warps[] = {{64, 256}, {128, 128}};
  static constexpr int stages[] = {4};
  static constexpr int aligns[] = {8};
};

// The same kernel with smaller tiles, for problems with too few 128x256 tiles to fill 132
// multiprocessors (1024^3 has 32 of them). Layouts with A row-major only (tn, nn: the common ones),
// to keep the build small; the other layouts use Sm90WgmmaF16.
struct Sm90WgmmaF16Small {
  static constexpr std::string_view name = "sm90_wgmma_f16_small";
  static constexpr const ArchTraits& arch = sm90;
  static constexpr MathOp maths[] = {wgmma_f16, wgmma_bf16};
  static constexpr Layout a_layouts[] = {row};
  static constexpr Layout b_layouts[] = {row, col};
  static constexpr TileShape tiles[] = {{128, 128, 64}, {64, 128, 64}};
  static constexpr WarpShape warps[] = {{64, 128}};
  static constexpr int stages[] = {5};
  static constexpr int aligns[] = {8};
};

// Ping-pong consumers: two warpgroups take turns on whole tiles (128x128 or 64x256), each one's epilogue
// under the other's mainloop (schedule WgSchedule::pingpong; rule pingpong_whole_tile keeps warp tile =
// block tile). A row-major only (tn, tt), like Sm90WgmmaF16Small.
struct Sm90WgmmaF16PingPong {
  static constexpr std::string_view name = "sm90_wgmma_f16_pingpong";
  static constexpr const ArchTraits& arch = sm90;
  static constexpr MathOp maths[] = {wgmma_f16, wgmma_bf16};
  static constexpr Layout a_layouts[] = {row};
  static constexpr Layout b_layouts[] = {row, col};
  static constexpr TileShape tiles[] = {{128, 128, 64}, {64, 256, 64}};
  static constexpr WarpShape warps[] = {{128, 128}, {64, 256}};
  static constexpr int stages[] = {5};
  static constexpr int aligns[] = {8};
  static constexpr WgSchedule schedules[] = {WgSchedule::pingpong};
};

// What cuBLASLt runs on the small and medium bf16 shapes where it beat ktune (H200 s8-batchA, ncu:
// notes/split-k.md "What cuBLASLt runs"): 64-column tiles of 64x64 warpgroup tiles and deep rings, in
// clusters of 2 (the tuner's @cl2 tactic). 128x64 with two consumer warpgroups and 8 stages (1024^3:
// nvjet 128x64, 8 stages, clusters of 2 along N; the pair shares A: sm90_pairs_along_m), 'tn' only (the
// shapes of issues 5/6; each instance costs build time). f16 too since session 16: without it bench_gemm's f16
// 1024³ and 128×4096×4096 ran 0.87× / 0.85× cuBLASLt where bf16, on these tiles, ran 0.91× / 1.02× (H200).
struct Sm90WgmmaF16N64 {
  static constexpr std::string_view name = "sm90_wgmma_f16_n64";
  static constexpr const ArchTraits& arch = sm90;
  static constexpr MathOp maths[] = {wgmma_f16, wgmma_bf16};
  static constexpr Layout a_layouts[] = {row};
  static constexpr Layout b_layouts[] = {col};
  static constexpr TileShape tiles[] = {{128, 64, 64}};
  static constexpr WarpShape warps[] = {{64, 64}};
  static constexpr int stages[] = {8};
  static constexpr int aligns[] = {8};
};

// 64x64 tiles, one consumer warpgroup, a 12-stage ring (128x4096x4096: nvjet 64x64, 13 stages, clusters
// of 2 along M multicasting B; 128 tiles without split-K or a second kernel). Its own family: in
// Sm90WgmmaF16N64's product a 64x64 tile would also get 8 stages and 128x64 12 (which does not fit).
struct Sm90WgmmaF16N64Deep {
  static constexpr std::string_view name = "sm90_wgmma_f16_n64_deep";
  static constexpr const ArchTraits& arch = sm90;
  static constexpr MathOp maths[] = {wgmma_f16, wgmma_bf16};
  static constexpr Layout a_layouts[] = {row};
  static constexpr Layout b_layouts[] = {col};
  static constexpr TileShape tiles[] = {{64, 64, 64}};
  static constexpr WarpShape warps[] = {{64, 64}};
  static constexpr int stages[] = {12};
  static constexpr int aligns[] = {8};
};

// Swap AB (WgSchedule::swap_ab): the kernel runs the transposed problem D^T = B·A^T (the launcher
// exchanges A and B, M and N; the epilogue stores each tile transposed into row-major D), so the TILE AND
// WARP SHAPES ARE IN THE SWAPPED ORIENTATION: 64x112x64 is 64 of our N (output channels) x 112 of our M,
// wgmma N = 112 running along M, which the unswapped kernel can only tile in 64s or 128s. For short-M-by-N
// problems whose swapped tiles fit one wave. H200, paired with cuBLASLt on the same data, bf16 'tn'
// (tools/sm90-probes, 29177a5; edge tiles, unaligned D rows, compute-sanitizer memcheck/racecheck clean):
// 1568x512x2048 (ResNet-50 7x7 2048->512 as a GEMM) 64x112 s9 1.07x cuBLASLt, identity and bias+ReLU,
// where the best default instance ran 0.89x. Clusters of 2 made the swap tiles slower (0.70-1.03x): none
// (check_launch_options). 'tn' f16/bf16 only (rule swap_ab_operands), 16-bit D, every built-in epilogue
// (dispatch.hpp: swap_ab_implements); no split-K, stream-K or clusters. One consumer warpgroup, 9 stages.
// Its own family: Sm90WgmmaF16Swap2Wg's 128x96 tile takes 7 stages, and in one product this tile would
// also get 7 (a valid but unmeasured instance: build time).
struct Sm90WgmmaF16Swap {
  static constexpr std::string_view name = "sm90_wgmma_f16_swap";
  static constexpr const ArchTraits& arch = sm90;
  static constexpr MathOp maths[] = {wgmma_f16, wgmma_bf16};
  static constexpr Layout a_layouts[] = {row};
  static constexpr Layout b_layouts[] = {col};
  static constexpr TileShape tiles[] = {{64, 112, 64}};
  static constexpr WarpShape warps[] = {{64, 112}};
  static constexpr int stages[] = {9};
  static constexpr int aligns[] = {8};
  static constexpr WgSchedule schedules[] = {WgSchedule::swap_ab};
};

// Swap AB with two cooperative consumer warpgroups: 128x96x64 in the swapped orientation (128 of our N x
// 96 of our M, two 64x96 warpgroup tiles), 7 stages. H200, bf16 'tn' 6272x256x1024 (ResNet-50 L10 as a
// GEMM), paired with cuBLASLt: 0.99x with bias+ReLU, 0.96x identity, where the best default instance ran
// 0.84x. Same restrictions as Sm90WgmmaF16Swap.
struct Sm90WgmmaF16Swap2Wg {
  static constexpr std::string_view name = "sm90_wgmma_f16_swap_2wg";
  static constexpr const ArchTraits& arch = sm90;
  static constexpr MathOp maths[] = {wgmma_f16, wgmma_bf16};
  static constexpr Layout a_layouts[] = {row};
  static constexpr Layout b_layouts[] = {col};
  static constexpr TileShape tiles[] = {{128, 96, 64}};
  static constexpr WarpShape warps[] = {{64, 96}};
  static constexpr int stages[] = {7};
  static constexpr int aligns[] = {8};
  static constexpr WgSchedule schedules[] = {WgSchedule::swap_ab};
};

// Hopper tf32 on fp32 operands: the same kernel as Sm90WgmmaF16 with wgmma m64nNk8 .tf32 and BK = 32
// (one 128-byte swizzle row of fp32). wgmma reads 32-bit operands K-major only, so only 'tn' (A
// row-major, B column-major) survives the constraint model (rule wgmma_k_major); the other layouts stay
// with sm80_mma_tf32. Few instances: each costs build time.
struct Sm90WgmmaTf32 {
  static constexpr std::string_view name = "sm90_wgmma_tf32";
  static constexpr const ArchTraits& arch = sm90;
  static constexpr MathOp maths[] = {wgmma_tf32};
  static constexpr Layout a_layouts[] = {row, col};
  static constexpr Layout b_layouts[] = {row, col};
  static constexpr TileShape tiles[] = {{128, 256, 32}, {256, 128, 32}};
  static constexpr WarpShape warps[] = {{64, 256}, {128, 128}};
  static constexpr int stages[] = {4};
  static constexpr int aligns[] = {4};
};

// tf32 with ping-pong consumers: Sm90WgmmaTf32's kernel (BK = 32 fp32, m64n128k8 .tf32, K-major 'tn'
// only: rule wgmma_k_major) with two consumer warpgroups taking turns on whole 128x128 tiles (rule
// pingpong_whole_tile), each one's epilogue under the other's mainloop. Six stages of 32 KB (the ring
// holds the same K as f16's five). H200, s4-batchB, tf32 4096^3 paired with cuBLASLt FAST_TF32: 0.980x
// (as a probe) against 0.958x for the cooperative 128x256 and 0.966x for 256x128.
struct Sm90WgmmaTf32PingPong {
  static constexpr std::string_view name = "sm90_wgmma_tf32_pingpong";
  static constexpr const ArchTraits& arch = sm90;
  static constexpr MathOp maths[] = {wgmma_tf32};
  static constexpr Layout a_layouts[] = {row};
  static constexpr Layout b_layouts[] = {col};
  static constexpr TileShape tiles[] = {{128, 128, 32}};
  static constexpr WarpShape warps[] = {{128, 128}};
  static constexpr int stages[] = {6};
  static constexpr int aligns[] = {4};
  static constexpr WgSchedule schedules[] = {WgSchedule::pingpong};
};

}  // namespace ktune::families
