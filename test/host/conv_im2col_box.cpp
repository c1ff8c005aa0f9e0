// Host emulation of the sm90 conv route tma_im2col's A operand (conv/kernel/im2col_box.hpp): for every
// output tile and k-tile, the box the producer asks TMA for — walked as TMA's im2col mode walks it
// (PTX ISA, "im2col mode": rows step through the bounding box of filter-window corners with the
// traversal strides, W, then H, then N; each row reads the pixel at corner + offsets, zero outside the
// tensor) — must equal the implicit-GEMM A tile: row i = output pixel m0 + i, columns the 64 channels
// c0.. of tap (r, s), zero for padding, channels past C and rows past N·P·Q. The filter box
// {c0, tap, n0} of the 3-D map {C, R·S, K} is the matching B tile by construction. Checks the
// coordinate arithmetic without a GPU; the GPU tests check the hardware.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ktune/conv/kernel/im2col_box.hpp"
#include "conv_problem.hpp"

using namespace ktune;

namespace {

// The problems below, spelled shortly.
template <class... A>
Conv2dDesc P(A... a) {
  return ktune::test::conv_problem(a...);
}

// x[n, h, w, c] = a distinct non-zero value.
double xval(const Conv2dDesc& d, std::int64_t n, std::int64_t h, std::int64_t w, std::int64_t c) {
  return 1.0 + static_cast<double>(((n * d.h + h) * d.w + w) * d.c + c);
}

// The box as TMA's im2col mode delivers it: `rows` rows × 64 channels.
std::vector<double> tma_box(const Conv2dDesc& d, const Im2colMapShape& m, const Im2colBox& b, int rows) {
  std::vector<double> out(static_cast<std::size_t>(rows) * conv_tma_channels, 0.0);
  const std::int64_t w_last = static_cast<std::int64_t>(m.dims[1]) - 1 + m.upper[0];
  const std::int64_t h_last = static_cast<std::int64_t>(m.dims[2]) - 1 + m.upper[1];
  std::int64_t w = b.w, h = b.h, n = b.n;
  for (int i = 0; i < rows; ++i) {
    const std::int64_t hh = h + b.off_h, ww = w + b.off_w;
    for (int c = 0; c < conv_tma_channels; ++c) {
      const std::int64_t cc = b.c0 + c;
      const bool in = n < d.n && hh >= 0 && hh < d.h && ww >= 0 && ww < d.w && cc < d.c;
      out[static_cast<std::size_t>(i) * conv_tma_channels + c] = in ? xval(d, n, hh, ww, cc) : 0.0;
    }
    w += m.elem_strides[1];  // next corner: along W, wrapping to the next H row, then the next image
    if (w > w_last) {
      w = m.lower[0];
      h += m.elem_strides[2];
      if (h > h_last) {
        h = m.lower[1];
        ++n;
      }
    }
  }
  return out;
}

// The implicit-GEMM A tile: rows m0.., columns (tap, c0..c0+63) of im2col.
std::vector<double> a_tile(const Conv2dDesc& d, std::int64_t m0, int tap, int c0, int rows) {
  const ConvShape s = conv_shape(d);
  std::vector<double> out(static_cast<std::size_t>(rows) * conv_tma_channels, 0.0);
  const std::int64_t r = tap / d.s, t = tap % d.s;
  for (int i = 0; i < rows; ++i) {
    const std::int64_t m = m0 + i;
    if (m >= s.m) continue;
    const std::int64_t n = m / (s.p * s.q), p = (m / s.q) % s.p, q = m % s.q;
    const std::int64_t h = p * d.stride_h - d.pad_h + r * d.dil_h, w = q * d.stride_w - d.pad_w + t * d.dil_w;
    if (h < 0 || h >= d.h || w < 0 || w >= d.w) continue;
    for (int c = 0; c < conv_tma_channels; ++c)
      if (c0 + c < d.c) out[static_cast<std::size_t>(i) * conv_tma_channels + c] = xval(d, n, h, w, c0 + c);
  }
  return out;
}

}  // namespace

