// Host tests of the conv constraint model, the default conv families and table, instance names, and
// which instance can_implement / select_conv pick (iterator by C and pointer alignment) on a fake H200.
#include <doctest/doctest.h>

#include <cstdint>
#include <set>
#include <string>

#include "ktune/conv.hpp"
#include "ktune/conv/families.hpp"

using namespace ktune;

namespace {

const void* caddr(std::uintptr_t a) { return reinterpret_cast<const void*>(a); }
void* cmaddr(std::uintptr_t a) { return reinterpret_cast<void*>(a); }

DeviceInfo fake_h200() {
  DeviceInfo d;
  d.ordinal = 0;
  d.name = "NVIDIA H200";
  d.cc = 90;
  d.sm_count = 132;
  d.l2_bytes = 60 * 1024 * 1024;
  d.smem_optin_bytes = 227 * 1024;
  return d;
}

Conv2dDesc layer(std::int64_t n, std::int64_t hw, std::int64_t c, std::int64_t k, std::int64_t rs, std::int64_t stride,
                 DType t = DType::f16) {
  Conv2dDesc d;
  d.n = n;
  d.h = d.w = hw;
  d.c = c;
  d.k = k;
  d.r = d.s = rs;
  d.pad_h = d.pad_w = rs / 2;
  d.stride_h = d.stride_w = stride;
  d.type = t;
  d.epilogue = bias_activation(Activation::relu);
  return d;
}

Conv2dOperands ops(std::uintptr_t x_offset = 0) {
  Conv2dOperands o;
  o.x = caddr(0x100000000 + x_offset);
  o.w = caddr(0x200000000);
  o.y = cmaddr(0x300000000);
  o.bias = caddr(0x400000000);
  return o;
}

const ConvKernelEntry& chosen_in(const ConvTable& table, const Conv2dDesc& d, const Conv2dOperands& o) {
  const ConvKernelEntry* e = nullptr;
  const Status s = select_conv(d, o, table, fake_h200(), {}, e);
  INFO(s.to_string());
  REQUIRE(s.ok());
  REQUIRE(e != nullptr);
  return *e;
}

// The default table's choice on an H200 (Hopper routes included).
const ConvKernelEntry& chosen(const Conv2dDesc& d, const Conv2dOperands& o = ops()) { return chosen_in(conv_table(), d, o); }

// The mma.sync entries alone: what an H200 runs when no sm90 route applies (and the measured tile
// policy of the mma.sync families).
const ConvTable& sm80_table() {
  static const ConvTable& t = []() -> const ConvTable& {
    static ConvTable table;
    for (const auto& e : conv_table().entries())
      if (!is_sm90_iterator(e.config.iterator)) table.add(e);
    return table;
  }();
  return t;
}
const ConvKernelEntry& chosen_sm80(const Conv2dDesc& d, const Conv2dOperands& o = ops()) { return chosen_in(sm80_table(), d, o); }

constexpr ConvConfig config(ConvIterator it, int align, int channels, TileShape t, WarpShape w, int stages = 4,
                            MathOp m = MathOp::mma_f16) {
  return ConvConfig{GemmConfig{80, m, Layout::row, Layout::col, t, w, stages, align}, it, channels};
}

}  // namespace

TEST_CASE("conv names are stable and readable") {
  CHECK(conv_instance_name(config(ConvIterator::optimized, 8, 0, {128, 128, 32}, {64, 64})).view() ==
        "ktune_conv2d_fprop_sm80_f16_optimized_128x128x32_w64x64_s4_a8");
  CHECK(conv_instance_name(config(ConvIterator::few_channels, 1, 3, {128, 64, 32}, {32, 32}, 4, MathOp::mma_bf16)).view() ==
        "ktune_conv2d_fprop_sm80_bf16_few_channels_c3_128x64x32_w32x32_s4_a1");
  CHECK(conv_instance_name(config(ConvIterator::analytic, 2, 0, {128, 64, 32}, {32, 32})).view() ==
        "ktune_conv2d_fprop_sm80_f16_analytic_128x64x32_w32x32_s4_a2");
  // Hopper: a 1x1 convolution served by a GEMM instance carries the GEMM instance's name
  ConvConfig h{GemmConfig{90, MathOp::wgmma_f16, Layout::row, Layout::col, {128, 128, 64}, {64, 128}, 6, 8},
               ConvIterator::gemm1x1, 0};
  CHECK(conv_instance_name(h).view() == "conv_gemm1x1+" + std::string(instance_name(h.gemm).view()));
  CHECK(conv_instance_name(h).view() == "conv_gemm1x1+ktune_gemm_sm90_wgmma_f16_tn_128x128x64_w64x128_s6_a8");
  h.iterator = ConvIterator::tma_im2col;
  h.gemm.math = MathOp::wgmma_bf16;
  CHECK(conv_instance_name(h).view() == "ktune_conv2d_fprop_sm90_wgmma_bf16_tma_im2col_128x128x64_w64x128_s6_a8");
}

