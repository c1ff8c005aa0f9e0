// ktune/gemm/kernel/sm90/epilogue.cuh — the epilogue stores of the Hopper kernel's consumer warps.
//
// After a tile's last k-tile each consumer warp owns a 16-row band per m64 block of its warpgroup's
// accumulators (wgmma fragment layout: lane (g, t) holds rows g and g + 8, columns 8j + 2t, +1). Stores:
//   identity (D = A·B)   staged through the warp's shared-memory buffer in 16×32 fp32 chunks, every
//                        chunk unrolled, one vector per lane and row;
//   built-in epilogue    the same staging, but a run-time loop over the chunks (one copy of the code
//                        per output type, not one per chunk): per chunk a lane owns 4 columns of 4
//                        rows; its bias vector and its C / residual vectors are loaded first (their
//                        latency hides behind the staging), the activation is chosen once per chunk
//                        for all 16 values, then 4 vector stores;
//   other epilogues      Epi::apply per 4-value vector (user functors);
//   identity, 16-bit D   with 16-byte aligned rows: packed to D's type into the staging buffer, 16 rows
//                        × 128 bytes at a time, 16-byte vector stores (store_identity_wide);
//   async, 16-bit D      identity or fragment epilogue, D's tensor map given (16-byte aligned rows):
//                        packed into 8-row × 128-byte boxes that the TMA stores while the warp goes on
//                        (store_tile_async; the kernel's default for those).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_pipeline.h>
#include <cuda/ptx>  // the TMA stores, fences and bulk groups; host passes parse it too

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <utility>

#include "ktune/epilogue/builtin.cuh"
#include "ktune/epilogue/chunk.cuh"
#include "ktune/dispatch.hpp"  // max_raster_group
#include "ktune/gemm/kernel/params.cuh"
#include "ktune/gemm/kernel/sm90/pipeline.cuh"
#include "ktune/gemm/kernel/sm90/tma.cuh"
#include "ktune/gemm/resource_model.hpp"

// Experimental (off by default; a GPU request turns it on for an A/B): the asynchronous box store of 16-bit D
// (store_tile_async) stages each 8x64 box with two stmatrix.x4 per warp instead of eight 32-bit STS per thread,
// as cuDNN's Hopper fprop epilogue does (STSM.16.M88.4) and as the wide store here already does.
#ifndef KTUNE_SM90_STMATRIX_BOX_STORE
#define KTUNE_SM90_STMATRIX_BOX_STORE 0
#endif

