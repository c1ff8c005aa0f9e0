// ktune/conv/stem.hpp — what the first-layer stem kernel (kernel/stem.cuh) can run and the shared memory
// it needs for a problem. Host code (dispatch and the launcher use it).
//
// The kernel's idea: with C ≤ 4 channels stored as 4 (the 4th zero for C = 3), the S·4 values of one
// filter row of the im2col matrix are CONTIGUOUS in an input row: for output pixel q they start at input
// pixel q·2 − pad_w. So the GEMM K = R·S·C runs as R chunks of 32 (one per filter row r; 8 taps × 4
// channels, taps ≥ S masked to zero), and the A operand of chunk r is a strided view of input row
// p·stride_h − pad_h + r·dil_h: row q starts 2 pixels = 16 bytes after row q − 1, so ldmatrix reads
// the fragments straight from the input rows in shared memory — no im2col copy at all. A tile of BM
// output pixels (consecutive pixels of one image) needs the input rows under its output rows, each
// padded with zeros to (Q − 1)·2 + 8 pixels of 8 bytes; the whole filter (R × 64 × 32 values, zero
// padded) stays in shared memory for the persistent CTA's lifetime.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>

#include "ktune/conv/config.hpp"
#include "ktune/conv/problem.hpp"
#include "ktune/status.hpp"