TEST_CASE("conv constraint model: each conv rule with its reason") {
  CHECK(validate(config(ConvIterator::optimized, 8, 0, {128, 128, 32}, {64, 64}), sm80).ok());
  // optimized needs 16-byte vectors
  ConvVerdict v = validate(config(ConvIterator::optimized, 4, 0, {128, 64, 32}, {32, 32}), sm80);
  CHECK(v.rule == ConvRule::iterator_vector);
  CHECK(v.value == 4);
  CHECK(v.limit == 8);
  CHECK(v.to_string().find("conv_iterator_vector") != std::string::npos);
  // few_channels: the widest vector dividing C (C = 3 → 1, C = 4 → 4)
  CHECK(validate(config(ConvIterator::few_channels, 4, 3, {128, 64, 32}, {32, 32}), sm80).rule == ConvRule::iterator_vector);
  CHECK(validate(config(ConvIterator::few_channels, 2, 4, {128, 64, 32}, {32, 32}), sm80).rule == ConvRule::iterator_vector);
  CHECK(validate(config(ConvIterator::few_channels, 4, 4, {128, 64, 32}, {32, 32}), sm80).ok());
  CHECK(validate(config(ConvIterator::few_channels, 1, 3, {128, 64, 32}, {32, 32}), sm80).ok());
  CHECK(validate(config(ConvIterator::few_channels, 1, 9, {128, 64, 32}, {32, 32}), sm80).rule == ConvRule::iterator_vector);
  // math and layout
  ConvConfig c = config(ConvIterator::analytic, 4, 0, {128, 128, 32}, {32, 64}, 3, MathOp::mma_tf32);
  CHECK(validate(c, sm80).rule == ConvRule::math);
  c = config(ConvIterator::analytic, 4, 0, {128, 128, 32}, {64, 64});
  c.gemm.a_layout = Layout::col;
  CHECK(validate(c, sm80).rule == ConvRule::layout);
  // rows of A per thread bounded (registers): 128x32x64 with 2 warps → 16 rows per thread
  v = validate(config(ConvIterator::optimized, 8, 0, {128, 32, 64}, {64, 32}), sm80);
  CHECK(v.rule == ConvRule::gather_rows);
  CHECK(v.value == 16);
  CHECK(v.describe().find("at most 8") != std::string::npos);
  // 64x64 warps with 8 gather rows per thread (BK = 64 at 128 threads): over the register limit
  v = validate(config(ConvIterator::optimized, 8, 0, {128, 128, 64}, {64, 64}, 3), sm80);
  CHECK(v.rule == ConvRule::registers);
  CHECK(v.value > 255);
  CHECK(v.describe().find("registers") != std::string::npos);
  // ... and with 4 (the wide tiles; ptxas 232-244, 0 spills) within it
  CHECK(validate(config(ConvIterator::optimized, 8, 0, {256, 128, 32}, {64, 64}), sm80).ok());
  CHECK(validate(config(ConvIterator::optimized, 8, 0, {128, 256, 32}, {64, 64}), sm80).ok());
  // the GEMM model's verdict passes through, with its own rule
  v = validate(config(ConvIterator::optimized, 8, 0, {256, 256, 64}, {64, 64}, 8), sm80);
  CHECK(v.rule == ConvRule::gemm);
  CHECK(v.gemm.rule == Rule::smem_fits);
  CHECK(v.to_string().find("smem_fits") != std::string::npos);
  v = validate(config(ConvIterator::optimized, 8, 0, {128, 128, 32}, {48, 64}), sm80);
  CHECK(v.rule == ConvRule::gemm);
  CHECK(v.gemm.rule == Rule::warp_divides_tile);
  // Hopper iterators: wgmma math only (and mma.sync iterators never wgmma), then the GEMM's sm90 rules
  ConvConfig h{GemmConfig{90, MathOp::wgmma_f16, Layout::row, Layout::col, {128, 128, 64}, {64, 128}, 6, 8},
               ConvIterator::tma_im2col, 0};
  CHECK(validate(h, sm90).ok());
  h.iterator = ConvIterator::gemm1x1;
  CHECK(validate(h, sm90).ok());
  CHECK(validate(h, sm80).rule == ConvRule::gemm);  // no wgmma before sm90
  h.iterator = ConvIterator::optimized;
  CHECK(validate(h, sm90).rule == ConvRule::math);
  h.iterator = ConvIterator::tma_im2col;
  h.gemm.math = MathOp::mma_f16;
  CHECK(validate(h, sm90).rule == ConvRule::math);
  CHECK(validate(h, sm90).describe().find("wgmma_f16/wgmma_bf16") != std::string::npos);
  h.gemm.math = MathOp::wgmma_f16;
  h.gemm.stages = 8;  // 8 x 32 KB stages do not fit
  v = validate(h, sm90);
  CHECK(v.rule == ConvRule::gemm);
  CHECK(v.gemm.rule == Rule::smem_fits);
}

