// ktune/conv/kernel/iterator.cuh — the implicit-GEMM A-operand loader: gathers the im2col matrix
// A[m, kg] (m = output pixel (n, p, q), kg = filter tap and channel (r, s, c)) straight from NHWC
// activations into the swizzled shared-memory tile that the GEMM mainloop reads (SwizzledTile<T, BM,
// BK>, exactly what MmaMainloop::TileA is for a row-major A), zero-filling padding and the tile's
// edges. The only conv-specific device code; the B operand (KRSC filters = a column-major matrix with
// ldb = R·S·C), the mainloop and the epilogue are the GEMM's.
//
// Thread mapping: each thread owns one 16-byte chunk column (8 elements) of the k-tile and `rows` chunk
// rows, `row_step` apart. The rows' coordinates are computed once per kernel (base offset of pixel
// (n, h0, w0), h0 = p·stride_h − pad_h, w0 = q·stride_w − pad_w) and kept in registers; per k-tile the
// thread derives the tap (r, s, c) of its chunk's columns once and issues one vector per
// (row, sub-vector): h = h0 + r·dil_h, w = w0 + s·dil_w, predicated zero-fill outside the image or
// past M / R·S·C. A chunk holds 8/align sub-vectors of `align` elements; since C % align == 0 a
// sub-vector never straddles a filter tap.
#pragma once
#include <cuda_pipeline_primitives.h>

#include <cstdint>

#include "ktune/conv/config.hpp"
#include "ktune/gemm/kernel/smem.cuh"

namespace ktune::kernel {

// What the loader needs of the problem (int: the host checked the 32-bit limits).
struct ConvGeometry {
  int h, w, c;        // input height, width, channels
  int s;              // filter width
  int q, pq;          // output width, P·Q
  int m;              // GEMM M = N·P·Q
  int kgemm;          // GEMM K = R·S·C
  int pad_h, pad_w, stride_h, stride_w, dil_h, dil_w;
};

// Added to a coordinate that must read as zero (rows past M, columns past R·S·C): no valid h is that far.
inline constexpr int conv_far = 1 << 30;

template <ConvConfig CC, class T>
struct ConvAIterator {
  static constexpr GemmConfig G = CC.gemm;
  static constexpr int BM = G.tile.m, BK = G.tile.k, threads = G.threads();
  static constexpr int Vec = G.align;
  static constexpr int chunk = 16 / int(sizeof(T));
  static constexpr int chunks_per_row = BK / chunk;
  static constexpr int row_step = threads / chunks_per_row;
  static constexpr int rows = BM * BK / chunk / threads;
  static constexpr int subs = chunk / Vec;
  static constexpr int vec_bytes = Vec * int(sizeof(T));
  static constexpr bool fixed_c = CC.iterator == ConvIterator::few_channels;
  static constexpr bool carried = CC.iterator != ConvIterator::analytic;  // tap carried across k-tiles
  using Tile = SwizzledTile<T, BM, BK>;
  static_assert(sizeof(T) == 2, "the conv gather feeds f16/bf16 mma.sync");
  static_assert(BK % chunk == 0 && threads % chunks_per_row == 0 && (BM * BK / chunk) % threads == 0,
                "the constraint model (conv_chunk_mapping) guarantees whole chunk rows per pass");
  static_assert(rows >= 1 && rows <= conv_max_gather_rows, "the constraint model (conv_gather_rows) bounds rows");
  static_assert(chunk % Vec == 0, "sub-vectors tile a chunk");

  int base_[rows], h0_[rows], w0_[rows];
  int dst_;              // byte offset of the first chunk in a stage's A tile
  int col_;              // first column of this thread's chunk inside a k-tile
  int kg_, r_, s_, ci_;  // carried iterators: column, tap and channel of the chunk in the next k-tile

  __device__ __forceinline__ static int channels(const ConvGeometry& g) {
    if constexpr (fixed_c) return CC.channels;
    else return g.c;
  }

  __device__ __forceinline__ static void decompose(const ConvGeometry& g, int kg, int& r, int& s, int& ci) {
    const int C = channels(g);
    const int tap = kg / C;
    ci = kg - tap * C;
    r = tap / g.s;
    s = tap - r * g.s;
  }

