// ktune/gemm/kernel/sm90/mainloop.cuh — the Hopper mainloop of one BM×BN×BK k-tile: what the producer
// loads (TMA boxes) and what each consumer warpgroup computes from it (wgmma on descriptors).
//
// Shared memory of one stage: A then B, every row one swizzle row of BK elements: 128 bytes (BK = 64 16-bit
// elements, or 32 fp32 for tf32 with K-major operands only) with the 128-byte swizzle, or 64 bytes (BK = 32 16-bit
// elements, K-major operands only) with the 64-byte swizzle (finer k-tiles: twice the stages in the same bytes).
//   K-major A (row-major A): one TMA box {64 k, BM m}: row m at m·128 B.
//   M-major A (column-major A): BM/64 boxes {64 m, 64 k}, 8 KB each: box i holds m 64i.., row k at k·128 B.
//   B likewise with N (K-major = column-major B, N-major = row-major B).
// Consumer warpgroup c owns the WM×WN sub-tile at (wg_row0(c), wg_col0(c)) and issues, per k-step
// (16 for f16/bf16, 8 for tf32: 32 bytes of K either way), WM/64 wgmma m64nWNk16 / m64nWNk8 instructions.
//
// Clusters of 2 CTAs pair tiles that share the larger operand (B when BN ≥ BM: tiles (2i, n) and
// (2i+1, n); else A): each CTA loads half of that operand's tile and multicasts it into both CTAs'
// rings, so each CTA reads a third less from L2 (128x256: 32 KB instead of 48 KB per k-tile).
#pragma once
#include <cstdint>

#include "ktune/gemm/config.hpp"
#include "ktune/gemm/kernel/sm90/tma.cuh"
#include "ktune/gemm/kernel/sm90/wgmma.cuh"
#include "ktune/gemm/sm90_launch_policy.hpp"

namespace ktune::kernel::sm90 {

template <GemmConfig C>
struct WgmmaMainloop {
  static constexpr int BM = C.tile.m, BN = C.tile.n, BK = C.tile.k;
  static constexpr int WM = C.warp.m, WN = C.warp.n, MI = WM / 64;
  static constexpr int consumers = C.warps_m() * C.warps_n();  // warpgroup tiles of the block tile
  static constexpr bool a_kc = C.a_k_contiguous(), b_kc = C.b_k_contiguous();
  static constexpr int elem_bytes = size_of(C.operand());  // 2 (f16, bf16) or 4 (tf32 reads fp32)
  static constexpr int instr_k = instr_shape(C.math).k;     // K of one wgmma: 16, or 8 for tf32
  static constexpr int k_steps = BK / instr_k;              // wgmma k-steps per k-tile
  static constexpr int row_bytes = BK * elem_bytes;       // one swizzle row = BK elements: 128 or 64 bytes
  static constexpr std::uint32_t swizzle = row_bytes == 128 ? 1u : 2u;  // descriptor layout type: 128- / 64-byte swizzle
  static constexpr int atom_bytes = 8 * row_bytes;        // 8 rows: one swizzle atom
  static constexpr int box_bytes = 64 * row_bytes;        // 64 rows: an m64 block (K-major) or a box (MN-major)
  static constexpr int mn_box_inner = row_bytes / elem_bytes;  // MN-major boxes: 64 MN elements (16-bit only)
  static constexpr int a_bytes = BM * row_bytes, b_bytes = BN * row_bytes;
  static constexpr int stage_bytes = a_bytes + b_bytes;
  // WN: a multiple of 16 (wgmma takes N in steps of 8; the staged epilogue's 16-column chunks and a
  // multicast half of a K-major B box, whole 8-row swizzle atoms, need 16), of 64 where B is MN-major
  // (whole 64-element TMA boxes). WN = 96 / 112 are probes (tools/sm90-probes), K-major B.
  static_assert((row_bytes == 128 || (row_bytes == 64 && a_kc && b_kc && elem_bytes == 2)) && WM % 64 == 0 && WN % 16 == 0 &&
                    (b_kc || WN % 64 == 0) && BK % instr_k == 0,
                "the constraint model guarantees the shapes");
  static_assert(C.math != MathOp::wgmma_tf32 || (a_kc && b_kc), "the constraint model keeps tf32 K-major");
  // Descriptor address step (16-byte units) per k-step: instr_k elements (32 bytes) along a K-major
  // row, or instr_k/8 8-row K groups (swizzle atoms) of an MN-major box.
  static constexpr std::uint64_t a_kstep = a_kc ? instr_k * elem_bytes / 16 : instr_k / 8 * atom_bytes / 16;
  static constexpr std::uint64_t b_kstep = b_kc ? instr_k * elem_bytes / 16 : instr_k / 8 * atom_bytes / 16;