TEST_CASE("conv tma_im2col (host emulation): every box of every tile is the implicit-GEMM A tile") {
  const Conv2dDesc problems[] = {
      P(2, 7, 7, 64, 13, 1, 1, 0, 0),                  // 1x1
      P(2, 9, 11, 64, 40, 3, 3, 1, 1),                 // 3x3 same padding
      P(3, 10, 9, 16, 24, 3, 3, 1, 1, 2, 2),           // stride 2
      P(2, 12, 12, 8, 16, 3, 3, 2, 2, 1, 1, 2, 2),     // dilation 2
      P(2, 2, 3, 8, 8, 5, 5, 2, 2),                    // H, W smaller than the filter
      P(2, 9, 10, 24, 20, 2, 3, 0, 2, 1, 3, 1, 2),     // asymmetric pad / stride / dilation
      P(2, 11, 10, 72, 56, 3, 3, 1, 1, 2, 2),          // second channel block partly past C
      P(2, 14, 14, 32, 72, 1, 1, 0, 0, 2, 2),          // 1x1 stride 2
      P(1, 5, 5, 40, 32, 7, 7, 3, 3),                  // 7x7 on 5x5
      P(2, 9, 13, 32, 8, 1, 3, 0, 1, 2, 1, 1, 3),      // 1x3, stride 2/1, dilation 1/3
      P(2, 23, 23, 8, 8, 7, 7, 3, 3, 2, 2),            // 7x7 stride 2 (stem-like)
  };
  for (const Conv2dDesc& d : problems) {
    const ConvShape s = conv_shape(d);
    const ConvTmaGeometry g = conv_tma_geometry(d);
    const Im2colMapShape m = im2col_map_shape(d);
    CHECK(g.k_tiles == d.r * d.s * ((d.c + 63) / 64));
    // the bounding box holds exactly Q corners per row and P rows per image
    CHECK((static_cast<std::int64_t>(m.dims[1]) - 1 + m.upper[0] - m.lower[0]) / m.elem_strides[1] + 1 == s.q);
    CHECK((static_cast<std::int64_t>(m.dims[2]) - 1 + m.upper[1] - m.lower[1]) / m.elem_strides[2] + 1 == s.p);
    for (int rows : {64, 128, 256}) {
      int bad = 0;
      std::string first;
      for (std::int64_t m0 = 0; m0 < s.m; m0 += rows)
        for (int kt = 0; kt < g.k_tiles; ++kt) {
          const Im2colBox b = im2col_box(g, static_cast<int>(m0), kt);
          CHECK(b.c0 == (kt % g.c_blocks) * 64);
          CHECK(b.tap == kt / g.c_blocks);
          if (tma_box(d, m, b, rows) != a_tile(d, m0, b.tap, b.c0, rows)) {
            if (first.empty()) first = "m0=" + std::to_string(m0) + " kt=" + std::to_string(kt);
            ++bad;
          }
        }
      INFO("N" << d.n << " H" << d.h << " W" << d.w << " C" << d.c << " R" << d.r << " S" << d.s << " pad " << d.pad_h
                << "/" << d.pad_w << " stride " << d.stride_h << "/" << d.stride_w << " dil " << d.dil_h << "/" << d.dil_w
                << " rows " << rows << ": first mismatch " << first);
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("conv tma_im2col: the producer's division-free walk gives im2col_box's boxes in any call order") {
  const Conv2dDesc problems[] = {P(2, 9, 11, 64, 40, 3, 3, 1, 1), P(2, 11, 10, 72, 56, 3, 3, 1, 1, 2, 2),
                                 P(2, 9, 10, 24, 20, 2, 3, 0, 2, 1, 3, 1, 2), P(2, 7, 7, 200, 13, 1, 1, 0, 0),
                                 P(1, 5, 5, 130, 32, 7, 7, 3, 3)};
  auto same = [](const Im2colBox& a, const Im2colBox& b) {
    return a.c0 == b.c0 && a.w == b.w && a.h == b.h && a.n == b.n && a.tap == b.tap && a.off_w == b.off_w &&
           a.off_h == b.off_h;
  };
  for (const Conv2dDesc& d : problems) {
    const ConvShape s = conv_shape(d);
    const ConvTmaGeometry g = conv_tma_geometry(d);
    int bad = 0;
    Im2colWalk walk{};
    // as the producer calls it: every k-tile of every tile in order (a CTA's tiles are far apart)
    for (std::int64_t m0 = 0; m0 < s.m; m0 += 128 * 3)
      for (int kt = 0; kt < g.k_tiles; ++kt) bad += !same(walk.box(g, static_cast<int>(m0), kt), im2col_box(g, static_cast<int>(m0), kt));
    // and out of order: a jump back, a repeat, a new tile in the middle of the k loop
    const int order[][2] = {{0, 3}, {0, 1}, {0, 1}, {128, 2}, {128, 3}, {0, 0}, {256, 5}, {256, 6}};
    for (const auto& o : order)
      if (o[0] < s.m && o[1] < g.k_tiles) bad += !same(walk.box(g, o[0], o[1]), im2col_box(g, o[0], o[1]));
    INFO("C" << d.c << " R" << d.r << " S" << d.s);
    CHECK(bad == 0);
  }
}

TEST_CASE("conv tma_im2col: BK = 32 k-tiles (32 channels each) walk the same windows as BK = 64, twice per tap") {
  const Conv2dDesc problems[] = {P(2, 9, 11, 64, 40, 3, 3, 1, 1), P(2, 11, 10, 72, 56, 3, 3, 1, 1, 2, 2),
                                 P(2, 9, 10, 24, 20, 2, 3, 0, 2, 1, 3, 1, 2), P(1, 5, 5, 130, 32, 7, 7, 3, 3)};
  for (const Conv2dDesc& d : problems) {
    const ConvShape s = conv_shape(d);
    const ConvTmaGeometry g64 = conv_tma_geometry(d), g32 = conv_tma_geometry(d, 32);
    CAPTURE(d.c);
    CHECK(g32.c_blocks == (d.c + 31) / 32);
    CHECK(g32.k_tiles == d.r * d.s * g32.c_blocks);
    Im2colWalkT<32> walk{};
    int bad = 0;
    for (std::int64_t m0 = 0; m0 < s.m; m0 += 256)
      for (int kt = 0; kt < g32.k_tiles; ++kt) {
        const Im2colBox b = im2col_box<32>(g32, static_cast<int>(m0), kt);
        // the tap and the 32-channel block; the window (corner, image, filter offsets) of the 64-channel box there
        const int tap = kt / g32.c_blocks, c0 = (kt % g32.c_blocks) * 32;
        const Im2colBox w = im2col_box(g64, static_cast<int>(m0), tap * g64.c_blocks + c0 / 64);
        bad += b.tap != tap || b.c0 != c0 || b.w != w.w || b.h != w.h || b.n != w.n || b.off_w != w.off_w || b.off_h != w.off_h;
        const Im2colBox v = walk.box(g32, static_cast<int>(m0), kt);  // the producer's walk, in order
        bad += v.tap != b.tap || v.c0 != b.c0 || v.w != b.w || v.h != b.h || v.n != b.n || v.off_w != b.off_w || v.off_h != b.off_h;
      }
    CHECK(bad == 0);
  }
}