namespace ktune::kernel::sm90 {

// The built-in epilogue's parameters say D = A·B: the store can skip the epilogue.
template <class Epi>
__device__ __forceinline__ bool is_identity(const typename Epi::Params& ep) {
  if constexpr (std::is_same_v<Epi, epilogue::Builtin>)
    return ep.alpha == 1.0f && ep.beta == 0.0f && ep.bias == nullptr && ep.residual == nullptr &&
           ep.activation == Activation::none && !ep.clamp;
  else
    return false;
}

// Columns of one staged chunk of a warp band: smem_layout::sm90_epilogue_cols (32), or 16 where the
// warpgroup tile's width is not a multiple of 32 (WN = 112, a probe tile: 7 chunks; the constraint model
// keeps such tiles to one m64 block, so a band has at most 8 chunks). The chunk's staging (16 rows ×
// (16 + pad) floats) fits the 16 × 32 one the resource model reserves.
template <class ML>
inline constexpr int sm90_epilogue_cols_of =
    ML::WN % smem_layout::sm90_epilogue_cols == 0 ? smem_layout::sm90_epilogue_cols : 16;

// Epilogue of one consumer warp: its 16-row bands (one per m64 block), Cols columns at a time, staged
// through `stage` so every lane applies the epilogue to 4 consecutive columns and stores one vector.
// Identity: every chunk unrolled, all of a lane's vectors in flight. General (any Epi; the built-in
// one goes to store_builtin instead, General = false drops this code): Epi::apply per vector.
template <class ML, class Epi, class TOut, bool General = true>
__device__ __forceinline__ void store_accumulators(const GemmParams<typename Epi::Params>& p,
                                                   typename ML::Accumulators& acc, float* stage, int row0, int col0,
                                                   bool identity) {
  constexpr int cols = sm90_epilogue_cols_of<ML>, stride = cols + smem_layout::sm90_epilogue_pad;
  static_assert(ML::WN % cols == 0, "whole chunks");
  constexpr int chunks = ML::WN / cols, vectors = smem_layout::epilogue_band_rows * cols / 4;
  const int lane = threadIdx.x & 31;
  TOut* D = static_cast<TOut*>(p.d);
  const bool vec4 = p.d_vec4;  // host checked that D, C, bias and residual allow 4-element vectors
  [&]<int... I>(std::integer_sequence<int, I...>) {
    (
        [&] {
          constexpr int mi = I / chunks, ch = I % chunks;
          const int rb = row0 + 64 * mi, cb = col0 + ch * cols;
          if (rb >= p.m || cb >= p.n) return;  // warp-uniform: the band chunk is outside D
          __syncwarp();
          ML::template stage_chunk<mi, ch, cols>(acc, stage, stride);
          __syncwarp();
          if (!General || identity) {  // D = A·B: all of the lane's vectors in flight at once
#pragma unroll
            for (int v = lane; v < vectors; v += 32) {
              const int r = v / (cols / 4), c = (v % (cols / 4)) * 4;
              const int row = rb + r, col = cb + c;
              float x[4];
              *reinterpret_cast<float4*>(x) = *reinterpret_cast<const float4*>(stage + r * stride + c);
              if (row < p.m && col < p.n)
                epilogue::store_vec4(D + static_cast<std::int64_t>(row) * p.ldd + col, x, min(4, p.n - col), vec4);
            }
          } else {  // not unrolled: inlining every activation 8x per chunk halved bias+relu speed (H200)
#pragma unroll 1
            for (int v = lane; v < vectors; v += 32) {
              const int r = v / (cols / 4), c = (v % (cols / 4)) * 4;
              const int row = rb + r, col = cb + c;
              if (row >= p.m || col >= p.n) continue;
              const int n = min(4, p.n - col);
              float x[4];
              *reinterpret_cast<float4*>(x) = *reinterpret_cast<const float4*>(stage + r * stride + c);
              Epi::template apply<TOut>(p.ep, row, col, x, n);
              epilogue::store_vec4(D + static_cast<std::int64_t>(row) * p.ldd + col, x, n, vec4);
            }
          }
        }(),
        ...);
  }(std::make_integer_sequence<int, ML::MI * chunks>{});
}

// Stage chunk k (a run-time index) of the warp's accumulators: a switch over the chunks' compile-time
// copies (a jump table in SASS; a chain of comparisons became 8 predicated copies, all issued), so the
// accumulators stay in registers.
template <class ML, int Cols>
__device__ __forceinline__ void stage_chunk_at(int k, typename ML::Accumulators& acc, float* stage, int stride) {
  constexpr int chunks = ML::WN / Cols, n = ML::MI * chunks;
  static_assert(n <= 8, "at most 8 chunks per warp band (WN ≤ 256, MI ≤ 2 with WN ≤ 128)");
#define KTUNE_STAGE_CASE(I)                                                                          \
  case I:                                                                                          \
    if constexpr (I < n) ML::template stage_chunk<I / chunks, I % chunks, Cols>(acc, stage, stride); \
    break;
  switch (k) {
    KTUNE_STAGE_CASE(0)
    KTUNE_STAGE_CASE(1)
    KTUNE_STAGE_CASE(2)
    KTUNE_STAGE_CASE(3)
    KTUNE_STAGE_CASE(4)
    KTUNE_STAGE_CASE(5)
    KTUNE_STAGE_CASE(6)
    KTUNE_STAGE_CASE(7)
    default: break;
  }
#undef KTUNE_STAGE_CASE
}

// Ask L1 for the line holding p (no register, no wait). Hand PTX: cuda::ptx has no prefetch.
__device__ __forceinline__ void prefetch_l1(const void* p) { asm volatile("prefetch.global.L1 [%0];\n" ::"l"(p)); }

// The built-in epilogue v = act(alpha·acc + beta·C + bias[col] + residual[row, col]), then clamp, for
// one consumer warp (see the top of this file); the same arithmetic in the same order as
// Builtin::apply. Registers are the limit: the accumulators (MI·WN/2 per thread) stay live through
// the run-time loops, so a lane holds one vector of each operand ahead of its use: the next chunk's
// bias, the next pass's C and residual.
template <class ML, class TOut>
__device__ __forceinline__ void store_builtin(const GemmParams<epilogue::Builtin::Params>& p,
                                              typename ML::Accumulators& acc, float* stage, int row0, int col0) {
  using V = epilogue::Vec4<TOut>;
  constexpr int cols = sm90_epilogue_cols_of<ML>, stride = cols + smem_layout::sm90_epilogue_pad;
  static_assert(ML::WN % cols == 0, "whole chunks");
  constexpr int chunks = ML::WN / cols, lanes_per_row = cols / 4, rows_per_pass = 32 / lanes_per_row;
  constexpr int passes = smem_layout::epilogue_band_rows / rows_per_pass;  // vectors per lane and chunk
  const epilogue::Builtin::Params& ep = p.ep;
  const int lane = threadIdx.x & 31, r0 = lane / lanes_per_row, c = (lane % lanes_per_row) * 4;
  const bool vec4 = p.d_vec4;  // host checked that D, C, bias and residual allow 4-element vectors
  const TOut* C = ep.beta != 0.0f ? static_cast<const TOut*>(ep.c) : nullptr;
  const TOut* R = static_cast<const TOut*>(ep.residual);
  const TOut* B = static_cast<const TOut*>(ep.bias);
  TOut* D = static_cast<TOut*>(p.d);
  // C and residual of one row vector (C may alias D: a lane reads only elements it writes later).
  auto load_rows = [&](int row, int col, int n, V& cv, V& rv) {
    if (row >= p.m || n <= 0) return;
    if (C != nullptr) cv = epilogue::load_vec4(C + static_cast<std::int64_t>(row) * ep.ldc + col, n, vec4);
    if (R != nullptr) rv = epilogue::load_vec4(R + static_cast<std::int64_t>(row) * ep.ldr + col, n, vec4);
  };
  auto load_bias = [&](int k, V& b) {
    const int col = col0 + cols * (k % chunks) + c;
    if (B != nullptr && k < ML::MI * chunks && col < p.n) b = epilogue::load_vec4(B + col, min(4, p.n - col), vec4);
  };
  // C and residual rows of chunk k into L1, lanes 0-15 C, 16-31 the residual (a row's 32 columns are
  // 64 or 128 bytes): by the time the chunk's vectors load, they hit L1, not L2.
  auto prefetch_rows = [&](int k) {
    const int row = row0 + 64 * (k / chunks) + (lane & 15), col = col0 + cols * (k % chunks);
    const TOut* base = lane < 16 ? C : R;
    const std::int64_t ld = lane < 16 ? ep.ldc : ep.ldr;
    if (k < ML::MI * chunks && base != nullptr && row < p.m && col < p.n) prefetch_l1(base + row * ld + col);
  };
  V b_next{};
  load_bias(0, b_next);
#pragma unroll 1
  for (int k = 0; k < ML::MI * chunks; ++k) {
    const V b = b_next;
    load_bias(k + 1, b_next);
    prefetch_rows(k + 1);
    const int rb = row0 + 64 * (k / chunks), cb = col0 + cols * (k % chunks);
    if (rb >= p.m || cb >= p.n) continue;  // warp-uniform: the band chunk is outside D
    const int col = cb + c, n = min(4, p.n - col);  // n ≤ 0: the lane's columns lie past N
    V c_next{}, r_next{};
    load_rows(rb + r0, col, n, c_next, r_next);
    __syncwarp();
    stage_chunk_at<ML, cols>(k, acc, stage, stride);
    __syncwarp();
#pragma unroll 1
    for (int i = 0; i < passes; ++i) {
      const int row = rb + r0 + rows_per_pass * i;
      const V cv = c_next, rv = r_next;
      if (i + 1 < passes) load_rows(row + rows_per_pass, col, n, c_next, r_next);
      const float4 s = *reinterpret_cast<const float4*>(stage + (r0 + rows_per_pass * i) * stride + c);
      float x[4] = {s.x, s.y, s.z, s.w};
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float v = ep.alpha * x[e];
        if (C != nullptr) v += ep.beta * epilogue::to_float(cv.e[e]);
        if (B != nullptr) v += epilogue::to_float(b.e[e]);
        if (R != nullptr) v += epilogue::to_float(rv.e[e]);
        x[e] = v;
      }
      epilogue::activate(ep.activation, x);
      if (ep.clamp) {
#pragma unroll
        for (int e = 0; e < 4; ++e) x[e] = fminf(fmaxf(x[e], ep.clamp_lo), ep.clamp_hi);
      }
      if (row < p.m && n > 0) epilogue::store_vec4(D + static_cast<std::int64_t>(row) * p.ldd + col, x, n, vec4);
    }
  }
}

// ---- The built-in epilogue on the accumulator fragments ----------------------------------------------
// Epilogues without C, residual or an expensive activation (bias, alpha, ReLU, clamp: bias + ReLU is the
// common one) are applied to the accumulators in registers, in a few straight loops that exist once per
// kernel (not per output type), and then leave through the identity store. The bias slice of a consumer
// warpgroup's WN columns is copied (cp.async, no registers; the warpgroup's threads share it) into one
// of the warpgroup's two bias buffers during the epilogue of the tile before (the first one before the
// first tile), so its latency hides under the next mainloop, however short (conv 1×1: one k-tile).
__device__ __forceinline__ bool fragment_epilogue(const epilogue::Builtin::Params& ep, bool vec4) {
  return ep.beta == 0.0f && ep.residual == nullptr &&
         (ep.activation == Activation::none || ep.activation == Activation::relu) && (ep.bias == nullptr || vec4);
}

// bias[col0 .. col0 + WN) (es = 2 or 4 bytes per element) → dst, in 4-element units shared by the
// warpgroup's 128 threads (wg_thread = 0..127); units past n are not read (their columns are never
// stored). The bias is 4-element aligned and n a multiple of 4 (p.d_vec4), so a unit is inside the bias
// or past its end. Visible to the warpgroup after bias_wait().
template <int WN>
__device__ __forceinline__ void bias_prefetch(const void* bias, int es, int col0, int n, char* dst, int wg_thread) {
#pragma unroll
  for (int u = wg_thread; u < WN / 4; u += 128) {
    const int col = col0 + 4 * u;
    if (col < n) {
      const char* src = static_cast<const char*>(bias) + static_cast<std::int64_t>(col) * es;
      if (es == 2) __pipeline_memcpy_async(dst + 8 * u, src, 8);
      else __pipeline_memcpy_async(dst + 16 * u, src, 16);
    }
  }
  __pipeline_commit();
}
// Every thread's copies are done, then the warpgroup's named barrier (3 for consumer 0, 4 for consumer
// 1; 128 threads) shows them to all four warps. Immediate ids: a register id makes ptxas reserve all 16
// barriers. Hand PTX: cuda::ptx has no named barrier.
// deep: the copies were committed two tiles ahead (the wide store): the next tile's group may stay pending.
__device__ __forceinline__ void bias_wait(int consumer, bool deep = false) {
  if (deep) __pipeline_wait_prior(1);
  else __pipeline_wait_prior(0);
  if (consumer == 0) asm volatile("bar.sync 3, 128;\n" ::: "memory");
  else asm volatile("bar.sync 4, 128;\n" ::: "memory");
}