  using Accumulators = float[MI][WN / 2];

  __host__ __device__ static constexpr int wg_row0(int wg) { return (wg / (BN / WN)) * WM; }
  __host__ __device__ static constexpr int wg_col0(int wg) { return (wg % (BN / WN)) * WN; }

  // Cluster pairing: along M (sharing B) when BN ≥ BM, else along N (sharing A).
  static constexpr bool pair_m = sm90_pairs_along_m(C);

  // TMA box shapes {inner = BK (K-major) or mn_box_inner (MN-major), outer} for the host's tensor
  // maps. A multicast K-major operand is loaded as `parts` boxes, one per CTA of the cluster (the GEMM: 2).
  static constexpr unsigned a_box_outer(int parts) { return a_kc ? (parts > 1 && !pair_m ? BM / parts : BM) : 64; }
  static constexpr unsigned b_box_outer(int parts) { return b_kc ? (parts > 1 && pair_m ? BN / parts : BN) : 64; }

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // One operand's k-tile: Rows MN-rows from mn0, K from k0. Multicast: this CTA (rank 0 or 1 of a pair)
  // loads its half (K-major: rows rank·Rows/2..; MN-major: every other 64-row box) into both CTAs.
  // (The GEMM's clusters are pairs; conv's larger clusters have their own producer, sm90_conv.cuh.)
  template <bool KMajor, int Rows>
  __device__ __forceinline__ static void load_operand(const CUtensorMap* map, char* dst, std::uint64_t* bar, int mn0,
                                                      int k0, bool multicast, unsigned rank) {
    if constexpr (KMajor) {
      if (!multicast) {
        tma_load_2d(dst, map, k0, mn0, bar);
      } else {
        constexpr int half = Rows / 2;
        tma_load_2d_multicast(dst + rank * half * row_bytes, map, k0, mn0 + int(rank) * half, bar, 0x3);
      }
    } else {
#pragma unroll
      for (int j = 0; j < Rows / 64; ++j) {
        if (!multicast)
          tma_load_2d(dst + j * box_bytes, map, mn0 + 64 * j, k0, bar);
        else if ((j & 1) == int(rank))
          tma_load_2d_multicast(dst + j * box_bytes, map, mn0 + 64 * j, k0, bar, 0x3);
      }
    }
  }

  // Producer: copy the k-tile at k0 of block tile (m0, n0) into `stage`, counting bytes on `bar`
  // (cluster = 2: the shared operand is multicast, see above).
  __device__ __forceinline__ static void load(const CUtensorMap* ta, const CUtensorMap* tb, char* stage,
                                              std::uint64_t* bar, int m0, int n0, int k0, unsigned cluster,
                                              unsigned rank) {
    load_operand<a_kc, BM>(ta, stage, bar, m0, k0, cluster == 2 && !pair_m, rank);
    load_operand<b_kc, BN>(tb, stage + a_bytes, bar, n0, k0, cluster == 2 && pair_m, rank);
  }

