// ktune/conv/kernel/stem.cuh — the first-layer stem kernel (C ≤ 4, stride_w 2, R, S ≤ 8, K ≤ 64; the
// ResNet-50 7×7/2 conv on 224×224×3 or ×4 images) and its launcher. Why it works and what it needs:
// conv/stem.hpp.
//
// Persistent CTAs of BM/64 warps walk tiles of BM consecutive output pixels of one image. Per tile:
//   1. the input rows under the tile's output rows go to shared memory as 8-byte pixels (4 channels,
//      zero past C), zero-filled outside the image, copied while the previous tile computes: C = 4 by
//      8-byte cp.async into the other of two row buffers; C < 4 by 16-byte cp.async of the raw rows
//      (one contiguous piece of x) into a raw buffer, expanded to 8-byte pixels once they arrived;
//   2. each warp computes 64 pixels × 64 channels with mma.sync m16n8k16: for filter row r and k-step
//      kk, lane row m = pixel (p, q) reads its 16-byte A piece at row_base(p, r) + q·16 + kk·32 + piece·16
//      (ldmatrix; the 8 rows of a matrix are 128 contiguous bytes: no bank conflicts); B (the filter,
//      64 × 32 values per r, swizzled) stays in shared memory for the kernel's lifetime. Taps ≥ S are
//      masked to zero in the A fragments (so a non-finite pixel beyond the filter is never multiplied);
//   3. the epilogue, one m16 fragment at a time: identity or ReLU without clamp (the stems') on the
//      accumulators in registers (alpha, bias, pack to f16/bf16 pairs, max with 0), the packed rows
//      through a per-warp staging band, 16-byte stores; other activations and clamp through a per-warp
//      fp32 staging band (each lane owns a fixed quad of 4 channels, 8-byte stores); other epilogues
//      (beta, residual, f32 output, K < 64, unaligned y) through the GEMM's epilogue_store.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_pipeline_primitives.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "ktune/conv/dispatch.hpp"
#include "ktune/conv/stem.hpp"
#include "ktune/device.hpp"
#include "ktune/epilogue/builtin.cuh"
#include "ktune/epilogue/chunk.cuh"
#include "ktune/gemm/kernel/gemm_kernel.cuh"
#include "ktune/gemm/kernel/mma_sm80.cuh"
#include "ktune/gemm/kernel/smem.cuh"

namespace ktune::kernel {

struct StemGeometry {
  int h, w, c, k, r, s;           // input height, width, channels; output channels; filter
  int pq, q;                      // output pixels per image, output width
  int pad_h, pad_w, stride_h, dil_h;
  int tiles_per_image, tiles;     // BM-pixel tiles
  StemDivisor div_q, div_tiles, div_w;  // by q, tiles_per_image and w
  bool raw_segments;              // C < 4, image rows 16-byte aligned, all image columns within the row buffer
  int rows_cap, row_pixels, pitch;  // conv/stem.hpp StemLayout
  int rows_offset;                // bytes from the start of shared memory to the first row buffer
  int rows_bytes;                 // bytes per row buffer
  int raw_offset;                 // C < 4: bytes from the start of shared memory to the raw row buffer
  bool fast_store;                // f16/bf16 y, K = 64, 16-byte aligned y, beta = 0, no residual
  bool reg_store;                 // fast_store with identity or ReLU, alpha 1, no clamp: the register epilogue
};

template <class EpiParams>
struct StemParams {
  GemmParams<EpiParams> g;  // the epilogue's view: d = y (ldd = K), m = N·P·Q, n = K, ep, d_type, d_vec4
  const void* x;
  const void* w;
  StemGeometry geo;
};

// One filter row's 64 × 32 values: ldmatrix-friendly swizzled rows of 64 bytes (the GEMM's tile).
template <class T>
using StemFilterTile = SwizzledTile<T, stem_tile_n, stem_tile_k>;

template <ConvConfig CC, class T>
struct StemKernel {
  static constexpr int BM = CC.gemm.tile.m, warps = BM / stem_warp_m, threads = warps * 32;
  static constexpr int MI = stem_warp_m / 16, NI = stem_tile_n / 8;
  static constexpr int C = CC.channels;
  static constexpr MathOp math = CC.gemm.math;
  using FilterTile = StemFilterTile<T>;
  static_assert(FilterTile::bytes == stem_filter_row_bytes, "conv/stem.hpp sizes the filter rows");
  static_assert(sizeof(T) == 2, "f16/bf16 operands");

  using Acc = float[MI][NI][4];