TEST_CASE("conv default families: everything listed survives and is registered, names unique") {
  std::size_t expected = conv_valid_count<families::Sm80ConvOptimized> + conv_valid_count<families::Sm80ConvAnalytic> +
                         conv_valid_count<families::Sm80ConvFewChannels> + conv_valid_count<families::Sm80ConvFewChannels3> +
                         conv_valid_count<families::Sm90ConvGemm1x1> + conv_valid_count<families::Sm90ConvIm2col> +
                         conv_valid_count<families::Sm80ConvStem> + conv_valid_count<families::Sm80ConvOptimizedWide> +
                         conv_valid_count<families::Sm90ConvGemm1x1Swap> + conv_valid_count<families::Sm90ConvIm2colPingPong> +
                         conv_valid_count<families::Sm90ConvGemm1x1PingPong> + conv_valid_count<families::Sm90ConvIm2colSwap>;
  CHECK(conv_valid_count<families::Sm80ConvOptimized> == conv_family_size<families::Sm80ConvOptimized>);
  CHECK(conv_valid_count<families::Sm80ConvAnalytic> == conv_family_size<families::Sm80ConvAnalytic>);
  CHECK(conv_valid_count<families::Sm80ConvFewChannels> == conv_family_size<families::Sm80ConvFewChannels>);
  CHECK(conv_valid_count<families::Sm80ConvFewChannels3> == conv_family_size<families::Sm80ConvFewChannels3>);
  // Hopper: block shapes with their own stage counts (2 for gemm1x1, 5 for tma_im2col) x f16/bf16
  CHECK(conv_family_size<families::Sm90ConvGemm1x1> == 6);  // 256x128, 128x256, 128x128
  CHECK(conv_valid_count<families::Sm90ConvGemm1x1> == 6);
  CHECK(conv_valid_count<families::Sm90ConvGemm1x1PingPong> == 4);  // pp 64x256, 128x128; f16, bf16
  CHECK(conv_family_size<families::Sm90ConvIm2col> == 10);
  CHECK(conv_valid_count<families::Sm90ConvIm2col> == 10);
  // ping-pong consumers: f16 x 128x64 s7, 128x128 s5, 256x64 s5
  CHECK(conv_valid_count<families::Sm90ConvIm2colPingPong> == conv_family_size<families::Sm90ConvIm2colPingPong>);
  CHECK(conv_valid_count<families::Sm90ConvIm2colPingPong> == 3);
  for (const ConvConfig& c : valid_conv_configs<families::Sm90ConvIm2colPingPong>()) {
    CHECK(c.gemm.schedule == WgSchedule::pingpong);
    CHECK(c.gemm.consumer_warpgroups() == 2);
    CHECK(conv_cluster_k_limit(c) == 1);  // cluster split-K splits one tile over cooperative consumers
    CHECK(conv_instance_name(c).view().find("_tma_im2col_pp_") != std::string_view::npos);
  }
  // first-layer stem: f16/bf16 x C = 4/3, one block shape
  CHECK(conv_valid_count<families::Sm80ConvStem> == 4);
  // 64x64 / 64x32 warp tiles: f16/bf16 x 3 block shapes
  CHECK(conv_valid_count<families::Sm80ConvOptimizedWide> == conv_family_size<families::Sm80ConvOptimizedWide>);
  CHECK(conv_valid_count<families::Sm80ConvOptimizedWide> == 6);
  // 1x1 on the GEMM's swap-AB instances: f16/bf16 x 64x112 s9, 128x96 s7 (swapped orientation)
  CHECK(conv_family_size<families::Sm90ConvGemm1x1Swap> == 4);
  CHECK(conv_valid_count<families::Sm90ConvGemm1x1Swap> == 4);
  for (const ConvConfig& c : valid_conv_configs<families::Sm90ConvGemm1x1Swap>()) {
    CHECK(c.gemm.schedule == WgSchedule::swap_ab);
    CHECK_FALSE(conv_supports_split_k(c));
    CHECK(conv_instance_name(c).view().find("_tn_swap_") != std::string_view::npos);
  }
  // TMA im2col on the swap-AB schedule: f16 x 64x112 s9 (swapped orientation: 64 filters x 112 pixels)
  CHECK(conv_valid_count<families::Sm90ConvIm2colSwap> == conv_family_size<families::Sm90ConvIm2colSwap>);
  CHECK(conv_valid_count<families::Sm90ConvIm2colSwap> == 1);
  for (const ConvConfig& c : valid_conv_configs<families::Sm90ConvIm2colSwap>()) {
    CHECK(c.gemm.schedule == WgSchedule::swap_ab);
    CHECK_FALSE(conv_supports_split_k(c));
    CHECK(conv_multicast_limit(c) == 1);
    CHECK(conv_cluster_k_limit(c) == 1);
    CHECK(conv_instance_name(c).view() == "ktune_conv2d_fprop_sm90_wgmma_f16_tma_im2col_swap_64x112x64_w64x112_s9_a8");
  }
  CHECK(expected == 12 + 12 + 4 + 6 + 2 + 2 + 1 + 1 + 2 + 4 + 4);  // s18: + gemm1x1 128x256 (f16, bf16), pp 128x128; im2col pp 256x64; bf16 1x1 pp and swap
  CHECK(conv_table().size() == expected);
  std::set<std::string> names;
  for (const auto& e : conv_table().entries()) {
    CAPTURE(e.name);
    names.insert(std::string(e.name));
    const bool hopper = is_sm90_iterator(e.config.iterator);
    if (e.config.iterator == ConvIterator::gemm1x1)
      CHECK(e.name.substr(0, 29) == "conv_gemm1x1+ktune_gemm_sm90_");
    else
      CHECK(e.name.substr(0, 23) == (hopper ? "ktune_conv2d_fprop_sm90" : "ktune_conv2d_fprop_sm80"));
    CHECK(e.name == conv_instance_name(e.config).view());
    CHECK(validate(e.config, hopper ? sm90 : sm80).ok());
    CHECK(e.resources == conv_resources(e.config));
    CHECK((e.launch != nullptr));
    CHECK((e.attributes != nullptr));
    CHECK(e.resources.smem_bytes <= (hopper ? sm90 : sm80).smem_optin_bytes);
  }
  CHECK(names.size() == conv_table().size());
  for (const char* n : {"ktune_conv2d_fprop_sm80_f16_optimized_128x64x32_w64x32_s4_a8",
                        "ktune_conv2d_fprop_sm80_bf16_optimized_128x256x32_w64x64_s4_a8",
                        "ktune_conv2d_fprop_sm80_bf16_optimized_64x64x64_w32x32_s4_a8",
                        "ktune_conv2d_fprop_sm80_f16_few_channels_c4_128x64x32_w32x32_s4_a4",
                        "ktune_conv2d_fprop_sm80_bf16_few_channels_c3_256x64x32_w64x32_s3_a1",
                        "ktune_conv2d_fprop_sm80_f16_analytic_128x64x32_w32x32_s4_a1"}) {
    CAPTURE(n);
    CHECK(conv_table().find(n) != nullptr);
  }
}