  // Descriptors of consumer warpgroup `wg`'s operands in stage 0 at k-step 0 (ring = shared address of
  // stage 0). Block mi of A is 64 rows = 8 KB further in either layout.
  struct Descriptors {
    std::uint64_t a, b;
  };
  __device__ __forceinline__ static Descriptors descriptors(std::uint32_t ring, int wg) {
    const int r0 = wg_row0(wg), c0 = wg_col0(wg);
    Descriptors d;
    d.a = a_kc ? make_smem_desc(ring + r0 * row_bytes, 16, atom_bytes, swizzle)
               : make_smem_desc(ring + (r0 / 64) * box_bytes, box_bytes, atom_bytes);
    d.b = b_kc ? make_smem_desc(ring + a_bytes + c0 * row_bytes, 16, atom_bytes, swizzle)
               : make_smem_desc(ring + a_bytes + (c0 / 64) * box_bytes, box_bytes, atom_bytes);
    // Uniform across the warp by construction (they depend on the warpgroup only); a shuffle from lane 0
    // lets the compiler know, so they and the per-k-step descriptor arithmetic live in uniform registers
    // instead of being computed per thread and moved over (R2UR) before every wgmma.
    d.a = __shfl_sync(0xffffffffu, d.a, 0);
    d.b = __shfl_sync(0xffffffffu, d.b, 0);
    return d;
  }

  // Consumer: issue (not wait for) the wgmmas of one k-tile in stage `stage` and commit them as one
  // group. accumulate = false starts the tile (the first step overwrites the accumulators).
  __device__ __forceinline__ static void mma(Accumulators& acc, const Descriptors& d0, int stage, bool accumulate) {
    // The stage is warp-uniform; after ping-pong's turn-dependent skips the compiler cannot prove it, and
    // would build every descriptor per thread and move it over (R2UR). One shuffle per k-tile tells it.
    const std::uint64_t off = std::uint64_t(__shfl_sync(0xffffffffu, stage, 0)) * (stage_bytes / 16);
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) fence_registers(acc[mi]);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < k_steps; ++kk)
#pragma unroll
      for (int mi = 0; mi < MI; ++mi)
        wgmma_step<C.math, WN, a_kc ? 0 : 1, b_kc ? 0 : 1>(acc[mi], d0.a + off + mi * (box_bytes / 16) + kk * a_kstep,
                                                           d0.b + off + kk * b_kstep, (kk > 0 || accumulate) ? 1 : 0);
    wgmma_commit();
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) fence_registers(acc[mi]);
  }

  // Consumer: one more k16 step on the tile's accumulators, every m64 block reading the same A' (K-major,
  // descriptor a) and B' (MN-major, descriptor b), committed as a group of its own: the wide store's bias
  // through the tensor core (epilogue.cuh, kernel.cuh).
  __device__ __forceinline__ static void mma_rank1(Accumulators& acc, std::uint64_t a, std::uint64_t b) {
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) fence_registers(acc[mi]);
    wgmma_fence();
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) wgmma_step<C.math, WN, 0, 1>(acc[mi], a, b, 1);
    wgmma_commit();
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) fence_registers(acc[mi]);
  }
#endif

  // Epilogue: write this warp's accumulators of m64 block Mi, columns Chunk·Cols .. +Cols, as a 16-row
  // band (the warp's rows 16w..16w+15 of the block) into `stage` (row stride `stride` floats).
  template <int Mi, int Chunk, int Cols>
  __device__ __forceinline__ static void stage_chunk(Accumulators& acc, float* stage, int stride) {
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int jj = 0; jj < Cols / 8; ++jj) {
      constexpr int j0 = Chunk * (Cols / 8);
      float* p = stage + g * stride + jj * 8 + 2 * t;
      *reinterpret_cast<float2*>(p) = make_float2(acc[Mi][4 * (j0 + jj)], acc[Mi][4 * (j0 + jj) + 1]);
      *reinterpret_cast<float2*>(p + 8 * stride) = make_float2(acc[Mi][4 * (j0 + jj) + 2], acc[Mi][4 * (j0 + jj) + 3]);
    }
  }
};

}  // namespace ktune::kernel::sm90