// Two consecutive elements of T as floats.
__device__ __forceinline__ float2 pair_to_float2(const float* p) { return *reinterpret_cast<const float2*>(p); }
__device__ __forceinline__ float2 pair_to_float2(const __half* p) { return __half22float2(*reinterpret_cast<const __half2*>(p)); }
__device__ __forceinline__ float2 pair_to_float2(const __nv_bfloat16* p) {
  return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(p));
}

// acc = alpha·acc + bias[col] (fragment layout: lane (g, t) holds columns 8j + 2t, +1 of rows g, g + 8).
template <class ML, class T>
__device__ __forceinline__ void bias_fragments(typename ML::Accumulators& acc, const T* bias, float alpha) {
  const int t = threadIdx.x & 3;
#pragma unroll
  for (int j = 0; j < ML::WN / 8; ++j) {
    const float2 b = pair_to_float2(bias + 8 * j + 2 * t);
#pragma unroll
    for (int mi = 0; mi < ML::MI; ++mi) {
      acc[mi][4 * j] = alpha * acc[mi][4 * j] + b.x;
      acc[mi][4 * j + 1] = alpha * acc[mi][4 * j + 1] + b.y;
      acc[mi][4 * j + 2] = alpha * acc[mi][4 * j + 2] + b.x;
      acc[mi][4 * j + 3] = alpha * acc[mi][4 * j + 3] + b.y;
    }
  }
}

// The fragment epilogue in place (fragment_epilogue(ep) holds; with a bias, every thread of the
// warpgroup calls this, and bias_prefetch of this tile's slice into `bias` came before). Afterwards the
// accumulators are D's values: the identity store writes them.
template <class ML>
// relu_later: the store applies the ReLU while it converts to D's type (store_tile_wide), not here.
// bias_in_acc: the bias is in the accumulators already (the wide store's bias through the tensor core; alpha 1).
__device__ __forceinline__ void apply_fragments(const GemmParams<epilogue::Builtin::Params>& p,
                                                typename ML::Accumulators& acc, const char* bias, int consumer,
                                                bool relu_later = false, bool bias_deep = false, bool bias_in_acc = false) {
  const epilogue::Builtin::Params& ep = p.ep;
  if (ep.bias != nullptr && !bias_in_acc) {
    bias_wait(consumer, bias_deep);
    switch (p.d_type) {
      case DType::f32: bias_fragments<ML>(acc, reinterpret_cast<const float*>(bias), ep.alpha); break;
      case DType::f16: bias_fragments<ML>(acc, reinterpret_cast<const __half*>(bias), ep.alpha); break;
      case DType::bf16: bias_fragments<ML>(acc, reinterpret_cast<const __nv_bfloat16*>(bias), ep.alpha); break;
    }
  } else if (ep.alpha != 1.0f) {
#pragma unroll
    for (int mi = 0; mi < ML::MI; ++mi)
#pragma unroll
      for (int i = 0; i < ML::WN / 2; ++i) acc[mi][i] *= ep.alpha;
  }
  if (ep.activation == Activation::relu && !relu_later) {
#pragma unroll
    for (int mi = 0; mi < ML::MI; ++mi)
#pragma unroll
      for (int i = 0; i < ML::WN / 2; ++i) acc[mi][i] = epilogue::relu(acc[mi][i]);
  }
  if (ep.clamp) {
#pragma unroll
    for (int mi = 0; mi < ML::MI; ++mi)
#pragma unroll
      for (int i = 0; i < ML::WN / 2; ++i) acc[mi][i] = fminf(fmaxf(acc[mi][i], ep.clamp_lo), ep.clamp_hi);
  }
}

// ---- Identity store of 16-bit D through full 128-byte row segments -------------------------------------
// The fp32 staging above writes a 16×32 chunk per pass: 64 bytes of a row per 16-bit output row, 8-byte
// vectors, 4 rows per warp instruction. For f16/bf16 D whose rows are 16-byte aligned, the warp instead
// packs its accumulators to D's type straight into the staging buffer, 16 rows × 128 bytes (64 columns)
// at a time, in 16-byte units swizzled by row (unit u of row r at u ^ (r % 8): the packed-pair writes
// and the 16-byte reads are both conflict-free), and every lane stores 16-byte vectors: a warp
// instruction writes 4 whole 128-byte row segments (one L2 line each), half the store instructions.
template <class TOut>
__device__ __forceinline__ bool wide_identity_store(const void* d, std::int64_t ldd) {
  return sizeof(TOut) == 2 && (reinterpret_cast<std::uintptr_t>(d) & 15) == 0 && (ldd & 7) == 0;
}

template <class ML, class TOut, class EpiParams>
__device__ __forceinline__ void store_identity_wide(const GemmParams<EpiParams>& p, typename ML::Accumulators& acc,
                                                    float* stage, int row0, int col0) {
  // WN % 64 != 0 (96, 112: probe tiles): the last box is partial, its 16-byte units 0 .. last_units − 1.
  static_assert(sizeof(TOut) == 2 && ML::WN % 16 == 0, "16-bit D, 64-column boxes (the last one of 16-column steps)");
  constexpr int box_cols = 64, boxes = (ML::WN + box_cols - 1) / box_cols, row_bytes = 128;
  constexpr int last_units = (ML::WN - box_cols * (boxes - 1)) / 8;  // 8 where WN % 64 == 0
  static_assert(smem_layout::epilogue_band_rows * row_bytes <=
                    smem_layout::epilogue_band_rows * (smem_layout::sm90_epilogue_cols + smem_layout::sm90_epilogue_pad) * 4,
                "a 16-row × 128-byte box fits the warp's staging buffer");
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  char* buf = reinterpret_cast<char*>(stage);
  TOut* D = static_cast<TOut*>(p.d);
  using Pair = decltype(epilogue::pack2<TOut>(0.0f, 0.0f));
#pragma unroll
  for (int mi = 0; mi < ML::MI; ++mi)
#pragma unroll
    for (int b = 0; b < boxes; ++b) {
      const int rb = row0 + 64 * mi, cb = col0 + box_cols * b;
      if (rb >= p.m || cb >= p.n) continue;  // warp-uniform: the box lies outside D
      __syncwarp();                          // every lane has read the previous box
      [[maybe_unused]] const int units = b + 1 < boxes ? box_cols / 8 : last_units;  // (unrolled: a constant per box)
#pragma unroll
      for (int j = 0; j < box_cols / 8; ++j) {  // lane (g, t): columns 8j + 2t, +1 of rows g and g + 8
        if constexpr (last_units < box_cols / 8)
          if (j >= units) break;
        const int jj = (box_cols / 8) * b + j, at = ((j ^ g) << 4) + 4 * t;  // rows g, g + 8: same swizzle
        *reinterpret_cast<Pair*>(buf + g * row_bytes + at) = epilogue::pack2<TOut>(acc[mi][4 * jj], acc[mi][4 * jj + 1]);
        *reinterpret_cast<Pair*>(buf + (g + 8) * row_bytes + at) = epilogue::pack2<TOut>(acc[mi][4 * jj + 2], acc[mi][4 * jj + 3]);
      }
      __syncwarp();
#pragma unroll
      for (int i = 0; i < smem_layout::epilogue_band_rows / 4; ++i) {  // 4 rows × 8 units per instruction
        const int r = 4 * i + (lane >> 3), u = lane & 7;
        if constexpr (last_units < box_cols / 8)
          if (u >= units) continue;  // a partial box's lanes past its width
        const uint4 v = *reinterpret_cast<const uint4*>(buf + r * row_bytes + ((u ^ (r & 7)) << 4));
        const int row = rb + r, col = cb + 8 * u;
        if (row >= p.m || col >= p.n) continue;
        epilogue::store_unit16(D + static_cast<std::int64_t>(row) * p.ldd + col, v, p.n - col);
      }
    }
}

