// ktune/conv/config.hpp — one point of a conv kernel family's parameter space: the GEMM mainloop's
// configuration (math, tile, warps, stages, vector width) plus the A-operand iterator that gathers the
// implicit im2col matrix. Like GemmConfig it is a structural literal type used as a template argument.
//
// Iterators (all write the same swizzled shared-memory tile the GEMM mainloop reads; B, the filters,
// is loaded by the GEMM's own copy as a column-major matrix with ldb = R·S·C):
//   analytic      any C with C % align == 0; each k-tile's filter tap (r, s, c) is computed by division.
//   optimized     C % 8 == 0, 16-byte vectors; the tap is carried from k-tile to k-tile (no division).
//   few_channels  C == channels exactly (3 or 4: first layers), tap arithmetic with a compile-time C;
//                 vectors of `align` elements never straddle a filter tap (C = 4: 8-byte cp.async,
//                 C = 3: 2-byte loads packed into one 16-byte shared-memory store).
// Hopper (sm_90a, wgmma math; the GEMM's TMA + wgmma warp-specialized kernel, kernel/sm90/):
//   gemm1x1       1×1 filters, stride 1, no padding: the convolution IS a GEMM (x as an (N·H·W)×C
//                 row-major A, the filters as a column-major C×K B); runs the sm90 GEMM kernel as is.
//   tma_im2col    any filter: A tiles come from TMA's im2col mode (one BM-pixel × 64-channel box per
//                 filter tap and channel block), B from a 3-D TMA map over the KRSC filters.
// First-layer stems (mma.sync, sm_80+; its own persistent kernel, kernel/stem.cuh, rules in conv/stem.hpp):
//   stem          C ≤ 4, stride_w 2, R, S ≤ 8, K ≤ 64: the input rows a tile needs are copied to shared
//                 memory once (C padded to 4), the whole filter stays in shared memory, and the A
//                 fragments are read straight from the rows (one filter row = S·4 ≤ 32 contiguous values).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "ktune/arch.hpp"
#include "ktune/constraints.hpp"
#include "ktune/fixed_string.hpp"
#include "ktune/gemm/config.hpp"
#include "ktune/gemm/resource_model.hpp"

namespace ktune {

enum class ConvIterator : std::uint8_t { analytic, optimized, few_channels, gemm1x1, tma_im2col, stem };

// Iterators that run on the Hopper (TMA + wgmma) mainloop rather than the mma.sync one.
constexpr bool is_sm90_iterator(ConvIterator i) { return i == ConvIterator::gemm1x1 || i == ConvIterator::tma_im2col; }

constexpr std::string_view to_string(ConvIterator i) {
  switch (i) {
    case ConvIterator::analytic: return "analytic";
    case ConvIterator::optimized: return "optimized";
    case ConvIterator::few_channels: return "few_channels";
    case ConvIterator::gemm1x1: return "gemm1x1";
    case ConvIterator::tma_im2col: return "tma_im2col";
    case ConvIterator::stem: return "stem";
  }
  return "?";
}

struct ConvConfig {
  GemmConfig gemm{};                              // A row-major (im2col), B column-major (KRSC filters)
  ConvIterator iterator = ConvIterator::optimized;
  int channels = 0;                               // few_channels, stem: the C it is specialized for; else 0

