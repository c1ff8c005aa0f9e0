// ktune/gemm/kernel/simt.cuh — exact-fp32 SIMT mainloop: cp.async multistage pipeline, both operands
// held MN-contiguous in padded shared memory ([BK][BM+pad]), each thread an outer product of a
// TM×TN register block per k (float4 shared-memory reads, FFMA).
#pragma once
#include <cstdint>

#include "ktune/gemm/config.hpp"
#include "ktune/gemm/kernel/smem.cuh"
#include "ktune/gemm/resource_model.hpp"

namespace ktune::kernel {

template <GemmConfig C>
struct SimtMainloop {
  static constexpr int BM = C.tile.m, BN = C.tile.n, BK = C.tile.k;
  static constexpr int WM = C.warp.m, WN = C.warp.n;
  static constexpr int TM = simt_thread_tile_m(C), TN = simt_thread_tile_n(C);  // warp = 4×8 threads
  static constexpr int threads = C.threads();
  static constexpr int pad = smem_layout::simt_pad;
  static constexpr bool a_kc = C.a_k_contiguous(), b_kc = C.b_k_contiguous();

  using TileA = PaddedTile<float, BK, BM, pad>;
  using TileB = PaddedTile<float, BK, BN, pad>;
  static constexpr int stage_bytes = TileA::bytes + TileB::bytes;
  // M-contiguous A / N-contiguous B copy straight in; K-contiguous ones transpose element by element.
  using CopyA = std::conditional_t<a_kc, TransposingCopyF32<BM, BK, pad, threads>, TileCopy<float, BK, BM, C.align, threads, TileA>>;
  using CopyB = std::conditional_t<b_kc, TransposingCopyF32<BN, BK, pad, threads>, TileCopy<float, BK, BN, C.align, threads, TileB>>;

  using Accumulators = float[TM][TN];

  // Thread (tm, tn) of its warp owns rows q·16 + tm·4 + 0..3 for q < TM/4 (float4 groups spread so
  // that a warp's shared reads cover consecutive 16-byte words), and likewise columns q·(WN/(TN/4)).
  static constexpr int bands = WM / 16;  // epilogue bands of 16 rows = one float4 row group
  static_assert(WM / (TM / 4) == 16, "SIMT thread tiles: TM=4 with WM=16 or TM=8 with WM=32");
  __device__ __forceinline__ static int warp_row0(int warp) { return (warp / (BN / WN)) * WM; }
  __device__ __forceinline__ static int warp_col0(int warp) { return (warp % (BN / WN)) * WN; }
  __device__ __forceinline__ static int row_in_warp(int lane, int i) { return (i / 4) * 16 + (lane / 8) * 4 + (i % 4); }
  __device__ __forceinline__ static int col_in_warp(int lane, int j) {
    return (j / 4) * (WN / (TN / 4)) + (lane % 8) * 4 + (j % 4);
  }

  template <int Band, class F>
  __device__ __forceinline__ static void visit_band(Accumulators& acc, F&& f) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int i = Band * 4; i < Band * 4 + 4; ++i)
#pragma unroll
      for (int j = 0; j < TN; j += 2) f(row_in_warp(lane, i) - Band * 16, col_in_warp(lane, j), acc[i][j], acc[i][j + 1]);
  }

  __device__ __forceinline__ static void load_stage(char* smem, int slot, int kt, const float* A, std::int64_t lda,
                                                    const float* B, std::int64_t ldb, int m0, int n0, int M, int N,
                                                    int K, int tid) {
    char* sA = smem + slot * stage_bytes;
    char* sB = sA + TileA::bytes;
    copy_operand_tile<CopyA, a_kc>(sA, A, lda, m0, kt * BK, M, K, tid);
    copy_operand_tile<CopyB, b_kc>(sB, B, ldb, n0, kt * BK, N, K, tid);
  }

  __device__ __forceinline__ static void run(Accumulators& acc, char* smem, const float* A, std::int64_t lda,
                                             const float* B, std::int64_t ldb, int m0, int n0, int M, int N, int K) {
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    // Offsets (in floats) of this thread's float4 groups inside a k-row of each tile.
    const int a_off = warp_row0(warp) + row_in_warp(lane, 0), b_off = warp_col0(warp) + col_in_warp(lane, 0);

    const int k_tiles = (K + BK - 1) / BK;
#pragma unroll
    for (int s = 0; s < C.stages - 1; ++s) {
      if (s < k_tiles) load_stage(smem, s, s, A, lda, B, ldb, m0, n0, M, N, K, tid);
      copy_commit();
    }
    for (int kt = 0; kt < k_tiles; ++kt) {
      copy_wait<C.stages - 2>();
      __syncthreads();
      const int next = kt + C.stages - 1;
      if (next < k_tiles) load_stage(smem, next % C.stages, next, A, lda, B, ldb, m0, n0, M, N, K, tid);
      copy_commit();

      const float* sA = reinterpret_cast<const float*>(smem + (kt % C.stages) * stage_bytes);
      const float* sB = reinterpret_cast<const float*>(smem + (kt % C.stages) * stage_bytes + TileA::bytes);
#pragma unroll
      for (int k = 0; k < BK; ++k) {
        float a[TM], b[TN];
#pragma unroll
        for (int q = 0; q < TM / 4; ++q)
          *reinterpret_cast<float4*>(&a[q * 4]) =
              *reinterpret_cast<const float4*>(sA + k * TileA::row_elems + a_off + q * (WM / (TM / 4)));
#pragma unroll
        for (int q = 0; q < TN / 4; ++q)
          *reinterpret_cast<float4*>(&b[q * 4]) =
              *reinterpret_cast<const float4*>(sB + k * TileB::row_elems + b_off + q * (WN / (TN / 4)));
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
      }
    }
    copy_wait<0>();
  }
};

}  // namespace ktune::kernel