// The consumer warp's store of one tile: the built-in epilogue's three forms, or Epi::apply.
template <class ML, class Epi, class TOut>
__device__ __forceinline__ void store_tile(const GemmParams<typename Epi::Params>& p, typename ML::Accumulators& acc,
                                           float* stage, int row0, int col0, bool identity) {
  if constexpr (std::is_same_v<Epi, epilogue::Builtin>) {
    if constexpr (sizeof(TOut) == 2) {
      if (identity && wide_identity_store<TOut>(p.d, p.ldd)) {
        store_identity_wide<ML, TOut>(p, acc, stage, row0, col0);
        return;
      }
    }
    if (identity) store_accumulators<ML, Epi, TOut, false>(p, acc, stage, row0, col0, true);
    else store_builtin<ML, TOut>(p, acc, stage, row0, col0);
  } else {
    store_accumulators<ML, Epi, TOut>(p, acc, stage, row0, col0, identity);
  }
}

// ---- swap_ab (kernel.cuh: Sm90Schedule::swap_ab; families Sm90WgmmaF16Swap/Swap2Wg, probes) -------------
// The kernel computed D^T: accumulator row i (kernel row, p.m = our N) is D's column, accumulator column
// j (kernel column, p.n = our M) is D's row, so element (i, j) goes to D[j][i] (row-major D, p.ldd). Per
// m64 block the warp's 16-row band (rows rb..rb+15) is a 16-column strip of D. The measured path (identity,
// bias, ReLU): each lane applies them to its values in registers (the bias indexed by the accumulator row,
// g and g + 8: our output channel) and writes its 16-bit values transposed into the warp's staging, `cols`
// accumulator columns at a time ([j][i], 16 values + 8 pad per row: the 2-byte writes of a warp
// instruction hit distinct words); then every lane stores one 16-byte vector (8 columns of one D row) per
// 16 staged rows, predicated on both edges (partial vectors element by element; unaligned D element by
// element as well). Every other built-in epilogue: store_tile_swapped_general.
template <class T>
__device__ __forceinline__ std::uint16_t bits16(float x) {
  const T v = epilogue::from_float<T>(x);
  std::uint16_t r;
  static_assert(sizeof(v) == sizeof(r));
  __builtin_memcpy(&r, &v, sizeof(r));
  return r;
}
// The swap store's general path (alpha, beta·C, residual, GELU/SiLU, clamp): kept out of the measured path's
// unrolled loop, whose speed it cost when inlined there (H200, L13 bf16 1568x512x2048 on the 64x112 tile:
// 10.4 µs with it, 8.6 µs without; the SASS grew from 4,232 to 16,472 instructions). Rolled loops, one copy
// of the epilogue: each chunk's accumulators go to the staging as floats (stage_chunk_at: accumulator row
// i = D column, column j = D row), then every lane takes 4 consecutive D columns of one D row (4 lanes per
// 16-column row segment: coalesced C, residual and D) through Builtin::apply, the same code as the other kernels.
template <class ML, class TOut>
__device__ __forceinline__ void store_tile_swapped_general(const GemmParams<epilogue::Builtin::Params>& p,
                                                           typename ML::Accumulators& acc, float* staging, int row0,
                                                           int col0) {
  constexpr int cols = sm90_epilogue_cols_of<ML>, chunks = ML::WN / cols;
  constexpr int stride = cols + smem_layout::sm90_epilogue_pad;
  static_assert(smem_layout::epilogue_band_rows * stride * 4 <= sm90_min_warp_staging_bytes, "a float chunk fits");
  const int lane = threadIdx.x & 31;
  auto* D = static_cast<TOut*>(p.d);
  const bool vec4 =
      ((reinterpret_cast<std::uintptr_t>(D) | static_cast<std::uintptr_t>(p.ldd) * sizeof(TOut)) & (4 * sizeof(TOut) - 1)) == 0;
#pragma unroll 1
  for (int k = 0; k < ML::MI * chunks; ++k) {
    const int rb = row0 + 64 * (k / chunks), cb = col0 + (k % chunks) * cols;
    if (rb >= p.m || cb >= p.n) continue;  // warp-uniform: the chunk lies outside D
    __syncwarp();                          // the previous chunk's reads of the staging are done
    stage_chunk_at<ML, cols>(k, acc, staging, stride);
    __syncwarp();
#pragma unroll 1
    for (int u = lane; u < 4 * cols; u += 32) {
      const int j = u >> 2, i = 4 * (u & 3);  // staged column j: D row cb + j; staged rows i..i+3: D columns rb + i..
      const int row = cb + j, col = rb + i;
      if (row >= p.n || col >= p.m) continue;
      const int n = min(4, p.m - col);
      float x[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) x[e] = staging[(i + e) * stride + j];
      epilogue::Builtin::apply<TOut>(p.ep, row, col, x, n);
      epilogue::store_vec4(D + static_cast<std::int64_t>(row) * p.ldd + col, x, n, vec4);
    }
  }
}
template <class ML, class TOut>
__device__ __forceinline__ void store_tile_swapped(const GemmParams<epilogue::Builtin::Params>& p,
                                                   typename ML::Accumulators& acc, float* staging, int row0, int col0) {
  static_assert(sizeof(TOut) == 2, "swap_ab: 16-bit D");
  constexpr int cols = sm90_epilogue_cols_of<ML>, chunks = ML::WN / cols;
  constexpr int stride = 24;  // 16-bit elements per staged row: 16 values + 8 pad (48 bytes: 16-byte aligned)
  static_assert(ML::WN % cols == 0 && cols % 16 == 0 && cols * stride * 2 <= sm90_min_warp_staging_bytes,
                "whole chunks in the least warp staging");
  constexpr int per_lane = 2 * cols / 32;  // 16-byte vectors per lane and chunk (2 per staged row)
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  auto* stage = reinterpret_cast<std::uint16_t*>(staging);
  const TOut* B = static_cast<const TOut*>(p.ep.bias);
  const bool relu = p.ep.activation == Activation::relu;
  // The measured fast path (identity, bias, ReLU), else the whole built-in epilogue (warp-uniform).
  const bool general = p.ep.alpha != 1.0f || p.ep.beta != 0.0f || p.ep.residual != nullptr || p.ep.clamp ||
                       (p.ep.activation != Activation::none && !relu);
  if (general) {
    store_tile_swapped_general<ML, TOut>(p, acc, staging, row0, col0);
    return;
  }
  auto* D = static_cast<std::uint16_t*>(p.d);
  const bool vec = ((reinterpret_cast<std::uintptr_t>(D) | static_cast<std::uintptr_t>(p.ldd) * 2u) & 15u) == 0;
#pragma unroll
  for (int mi = 0; mi < ML::MI; ++mi) {
    const int rb = row0 + 64 * mi;  // accumulator rows rb..rb+15: D's columns
    if (rb >= p.m) continue;        // warp-uniform: the band lies past N
    float b_lo = 0.0f, b_hi = 0.0f;
    if (B != nullptr) {
      if (rb + g < p.m) b_lo = epilogue::to_float(B[rb + g]);
      if (rb + g + 8 < p.m) b_hi = epilogue::to_float(B[rb + g + 8]);
    }
#pragma unroll
    for (int ch = 0; ch < chunks; ++ch) {
      const int cb = col0 + ch * cols;  // accumulator columns cb..cb+cols-1: D's rows
      if (cb >= p.n) break;             // warp-uniform: this chunk and the later ones lie past M
      __syncwarp();                     // the previous chunk's (or tile's) reads of the staging are done
#pragma unroll
      for (int jj = 0; jj < cols / 8; ++jj) {
        const int j = ch * (cols / 8) + jj;  // the accumulators' 8-column group
        const int c = 8 * jj + 2 * t;  // staged row (accumulator column within the chunk)
        float v[4];
        v[0] = acc[mi][4 * j] + b_lo;
        v[1] = acc[mi][4 * j + 1] + b_lo;
        v[2] = acc[mi][4 * j + 2] + b_hi;
        v[3] = acc[mi][4 * j + 3] + b_hi;
        if (relu) {
#pragma unroll
          for (int e = 0; e < 4; ++e) v[e] = epilogue::relu(v[e]);
        }
        stage[c * stride + g] = bits16<TOut>(v[0]);
        stage[(c + 1) * stride + g] = bits16<TOut>(v[1]);
        stage[c * stride + g + 8] = bits16<TOut>(v[2]);
        stage[(c + 1) * stride + g + 8] = bits16<TOut>(v[3]);
      }
      __syncwarp();
#pragma unroll
      for (int q = 0; q < per_lane; ++q) {
        const int u = lane + 32 * q, r = u >> 1, h = u & 1;
        const int row = cb + r, col = rb + 8 * h;  // D's row (our M) and first column (our N)
        if (row >= p.n || col >= p.m) continue;
        const std::uint16_t* src = stage + r * stride + 8 * h;
        std::uint16_t* dst = D + static_cast<std::int64_t>(row) * p.ldd + col;
        if (vec && col + 8 <= p.m) {
          *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
        } else {
#pragma unroll
          for (int e = 0; e < 8; ++e)
            if (col + e < p.m) dst[e] = src[e];
        }
      }
    }
  }
}