TEST_CASE("conv can_implement: reasons by iterator, type and alignment") {
  const ConvKernelEntry* opt = conv_table().find("ktune_conv2d_fprop_sm80_f16_optimized_128x64x32_w64x32_s4_a8");
  const ConvKernelEntry* fc4 = conv_table().find("ktune_conv2d_fprop_sm80_f16_few_channels_c4_128x64x32_w32x32_s4_a4");
  const ConvKernelEntry* an2 = conv_table().find("ktune_conv2d_fprop_sm80_f16_analytic_128x64x32_w32x32_s4_a2");
  REQUIRE(opt != nullptr);
  REQUIRE(fc4 != nullptr);
  REQUIRE(an2 != nullptr);
  const DeviceInfo dev = fake_h200();
  Conv2dDesc d = layer(2, 28, 12, 32, 3, 1);
  Status s = can_implement(*opt, d, alignment_of(d, ops()), &dev);
  CHECK(s.code() == StatusCode::misaligned);
  CHECK(s.message().find("C % 8 == 0, C = 12") != std::string::npos);
  CHECK(can_implement(*an2, d, alignment_of(d, ops()), &dev).ok());
  s = can_implement(*fc4, d, alignment_of(d, ops()), &dev);
  CHECK(s.code() == StatusCode::unsupported);
  CHECK(s.message().find("specialized for C = 4, problem has C = 12") != std::string::npos);
  d = layer(2, 28, 64, 32, 3, 1, DType::bf16);
  s = can_implement(*opt, d, alignment_of(d, ops()), &dev);
  CHECK(s.code() == StatusCode::unsupported);
  CHECK(s.message().find("problem needs mma_bf16") != std::string::npos);
  d = layer(2, 28, 64, 32, 3, 1);
  s = can_implement(*opt, d, alignment_of(d, ops(4)), &dev);  // x 4 bytes off: 2-element vectors
  CHECK(s.code() == StatusCode::misaligned);
  CHECK(s.message().find("x allows 2") != std::string::npos);
  CHECK(can_implement(*an2, d, alignment_of(d, ops(4)), &dev).ok());
  DeviceInfo old = dev;
  old.cc = 75;
  s = can_implement(*opt, d, alignment_of(d, ops()), &old);
  CHECK(s.code() == StatusCode::no_instance);
  CHECK(s.message().find("needs sm80") != std::string::npos);
}