  // ---- Loads ---------------------------------------------------------------------------------------
  // The zero-padded filter: row r at r·FilterTile::bytes, [k][s·4 + c]; 16-byte chunks of 8 values
  // (taps 2·kc/8 and 2·kc/8 + 1). C = 4: a tap is one asynchronous 8-byte copy (w is 8-byte aligned:
  // can_implement), zero-filled past K and S, committed with the first tile's rows; else scalar loads,
  // a batch of chunks in flight before their stores.
  __device__ __forceinline__ static void load_filters(char* sf, const T* w, const StemGeometry& g) {
    const int chunks = g.r * stem_tile_n * (stem_tile_k / 8);
    if constexpr (C == 4) {
      for (int i = threadIdx.x; i < chunks; i += threads) {
        const int r = i / (stem_tile_n * 4), rem = i - r * (stem_tile_n * 4), k = rem >> 2, kc = (rem & 3) * 8;
        char* dst = sf + r * FilterTile::bytes + FilterTile::offset(k, kc);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int s = kc / 4 + h;
          const bool in = k < g.k && s < g.s;
          __pipeline_memcpy_async(dst + h * 8, in ? w + ((k * g.r + r) * g.s + s) * 4 : w, 8, in ? 0 : 8);
        }
      }
    } else {
      constexpr int batch = 4;
      for (int i0 = threadIdx.x; i0 < chunks; i0 += batch * threads) {
        uint4 v[batch];
#pragma unroll
        for (int b = 0; b < batch; ++b) {
          const int i = i0 + b * threads;
          const int r = i / (stem_tile_n * 4), rem = i - r * (stem_tile_n * 4), k = rem >> 2, s0 = (rem & 3) * 2;
          std::uint32_t e[4] = {0, 0, 0, 0};
          if (i < chunks && k < g.k) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const int s = s0 + h;
              if (s >= g.s) continue;
              const auto* t16 = reinterpret_cast<const unsigned short*>(w + ((k * g.r + r) * g.s + s) * C);
              e[2 * h] = __ldg(t16);
              if constexpr (C > 1) e[2 * h] |= std::uint32_t(__ldg(t16 + 1)) << 16;
              if constexpr (C > 2) e[2 * h + 1] = __ldg(t16 + 2);
            }
          }
          v[b] = make_uint4(e[0], e[1], e[2], e[3]);
        }
#pragma unroll
        for (int b = 0; b < batch; ++b) {
          const int i = i0 + b * threads;
          if (i >= chunks) break;
          const int r = i / (stem_tile_n * 4), rem = i - r * (stem_tile_n * 4), k = rem >> 2, kc = (rem & 3) * 8;
          *reinterpret_cast<uint4*>(sf + r * FilterTile::bytes + FilterTile::offset(k, kc)) = v[b];
        }
      }
    }
  }

  __device__ __forceinline__ static int divide(int n, const StemDivisor& d) {
    return static_cast<int>((__umulhi(static_cast<unsigned>(n), d.mul) + static_cast<unsigned>(n)) >> d.shift);
  }

  struct TileCoord {
    int n, m0, p_first, rows;  // image, first pixel in the image, first output row, input rows needed
  };
  __device__ __forceinline__ static TileCoord tile_coord(const StemGeometry& g, int t) {
    TileCoord c;
    c.n = divide(t, g.div_tiles);
    c.m0 = (t - c.n * g.tiles_per_image) * BM;
    c.p_first = divide(c.m0, g.div_q);
    const int p_last = divide(min(c.m0 + BM, g.pq) - 1, g.div_q);
    c.rows = (p_last - c.p_first) * g.stride_h + (g.r - 1) * g.dil_h + 1;
    return c;
  }

  // C = 4: the input rows of tile t into the row buffer at `rows`, asynchronously: pixel j of row i
  // is input pixel (h_first + i, j − pad_w), zero outside the image. Each thread keeps its pixel
  // columns (≤ 2 for 224-wide images) and walks the rows: rows [i_lo, i_hi) of an image column are
  // 8-byte cp.async (no predicate, a pointer and an offset increment each), the padding plain zero
  // stores (visible with the copies after the same wait and barrier).
  __device__ __forceinline__ static void load_rows(char* rows, const T* x, const StemGeometry& g, int t) {
    static_assert(C == 4, "C < 4 copies raw rows and expands them (issue_raw, expand_raw)");
    const TileCoord tc = tile_coord(g, t);
    const int h_first = tc.p_first * g.stride_h - g.pad_h;
    const int i_lo = min(max(0, -h_first), tc.rows), i_hi = max(min(tc.rows, g.h - h_first), i_lo);
    const std::int64_t row_elems = std::int64_t(g.w) * 4;
    // image row h_first + i_lo (only when a row of the tile is inside the image)
    const T* first_row = x + (i_lo < i_hi ? (std::int64_t(tc.n) * g.h + h_first + i_lo) * row_elems : 0);
    for (int j = threadIdx.x; j < g.row_pixels; j += threads) {
      const int wi = j - g.pad_w;
      char* dst = rows + j * stem_pixel_bytes;
      int i = 0;
      if (unsigned(wi) < unsigned(g.w)) {
        for (; i < i_lo; ++i) *reinterpret_cast<uint2*>(dst + i * g.pitch) = make_uint2(0, 0);
        const T* src = first_row + wi * 4;
        char* d = dst + i_lo * g.pitch;
#pragma unroll 4
        for (; i < i_hi; ++i) {
          __pipeline_memcpy_async(d, src, 8);
          d += g.pitch;
          src += row_elems;
        }
      }
      for (; i < tc.rows; ++i) *reinterpret_cast<uint2*>(dst + i * g.pitch) = make_uint2(0, 0);
    }
  }

  // C < 4: the image rows of tile t that exist (h_lo..h_hi) are one contiguous byte range [b0, b1) of x.
  // Raw buffer layout: byte b of x at raw + 16 − lead + (b − b0), lead = bytes from b0 to the first
  // 16-byte boundary at or after it (0..14); the aligned part goes by 16-byte cp.async (the last one
  // zero-filled past b1), the lead by scalar loads.
  struct RawRange {
    int h_lo, h_hi;                  // image rows held (h_lo > h_hi: none)
    std::uintptr_t b0, b1, aligned;  // byte addresses; aligned = b0 rounded up to 16
  };
  __device__ __forceinline__ static RawRange raw_range(const T* x, const StemGeometry& g, const TileCoord& tc) {
    RawRange r;
    const int h_first = tc.p_first * g.stride_h - g.pad_h;
    r.h_lo = max(h_first, 0);
    r.h_hi = min(h_first + tc.rows - 1, g.h - 1);
    const std::int64_t row_elems = std::int64_t(g.w) * C, image_rows = std::int64_t(tc.n) * g.h;
    r.b0 = reinterpret_cast<std::uintptr_t>(x + (image_rows + r.h_lo) * row_elems);
    r.b1 = r.h_lo <= r.h_hi ? reinterpret_cast<std::uintptr_t>(x + (image_rows + r.h_hi + 1) * row_elems) : r.b0;
    r.aligned = (r.b0 + 15) & ~std::uintptr_t{15};
    if (r.aligned > r.b1) r.aligned = r.b1;
    return r;
  }

  __device__ __forceinline__ static void issue_raw(char* raw, const T* x, const StemGeometry& g, int t) {
    const RawRange r = raw_range(x, g, tile_coord(g, t));
    const int lead = static_cast<int>(r.aligned - r.b0);
    if (static_cast<int>(threadIdx.x) * 2 < lead)
      *reinterpret_cast<unsigned short*>(raw + 16 - lead + threadIdx.x * 2) =
          __ldg(reinterpret_cast<const unsigned short*>(r.b0) + threadIdx.x);
    const std::int64_t body = static_cast<std::int64_t>(r.b1 - r.aligned);
    const int chunks = static_cast<int>((body + 15) / 16);
    for (int k = threadIdx.x; k < chunks; k += threads) {
      const std::int64_t left = body - std::int64_t(k) * 16;
      const int zero = left >= 16 ? 0 : 16 - static_cast<int>(left);
      __pipeline_memcpy_async(raw + 16 + k * 16, reinterpret_cast<const char*>(r.aligned) + k * 16, 16, zero);
    }
  }

  // The arrived raw rows of tile t as 8-byte pixels (channels ≥ C and the halo zero) in `rows`. Like
  // load_rows: per pixel column, the rows inside the image [i_lo, i_hi) with a pointer increment
  // each, the padding rows zero.
  __device__ __forceinline__ static void expand_raw(char* rows, const char* raw, const T* x, const StemGeometry& g, int t) {
    const TileCoord tc = tile_coord(g, t);
    const RawRange r = raw_range(x, g, tc);
    const int h_first = tc.p_first * g.stride_h - g.pad_h;
    const int i_lo = min(max(0, -h_first), tc.rows), i_hi = max(min(tc.rows, g.h - h_first), i_lo);
    const int row_bytes = g.w * (C * 2);
    const char* base = raw + 16 - static_cast<int>(r.aligned - r.b0);  // image row h_lo = h_first + i_lo, pixel 0
    for (int j = threadIdx.x; j < g.row_pixels; j += threads) {
      const int wi = j - g.pad_w;
      char* dst = rows + j * stem_pixel_bytes;
      int i = 0;
      if (unsigned(wi) < unsigned(g.w)) {
        for (; i < i_lo; ++i) *reinterpret_cast<uint2*>(dst + i * g.pitch) = make_uint2(0, 0);
        const char* src = base + wi * (C * 2);
        char* d = dst + i_lo * g.pitch;
#pragma unroll 4
        for (; i < i_hi; ++i) {
          const auto* s = reinterpret_cast<const unsigned short*>(src);
          std::uint32_t lo = s[0], hi = 0;
          if constexpr (C > 1) lo |= std::uint32_t(s[1]) << 16;
          if constexpr (C > 2) hi = s[2];
          *reinterpret_cast<uint2*>(d) = make_uint2(lo, hi);
          src += row_bytes;
          d += g.pitch;
        }
      }
      for (; i < tc.rows; ++i) *reinterpret_cast<uint2*>(dst + i * g.pitch) = make_uint2(0, 0);
    }
  }

  // C < 4 with 16-byte aligned image rows (raw_segments): each thread copies, and later expands, its
  // own 8-pixel segments of the raw range (16·C bytes = C aligned 16-byte cp.async; segment s at raw +
  // s·16·C, the same threads' bytes every tile). So no barrier is needed between a copy's arrival and
  // its expansion (the thread's own cp.async wait), nor between the expansion and the next copy into
  // the same bytes (program order): with two row buffers, one barrier per tile as for C = 4.
  static constexpr int seg_pixels = 8, seg_bytes = seg_pixels * C * 2;

  __device__ __forceinline__ static void issue_segments(char* raw, const T* x, const StemGeometry& g, int t) {
    const RawRange r = raw_range(x, g, tile_coord(g, t));
    const int bytes = static_cast<int>(r.b1 - r.b0);  // whole 16-byte chunks (image rows are)
    const char* src = reinterpret_cast<const char*>(r.b0);
    for (int off = threadIdx.x * seg_bytes; off < bytes; off += threads * seg_bytes) {
#pragma unroll
      for (int c = 0; c < C; ++c)
        if (off + c * 16 < bytes) __pipeline_memcpy_async(raw + off + c * 16, src + off + c * 16, 16);
    }
  }

  // This thread's arrived segments of tile t as 8-byte pixels in `rows`; rows of the tile outside the
  // image zero (the halo columns were zeroed once for the kernel and are never written).
  __device__ __forceinline__ static void expand_segments(char* rows, const char* raw, const StemGeometry& g, int t) {
    const TileCoord tc = tile_coord(g, t);
    const int h_first = tc.p_first * g.stride_h - g.pad_h;
    const int i_lo = min(max(0, -h_first), tc.rows), i_hi = max(min(tc.rows, g.h - h_first), i_lo);
    if (i_lo > 0 || i_hi < tc.rows) {
      for (int j = threadIdx.x; j < g.row_pixels; j += threads) {
        char* dst = rows + j * stem_pixel_bytes;
        for (int i = 0; i < i_lo; ++i) *reinterpret_cast<uint2*>(dst + i * g.pitch) = make_uint2(0, 0);
        for (int i = i_hi; i < tc.rows; ++i) *reinterpret_cast<uint2*>(dst + i * g.pitch) = make_uint2(0, 0);
      }
    }
    const int pixels = (i_hi - i_lo) * g.w;
    char* const image_rows = rows + i_lo * g.pitch + g.pad_w * stem_pixel_bytes;  // pixel (h_first + i_lo, 0)
    for (int f0 = threadIdx.x * seg_pixels; f0 < pixels; f0 += threads * seg_pixels) {
      std::uint32_t words[C * 4];
#pragma unroll
      for (int c = 0; c < C; ++c)
        *reinterpret_cast<uint4*>(words + 4 * c) = *reinterpret_cast<const uint4*>(raw + f0 / seg_pixels * seg_bytes + c * 16);
      auto elem = [&](int e) { return (words[e >> 1] >> ((e & 1) * 16)) & 0xffffu; };
      const int h = divide(f0, g.div_w);
      int w = f0 - h * g.w;
      char* dst = image_rows + h * g.pitch + w * stem_pixel_bytes;
#pragma unroll
      for (int k = 0; k < seg_pixels; ++k) {
        if (f0 + k >= pixels) break;
        std::uint32_t lo = elem(k * C), hi = 0;
        if constexpr (C > 1) lo |= elem(k * C + 1) << 16;
        if constexpr (C > 2) hi = elem(k * C + 2);
        *reinterpret_cast<uint2*>(dst) = make_uint2(lo, hi);
        dst += stem_pixel_bytes;
        if (++w == g.w) {
          w = 0;
          dst += g.pitch - g.w * stem_pixel_bytes;
        }
      }
    }
  }

  // ---- Math ----------------------------------------------------------------------------------------
  // Byte offset (inside a row buffer) of this lane's A rows for each m16 fragment of its warp's tile.
  __device__ __forceinline__ static void a_offsets(int (&off)[MI], const StemGeometry& g, const TileCoord& tc, int warp,
                                                   int lane) {
#pragma unroll
    for (int i = 0; i < MI; ++i) {
      int m = tc.m0 + warp * stem_warp_m + i * 16 + (lane & 15);
      if (m >= g.pq) m = tc.m0;  // past the image: any row that exists; its result is never stored
      const int p = divide(m, g.div_q), q = m - p * g.q;
      off[i] = (p - tc.p_first) * g.stride_h * g.pitch + q * 2 * stem_pixel_bytes + (lane >> 4) * 16;
    }
  }

  // Taps ≥ S must read as zero (a non-finite pixel one tap beyond the filter must not reach the
  // output; zero filter weights alone would give 0·Inf = NaN). Lane (g, t) holds columns 2t, 2t+1 (a0,
  // a1) and 2t+8, 2t+9 (a2, a3) of a k16 step: taps kk·4 + t/2 (half 0) and kk·4 + 2 + t/2 (half 1).
  // WideFilter (S ≥ 7, the 7×7 stems): only half 1 of k-step 1 (taps 6, 7) can hold a tap ≥ S, so
  // only its two registers per A fragment are masked (8 ANDs per filter row instead of 32: ptxas
  // issues a uniform mask as ANDs anyway).
  // The first k-step's mma adds `c0` (the register epilogue's bias: this lane's columns j·8 + 2t, + 1;
  // else zeros) instead of a zeroed accumulator: no zeroing, no bias add in the epilogue.
  template <bool WideFilter>
  __device__ __forceinline__ static void compute(Acc& acc, const char* rows, const char* sf, const StemGeometry& g,
                                                 const int (&a_off)[MI], const float2 (&c0)[NI], int lane) {
    const int t2 = (lane & 3) >> 1;
    std::uint32_t mask[2][2];
#pragma unroll
    for (int kk = 0; kk < 2; ++kk)
#pragma unroll
      for (int h = 0; h < 2; ++h) mask[kk][h] = kk * 4 + h * 2 + t2 < g.s ? ~0u : 0u;
    const int b_base = FilterTile::offset((lane >> 4) * 8 + (lane & 7), ((lane >> 3) & 1) * 8);
    const int r_step = g.dil_h * g.pitch;

    // Register-lean pipeline (40 fragment registers instead of 64: ptxas had no room left and
    // shuffled fragments with MOVs): per k-step (r, kk) the B fragments of all 64 channels (16
    // registers, two buffers: the next step's are requested before this step's first mma) and the A
    // fragments one m16 block at a time (two buffers of 4: block i + 1 is requested before block i's
    // 8 mmas). Past the last step the loads repeat the last filter row (harmless, in bounds).
    std::uint32_t fa[2][4], fb[2][NI / 2][4];
    auto load_a = [&](int buf, const char* a_row, int kk, int i) {
      ldmatrix_x4<false>(fa[buf], a_row + a_off[i] + kk * 32);
      if (!WideFilter) {
        fa[buf][0] &= mask[kk][0];
        fa[buf][1] &= mask[kk][0];
      }
      if (!WideFilter || kk == 1) {
        fa[buf][2] &= mask[kk][1];
        fa[buf][3] &= mask[kk][1];
      }
    };
    auto load_b = [&](int buf, int r, int kk) {
      const char* b = sf + r * FilterTile::bytes + (b_base ^ (kk * 32));
#pragma unroll
      for (int j = 0; j < NI / 2; ++j) ldmatrix_x4<false>(fb[buf][j], b + j * 16 * FilterTile::row_bytes);
    };
    // Filter row r: k-steps (r, 0) and (r, 1) with B buffers 0 and 1; each step requests the next
    // step's B before its first mma and A block i + 1 (or the next step's block 0) before block i's
    // mmas. Row 0 is peeled: its first step adds c0.
    auto filter_row = [&](int r, bool first) {
      const char* a_row = rows + r * r_step;
      const int r_next = min(r + 1, g.r - 1);
#pragma unroll
      for (int kk = 0; kk < 2; ++kk) {
        if (kk == 0) load_b(1, r, 1);
        else load_b(0, r_next, 0);
#pragma unroll
        for (int i = 0; i < MI; ++i) {
          if (i + 1 < MI) load_a((i + 1) & 1, a_row, kk, i + 1);
          else if (kk == 0) load_a(0, a_row, 1, 0);
          else load_a(0, rows + r_next * r_step, 0, 0);
#pragma unroll
          for (int j = 0; j < NI; ++j) {
            const std::uint32_t b2[2] = {fb[kk][j / 2][(j & 1) * 2], fb[kk][j / 2][(j & 1) * 2 + 1]};
            if (first && kk == 0) {
              const float c[4] = {c0[j].x, c0[j].y, c0[j].x, c0[j].y};
              mma_c(acc[i][j], fa[i & 1], b2, c);
            } else {
              mma<math>(acc[i][j], fa[i & 1], b2);
            }
          }
        }
      }
    };
    load_b(0, 0, 0);
    load_a(0, rows, 0, 0);
    filter_row(0, true);
#pragma unroll 1
    for (int r = 1; r < g.r; ++r) filter_row(r, false);
  }

  // d = a·b + c (mma.sync m16n8k16, fp32 accumulators; mma_sm80.cuh's mma() accumulates in place).
  __device__ __forceinline__ static void mma_c(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2],
                                               const float (&c)[4]) {
    if constexpr (math == MathOp::mma_f16)
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"
                   : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
    else
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"
                   : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
  }

  // ---- Epilogue ------------------------------------------------------------------------------------
  // One m16 fragment (16 pixels × 64 channels) at a time goes through the warp's fp32 staging band;
  // then lane L owns channel quad L % 16 (4 columns, fixed for the kernel) of rows L / 16, +2, … +14.
  // The epilogue code exists once (not once per fragment or output type): the whole kernel must stay
  // small enough for the instruction cache, the mma loop included.
  template <int I>
  __device__ __forceinline__ static void stage_fragment_at(Acc& acc, float* st, int lane) {
    const int gr = lane >> 2, t = lane & 3;
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        *reinterpret_cast<float2*>(st + (gr + 8 * h) * stem_staging_stride + j * 8 + 2 * t) =
            make_float2(acc[I][j][2 * h], acc[I][j][2 * h + 1]);
  }
  __device__ __forceinline__ static void stage_fragment(Acc& acc, int i, float* st, int lane) {
    static_assert(MI == 4, "64-row warp tiles: four m16 fragments");
    switch (i) {
      case 0: stage_fragment_at<0>(acc, st, lane); break;
      case 1: stage_fragment_at<1>(acc, st, lane); break;
      case 2: stage_fragment_at<2>(acc, st, lane); break;
      default: stage_fragment_at<3>(acc, st, lane); break;
    }
  }

  static constexpr int rows_per_lane = 16 / 2;  // 32 lanes = 2 rows × 16 quads per pass

  // Fast path: v = act(alpha·acc + bias), clamped, packed to f16/bf16, 8-byte stores (a warp writes
  // two whole 128-byte pixel rows of y per instruction).
  __device__ __forceinline__ static void store_band_fast(const StemParams<epilogue::Builtin::Params>& p, const float* st,
                                                         const float (&bias)[4], std::int64_t pixel0, int rows_valid,
                                                         int lane) {
    const auto& ep = p.g.ep;
    const int quad = lane & 15;
    const bool bf16 = p.g.d_type == DType::bf16;
    auto* y = static_cast<uint2*>(p.g.d) + pixel0 * (stem_tile_n / 4) + quad;  // 4 channels = 8 bytes
    constexpr int rows = rows_per_lane / 2;  // per pass: two passes keep the registers low
#pragma unroll 1
    for (int pass = 0; pass < 2; ++pass) {
      const int row0 = (lane >> 4) + pass * 2 * rows;
      float v[rows * 4];
#pragma unroll
      for (int k = 0; k < rows; ++k) {
        const float4 x = *reinterpret_cast<const float4*>(st + (row0 + 2 * k) * stem_staging_stride + quad * 4);
        v[4 * k + 0] = ep.alpha * x.x + bias[0];
        v[4 * k + 1] = ep.alpha * x.y + bias[1];
        v[4 * k + 2] = ep.alpha * x.z + bias[2];
        v[4 * k + 3] = ep.alpha * x.w + bias[3];
      }
      epilogue::activate(ep.activation, v);
      if (ep.clamp) {
#pragma unroll
        for (int e = 0; e < rows * 4; ++e) v[e] = fminf(fmaxf(v[e], ep.clamp_lo), ep.clamp_hi);
      }
#pragma unroll
      for (int k = 0; k < rows; ++k) {
        const int row = row0 + 2 * k;
        if (row >= rows_valid) break;
        uint2 packed;
        if (bf16) {
          const __nv_bfloat162 a = __floats2bfloat162_rn(v[4 * k], v[4 * k + 1]), b = __floats2bfloat162_rn(v[4 * k + 2], v[4 * k + 3]);
          packed = make_uint2(*reinterpret_cast<const std::uint32_t*>(&a), *reinterpret_cast<const std::uint32_t*>(&b));
        } else {
          const __half2 a = __floats2half2_rn(v[4 * k], v[4 * k + 1]), b = __floats2half2_rn(v[4 * k + 2], v[4 * k + 3]);
          packed = make_uint2(*reinterpret_cast<const std::uint32_t*>(&a), *reinterpret_cast<const std::uint32_t*>(&b));
        }
        y[row * (stem_tile_n / 4)] = packed;
      }
    }
  }

  // Every other epilogue (beta, residual, f32, K < 64 or y not 16-byte aligned): the GEMM's
  // epilogue_store on the lane's 4 columns.
  __device__ __forceinline__ static void store_band_general(const StemParams<epilogue::Builtin::Params>& p,
                                                            const float* st, std::int64_t pixel0, int rows_valid,
                                                            int lane) {
    const int col = (lane & 15) * 4, row0 = lane >> 4;
    if (col >= p.g.n) return;
#pragma unroll 1
    for (int k = 0; k < rows_per_lane; ++k) {
      const int row = row0 + 2 * k;
      if (row >= rows_valid) break;
      float x[4];
      *reinterpret_cast<float4*>(x) = *reinterpret_cast<const float4*>(st + row * stem_staging_stride + col);
      epilogue_store<epilogue::Builtin>(p.g, static_cast<int>(pixel0 + row), col, min(4, p.g.n - col), x);
    }
  }

  // Register path (identity or ReLU, alpha 1, no clamp, f16/bf16 y, K = 64: the stems' epilogues): per
  // m16 fragment, the accumulators (the bias came in with the first mma: compute's c0), packed to
  // 16-bit pairs in registers
  // (cvt.rn.f16x2/bf16x2.f32) and floored with max(v, floor): floor 0 is ReLU (max returns the non-NaN
  // operand: ReLU(NaN) = 0 as in epilogue::relu), floor NaN is the identity; the packed rows go through
  // the warp's staging band (16 pixels × 128 B, rows stem_packed_pitch apart: conflict-free 4-byte
  // writes) and leave as 16-byte pieces, a warp writing 512 contiguous bytes of y per instruction.
  // ~60 instructions per fragment instead of ~250 through the fp32 band.
  template <bool BF16>
  __device__ __forceinline__ static std::uint32_t pack_floor(float a, float b, std::uint32_t floor2) {
    std::uint32_t v;
    if constexpr (BF16) {
      const __nv_bfloat162 h = __hmax2(__floats2bfloat162_rn(a, b), *reinterpret_cast<const __nv_bfloat162*>(&floor2));
      v = *reinterpret_cast<const std::uint32_t*>(&h);
    } else {
      const __half2 h = __hmax2(__floats2half2_rn(a, b), *reinterpret_cast<const __half2*>(&floor2));
      v = *reinterpret_cast<const std::uint32_t*>(&h);
    }
    return v;
  }

  template <bool BF16>
  __device__ __forceinline__ static void store_tile_regs(const StemParams<epilogue::Builtin::Params>& p, Acc& acc,
                                                         char* stage, std::int64_t pixel0, int valid, int lane) {
    const int gr = lane >> 2, t = lane & 3;
    constexpr std::uint32_t nan2 = BF16 ? 0x7fc07fc0u : 0x7e007e00u;
    const std::uint32_t floor2 = p.g.ep.activation == Activation::relu ? 0u : nan2;
    char* const st_write = stage + gr * stem_packed_pitch + 4 * t;
    uint4* const y = static_cast<uint4*>(p.g.d) + pixel0 * (stem_tile_n / 8) + lane;  // 8 pieces per pixel
#pragma unroll
    for (int i = 0; i < MI; ++i) {
      if (i * 16 >= valid) break;
      __syncwarp();
#pragma unroll
      for (int j = 0; j < NI; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          *reinterpret_cast<std::uint32_t*>(st_write + h * 8 * stem_packed_pitch + j * 16) =
              pack_floor<BF16>(acc[i][j][2 * h], acc[i][j][2 * h + 1], floor2);
      __syncwarp();
      const int rows_left = valid - i * 16;
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const int piece = lane + 32 * k, row = piece >> 3;  // 8 pieces of 16 bytes per pixel row
        if (row < rows_left)
          y[i * 16 * (stem_tile_n / 8) + 32 * k] =
              *reinterpret_cast<const uint4*>(stage + row * stem_packed_pitch + (piece & 7) * 16);
      }
    }
  }

  __device__ __forceinline__ static void store_tile(const StemParams<epilogue::Builtin::Params>& p, Acc& acc, char* stage,
                                                    const float* sbias, std::int64_t pixel0, int valid, int lane) {
    if (p.geo.reg_store) {
      if (p.g.d_type == DType::bf16) store_tile_regs<true>(p, acc, stage, pixel0, valid, lane);
      else store_tile_regs<false>(p, acc, stage, pixel0, valid, lane);
      return;
    }
    float* st = reinterpret_cast<float*>(stage);
    // The fast path's bias for this lane's channel quad, from the CTA's fp32 copy (zero without bias):
    // per tile, not per kernel: four registers more across the mma loop would spill.
    const float4 b4 = *reinterpret_cast<const float4*>(sbias + (lane & 15) * 4);
    const float bias[4] = {b4.x, b4.y, b4.z, b4.w};
#pragma unroll 1
    for (int i = 0; i < MI; ++i) {
      if (i * 16 >= valid) break;
      __syncwarp();
      stage_fragment(acc, i, st, lane);
      __syncwarp();
      if (p.geo.fast_store) store_band_fast(p, st, bias, pixel0 + i * 16, valid - i * 16, lane);
      else store_band_general(p, st, pixel0 + i * 16, valid - i * 16, lane);
    }
  }

  __device__ static void run(const StemParams<epilogue::Builtin::Params>& p) {
    extern __shared__ __align__(128) char smem[];
    const StemGeometry& g = p.geo;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    char* sf = smem;
    float* const sbias = reinterpret_cast<float*>(smem + g.r * FilterTile::bytes);
    char* stage = smem + g.r * FilterTile::bytes + stem_bias_bytes + warp * stem_staging_bytes_per_warp;
    char* const rows0 = smem + g.rows_offset;  // row buffer b at rows0 + b·rows_bytes
    const T* x = static_cast<const T*>(p.x);

    // The fast epilogue's bias as fp32 (K = 64 there; zeros without bias), visible after the first barrier.
    for (int col = threadIdx.x; col < stem_tile_n; col += threads) {
      const void* b = g.fast_store ? p.g.ep.bias : nullptr;
      sbias[col] = b == nullptr ? 0.0f
                   : p.g.d_type == DType::bf16 ? __bfloat162float(static_cast<const __nv_bfloat16*>(b)[col])
                                               : __half2float(static_cast<const __half*>(b)[col]);
    }

    int t = blockIdx.x;
    Acc acc;
    // Compute and store one tile; the row buffer may be refilled once every warp passed the next barrier.
    auto tile_work = [&](const char* rows, int tile) {
      const TileCoord tc = tile_coord(g, tile);
      int a_off[MI];
      a_offsets(a_off, g, tc, warp, lane);
      float2 c0[NI];  // the register epilogue's bias (zeros without bias), else zeros
#pragma unroll
      for (int j = 0; j < NI; ++j)
        c0[j] = g.reg_store ? *reinterpret_cast<const float2*>(sbias + j * 8 + 2 * (lane & 3)) : make_float2(0.0f, 0.0f);
      if (g.s >= 7) compute<true>(acc, rows, sf, g, a_off, c0, lane);
      else compute<false>(acc, rows, sf, g, a_off, c0, lane);
      const int m_warp = tc.m0 + warp * stem_warp_m;
      const int valid = min(stem_warp_m, g.pq - m_warp);
      if (valid > 0) store_tile(p, acc, stage, sbias, std::int64_t(tc.n) * g.pq + m_warp, valid, lane);
    };
    if constexpr (C == 4) {
      // Two row buffers: tile t + grid's rows are copied while tile t computes and stores. One barrier
      // per tile: after it, tile t's rows are visible and every warp is done with the other buffer.
      if (t < g.tiles) load_rows(rows0, x, g, t);
      load_filters(sf, static_cast<const T*>(p.w), g);
      copy_commit();  // the filters arrive with the first tile's rows
#pragma unroll 1
      for (int it = 0; t < g.tiles; t += gridDim.x, ++it) {
        const int next = t + gridDim.x;
        copy_wait<0>();
        __syncthreads();
        if (next < g.tiles) load_rows(rows0 + ((it + 1) & 1) * g.rows_bytes, x, g, next);
        copy_commit();
        tile_work(rows0 + (it & 1) * g.rows_bytes, t);
      }
    } else {
      // C < 4: one raw buffer. raw_segments (16-byte aligned image rows): two row buffers; tile t +
      // grid's raw rows arrive while tile t computes and stores, then each thread expands its own
      // segments into the other row buffer and requests tile t + 2·grid's: one barrier per tile.
      // Otherwise one row buffer: tile t + grid's raw rows are requested after the barrier and
      // expanded into the row buffer once every warp is done with it (a second barrier).
      char* const raw = smem + g.raw_offset;
      const bool seg = g.raw_segments;
      if (seg)
        for (int k = threadIdx.x; k < 2 * g.rows_bytes / 16; k += threads)
          reinterpret_cast<uint4*>(rows0)[k] = make_uint4(0, 0, 0, 0);  // the halo columns, once
      if (t < g.tiles) {
        if (seg) issue_segments(raw, x, g, t);
        else issue_raw(raw, x, g, t);
      }
      copy_commit();
      load_filters(sf, static_cast<const T*>(p.w), g);
      copy_wait<0>();
      __syncthreads();  // raw rows of tile t (any thread's), the zeroed buffers before expansion writes
      if (t < g.tiles) {
        if (seg) expand_segments(rows0, raw, g, t);
        else expand_raw(rows0, raw, x, g, t);
      }
      if (seg && t + static_cast<int>(gridDim.x) < g.tiles) issue_segments(raw, x, g, t + gridDim.x);
      copy_commit();
#pragma unroll 1
      for (int it = 0; t < g.tiles; t += gridDim.x, ++it) {
        const int next = t + gridDim.x;
        __syncthreads();  // tile t's rows (and the filters) are visible; seg: every warp is done with the other buffer
        if (!seg && next < g.tiles) issue_raw(raw, x, g, next);  // the raw buffer is free
        copy_commit();
        tile_work(rows0 + (seg ? (it & 1) * g.rows_bytes : 0), t);
        if (next < g.tiles) {
          copy_wait<0>();
          if (seg) {
            expand_segments(rows0 + ((it + 1) & 1) * g.rows_bytes, raw, g, next);
            if (next + static_cast<int>(gridDim.x) < g.tiles) issue_segments(raw, x, g, next + gridDim.x);
            copy_commit();
          } else {
            __syncthreads();  // every warp is done with the row buffer; tile next's raw rows have arrived
            expand_raw(rows0, raw, x, g, next);
          }
        }
      }
    }
    copy_wait<0>();
  }
};