// ---- Asynchronous store of 16-bit D through the TMA ---------------------------------------------------
// With one k-tile per tile (K = 64: 8192×8192×64, conv 1×1 layers) the kernel is a pure store, and a
// consumer that issues its own global stores waits for them (the LSU queue backs up) instead of starting
// the next tile's wgmma. Here each warp packs its values (identity, or after the fragment epilogue) into
// 8-row × 128-byte boxes (one 1 KB swizzle atom: 64 columns of 8 rows) in its staging region and lane 0
// hands each box to the TMA engine (`cp.async.bulk.tensor` shared → global, one bulk group per box): the
// warp goes on to its next box or tile at once and waits only before it rewrites a box buffer, for the
// store issued from it n boxes earlier to have read it (`wait_group.read n-1`; the buffers rotate on
// across tiles). n: every 1024-byte aligned 1 KB atom of the warp's staging (2 to 8; resource_model.hpp:
// sm90_warp_staging_bytes), or fewer on request (KTUNE_SM90_STORE_BOXES, an A/B switch). The TMA clips
// boxes at D's last row and, N being a multiple of 8 (make_store_map), at its last column, so partial
// tiles in M and N need nothing special;
// boxes wholly outside D are skipped. The caller waits for every read before the CTA exits (its shared
// memory must outlive them).
// Layout: the TMA's 128-byte swizzle, 16-byte unit u of box row r at u ^ r (the packed-pair writes of a
// warp instruction hit 32 different banks).
inline constexpr int sm90_store_box_rows = 8, sm90_store_box_bytes = 1024, sm90_store_box_cols_bytes = 128;

// Box buffers in a warp staging region of `region_bytes` that starts on a 512-byte boundary: the 1 KB
// atoms inside it that are 1024-byte aligned (a 2560-byte region holds 2 wherever it starts; at most 8).
constexpr int sm90_store_boxes(int region_bytes) {
  const int n = region_bytes % sm90_store_box_bytes == 0 ? region_bytes / sm90_store_box_bytes
                                                         : (region_bytes - 512) / sm90_store_box_bytes;
  return n < 8 ? n : 8;
}
// The warp tile leaves through the asynchronous store: 64-column boxes (ML::WN a multiple of 64), and
// warpgroup tiles of 64x256 or 128x128. Smaller ones ran slower with it than with their own stores on the
// H200 (s5-batchA, 8192x8192x64 bf16: 128x128 w64x128 65.5 vs 55.9 µs, 64x128 124 vs 108 µs; conv im2col
// w64x64 mixed) while 128x256, 256x128 and both ping-pong tiles ran 4-15% faster.
template <class ML>
inline constexpr bool sm90_async_store_fits = ML::WN % 64 == 0 && ML::WM * ML::WN >= 128 * 128;

// Host: D's tensor map for the asynchronous store (8-row × 64-column boxes, 128-byte swizzle) when D is
// 16-bit with 16-byte aligned rows and the epilogue may end in the identity store (the kernel decides per
// launch whether it does: fragment_epilogue; C, a residual, GELU or SiLU take the staged store). Returns
// how many box buffers each warp is to use (the kernel caps it at what its staging holds), 0 where D
// leaves through the consumers' own stores. The TMA writes whole 16-byte units at D's last column (H200
// s5-batchA: N = 197 and 1021 wrote a padded D's columns up to the next multiple of 8), so N must be a
// multiple of 8. A/B switches (read once per process): KTUNE_SM90_SYNC_STORE=1 (never the TMA),
// KTUNE_SM90_STORE_BOXES=n (at most n, 2..8, buffers per warp).
inline int make_store_map(CUtensorMap& map, DType t, void* d, std::int64_t m, std::int64_t n, std::int64_t ldd,
                          const EpilogueSpec& e) {
  static const bool sync_store = std::getenv("KTUNE_SM90_SYNC_STORE") != nullptr;
  static const int boxes_wanted = [] {
    const char* v = std::getenv("KTUNE_SM90_STORE_BOXES");
    const int b = v != nullptr ? std::atoi(v) : 0;
    return b >= 2 && b <= 8 ? b : 8;
  }();

  const bool plain = e.beta == 0.0f && !e.residual && (e.activation == Activation::none || e.activation == Activation::relu);
  if (!plain || sync_store || size_of(t) != 2 || reinterpret_cast<std::uintptr_t>(d) % 16 != 0 || ldd % 8 != 0 || n % 8 != 0)
    return 0;
  const bool ok = make_tensor_map(map, t, d, static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(m),
                                  static_cast<std::uint64_t>(ldd), sm90_store_box_cols_bytes / 2, sm90_store_box_rows)
                      .ok();
  return ok ? boxes_wanted : 0;
}