TEST_CASE("conv can_implement: the Hopper routes and their reasons") {
  const ConvKernelEntry* g = conv_table().find("conv_gemm1x1+ktune_gemm_sm90_wgmma_f16_tn_128x128x64_w64x128_s5_a8");
  const ConvKernelEntry* t = conv_table().find("ktune_conv2d_fprop_sm90_wgmma_f16_tma_im2col_128x128x64_w64x128_s6_a8");
  REQUIRE(g != nullptr);
  REQUIRE(t != nullptr);
  const DeviceInfo dev = fake_h200();
  auto why = [&](const ConvKernelEntry* e, const Conv2dDesc& d, const Conv2dOperands& o = ops(), const DeviceInfo* dv = nullptr) {
    return can_implement(*e, d, alignment_of(d, o), dv ? dv : &dev);
  };
  // 1x1 stride 1 unpadded, C % 8 == 0, any K: both
  for (const Conv2dDesc& d : {layer(32, 56, 64, 256, 1, 1), layer(3, 7, 8, 13, 1, 1), layer(1, 5, 24, 7, 1, 1)}) {
    CHECK(why(g, d).ok());
    CHECK(why(t, d).ok());
  }
  Conv2dDesc d = layer(2, 28, 64, 32, 3, 1);
  Status s = why(g, d);
  CHECK(s.code() == StatusCode::unsupported);
  CHECK(s.message().find("1x1 filters only, problem has 3x3") != std::string::npos);
  CHECK(why(t, d).ok());
  d = layer(2, 28, 64, 32, 1, 2);
  CHECK(why(g, d).message().find("needs stride 1") != std::string::npos);
  CHECK(why(t, d).ok());
  d = layer(2, 28, 64, 32, 1, 1);
  d.pad_h = 1;
  CHECK(why(g, d).message().find("needs no padding") != std::string::npos);
  CHECK(why(t, d).ok());
  d = layer(2, 28, 12, 32, 1, 1);  // C = 12: rows of 24 bytes, not a TMA stride
  for (const ConvKernelEntry* e : {g, t}) {
    s = why(e, d);
    CHECK(s.code() == StatusCode::misaligned);
    CHECK(s.message().find("C % 8 == 0, C = 12") != std::string::npos);
  }
  d = layer(2, 28, 64, 32, 1, 1);
  s = why(g, d, ops(8));  // x 8 bytes past 16-byte alignment
  CHECK(s.code() == StatusCode::misaligned);
  CHECK(s.message().find("x allows 4") != std::string::npos);
  CHECK(why(t, d, ops(8)).code() == StatusCode::misaligned);
  d = layer(2, 28, 64, 32, 3, 1, DType::bf16);
  CHECK(why(t, d).message().find("problem needs mma_bf16") != std::string::npos);
  // TMA im2col limits: stride <= 8, 8-bit box offsets
  d = layer(2, 40, 64, 32, 1, 9);
  CHECK(why(t, d).message().find("strides up to 8") != std::string::npos);
  d = layer(1, 300, 8, 8, 3, 1);
  d.dil_h = d.dil_w = 100;  // the dilated 3x3 spans 201 pixels: box corner 1 - 200 < -128
  d.pad_h = d.pad_w = 1;
  CHECK(why(t, d).message().find("bounding-box offsets") != std::string::npos);
  // wgmma is sm_90a: compute capability 9.0 exactly
  DeviceInfo other = dev;
  other.cc = 100;
  d = layer(2, 28, 64, 32, 1, 1);
  for (const ConvKernelEntry* e : {g, t}) {
    s = why(e, d, ops(), &other);
    CHECK(s.code() == StatusCode::no_instance);
    CHECK(s.message().find("compute capability 9.0 exactly") != std::string::npos);
  }
  other.cc = 80;
  CHECK(why(t, d, ops(), &other).code() == StatusCode::no_instance);
}

TEST_CASE("conv select: on an H200 the Hopper routes win where they apply") {
  // 1x1 stride 1: the GEMM; other C % 8 == 0 problems: TMA im2col; the rest: mma.sync iterators
  CHECK(chosen(layer(32, 56, 256, 64, 1, 1)).config.iterator == ConvIterator::gemm1x1);
  CHECK(chosen(layer(32, 56, 64, 64, 3, 1)).config.iterator == ConvIterator::tma_im2col);
  CHECK(chosen(layer(32, 56, 256, 512, 1, 2)).config.iterator == ConvIterator::tma_im2col);
  CHECK(chosen(layer(32, 224, 4, 64, 7, 2)).config.iterator == ConvIterator::stem);
  CHECK(chosen(layer(2, 28, 12, 32, 3, 1)).config.iterator == ConvIterator::analytic);
  CHECK(chosen(layer(2, 28, 64, 32, 3, 1), ops(8)).config.iterator == ConvIterator::analytic);  // x not 16-byte aligned
  CHECK(chosen(layer(32, 28, 128, 128, 3, 1, DType::bf16)).config.gemm.math == MathOp::wgmma_bf16);
  CHECK(chosen(layer(32, 28, 128, 128, 1, 1, DType::bf16)).config.gemm.math == MathOp::wgmma_bf16);
}

TEST_CASE("conv select: the iterator follows C and the pointers' alignment") {
  CHECK(chosen_sm80(layer(32, 56, 64, 64, 3, 1)).config.iterator == ConvIterator::optimized);
  CHECK(chosen_sm80(layer(32, 56, 256, 64, 1, 1)).config.iterator == ConvIterator::optimized);
  CHECK(chosen(layer(32, 224, 4, 64, 7, 2)).config.iterator == ConvIterator::stem);
  CHECK(chosen(layer(32, 224, 3, 64, 7, 2)).config.iterator == ConvIterator::stem);
  CHECK(chosen(layer(32, 224, 4, 64, 7, 2)).config.channels == 4);
  CHECK(chosen(layer(32, 224, 3, 64, 7, 2)).config.channels == 3);
  CHECK(chosen(layer(2, 28, 12, 32, 3, 1)).config.iterator == ConvIterator::analytic);
  CHECK(chosen(layer(2, 28, 12, 32, 3, 1)).config.gemm.align == 4);
  CHECK(chosen(layer(2, 28, 6, 32, 3, 1)).config.gemm.align == 2);
  CHECK(chosen(layer(2, 28, 5, 32, 3, 1)).config.gemm.align == 1);
  // f16 data whose x pointer is only 2-byte aligned: the scalar analytic iterator
  const ConvKernelEntry& e = chosen(layer(2, 28, 64, 32, 3, 1), ops(2));
  CHECK(e.config.iterator == ConvIterator::analytic);
  CHECK(e.config.gemm.align == 1);
  // bf16 problems get bf16 instances
  CHECK(chosen_sm80(layer(32, 28, 128, 128, 3, 1, DType::bf16)).config.gemm.math == MathOp::mma_bf16);
  CHECK(chosen(layer(32, 224, 3, 64, 7, 2, DType::bf16)).config.gemm.math == MathOp::mma_bf16);
}