  constexpr DType operand() const { return gemm.operand(); }
  constexpr int align() const { return gemm.align; }
  friend constexpr bool operator==(const ConvConfig&, const ConvConfig&) = default;
};

// The A loader's thread mapping: each thread owns 16-byte chunks (8 elements) of the A tile, one chunk
// column per thread and `gather_rows` rows stepping by the block's row coverage (like TileCopy's
// regular mapping with 16-byte vectors); the row coordinates are kept in registers for the kernel.
constexpr int conv_chunk_elems(const ConvConfig& c) { return 16 / size_of(c.operand()); }
constexpr int conv_gather_rows(const ConvConfig& c) {
  const int chunks = c.gemm.tile.m * c.gemm.tile.k / conv_chunk_elems(c);
  return c.gemm.threads() > 0 ? chunks / c.gemm.threads() : 0;
}
inline constexpr int conv_max_gather_rows = 8;

// Stable, readable name, e.g. ktune_conv2d_fprop_sm80_f16_optimized_128x128x32_w64x64_s4_a8 or
// ktune_conv2d_fprop_sm80_bf16_few_channels_c3_128x64x32_w64x32_s4_a1 (ping-pong consumers: ..._pp_<tile>;
// swap AB: ..._swap_<tile>, the tile in the swapped orientation, filters x pixels).
// Part of the public interface.
// 1×1 convolutions served by a Hopper GEMM instance are named after it:
// conv_gemm1x1+ktune_gemm_sm90_<math>_rc_<tile>_w<warp>_s<stages>_a8.
using ConvInstanceName = FixedString<96>;
constexpr ConvInstanceName conv_instance_name(const ConvConfig& c) {
  ConvInstanceName s;
  if (c.iterator == ConvIterator::gemm1x1) return s.append("conv_gemm1x1+").append(instance_name(c.gemm).view());
  s.append("ktune_conv2d_fprop_sm").append(c.gemm.arch_cc).append('_').append(math_short_name(c.gemm.math));
  s.append('_').append(to_string(c.iterator));
  if (c.iterator == ConvIterator::few_channels || c.iterator == ConvIterator::stem) s.append("_c").append(c.channels);
  if (c.gemm.schedule == WgSchedule::pingpong) s.append("_pp");
  if (c.gemm.schedule == WgSchedule::swap_ab) s.append("_swap");
  s.append('_').append(c.gemm.tile.m).append('x').append(c.gemm.tile.n).append('x').append(c.gemm.tile.k);
  s.append("_w").append(c.gemm.warp.m).append('x').append(c.gemm.warp.n);
  s.append("_s").append(c.gemm.stages).append("_a").append(c.gemm.align);
  return s;
}

// ---- Constraint model --------------------------------------------------------------------------------
// A conv configuration is valid when its GEMM mainloop is (the GEMM model's rules, Verdict) and the
// conv rules below hold.
enum class ConvRule {
  none,
  gemm,              // the GEMM mainloop's constraint model rejected it (see `gemm`)
  math,              // mma.sync iterators feed mma on f16/bf16, Hopper iterators wgmma on f16/bf16
  layout,            // A is the row-major im2col matrix, B the column-major KRSC filters
  iterator_vector,   // optimized: 16-byte vectors; few_channels: the widest vector dividing C
  chunk_mapping,     // whole 16-byte chunks per thread, the block's threads covering whole chunk rows
  gather_rows,       // at most conv_max_gather_rows rows of A per thread (row coordinates in registers)
  stem_shape,        // stem: 64x64 warp tiles covering all 64 output channels, BK = 32, double-buffered rows
  stem_channels,     // stem: C in [1, 4]; 8-byte copies of whole pixels for C = 4, scalar loads else
  registers,         // the mma.sync mainloop with the gather state (conv_resources) needs more than a thread has
};

constexpr std::string_view rule_name(ConvRule r) {
  switch (r) {
    case ConvRule::none: return "ok";
    case ConvRule::gemm: return "gemm";
    case ConvRule::math: return "conv_math";
    case ConvRule::layout: return "conv_layout";
    case ConvRule::iterator_vector: return "conv_iterator_vector";
    case ConvRule::chunk_mapping: return "conv_chunk_mapping";
    case ConvRule::gather_rows: return "conv_gather_rows";
    case ConvRule::stem_shape: return "conv_stem_shape";
    case ConvRule::stem_channels: return "conv_stem_channels";
    case ConvRule::registers: return "conv_registers";
  }
  return "?";
}

struct ConvVerdict {
  ConvRule rule = ConvRule::none;
  Verdict gemm{};       // when rule == gemm
  long long value = 0;  // what the configuration needs
  long long limit = 0;  // what the rule allows

  constexpr bool ok() const { return rule == ConvRule::none; }
  friend constexpr bool operator==(const ConvVerdict&, const ConvVerdict&) = default;

