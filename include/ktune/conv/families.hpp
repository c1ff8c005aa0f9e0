// ktune/conv/families.hpp — the default conv2d fprop families (sm80 mma.sync, f16 and bf16 with fp32
// accumulation). Tuning policy, kept apart from kernel code: the constraint model prunes the product
// and the host tests list what survived. Instance counts are kept modest (build time): 18 in all.
#pragma once
#include "ktune/arch.hpp"
#include "ktune/conv/family.hpp"

namespace ktune::families {

// C % 8 == 0 (every layer of a ResNet after the first): 16-byte vectors, tap carried across k-tiles.
// 128x256 for wide outputs (K ≥ 256), 128x128 the workhorse, 128x64 for K = 64, 64x64x64 for layers
// too small to fill 132 multiprocessors with 128-row tiles (7×7 and 14×14 feature maps).
struct Sm80ConvOptimized {
  static constexpr std::string_view name = "sm80_conv_optimized";
  static constexpr const ArchTraits& arch = sm80;
  static constexpr MathOp maths[] = {MathOp::mma_f16, MathOp::mma_bf16};
  static constexpr ConvIteratorSpec iterators[] = {{ConvIterator::optimized, 8, 0}};
  static constexpr ConvBlockShape blocks[] = {{{128, 256, 32}, {64, 64}},
                                              {{128, 128, 32}, {64, 64}},
                                              {{128, 64, 32}, {64, 32}},
                                              {{64, 64, 64}, {32, 32}}};
  static constexpr int stages[] = {4};
};

// Any C: vector width by C's alignment (C % 4, C % 2, or scalar 2-byte loads); the tap is recomputed
// by division every k-tile.
struct Sm80ConvAnalytic {
  static constexpr std::string_view name = "sm80_conv_analytic";
  static constexpr const ArchTraits& arch = sm80;
  static constexpr MathOp maths[] = {MathOp::mma_f16, MathOp::mma_bf16};
  static constexpr ConvIteratorSpec iterators[] = {
      {ConvIterator::analytic, 4, 0}, {ConvIterator::analytic, 2, 0}, {ConvIterator::analytic, 1, 0}};
  static constexpr ConvBlockShape blocks[] = {{{128, 64, 32}, {32, 32}}};
  static constexpr int stages[] = {4};
};

// First layers (C = 4: one 8-byte vector per filter tap; C = 3: 2-byte loads packed into 16-byte
// shared-memory stores), tap arithmetic with a compile-time C. K = 64 output channels: 128x64 tiles.
struct Sm80ConvFewChannels {
  static constexpr std::string_view name = "sm80_conv_few_channels";
  static constexpr const ArchTraits& arch = sm80;
  static constexpr MathOp maths[] = {MathOp::mma_f16, MathOp::mma_bf16};
  static constexpr ConvIteratorSpec iterators[] = {{ConvIterator::few_channels, 4, 4},
                                                   {ConvIterator::few_channels, 1, 3}};
  static constexpr ConvBlockShape blocks[] = {{{128, 64, 32}, {32, 32}}};
  static constexpr int stages[] = {4};
};

}  // namespace ktune::families