TEST_CASE("conv select: by name, unknown names, and deterministic choices") {
  const DeviceInfo dev = fake_h200();
  const ConvKernelEntry* e = nullptr;
  ConvOptions opt;
  opt.instance = "ktune_conv2d_fprop_sm80_f16_analytic_128x64x32_w32x32_s4_a1";
  CHECK(select_conv(layer(2, 28, 64, 32, 3, 1), ops(), conv_table(), dev, opt, e).ok());
  REQUIRE(e != nullptr);
  CHECK(e->name == opt.instance);
  opt.instance = "ktune_conv2d_fprop_sm80_f16_optimized_128x64x32_w64x32_s4_a8";
  Status s = select_conv(layer(2, 28, 12, 32, 3, 1), ops(), conv_table(), dev, opt, e);
  CHECK(s.code() == StatusCode::misaligned);
  opt.instance = "no_such_conv";
  s = select_conv(layer(2, 28, 64, 32, 3, 1), ops(), conv_table(), dev, opt, e);
  CHECK(s.code() == StatusCode::no_instance);
  CHECK(s.message().find("no conv instance named no_such_conv") != std::string::npos);
  ConvTable empty;
  s = select_conv(layer(2, 28, 64, 32, 3, 1), ops(), empty, dev, {}, e);
  CHECK(s.code() == StatusCode::no_instance);
  CHECK(s.message().find("conv dispatch table is empty") != std::string::npos);
  // invalid input wins over everything else
  Conv2dDesc bad = layer(2, 28, 64, 32, 3, 1);
  bad.groups = 2;
  CHECK(select_conv(bad, ops(), empty, dev, {}, e).code() == StatusCode::unsupported);
  // the 15 ResNet-50 layers of shared/ANCHORS.md (N = 32): one choice, the same every time
  const Conv2dDesc layers[] = {layer(32, 224, 4, 64, 7, 2),  layer(32, 56, 64, 64, 1, 1),   layer(32, 56, 64, 64, 3, 1),
                               layer(32, 56, 64, 256, 1, 1), layer(32, 56, 256, 64, 1, 1),  layer(32, 56, 256, 128, 1, 1),
                               layer(32, 28, 128, 128, 3, 1), layer(32, 28, 128, 512, 1, 1), layer(32, 28, 512, 128, 1, 1),
                               layer(32, 14, 256, 256, 3, 1), layer(32, 14, 1024, 256, 1, 1), layer(32, 14, 256, 1024, 1, 1),
                               layer(32, 7, 512, 512, 3, 1),  layer(32, 7, 2048, 512, 1, 1),  layer(32, 7, 512, 2048, 1, 1)};
  for (const Conv2dDesc& d : layers) {
    const ConvKernelEntry& a = chosen(d);
    const ConvKernelEntry& b = chosen(d);
    CAPTURE(a.name);
    CHECK(&a == &b);
    if (d.c % 8 == 0)
      CHECK(a.config.iterator == (d.r == 1 && d.stride_h == 1 ? ConvIterator::gemm1x1 : ConvIterator::tma_im2col));
    CHECK(chosen_sm80(d).name == chosen_sm80(d).name);
    if (d.c % 8 == 0) CHECK(chosen_sm80(d).config.iterator == ConvIterator::optimized);
  }
}