namespace ktune {

inline constexpr int stem_max_filter = 8;  // R, S ≤ 8: one 32-value K chunk per filter row
inline constexpr int stem_max_k = 64;      // output channels: one warp tile covers all of them
inline constexpr int stem_pixel_bytes = 8;  // 4 channels of 16 bits
inline constexpr int stem_filter_row_bytes = stem_tile_n * stem_tile_k * 2;  // one filter row r: 64 x 32 values
// Epilogue staging per warp: one m16 fragment row band (16 pixels x 64 channels fp32), rows padded to 72
// floats (conflict-free float2 writes and float4 reads).
inline constexpr int stem_staging_stride = stem_tile_n + 8;
inline constexpr int stem_staging_bytes_per_warp = 16 * stem_staging_stride * 4;
// The register epilogue's packed rows (16 pixels x 64 16-bit values) in the same band: 128 B + 16 of
// padding per row (4-byte writes of 8 rows x 4 lanes hit 32 different banks).
inline constexpr int stem_packed_pitch = stem_tile_n * 2 + 16;
static_assert(16 * stem_packed_pitch <= stem_staging_bytes_per_warp, "packed rows fit the staging band");
inline constexpr int stem_bias_bytes = stem_tile_n * 4;  // the fast epilogue's bias as fp32, once per CTA

// n / d for 0 <= n < 2^31 and a divisor fixed per launch, as a multiply-high, an add and a shift
// (Granlund-Montgomery; the stem kernel divides pixel and tile indices by Q and the tiles per image
// several times per tile: ~20 SASS each as a plain division).
struct StemDivisor {
  unsigned d = 1, mul = 1, shift = 0;
  constexpr StemDivisor() = default;
  constexpr explicit StemDivisor(unsigned divisor) : d(divisor > 0 ? divisor : 1) {
    while ((std::uint64_t{1} << shift) < d) ++shift;
    mul = static_cast<unsigned>(((std::uint64_t{1} << 32) * ((std::uint64_t{1} << shift) - d)) / d + 1);
  }
};

// Shared-memory geometry of one problem (bytes unless said otherwise).
struct StemLayout {
  int rows_cap = 0;    // input rows a tile can need
  int row_pixels = 0;  // padded pixels per input row: (Q − 1)·2 + 8
  int pitch = 0;       // bytes between input rows
  int filter_bytes = 0, staging_bytes = 0, rows_bytes = 0;  // rows_bytes: one row buffer
  int row_buffers = 0;  // two: the next tile's rows are written while this one computes (C < 4, rows not 16-byte aligned: one used)
  int raw_bytes = 0;    // C < 4: the next tile's rows as they are in x (C values per pixel), copied raw
  int smem_bytes = 0;   // filters + bias + staging + row buffers + raw buffer, in this order
};

// C < 4: the raw rows of a tile are one contiguous piece of x (NHWC), copied with 16-byte cp.async
// from the first 16-byte boundary on (the ≤ 14 bytes before it with scalar loads) and expanded to
// 8-byte pixels in shared memory once they have arrived. 32 bytes of slack for the two ragged ends.
inline constexpr int stem_raw_slack = 64;  // also: the last 8-pixel segment read whole (16·C bytes)

constexpr StemLayout stem_layout(const ConvConfig& c, const Conv2dDesc& d) {
  const ConvShape s = conv_shape(d);
  StemLayout l;
  const std::int64_t bm = c.gemm.tile.m;
  const std::int64_t q = std::max<std::int64_t>(s.q, 1);
  const std::int64_t spans = std::min<std::int64_t>(s.p, (bm - 1) / q + 2);  // output rows a tile touches
  const std::int64_t rows = (spans - 1) * d.stride_h + (d.r - 1) * d.dil_h + 1;
  const std::int64_t pixels = (q - 1) * 2 + 8;
  const std::int64_t pitch = pixels * stem_pixel_bytes;
  const std::int64_t rows_bytes = rows * pitch;
  const int buffers = 2;
  const std::int64_t raw = c.channels == 4 ? 0 : (rows * d.w * d.c * 2 + stem_raw_slack + 15) / 16 * 16;
  const std::int64_t total = std::int64_t{d.r} * stem_filter_row_bytes + stem_bias_bytes +
                             std::int64_t{c.gemm.tile.m / stem_warp_m} * stem_staging_bytes_per_warp +
                             buffers * rows_bytes + raw;
  if (total > (std::int64_t{1} << 30)) return l;  // absurd: smem_bytes 0 marks it, can_implement rejects
  l.rows_cap = static_cast<int>(rows);
  l.row_pixels = static_cast<int>(pixels);
  l.pitch = static_cast<int>(pitch);
  l.filter_bytes = static_cast<int>(d.r) * stem_filter_row_bytes;
  l.staging_bytes = (c.gemm.tile.m / stem_warp_m) * stem_staging_bytes_per_warp;
  l.rows_bytes = static_cast<int>(rows_bytes);
  l.row_buffers = buffers;
  l.raw_bytes = static_cast<int>(raw);
  l.smem_bytes = static_cast<int>(total);
  return l;
}

// Can the stem instance `c` run `d` (already validated)? smem_optin: the device's per-block limit (0: do
// not check). The reasons name the rule.
inline Status stem_can_implement(const ConvConfig& c, const Conv2dDesc& d, int smem_optin) {
  auto n = [](long long v) { return std::to_string(v); };
  if (d.c != c.channels)
    return error(StatusCode::unsupported,
                 "stem instance is specialized for C = " + n(c.channels) + ", problem has C = " + n(d.c));
  if (d.r > stem_max_filter || d.s > stem_max_filter)
    return error(StatusCode::unsupported, "stem runs filters up to " + n(stem_max_filter) + "x" + n(stem_max_filter) +
                                              " (one 32-value chunk per filter row), problem has " + n(d.r) + "x" + n(d.s));
  if (d.stride_w != 2 || d.dil_w != 1)
    return error(StatusCode::unsupported, "stem needs stride_w = 2 and dil_w = 1 (output pixels 16 bytes apart in a row), "
                                          "problem has stride_w " + n(d.stride_w) + ", dil_w " + n(d.dil_w));
  if (d.k > stem_max_k)
    return error(StatusCode::unsupported, "stem computes up to " + n(stem_max_k) + " output channels, problem has K = " + n(d.k));
  const StemLayout l = stem_layout(c, d);
  if (l.smem_bytes == 0 || (smem_optin > 0 && l.smem_bytes > smem_optin))
    return error(StatusCode::unsupported, "stem: the input rows of a " + n(c.gemm.tile.m) + "-pixel tile (" +
                                              n(l.rows_cap) + " rows of " + n(l.row_pixels) + " pixels) need " +
                                              n(l.smem_bytes) + " B of shared memory, device allows " + n(smem_optin));
  return {};
}

}  // namespace ktune