// ---- Wide asynchronous store: 16-row operations of 4 KB from freed ring stages ------------------------
// With one or two k-tiles per tile (8192x8192x64, conv 1×1) the ring's later stages hold nothing the
// mainloop waits for, while the 1 KB box store above runs at ~one box per 400-500 ns per warp (s5-batchA:
// 2.2-2.8 TB/s, whatever the buffer count: a per-operation cost, not the drain). So, on the launcher's
// choice (Sm90WideStore::ring = sm90_wide_ring), the producer and the consumers walk only the first 2 ring
// stages, and the rest of the ring plus the warps' staging become each consumer warp's store buffers: one
// per operation of 2 64-column blocks (128 columns) of its 16-row band (2 KB per block; a 3-D view of D:
// {64 columns, M rows, N / 64 blocks}, 128-byte swizzle), one proxy fence and one TMA operation per 4 KB,
// up to 8 buffers in flight per warp. Needs N % 64 = 0 (the view's blocks) and a warp tile of 128 or 256
// columns; the TMA clips rows at M and blocks at N / 64.
// The geometry is fixed at compile time (H200, 8192x8192x64 bf16, s6-batchA/s7-batchA: 2 KB operations
// 43.9 µs against 39.4 for 4 KB, 8 KB no faster; 1 or 3 stages kept 45.9 / 45.1 against 44.7 for 2), so
// the store's buffer count, offsets and waits are immediates (a run-time count took a jump table per
// operation).
inline constexpr int sm90_wide_ring = 2;  // ring stages the mainloop keeps
inline constexpr int sm90_wide_block_bytes = 2048, sm90_wide_blocks = 2, sm90_wide_max_buffers = 8;
inline constexpr int sm90_wide_op_bytes = sm90_wide_blocks * sm90_wide_block_bytes;
struct Sm90WideStore {
  int ring = 0;              // ring stages kept: 0 (the 1 KB box store) or sm90_wide_ring
  bool relu_in_pack = true;  // a fragment epilogue's ReLU in the conversion (cvt.rn.relu), not a pass of its own
  bool bias_deep = true;     // a third bias buffer after the store buffers: the bias copied two tiles ahead
  bool bias_mma = false;     // the bias added by the tensor core (one more k16 step; see "Bias through the tensor core")
};
template <class ML>
inline constexpr bool sm90_wide_store_fits = sm90_async_store_fits<ML> && ML::WN % 128 == 0;
// The wide store's shared memory of a kernel: `free_bytes` (the ring stages past the kept ones plus the
// staging, from a 1024-byte aligned start) shared by `warps` consumer warps, each a whole number of 4 KB
// buffers (at most 8); what the buffers leave holds the third bias buffers (4·warp_n bytes per consumer
// warpgroup).
// ---- Bias through the tensor core (wide store, Sm90WideStore::bias_mma) ---------------------------------
// The tile's bias as one more wgmma k16 step after its last k-tile: acc += A'·B', A' (m64 × k16, K-major)
// 1 at k = 0 and 0 elsewhere, B' (k16 × tile_n, MN-major) the tile's bias slice in k-row 0 and 0 in k-rows
// 1-15, so acc[m][n] += bias[n] (1·bias exact; the sum rounded once in fp32, as the epilogue's add). It
// takes the bias's per-value work (a shared-memory read, conversions and an add per value: ~220 of the ~430
// warp instructions per tile bias+ReLU costs over identity, H200 ncu s7-batchA) and the consumers' bias
// copies off the consumer warps. Layout, in the ring stages the wide store frees, after the store buffers:
// A' one m64 block (8 KB, the operands' 128-byte swizzle: row m's 1 in 16-byte unit m % 8; every block of A
// reads it), then one B' per kept ring stage (the producer copies the bias row into the B' of the stage
// that holds the tile's last k-tile: the stage's release covers it): 64-column blocks of two 8-row atoms
// (2 KB), k-row 0 the first 128 bytes of a block (the swizzle leaves row 0 in place). f16/bf16 operands,
// bias of the operand type (D's), alpha 1, N % 64 = 0 (whole blocks), bias 16-byte aligned.
inline constexpr int sm90_bias_a_bytes = 64 * 128;
constexpr int sm90_bias_b_bytes(int tile_n) { return tile_n / 64 * sm90_wide_block_bytes; }
constexpr int sm90_bias_mma_bytes(int tile_n) { return sm90_bias_a_bytes + sm90_wide_ring * sm90_bias_b_bytes(tile_n); }

struct Sm90WideLayout {
  int warp_bytes = 0, buffers = 0, bias_offset = 0;  // bias_offset: the third bias buffers, or A' and the B's
  bool bias_deep = false, bias_mma = false;
};
constexpr Sm90WideLayout sm90_wide_layout(int free_bytes, int warps, int warp_n, int tile_n) {
  Sm90WideLayout l;
  const int per_warp = free_bytes / warps / sm90_wide_op_bytes;
  l.buffers = per_warp < sm90_wide_max_buffers ? per_warp : sm90_wide_max_buffers;
  l.warp_bytes = per_warp * sm90_wide_op_bytes;
  l.bias_offset = warps * l.warp_bytes;
  l.bias_deep = free_bytes - l.bias_offset >= warps / 4 * warp_n * 4;
  l.bias_mma = free_bytes - l.bias_offset >= sm90_bias_mma_bytes(tile_n);
  return l;
}
// The layout of the kernel of `stages` ring stages of `stage_bytes` and `staging_bytes` of staging.
constexpr Sm90WideLayout sm90_wide_layout(int stages, int stage_bytes, int staging_bytes, int warps, int warp_n, int tile_n) {
  return stages > sm90_wide_ring
             ? sm90_wide_layout((stages - sm90_wide_ring) * stage_bytes + staging_bytes, warps, warp_n, tile_n)
             : Sm90WideLayout{};
}

// Host: the wide store a launch takes ({0, ...}: none): 2 ring stages of `stages`, when a tile has at most
// 2 k-tiles and the rest holds at least 2 buffers per consumer warp.
// A/B switches (read once): KTUNE_SM90_WIDE_RING=0 (never wide: the 1 KB box store),
// KTUNE_SM90_WIDE_KTILES=k (the most k-tiles per tile that go wide), KTUNE_SM90_WIDE_RELU_IN_PACK=0 (the
// fragment epilogue's ReLU as its own pass over the accumulators), KTUNE_SM90_WIDE_BIAS_AHEAD=1 (the bias
// copied one tile ahead, as without the wide store, instead of two).
inline Sm90WideStore sm90_wide_store_choice(int stages, int k_tiles, int stage_bytes, int staging_bytes, int warps, int warp_n,
                                            int tile_n) {
  auto env = [](const char* name, int fallback) {
    const char* v = std::getenv(name);
    return v != nullptr ? std::atoi(v) : fallback;
  };
  static const bool wanted = env("KTUNE_SM90_WIDE_RING", sm90_wide_ring) != 0;
  static const int max_k_tiles = env("KTUNE_SM90_WIDE_KTILES", 2);
  static const bool relu_in_pack = env("KTUNE_SM90_WIDE_RELU_IN_PACK", 1) != 0;
  static const bool bias_deep = env("KTUNE_SM90_WIDE_BIAS_AHEAD", 2) >= 2;
  const Sm90WideLayout l = sm90_wide_layout(stages, stage_bytes, staging_bytes, warps, warp_n, tile_n);
  if (!wanted || k_tiles > max_k_tiles || l.buffers < 2) return {};
  Sm90WideStore w;
  w.ring = sm90_wide_ring;
  w.relu_in_pack = relu_in_pack;
  w.bias_deep = bias_deep && l.bias_deep;
  return w;
}