  // Row coordinates of the block's output tile starting at GEMM row m0; carried iterators start at
  // k-tile kt_first (a split-K slice's first).
  __device__ __forceinline__ void init(const ConvGeometry& g, int m0, int tid, int kt_first = 0) {
    const int r0 = tid / chunks_per_row;
    col_ = (tid % chunks_per_row) * chunk;
    dst_ = Tile::offset(r0, col_);
    const int C = channels(g);
#pragma unroll
    for (int i = 0; i < rows; ++i) {
      const int m = m0 + r0 + i * row_step;
      if (m < g.m) {
        const int n = m / g.pq, pq = m - n * g.pq, p = pq / g.q, q = pq - p * g.q;
        h0_[i] = p * g.stride_h - g.pad_h;
        w0_[i] = q * g.stride_w - g.pad_w;
        base_[i] = ((n * g.h + h0_[i]) * g.w + w0_[i]) * C;  // may point before the image: only read when in bounds
      } else {
        h0_[i] = -conv_far;
        w0_[i] = 0;
        base_[i] = 0;
      }
    }
    if constexpr (carried) {
      kg_ = kt_first * BK + col_;
      decompose(g, kg_, r_, s_, ci_);
    }
  }

  // Issue the copies of k-tile kt into the A tile at sA. Carried iterators must be called for
  // kt = kt_first, kt_first + 1, … in order (MmaMainloop::run_pipelined_tiles does).
  __device__ __forceinline__ void load(char* sA, const T* X, const ConvGeometry& g, int kt) {
    const int C = channels(g);
    int kg, r, s, ci;
    if constexpr (carried) {
      kg = kg_;
      r = r_;
      s = s_;
      ci = ci_;
    } else {
      kg = kt * BK + col_;
      decompose(g, kg, r, s, ci);
    }
    // Per sub-vector: the tap's (dh, dw) and its element offset from the pixel. Columns past R·S·C get
    // dh = −far, so they read as zero exactly like padding.
    int dh[subs], dw[subs], off[subs];
#pragma unroll
    for (int j = 0; j < subs; ++j) {
      dh[j] = kg + j * Vec < g.kgemm ? r * g.dil_h : -conv_far;
      dw[j] = s * g.dil_w;
      off[j] = (r * g.dil_h * g.w + dw[j]) * C + ci;
      if (j + 1 < subs) {
        ci += Vec;
        if (ci >= C) {
          ci = 0;
          if (++s == g.s) {
            s = 0;
            ++r;
          }
        }
      }
    }
    const int r0 = static_cast<int>(threadIdx.x) / chunks_per_row;
#pragma unroll
    for (int i = 0; i < rows; ++i) {
      char* dst = sA + (Tile::repeats_every(row_step) ? dst_ + i * row_step * Tile::row_bytes
                                                       : Tile::offset(r0 + i * row_step, col_));
      if constexpr (vec_bytes >= 4) {
#pragma unroll
        for (int j = 0; j < subs; ++j) {
          const int hh = h0_[i] + dh[j], ww = w0_[i] + dw[j];
          const bool in = unsigned(hh) < unsigned(g.h) && unsigned(ww) < unsigned(g.w);
          __pipeline_memcpy_async(dst + j * vec_bytes, in ? X + (base_[i] + off[j]) : X, vec_bytes, in ? 0 : vec_bytes);
        }
      } else {
        // 2-byte elements (C odd): no cp.async that small. Gather through registers and store the
        // chunk as one 16-byte vector; synchronous, but the slot is free (see TileCopy).
        std::uint32_t packed[subs / 2];
#pragma unroll
        for (int j = 0; j < subs; ++j) {
          const int hh = h0_[i] + dh[j], ww = w0_[i] + dw[j];
          const bool in = unsigned(hh) < unsigned(g.h) && unsigned(ww) < unsigned(g.w);
          const std::uint32_t v =
              in ? __ldg(reinterpret_cast<const unsigned short*>(X + (base_[i] + off[j]))) : 0u;
          if (j % 2 == 0) packed[j / 2] = v;
          else packed[j / 2] |= v << 16;
        }
        *reinterpret_cast<uint4*>(dst) = make_uint4(packed[0], packed[1], packed[2], packed[3]);
      }
    }
    if constexpr (carried) advance(g);
  }

  // Move the carried tap one k-tile (BK columns) on.
  __device__ __forceinline__ void advance(const ConvGeometry& g) {
    kg_ += BK;
    ci_ += BK;
    if constexpr (fixed_c) {
      const int taps = ci_ / CC.channels;  // a division by a constant
      ci_ -= taps * CC.channels;
      s_ += taps;
      while (s_ >= g.s) {
        s_ -= g.s;
        ++r_;
      }
    } else {
      while (ci_ >= g.c) {  // C ≥ 8: at most BK/8 steps, one when C ≥ BK
        ci_ -= g.c;
        if (++s_ == g.s) {
          s_ = 0;
          ++r_;
        }
      }
    }
  }
};

}  // namespace ktune::kernel