// CfgT::value is a ConvConfig with iterator == stem.
template <class CfgT>
__global__ void __launch_bounds__(CfgT::value.gemm.threads(), 1) conv2d_stem_kernel(const StemParams<epilogue::Builtin::Params> p) {
  using T = element_t<operand_type(CfgT::value.gemm.math)>;
  StemKernel<CfgT::value, T>::run(p);
}

// ---- Host side -------------------------------------------------------------------------------------

template <class CfgT>
Status launch_conv_stem(const Conv2dDesc& d, const Conv2dOperands& ops, const ConvLaunchOptions&, cudaStream_t stream) {
  constexpr ConvConfig CC = CfgT::value;
  constexpr auto kernel = conv2d_stem_kernel<CfgT>;
  DeviceInfo dev;
  KTUNE_RETURN_IF_ERROR(current_device(dev));
  const StemLayout l = stem_layout(CC, d);
  if (l.smem_bytes == 0 || l.smem_bytes > dev.smem_optin_bytes)
    return error(StatusCode::unsupported, "stem: shared memory for the input rows exceeds the device limit");
  KTUNE_RETURN_IF_ERROR(ensure_smem_limit<kernel>(dev.smem_optin_bytes));  // once per device: the most any problem may need
  // Resident CTAs per multiprocessor for this problem's shared memory (the persistent grid's size).
  static std::atomic<std::int64_t> occupancy_cache{0};  // (smem bytes << 8) | blocks
  const std::int64_t cached = occupancy_cache.load(std::memory_order_relaxed);
  int per_sm = 0;
  if ((cached >> 8) == l.smem_bytes) {
    per_sm = static_cast<int>(cached & 0xff);
  } else {
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, CC.gemm.threads(), l.smem_bytes) != cudaSuccess) {
      (void)cudaGetLastError();
      per_sm = 1;
    }
    per_sm = per_sm > 0 ? per_sm : 1;
    occupancy_cache.store((std::int64_t{l.smem_bytes} << 8) | per_sm, std::memory_order_relaxed);
  }

  const ConvShape s = conv_shape(d);
  StemParams<epilogue::Builtin::Params> p{};
  p.g.m = static_cast<int>(s.m);
  p.g.n = static_cast<int>(d.k);
  p.g.k = static_cast<int>(s.kgemm);
  p.g.d = ops.y;
  p.g.ldd = d.k;
  p.g.d_type = d.out_type;
  p.g.d_vec4 = alignment_of(d, ops).y % 4 == 0;
  p.g.raster_group = 1;
  p.g.ep = epilogue::make_builtin_params(d.epilogue, ops.y, d.k, ops.bias, ops.residual, d.k);
  p.x = ops.x;
  p.w = ops.w;
  StemGeometry& g = p.geo;
  g.h = static_cast<int>(d.h);
  g.w = static_cast<int>(d.w);
  g.c = static_cast<int>(d.c);
  g.k = static_cast<int>(d.k);
  g.r = static_cast<int>(d.r);
  g.s = static_cast<int>(d.s);
  g.pq = static_cast<int>(s.p * s.q);
  g.q = static_cast<int>(s.q);
  g.pad_h = static_cast<int>(d.pad_h);
  g.pad_w = static_cast<int>(d.pad_w);
  g.stride_h = static_cast<int>(d.stride_h);
  g.dil_h = static_cast<int>(d.dil_h);
  const std::int64_t tiles_per_image = ceil_div(s.p * s.q, std::int64_t{CC.gemm.tile.m});
  const std::int64_t tiles = tiles_per_image * d.n;
  if (tiles > 0x7fffffff) return error(StatusCode::invalid_argument, "too many output tiles for one launch");
  g.tiles_per_image = static_cast<int>(tiles_per_image);
  g.div_q = StemDivisor(static_cast<unsigned>(g.q));
  g.div_tiles = StemDivisor(static_cast<unsigned>(g.tiles_per_image));
  g.div_w = StemDivisor(static_cast<unsigned>(g.w));
  g.tiles = static_cast<int>(tiles);
  g.rows_cap = l.rows_cap;
  g.row_pixels = l.row_pixels;
  g.pitch = l.pitch;
  g.rows_offset = l.filter_bytes + stem_bias_bytes + l.staging_bytes;
  g.rows_bytes = l.rows_bytes;
  g.raw_offset = g.rows_offset + l.row_buffers * l.rows_bytes;
  const auto y_addr = reinterpret_cast<std::uintptr_t>(ops.y);
  g.raw_segments = CC.channels < 4 && l.row_buffers == 2 && reinterpret_cast<std::uintptr_t>(ops.x) % 16 == 0 &&
                   (d.w * d.c * 2) % 16 == 0 && d.pad_w + d.w <= l.row_pixels;
  g.fast_store = (d.out_type == DType::f16 || d.out_type == DType::bf16) && d.k == stem_max_k && y_addr % 16 == 0 &&
                 d.epilogue.beta == 0.0f && !d.epilogue.residual;
  g.reg_store = g.fast_store && d.epilogue.alpha == 1.0f && !d.epilogue.clamp &&
                (d.epilogue.activation == Activation::none || d.epilogue.activation == Activation::relu);

  const std::int64_t slots = std::int64_t{dev.sm_count > 0 ? dev.sm_count : 1} * per_sm;
  const unsigned grid = static_cast<unsigned>(tiles < slots ? tiles : slots);
  kernel<<<grid, CC.gemm.threads(), l.smem_bytes, stream>>>(p);
  return cuda_status(cudaGetLastError(), "conv2d stem kernel launch");
}

template <class CfgT>
cudaError_t conv_stem_attributes(cudaFuncAttributes* a) {
  return cudaFuncGetAttributes(a, conv2d_stem_kernel<CfgT>);
}

}  // namespace ktune::kernel