// Host: whether a wide launch adds the bias through the tensor core (see above): a bias of the operands'
// type, 16-byte aligned, alpha 1, and room in the freed stages. On by default since session 9 (H200,
// s9-batchA, 8192×8192×64 bf16 bias+ReLU: 43.9 → 40.6 µs, 1.06× → 1.15× cuBLASLt paired, the no-epilogue
// time being 38.6). A/B switch (read once): KTUNE_SM90_WIDE_BIAS_MMA=0 adds the bias in the epilogue.
inline bool sm90_bias_mma_choice(const Sm90WideStore& w, const Sm90WideLayout& l, const EpilogueSpec& e, const void* bias,
                                 DType d_type, DType operand) {
  static const bool wanted = [] {
    const char* v = std::getenv("KTUNE_SM90_WIDE_BIAS_MMA");
    return v == nullptr || v[0] != '0';
  }();
  return wanted && w.ring > 0 && l.bias_mma && e.bias && bias != nullptr && reinterpret_cast<std::uintptr_t>(bias) % 16 == 0 &&
         e.alpha == 1.0f && d_type == operand && (operand == DType::f16 || operand == DType::bf16);
}

// Host: D's 3-D view for the wide store ({64 columns, M rows, N / 64 blocks}, strides ldd and 64 elements,
// boxes {64, 16, blocks}, 128-byte swizzle). False (map unusable) unless N % 64 = 0 and the driver takes it.
inline bool make_wide_store_map(CUtensorMap& map, DType t, void* d, std::int64_t m, std::int64_t n, std::int64_t ldd) {
  constexpr int blocks = sm90_wide_blocks;
  if (size_of(t) != 2 || n % 64 != 0 || m <= 0 || reinterpret_cast<std::uintptr_t>(d) % 16 != 0 || ldd % 8 != 0) return false;
  PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
  if (!tensor_map_encoder(encode).ok()) return false;
  const cuuint64_t dims[3] = {64, static_cast<cuuint64_t>(m), static_cast<cuuint64_t>(n / 64)};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(ldd) * 2, 128};  // bytes: rows, 64-column blocks
  const cuuint32_t box[3] = {64, smem_layout::epilogue_band_rows, static_cast<cuuint32_t>(blocks)};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  const CUtensorMapDataType dt = t == DType::bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const CUresult r = encode(&map, dt, 3, d, dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                            CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  static const bool debug = std::getenv("KTUNE_SM90_WIDE_DEBUG") != nullptr;  // measurements: say what was taken
  if (debug)
    std::fprintf(stderr, "ktune sm90 wide store map %lldx%lld ldd %lld blocks %d: CUresult %d\n", static_cast<long long>(m),
                 static_cast<long long>(n), static_cast<long long>(ldd), blocks, static_cast<int>(r));
  return r == CUDA_SUCCESS;
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// The first 1024-byte aligned box buffer of a warp's staging region.
__device__ __forceinline__ char* store_box_buffers(float* region) {
  const std::uint32_t a = static_cast<std::uint32_t>(__cvta_generic_to_shared(region));
  return reinterpret_cast<char*>(region) + ((1024u - (a & 1023u)) & 1023u);
}

// This thread's bulk groups: wait until at most n (0..7, a run-time count) still read shared memory.
__device__ __forceinline__ void bulk_wait_read(int n) {
  using cuda::ptx::n32_t;
  switch (n) {
    case 0: cuda::ptx::cp_async_bulk_wait_group_read(n32_t<0>{}); break;
    case 1: cuda::ptx::cp_async_bulk_wait_group_read(n32_t<1>{}); break;
    case 2: cuda::ptx::cp_async_bulk_wait_group_read(n32_t<2>{}); break;
    case 3: cuda::ptx::cp_async_bulk_wait_group_read(n32_t<3>{}); break;
    case 4: cuda::ptx::cp_async_bulk_wait_group_read(n32_t<4>{}); break;
    case 5: cuda::ptx::cp_async_bulk_wait_group_read(n32_t<5>{}); break;
    case 6: cuda::ptx::cp_async_bulk_wait_group_read(n32_t<6>{}); break;
    default: cuda::ptx::cp_async_bulk_wait_group_read(n32_t<7>{}); break;
  }
}

// Two floats to D's packed pair with max(0, ·) in the same conversion (cvt.rn.relu.{f16,bf16}x2.f32;
// hand PTX: no intrinsic). Same values as relu then pack: the conversion is monotonic, ReLU exact.
template <class T>
__device__ __forceinline__ std::uint32_t pack2_relu(float x, float y) {
  std::uint32_t r;
  if constexpr (std::is_same_v<T, __half>) asm("cvt.rn.relu.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(y), "f"(x));
  else asm("cvt.rn.relu.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(y), "f"(x));
  return r;
}

// Two floats to D's packed pair, as 32 bits.
template <class T>
__device__ __forceinline__ std::uint32_t pack2_bits(float x, float y) {
  const auto pair = epilogue::pack2<T>(x, y);
  std::uint32_t r;
  static_assert(sizeof(pair) == sizeof(r));
  __builtin_memcpy(&r, &pair, sizeof(r));
  return r;
}

// stmatrix .x4 (four 8x8 16-bit matrices from the mma fragment layout; lane l gives the shared address of
// row l % 8 of matrix l / 8): 16 bytes per row, 512 bytes per warp instruction instead of 128 for 32-bit
// STS. Hand PTX: cuda::ptx has no stmatrix.
__device__ __forceinline__ void stmatrix_x4(std::uint32_t addr, std::uint32_t r0, std::uint32_t r1, std::uint32_t r2,
                                            std::uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r0), "r"(r1), "r"(r2),
               "r"(r3)
               : "memory");
}

// One consumer warp's part of a tile (16-row bands at row0 + 64·mi, WN columns from col0) through the
// TMA, from `nboxes` (2..8) box buffers at `boxes`; `slot` is the buffer the next box goes to (warp-
// uniform; 0 at the first tile, carried across tiles). One proxy fence and one store per box: packing
// several boxes per fence (s5-batchB, a run-time batch with the stores issued in a loop) doubled the
// kernel's code and ran 8192x8192x64 in 85-100 µs instead of 48.
template <class ML, class TOut>
__device__ __forceinline__ void store_tile_async(const CUtensorMap* map, typename ML::Accumulators& acc, char* boxes,
                                                 int nboxes, int row0, int col0, int m, int n, int& slot) {
  static_assert(sizeof(TOut) == 2 && sm90_async_store_fits<ML>, "16-bit D, 64-column boxes");
  constexpr int box_cols = 64;
  using Pair = decltype(epilogue::pack2<TOut>(0.0f, 0.0f));
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int mi = 0; mi < ML::MI; ++mi)
#pragma unroll
    for (int b = 0; b < ML::WN / box_cols; ++b)
#pragma unroll
      for (int h = 0; h < 2; ++h) {  // rows g (h = 0: accumulators 4j, 4j + 1) and g + 8 (4j + 2, 4j + 3)
        const int rb = row0 + 64 * mi + sm90_store_box_rows * h, cb = col0 + box_cols * b;
        if (rb >= m || cb >= n) continue;  // warp-uniform: the box lies outside D
        char* buf = boxes + slot * sm90_store_box_bytes;
        if (lane == 0) bulk_wait_read(nboxes - 1);
        __syncwarp();  // the store issued from this buffer nboxes boxes ago has read it
#if KTUNE_SM90_STMATRIX_BOX_STORE
        // The box's 8 rows as eight 8x8 matrices (columns 8j..8j+7) in two stmatrix.x4: lane l addresses row l % 8
        // of matrix l / 8 (+ 4 in the second), at unit j ^ row of that row, as the STS path below writes them.
        const std::uint32_t row_s = static_cast<std::uint32_t>(__cvta_generic_to_shared(buf)) + (lane & 7) * sm90_store_box_cols_bytes;
#pragma unroll
        for (int q = 0; q < 2; ++q) {
          const int jj = (box_cols / 8) * b + 4 * q;  // the first of this store's four column groups
          stmatrix_x4(row_s + ((((lane >> 3) + 4 * q) ^ (lane & 7)) << 4),
                      pack2_bits<TOut>(acc[mi][4 * jj + 2 * h], acc[mi][4 * jj + 2 * h + 1]),
                      pack2_bits<TOut>(acc[mi][4 * (jj + 1) + 2 * h], acc[mi][4 * (jj + 1) + 2 * h + 1]),
                      pack2_bits<TOut>(acc[mi][4 * (jj + 2) + 2 * h], acc[mi][4 * (jj + 2) + 2 * h + 1]),
                      pack2_bits<TOut>(acc[mi][4 * (jj + 3) + 2 * h], acc[mi][4 * (jj + 3) + 2 * h + 1]));
        }
        (void)g;
        (void)t;
#else
#pragma unroll
        for (int j = 0; j < box_cols / 8; ++j) {
          const int jj = (box_cols / 8) * b + j;
          *reinterpret_cast<Pair*>(buf + g * sm90_store_box_cols_bytes + ((j ^ g) << 4) + 4 * t) =
              epilogue::pack2<TOut>(acc[mi][4 * jj + 2 * h], acc[mi][4 * jj + 2 * h + 1]);
        }
#endif
        cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // generic-proxy writes → the TMA (async proxy)
        __syncwarp();
        if (lane == 0) {
          tma_store_2d(map, cb, rb, buf);
          cuda::ptx::cp_async_bulk_commit_group();
        }
        slot = slot + 1 == nboxes ? 0 : slot + 1;
      }
}

