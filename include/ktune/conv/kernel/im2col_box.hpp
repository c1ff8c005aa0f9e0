// ktune/conv/kernel/im2col_box.hpp — the geometry of the sm90 conv route tma_im2col (sm90_conv.cuh),
// kept free of CUDA so host tests can check it: how x (NHWC) is described to TMA's im2col mode, and
// where the box of k-tile kt of the output tile starting at pixel m0 begins.
//
// The im2col tensor map is x as {C, W, H, N}; its bounding box of filter-window corners runs, in W and
// H, from lower = −pad to extent − 1 + upper with upper = pad − dil·(filter − 1), traversed with the
// convolution's stride (element strides {1, stride_w, stride_h, 1}). A box of `pixels` rows starts at a
// corner (w, h) of image n and walks the box like the output pixels (q, then p, then n), so row i is
// output pixel m0 + i; each row holds 64 channels c0.. of the input pixel at corner + (s·dil_w, r·dil_h)
// — zero in the padding, past C and past the batch.
#pragma once
#include <cstdint>

#include "ktune/conv/problem.hpp"

#if defined(__CUDACC__)
#define KTUNE_CONV_HD __host__ __device__
#else
#define KTUNE_CONV_HD
#endif

namespace ktune {

inline constexpr int conv_tma_channels = 64;  // channels per k-tile: one 128-byte swizzle row of 16-bit
// (a BK = 32 tile takes 32 channels per k-tile, one 64-byte swizzle row: the Channels arguments below)

// What the producer thread needs to turn (output tile, k-tile) into TMA coordinates.
struct ConvTmaGeometry {
  int pq, q;                // output pixels per image and per output row
  int stride_h, stride_w;
  int pad_h, pad_w;
  int dil_h, dil_w;
  int s;                    // filter width
  int c_blocks;             // channel blocks (of the tile's BK channels) per filter tap: ⌈C / BK⌉
  int k_tiles;              // R·S·c_blocks
};

inline ConvTmaGeometry conv_tma_geometry(const Conv2dDesc& d, int channels = conv_tma_channels) {
  const ConvShape s = conv_shape(d);
  ConvTmaGeometry g{};
  g.pq = static_cast<int>(s.p * s.q);
  g.q = static_cast<int>(s.q);
  g.stride_h = static_cast<int>(d.stride_h);
  g.stride_w = static_cast<int>(d.stride_w);
  g.pad_h = static_cast<int>(d.pad_h);
  g.pad_w = static_cast<int>(d.pad_w);
  g.dil_h = static_cast<int>(d.dil_h);
  g.dil_w = static_cast<int>(d.dil_w);
  g.s = static_cast<int>(d.s);
  g.c_blocks = static_cast<int>((d.c + channels - 1) / channels);
  g.k_tiles = static_cast<int>(d.r * d.s) * g.c_blocks;
  return g;
}

// The im2col map's shape (cuTensorMapEncodeIm2col's arguments but the address and the box size).
struct Im2colMapShape {
  std::uint64_t dims[4];           // {C, W, H, N}
  std::uint64_t strides[3];        // bytes of W, H, N steps
  int lower[2], upper[2];          // bounding-box corners, W first
  std::uint32_t elem_strides[4];   // traversal strides {1, stride_w, stride_h, 1}
};

inline Im2colMapShape im2col_map_shape(const Conv2dDesc& d) {
  const std::uint64_t es = static_cast<std::uint64_t>(size_of(d.type));
  Im2colMapShape m{};
  m.dims[0] = static_cast<std::uint64_t>(d.c);
  m.dims[1] = static_cast<std::uint64_t>(d.w);
  m.dims[2] = static_cast<std::uint64_t>(d.h);
  m.dims[3] = static_cast<std::uint64_t>(d.n);
  m.strides[0] = m.dims[0] * es;
  m.strides[1] = m.dims[1] * m.strides[0];
  m.strides[2] = m.dims[2] * m.strides[1];
  m.lower[0] = static_cast<int>(-d.pad_w);
  m.lower[1] = static_cast<int>(-d.pad_h);
  m.upper[0] = static_cast<int>(d.pad_w - d.dil_w * (d.s - 1));
  m.upper[1] = static_cast<int>(d.pad_h - d.dil_h * (d.r - 1));
  m.elem_strides[0] = 1;
  m.elem_strides[1] = static_cast<std::uint32_t>(d.stride_w);
  m.elem_strides[2] = static_cast<std::uint32_t>(d.stride_h);
  m.elem_strides[3] = 1;
  return m;
}

// The box of k-tile kt (filter tap r·S+s, channel block) for the output tile starting at pixel m0:
// TMA coordinates {c0, w, h, n} and im2col offsets {off_w, off_h}; the filter box is {c0, tap, n0}.
struct Im2colBox {
  int c0, w, h, n, tap;
  std::uint16_t off_w, off_h;
};

template <int Channels = conv_tma_channels>
KTUNE_CONV_HD inline Im2colBox im2col_box(const ConvTmaGeometry& g, int m0, int kt) {
  const int img = m0 / g.pq, pix = m0 - img * g.pq, p0 = pix / g.q, q0 = pix - p0 * g.q;
  const int tap = kt / g.c_blocks, c0 = (kt - tap * g.c_blocks) * Channels;
  const int r = tap / g.s, s = tap - r * g.s;
  return {c0, q0 * g.stride_w - g.pad_w, p0 * g.stride_h - g.pad_h, img, tap,
          static_cast<std::uint16_t>(s * g.dil_w), static_cast<std::uint16_t>(r * g.dil_h)};
}

// The same boxes for the producer thread without integer divisions per k-tile: the walk is positioned
// (seek: a few divisions) at the first k-tile of each output tile and then steps to the next k-tile
// (channel block, then filter column, then filter row). box(g, m0, kt) seeks when (m0, kt) is not the
// walk's next position, so any call order gives im2col_box's answer.
template <int Channels = conv_tma_channels>
struct Im2colWalkT {
  int m0 = -1, kt = -1;  // the position box() returns next
  int w, h, n;           // filter-window corner of pixel m0 and its image
  int c0, tap, s;        // channel block start, tap r·S+s, filter column
  int off_w, off_h;      // s·dil_w, r·dil_h

  KTUNE_CONV_HD void seek(const ConvTmaGeometry& g, int m0_, int kt_) {
    const Im2colBox b = im2col_box<Channels>(g, m0_, kt_);
    m0 = m0_;
    kt = kt_;
    w = b.w;
    h = b.h;
    n = b.n;
    c0 = b.c0;
    tap = b.tap;
    s = tap % g.s;
    off_w = b.off_w;
    off_h = b.off_h;
  }

  KTUNE_CONV_HD Im2colBox box(const ConvTmaGeometry& g, int m0_, int kt_) {
    if (m0_ != m0 || kt_ != kt) seek(g, m0_, kt_);
    const Im2colBox b{c0, w, h, n, tap, static_cast<std::uint16_t>(off_w), static_cast<std::uint16_t>(off_h)};
    ++kt;  // step to the next k-tile
    c0 += Channels;
    if (c0 >= g.c_blocks * Channels) {
      c0 = 0;
      ++tap;
      off_w += g.dil_w;
      if (++s == g.s) {
        s = 0;
        off_w = 0;
        off_h += g.dil_h;
      }
    }
    return b;
  }
};
using Im2colWalk = Im2colWalkT<>;

}  // namespace ktune
