// ktune/conv/family.hpp — a conv kernel family is the cartesian product of its parameter lists
// (maths × iterators × block shapes × stages), filtered at compile time by the constraint model
// (the GEMM mainloop's rules plus the conv gather's). Only the survivors are ever instantiated.
//
// A conv family is a struct with these static members (see conv/families.hpp):
//   name, arch (ArchTraits), maths[], iterators[] (ConvIteratorSpec), blocks[] (ConvBlockShape), stages[]
// (a block shape may fix its own stage count instead). Optional: `gemm_table_kernels = true` (gemm1x1
// families whose every tile is a GEMM table instance: the route launches that entry, conv_family_uses_gemm_table).
#pragma once
#include <array>
#include <cstddef>
#include <string_view>

#include "ktune/conv/config.hpp"
#include "ktune/family.hpp"

namespace ktune {

// An iterator and its vector width (elements); `channels` is the C a few_channels iterator is built for.
struct ConvIteratorSpec {
  ConvIterator kind = ConvIterator::optimized;
  int align = 8;
  int channels = 0;
};

// A threadblock tile with its warp tile (listed as pairs: only sensible pairs are instantiated) and,
// optionally, its own stage count (0: every entry of the family's stages[]) and the Hopper GEMM's
// consumer schedule (gemm1x1: WgSchedule::swap_ab runs the transposed GEMM, the tile in that swapped
// orientation).
struct ConvBlockShape {
  TileShape tile;
  WarpShape warp;
  int stages = 0;
  WgSchedule schedule = WgSchedule::cooperative;
};

// Block × stage combinations of a family: a block with its own stage count contributes one.
template <class F>
constexpr std::size_t conv_block_stage_count() {
  std::size_t n = 0;
  for (const ConvBlockShape& b : F::blocks) n += b.stages != 0 ? 1 : extent_of(F::stages);
  return n;
}

// Does the 1x1 route of family F run the GEMM table's own instances (no kernel of its own)?
template <class F>
constexpr bool conv_family_uses_gemm_table() {
  if constexpr (requires { F::gemm_table_kernels; }) return F::gemm_table_kernels;
  else return false;
}

template <class F>
inline constexpr std::size_t conv_family_size = extent_of(F::maths) * extent_of(F::iterators) * conv_block_stage_count<F>();

struct ConvCandidate {
  ConvConfig config;
  ConvVerdict verdict;
};

template <class F>
constexpr std::array<ConvCandidate, conv_family_size<F>> enumerate_conv_family() {
  std::array<ConvCandidate, conv_family_size<F>> out{};
  std::size_t i = 0;
  for (MathOp m : F::maths)
    for (ConvIteratorSpec it : F::iterators)
      for (ConvBlockShape b : F::blocks)
        for (int s : F::stages) {
          if (b.stages != 0 && s != F::stages[0]) continue;  // the block's own count, once
          ConvConfig c{GemmConfig{F::arch.cc, m, Layout::row, Layout::col, b.tile, b.warp, b.stages != 0 ? b.stages : s,
                                  it.align, b.schedule},
                       it.kind, it.channels};
          out[i++] = {c, validate(c, F::arch)};
        }
  return out;
}

template <class F>
inline constexpr std::size_t conv_valid_count = [] {
  std::size_t n = 0;
  for (const auto& c : enumerate_conv_family<F>()) n += c.verdict.ok() ? 1 : 0;
  return n;
}();

template <class F>
constexpr std::array<ConvConfig, conv_valid_count<F>> valid_conv_configs() {
  std::array<ConvConfig, conv_valid_count<F>> out{};
  std::size_t i = 0;
  for (const auto& c : enumerate_conv_family<F>())
    if (c.verdict.ok()) out[i++] = c.config;
  return out;
}

}  // namespace ktune