// One consumer warp's part of a tile through the wide store (see sm90_wide_store_fits): per 16-row band
// (row0 + 64·mi), operations of 2 64-column blocks (128 columns) from its `Buffers` (2..8) buffers of 4 KB
// at `bufs` (1024-byte aligned); `slot` is the next buffer (warp-uniform, carried across tiles). Buffer
// layout: block b at b · 2 KB, row r at r · 128, 16-byte unit u at u ^ (r % 8) (the TMA's 128-byte
// swizzle), written by stmatrix (four 8x8 matrices of packed pairs per instruction, conflict-free).
// Relu: max(0, ·) in the conversion (the fragment epilogue left it out: apply_fragments relu_later).
// (The band's row and the buffer through a lane-0 shuffle, to spare the TMA store's one-pass loop over the
// lanes' values, made ptxas spill 80 bytes in both wide instances.)
template <class ML, class TOut, int Buffers, bool Relu>
__device__ __forceinline__ void store_tile_wide(const CUtensorMap* map, typename ML::Accumulators& acc, char* bufs, int row0,
                                                int col0, int m, int n, int& slot) {
  static_assert(sizeof(TOut) == 2 && sm90_wide_store_fits<ML>, "16-bit D, 128-column operations");
  static_assert(Buffers >= 2 && Buffers <= sm90_wide_max_buffers, "2..8 buffers per warp");
  constexpr int ops = ML::WN / (64 * sm90_wide_blocks);  // operations per band
  const int lane = threadIdx.x & 31, i = lane & 7, mat = lane >> 3;
  // This lane's stmatrix row: row i + 8 (mat & 1) of the band, unit 2q + (mat >> 1) at unit ^ i (bits 4-6
  // of the byte offset: bit 4 fixed per lane, bits 5-6 XORed with q).
  const std::uint32_t lane_off = (i + 8 * (mat & 1)) * 128 + ((((mat >> 1) ^ i) & 1) << 4), unit_x = (i & 6) << 4;
  const std::uint32_t bufs_u = static_cast<std::uint32_t>(__cvta_generic_to_shared(bufs));
  const std::uint32_t bufs_s = bufs_u + lane_off;
  auto pack = [](float x, float y) { return Relu ? pack2_relu<TOut>(x, y) : pack2_bits<TOut>(x, y); };
#pragma unroll
  for (int mi = 0; mi < ML::MI; ++mi)
#pragma unroll
    for (int op = 0; op < ops; ++op) {
      const int rb = row0 + 64 * mi, cb = col0 + 64 * sm90_wide_blocks * op;
      if (rb >= m || cb >= n) continue;  // warp-uniform: the operation lies outside D
      if (lane == 0) cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<Buffers - 1>{});
      __syncwarp();  // the store issued from this buffer Buffers operations ago has read it
      const std::uint32_t out = bufs_s + slot * sm90_wide_op_bytes;
#pragma unroll
      for (int blk = 0; blk < sm90_wide_blocks; ++blk)
#pragma unroll
        for (int q = 0; q < 4; ++q) {  // units 2q, 2q + 1 of block blk: accumulators from a, b
          const int a = 4 * (8 * (sm90_wide_blocks * op + blk) + 2 * q), b = a + 4;
          stmatrix_x4(out + blk * sm90_wide_block_bytes + (unit_x ^ (q << 5)), pack(acc[mi][a], acc[mi][a + 1]),
                      pack(acc[mi][a + 2], acc[mi][a + 3]), pack(acc[mi][b], acc[mi][b + 1]), pack(acc[mi][b + 2], acc[mi][b + 3]));
        }
      cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // generic-proxy writes → the TMA (async proxy)
      __syncwarp();
      if (lane == 0) {
        const std::int32_t coords[3] = {0, rb, cb / 64};
        cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_global, cuda::ptx::space_shared, map, coords,
                                        __cvta_shared_to_generic(bufs_u + slot * sm90_wide_op_bytes));
        cuda::ptx::cp_async_bulk_commit_group();
      }
      slot = slot + 1 == Buffers ? 0 : slot + 1;
    }
}

// Producer (one thread): the bias slice bias[n0 .. n0 + TileN) (16-bit, 16-byte aligned, N % 64 = 0) into k-row 0
// of a B' (64-column blocks 2 KB apart), completing on the stage's full barrier (whose expected bytes count it).
template <int TileN>
__device__ __forceinline__ void bias_mma_copy(const void* bias, int n0, int n, char* b, std::uint64_t* bar) {
#pragma unroll
  for (int j = 0; j < TileN / 64; ++j)
    if (n0 + 64 * j < n)
      cuda::ptx::cp_async_bulk(cuda::ptx::space_cluster, cuda::ptx::space_global, b + j * sm90_wide_block_bytes,
                               static_cast<const char*>(bias) + 2 * static_cast<std::int64_t>(n0 + 64 * j), 128u, bar);
}

// Bias through the tensor core: A' (the ones column) and the B's (zero but for k-row 0, which the producer
// fills per tile) at `area`, written by all `threads` threads of the block before its first barrier; each
// writer fences its generic-proxy stores for the async proxy (the TMA's bias copies, the wgmma reads).
template <class T>
__device__ __forceinline__ void bias_mma_init(char* area, int tile_n, int thread, int threads) {
  const int units = sm90_bias_mma_bytes(tile_n) / 16;
  const std::uint32_t one = sizeof(T) == 2 && std::is_same_v<T, __half> ? 0x3C00u : 0x3F80u;  // 1.0 in T's 16 bits
  for (int u = thread; u < units; u += threads) {
    // A': 16-byte unit (u % 8) of row (u / 8); the 1 at k = 0 sits in unit (row % 8) after the swizzle.
    const bool ones = u < sm90_bias_a_bytes / 16 && (u % 8) == (u / 8) % 8;
    *reinterpret_cast<uint4*>(area + 16 * u) = make_uint4(ones ? one : 0u, 0u, 0u, 0u);
  }
  cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
}

// Every box store of this warp has read its buffer (lane 0 issued them all).
__device__ __forceinline__ void store_async_drain() {
  if ((threadIdx.x & 31) == 0) cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<0>{});
  __syncwarp();
}
#endif

}  // namespace ktune::kernel::sm90