TEST_CASE("conv select: the measured tile policy (deep reductions on few tiles take BK = 64, else the widest tile K fills)") {
  const DeviceInfo dev = fake_h200();
  auto opt = [](TileShape t, WarpShape w) {
    return ConvConfig{GemmConfig{80, MathOp::mma_f16, Layout::row, Layout::col, t, w, 4, 8}, ConvIterator::optimized, 0};
  };
  const ConvConfig t128x64 = opt({128, 64, 32}, {64, 32}), t128x128 = opt({128, 128, 32}, {64, 64}),
                   t128x256 = opt({128, 256, 32}, {64, 64}), t64 = opt({64, 64, 64}, {32, 32}),
                   old128x64 = opt({128, 64, 32}, {32, 32});
  struct Want {
    Conv2dDesc d;
    const ConvConfig* tile;
  };
  // The best unsplit mma.sync instance of H200 s8-batchA on the 14 C % 8 ResNet-50 layers (N = 32); 56^2
  // 64->256 1x1 was a tie (128x128 49.6 us, 128x64 w64x32 49.7).
  const Want wants[] = {{layer(32, 56, 64, 64, 1, 1), &t128x64},    {layer(32, 56, 64, 64, 3, 1), &t128x64},
                        {layer(32, 56, 64, 256, 1, 1), &t128x128},  {layer(32, 56, 256, 64, 1, 1), &t128x64},
                        {layer(32, 56, 256, 128, 1, 1), &t128x128}, {layer(32, 28, 128, 128, 3, 1), &t128x64},
                        {layer(32, 28, 128, 512, 1, 1), &t128x128}, {layer(32, 28, 512, 128, 1, 1), &t128x64},
                        {layer(32, 14, 256, 256, 3, 1), &t64},      {layer(32, 14, 1024, 256, 1, 1), &t64},
                        {layer(32, 14, 256, 1024, 1, 1), &t128x128}, {layer(32, 7, 512, 512, 3, 1), &t64},
                        {layer(32, 7, 2048, 512, 1, 1), &t64},      {layer(32, 7, 512, 2048, 1, 1), &t128x256}};
  for (DType t : {DType::f16, DType::bf16})
    for (const Want& w : wants) {
      Conv2dDesc d = w.d;
      d.type = t;  // as layer(..., t): y stays f16
      CAPTURE(d.h);
      CAPTURE(d.c);
      CAPTURE(d.k);
      CAPTURE(d.r);
      CHECK(conv_tile_mismatch(*w.tile, d, dev) == 0);
      for (const ConvConfig* other : {&t128x64, &t128x128, &t128x256, &t64})
        if (other != w.tile) CHECK(conv_tile_mismatch(*other, d, dev) > 0);
      const ConvConfig& c = chosen_sm80(d).config;
      CHECK(c.gemm.tile == w.tile->gemm.tile);
      CHECK(c.gemm.warp == w.tile->gemm.warp);
      CHECK(c.gemm.math == (t == DType::bf16 ? MathOp::mma_bf16 : MathOp::mma_f16));
    }
  // a build without the wanted shape falls back to the nearest: 128x64 w32x32 is one warp shape off 128x64 w64x32
  CHECK(conv_tile_mismatch(old128x64, layer(32, 56, 64, 64, 1, 1), dev) == 1);
  CHECK(conv_tile_mismatch(t64, layer(32, 56, 64, 64, 1, 1), dev) == 3);
  // the same deep layer at batch 256 fills the GPU: back to 128-row tiles
  CHECK(chosen_sm80(layer(256, 14, 1024, 256, 1, 1)).config.gemm.tile.m == 128);
  // the C = 3 stem: the dedicated stem family (input rows staged once, no im2col gather)
  CHECK(chosen_sm80(layer(32, 224, 3, 64, 7, 2)).name == "ktune_conv2d_fprop_sm80_f16_stem_c3_256x64x32_w64x64_s2_a1");
}

TEST_CASE("conv select: Hopper tiles by sm90_conv_cost (small maps get small tiles, wide layers wide ones)") {
  const DeviceInfo dev = fake_h200();
  const Conv2dDesc layers[] = {layer(32, 56, 64, 64, 1, 1),   layer(32, 56, 64, 64, 3, 1),   layer(32, 56, 64, 256, 1, 1),
                               layer(32, 56, 256, 64, 1, 1),  layer(32, 56, 256, 128, 1, 1), layer(32, 28, 128, 128, 3, 1),
                               layer(32, 28, 128, 512, 1, 1), layer(32, 28, 512, 128, 1, 1), layer(32, 14, 256, 256, 3, 1),
                               layer(32, 14, 1024, 256, 1, 1), layer(32, 14, 256, 1024, 1, 1), layer(32, 7, 512, 512, 3, 1),
                               layer(32, 7, 2048, 512, 1, 1), layer(32, 7, 512, 2048, 1, 1)};
  for (const Conv2dDesc& d : layers) {
    const ConvKernelEntry& e = chosen(d);
    CAPTURE(e.name);
    CHECK(is_sm90_iterator(e.config.iterator));
    // the pick is the cheapest of its route by the model
    for (const auto& o : conv_table().entries())
      if (o.config.iterator == e.config.iterator && o.config.gemm.math == e.config.gemm.math)
        CHECK(sm90_conv_cost(e, d, dev) <= sm90_conv_cost(o, d, dev));
  }
  // 7x7 maps (N·P·Q = 1568): no 128x128 or larger tile (they would leave most multiprocessors idle)
  for (const Conv2dDesc& d : {layer(32, 7, 512, 512, 3, 1), layer(32, 7, 2048, 512, 1, 1)}) {
    const GemmConfig& g = chosen(d).config.gemm;
    CHECK(g.tile.m * g.tile.n <= 128 * 64);
  }
  // 56x56 maps with many output channels: the large tiles (fewer rounds, the GEMM's fastest shape)
  CHECK(chosen(layer(32, 56, 64, 256, 1, 1)).config.gemm.tile.m == 256);
  // the model's efficiencies: 128x128 warpgroup tiles best, one-consumer 64x64 worst
  CHECK(sm90_conv_efficiency(GemmConfig{90, MathOp::wgmma_f16, Layout::row, Layout::col, {256, 128, 64}, {128, 128}, 4, 8}) == 1.0);
  CHECK(sm90_conv_efficiency(GemmConfig{90, MathOp::wgmma_f16, Layout::row, Layout::col, {64, 64, 64}, {64, 64}, 6, 8}) <
        sm90_conv_efficiency(GemmConfig{90, MathOp::wgmma_f16, Layout::row, Layout::col, {128, 64, 64}, {64, 64}, 6, 8}));
}