  std::string describe() const {
    auto n = [](long long v) { return std::to_string(v); };
    switch (rule) {
      case ConvRule::none: return "ok";
      case ConvRule::gemm: return gemm.to_string();
      case ConvRule::math:
        return "the mma.sync conv iterators need mma_f16/mma_bf16 math, the Hopper ones (gemm1x1, tma_im2col) "
               "wgmma_f16/wgmma_bf16";
      case ConvRule::layout: return "conv instances are A row-major (im2col), B column-major (KRSC filters)";
      case ConvRule::iterator_vector: return "iterator needs " + n(limit) + "-element vectors, configuration has " + n(value);
      case ConvRule::chunk_mapping:
        return "16-byte chunks of the A tile (" + n(value) + ") do not map evenly onto " + n(limit) + " threads";
      case ConvRule::gather_rows:
        return "each thread would gather " + n(value) + " rows of A, at most " + n(limit) + " fit in registers";
      case ConvRule::stem_shape:
        return "the stem kernel runs 64x64 warp tiles over all 64 output channels (tile BMx64x32, BM a multiple of 64, "
               "at most 8 warps, 2 stages of input rows)";
      case ConvRule::stem_channels:
        return "the stem kernel takes C in [1, 4] with 4-element (8-byte) pixel copies for C = 4 and scalar loads "
               "otherwise; configuration has C = " + n(value) + ", vector " + n(limit);
      case ConvRule::registers:
        return "the mainloop with the A gather state needs an estimated " + n(value) + " registers per thread, at most " +
               n(limit) + " exist";
    }
    return "?";
  }
  std::string to_string() const { return ok() ? "ok" : std::string(rule_name(rule)) + ": " + describe(); }
};

constexpr ConvVerdict conv_require(bool cond, ConvRule rule, long long value, long long limit) {
  return cond ? ConvVerdict{} : ConvVerdict{rule, {}, value, limit};
}

// The widest vector (elements, a power of two ≤ 8) that divides C.
constexpr int widest_vector_dividing(long long c) { return c % 8 == 0 ? 8 : c % 4 == 0 ? 4 : c % 2 == 0 ? 2 : 1; }

// The stem kernel's rules (kernel/stem.cuh): one warp tile is 64 pixels × 64 output channels; a k-step
// pair covers one filter row (BK = 32 = 8 taps × 4 channels); two buffers of input rows.
inline constexpr int stem_warp_m = 64, stem_tile_n = 64, stem_tile_k = 32, stem_stages = 2, stem_max_warps = 8;
constexpr bool stem_shape_ok(const GemmConfig& g) {
  return g.tile.n == stem_tile_n && g.warp.n == stem_tile_n && g.warp.m == stem_warp_m && g.tile.k == stem_tile_k &&
         g.tile.m % stem_warp_m == 0 && g.tile.m >= stem_warp_m && g.tile.m / stem_warp_m <= stem_max_warps &&
         g.stages == stem_stages;
}
constexpr bool stem_channels_ok(const ConvConfig& c) {
  return c.channels >= 1 && c.channels <= 4 && c.gemm.align == (c.channels == 4 ? 4 : 1);
}
constexpr ConvVerdict validate_stem(const ConvConfig& c) {
  if (auto v = conv_require(stem_shape_ok(c.gemm), ConvRule::stem_shape, c.gemm.tile.m, 0); !v.ok()) return v;
  return conv_require(stem_channels_ok(c), ConvRule::stem_channels, c.channels, c.gemm.align);
}

constexpr GemmResources conv_resources(const ConvConfig& c);

constexpr ConvVerdict validate(const ConvConfig& c, const ArchTraits& arch) {
  const GemmConfig& g = c.gemm;
  const bool math_ok = is_sm90_iterator(c.iterator) ? (g.math == MathOp::wgmma_f16 || g.math == MathOp::wgmma_bf16)
                                                    : (g.math == MathOp::mma_f16 || g.math == MathOp::mma_bf16);
  if (auto v = conv_require(math_ok, ConvRule::math, 0, 0); !v.ok()) return v;
  if (auto v = conv_require(g.a_layout == Layout::row && g.b_layout == Layout::col, ConvRule::layout, 0, 0); !v.ok()) return v;
  // The stem kernel has its own mainloop and resources (conv/stem.hpp), not the GEMM's.
  if (c.iterator == ConvIterator::stem) return validate_stem(c);
  if (const Verdict gv = validate(g, arch); !gv.ok()) return ConvVerdict{ConvRule::gemm, gv, 0, 0};
  // Hopper iterators load whole tiles with TMA: the GEMM's sm90 rules (swizzle rows, TMA boxes, 16-byte
  // alignment, shared memory, registers) are all there is. Swap AB (the GEMM's transposed problem) runs
  // on both: gemm1x1 hands the GEMM launcher the swapped operands, the im2col producer loads the filter box
  // as the kernel's A and the im2col box as its B.
  if (is_sm90_iterator(c.iterator)) return {};
  const int chunk = conv_chunk_elems(c);
  if (c.iterator == ConvIterator::optimized)
    if (auto v = conv_require(g.align == chunk, ConvRule::iterator_vector, g.align, chunk); !v.ok()) return v;
  if (c.iterator == ConvIterator::few_channels) {
    const int want = c.channels >= 1 && c.channels <= 4 ? widest_vector_dividing(c.channels) : 0;
    if (auto v = conv_require(g.align == want, ConvRule::iterator_vector, g.align, want); !v.ok()) return v;
  }
  const int chunks_per_row = g.tile.k / chunk, chunks = g.tile.m * g.tile.k / chunk;
  if (auto v = conv_require(g.tile.k % chunk == 0 && g.threads() % chunks_per_row == 0 && chunks % g.threads() == 0,
                            ConvRule::chunk_mapping, chunks, g.threads());
      !v.ok())
    return v;
  if (auto v = conv_require(conv_gather_rows(c) <= conv_max_gather_rows, ConvRule::gather_rows, conv_gather_rows(c),
                            conv_max_gather_rows);
      !v.ok())
    return v;
  const int regs = conv_resources(c).registers;
  return conv_require(regs <= arch.max_regs_per_thread, ConvRule::registers, regs, arch.max_regs_per_thread);
}

// Does the mma.sync conv kernel copy B (the KRSC filters: a K-contiguous column-major matrix) with the
// GEMM's k-tile iterator (OperandTileIterator::applies, which the kernel asserts agrees)?
constexpr bool conv_b_iterated(const ConvConfig& c) {
  return !is_sm90_iterator(c.iterator) && c.iterator != ConvIterator::stem &&
         mma_sm80_operand_iterable(c.gemm, c.gemm.tile.n, true);
}

// Shared memory and threads are the GEMM mainloop's. Registers: the GEMM estimate with its A copy
// replaced by the gather state (per row: pixel offset, h0, w0; per thread: the carried tap and channel,
// the chunk's column and shared-memory offset). Against sm_90a ptxas (session 8, 1af9abe + the wide tiles,
// 0 spills everywhere): 64x64 warps 128x128 / 256x128 (4 rows) estimate 255 / 255, ptxas 244 / 242;
// 128x256 (2 rows) 249 vs 232; 64x32 warps (4 rows) 175 vs 162 — 11-17 above, as the GEMM estimate
// itself (246 vs 230 for 128x256x32 'tn'), so the 255-register rule keeps the ptxas-verified 4 rows at
// 64x64 warps and prunes 8 (BK = 64, or N = 64 tiles of 64x64 warps). 32x32 warps (estimate ~120)
// compile to 110-140: there ptxas spends registers it has to spare; occupancy is set by threads and
// shared memory either way.
constexpr GemmResources conv_resources(const ConvConfig& c) {
  if (c.iterator == ConvIterator::stem) {
    // Threads; shared memory without the input rows (filters for R = 8, the fp32 bias and the per-warp
    // fp32 staging band of 16 x 72 floats; the rows depend on the problem: stem_layout in conv/stem.hpp,
    // checked by can_implement); registers: 128 accumulators, two buffers of A and B fragments (64),
    // addresses and masks (ptxas: 251-255).
    GemmResources r;
    r.threads = c.gemm.threads();
    r.smem_bytes = 8 * stem_tile_n * stem_tile_k * 2 + stem_tile_n * 4 + (c.gemm.tile.m / stem_warp_m) * 16 * (stem_tile_n + 8) * 4;
    r.registers = 252;
    return r;
  }
  GemmResources r = estimate_resources(c.gemm);
  if (is_sm90_iterator(c.iterator)) return r;  // the GEMM kernel's resources (TMA: no gather state)
  // The GEMM's copy term replaced: A by the gather state, B by the GEMM's k-tile iterator where it applies
  // (conv_b_iterated), else by TileCopy's per-vector addresses.
  const int b_copy = conv_b_iterated(c) ? mma_sm80_iterator_registers : mma_sm80_vector_copy_registers(c.gemm, c.gemm.tile.n);
  r.registers += -mma_sm80_copy_registers(c.gemm) + b_copy + 3 * conv_gather_rows(c) + 4;
  return r;
}

}  // namespace ktune