TEST_CASE("sm90_conv_cost: ping-pong tiles run in pairs, an odd last tile alone on one warpgroup") {
  const DeviceInfo dev = fake_h200();
  auto find = [](std::string_view name) -> const ConvKernelEntry& {
    const ConvKernelEntry* e = conv_table().find(name);
    REQUIRE_MESSAGE(e != nullptr, name);
    return *e;
  };
  const ConvKernelEntry& pp1x1 = find("conv_gemm1x1+ktune_gemm_sm90_wgmma_f16_tn_pp_128x128x64_w128x128_s5_a8");
  const ConvKernelEntry& swap1x1 = find("conv_gemm1x1+ktune_gemm_sm90_wgmma_f16_tn_swap_128x96x64_w64x96_s7_a8");
  const ConvKernelEntry& pp256 = find("ktune_conv2d_fprop_sm90_wgmma_f16_tma_im2col_pp_256x64x64_w256x64_s5_a8");
  const ConvKernelEntry& coop256 = find("ktune_conv2d_fprop_sm90_wgmma_f16_tma_im2col_256x64x64_w128x64_s5_a8");
  // 14² 1024->256 at N = 32: 98 pp 128x128 tiles, one per CTA, each on one warpgroup (H200 s18: 9.7 µs against
  // 7.3 on the swap 128x96, which has 132 tiles for 132 CTAs).
  const Conv2dDesc l10 = layer(32, 14, 1024, 256, 1, 1);
  CHECK(sm90_conv_cost(swap1x1, l10, dev) < sm90_conv_cost(pp1x1, l10, dev));
  // 56² 64->64 3x3: 392 (N = 32) and 3136 (N = 256) tiles of 256x64; the ping-pong tile ahead of the cooperative
  // one at both (H200 s18: 21.1 vs 22.7 µs, 132.7 vs 156.4 µs).
  for (std::int64_t n : {32, 256}) {
    const Conv2dDesc d = layer(n, 56, 64, 64, 3, 1);
    CAPTURE(n);
    CHECK(sm90_conv_cost(pp256, d, dev) < sm90_conv_cost(coop256, d, dev));
  }
  // The model itself: 1x1, C = 64 (one k-tile), K = 128 (one tile column), 132 or 264 rows of 128 pixels: one
  // tile per CTA is a lone warpgroup's (1 / sm90_one_consumer_rate of the tile's work), two are a pair (twice the
  // work); one fixed cost (a 128x128 k-tile) either way.
  auto rows = [](std::int64_t h) {
    Conv2dDesc d = layer(1, 1, 64, 128, 1, 1);
    d.h = h;
    d.w = 128;
    return d;
  };
  const double tile = 128.0 * 128.0 * 1 / sm90_conv_efficiency(pp1x1.config.gemm), fixed = 128.0 * 128.0;
  CHECK(sm90_conv_cost(pp1x1, rows(132), dev) == doctest::Approx(tile / sm90_one_consumer_rate + fixed));
  CHECK(sm90_conv_cost(pp1x1, rows(264), dev) == doctest::Approx(2 * tile + fixed));
  CHECK(sm90_conv_cost(pp1x1, rows(396), dev) == doctest::Approx(2 * tile + tile / sm90_one_consumer_rate + 2 * fixed));
}

TEST_CASE("conv select: without the Hopper routes (a build with no sm_90a code on an H200) the mma.sync choice") {
  const DeviceInfo dev = fake_h200();
  for (const Conv2dDesc& d : {layer(32, 56, 256, 64, 1, 1), layer(32, 28, 128, 128, 3, 1), layer(32, 224, 4, 64, 7, 2)}) {
    const ConvKernelEntry* e = nullptr;
    REQUIRE(select_conv(d, ops(), conv_table(), dev, {}, e, false).ok());
    REQUIRE(e != nullptr);
    CHECK(!is_sm90_iterator(e->config.iterator));
    CHECK(e->name == chosen_sm80(d).name);
  }
}

TEST_CASE("conv gemm1x1: the GEMM-table tiles run the GEMM entry of the same configuration; no 1x1 kernel is compiled twice") {
  int routed = 0, own = 0;
  for (const ConvKernelEntry& e : conv_table().entries()) {
    if (e.config.iterator != ConvIterator::gemm1x1) {
      const bool no_gemm_entry = e.gemm_entry == nullptr;
      CHECK(no_gemm_entry);
      continue;
    }
    CAPTURE(e.name);
    const GemmKernelEntry* same = nullptr;  // a GEMM table entry with this configuration
    for (const GemmKernelEntry& g : gemm_table().entries())
      if (g.config == e.config.gemm && g.implements == nullptr) same = &g;
    if (e.gemm_entry != nullptr) {
      ++routed;
      const GemmKernelEntry* g = e.gemm_entry();
      REQUIRE(g != nullptr);  // this program registers the GEMM instances (src/instances/sm90_*.cu)
      CHECK(g == same);
      CHECK(g->config == e.config.gemm);
      CHECK(e.name.find(g->name) != std::string_view::npos);  // "conv_gemm1x1+<gemm instance>"
      const bool launches = g->launch != nullptr;
      CHECK(launches);
    } else {
      ++own;
      CHECK(same == nullptr);  // a tile the GEMM table has would be a second copy of its kernel
    }
  }
  CHECK(routed == 14);  // 256x128, 128x256, 128x128, pp 64x256 / 128x128, swap 64x112 / 128x96; f16 and bf16
  CHECK(own == 0);
}
