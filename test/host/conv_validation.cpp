// Host tests of conv2d's argument checks (conv/problem.hpp), output sizes, alignment facts and the
// one-call API on a machine without a GPU. Pointers are fake, far-apart addresses: nothing here
// dereferences them and nothing may be launched.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "ktune/conv.hpp"
#include "ktune/device.hpp"

using namespace ktune;

namespace {

const void* caddr(std::uintptr_t a) { return reinterpret_cast<const void*>(a); }
void* cmaddr(std::uintptr_t a) { return reinterpret_cast<void*>(a); }

constexpr std::uintptr_t kX = 0x100000000, kW = 0x200000000, kY = 0x300000000, kBias = 0x400000000,
                         kRes = 0x500000000;

// A ResNet-50 3x3 layer at batch 2 with a fused bias + ReLU.
Conv2dDesc conv_desc() {
  Conv2dDesc d;
  d.n = 2;
  d.h = 56;
  d.w = 56;
  d.c = 64;
  d.k = 64;
  d.r = 3;
  d.s = 3;
  d.pad_h = 1;
  d.pad_w = 1;
  d.epilogue = bias_activation(Activation::relu);
  return d;
}

Conv2dOperands conv_ops() {
  Conv2dOperands o;
  o.x = caddr(kX);
  o.w = caddr(kW);
  o.y = cmaddr(kY);
  o.bias = caddr(kBias);
  o.residual = caddr(kRes);
  return o;
}

void check_status(const Status& s, StatusCode code, const std::string& fragment) {
  CAPTURE(s.to_string());
  CHECK(s.code() == code);
  CHECK(s.message().find(fragment) != std::string::npos);
}

}  // namespace

TEST_CASE("conv_output_size: padding, stride, dilation, and filters that do not fit") {
  CHECK(conv_output_size(56, 3, 1, 1, 1) == 56);    // same padding
  CHECK(conv_output_size(56, 1, 0, 1, 1) == 56);    // 1x1
  CHECK(conv_output_size(56, 1, 0, 2, 1) == 28);    // 1x1 stride 2 (downsample)
  CHECK(conv_output_size(224, 7, 3, 2, 1) == 112);  // ResNet stem
  CHECK(conv_output_size(56, 3, 1, 2, 1) == 28);
  CHECK(conv_output_size(7, 3, 0, 1, 1) == 5);      // valid padding
  CHECK(conv_output_size(12, 3, 2, 1, 2) == 12);    // dilation 2 keeps the size with padding 2
  CHECK(conv_output_size(10, 3, 0, 1, 3) == 4);     // dilated extent 7
  CHECK(conv_output_size(10, 3, 0, 3, 1) == 3);     // floor((10 - 3) / 3) + 1
  CHECK(conv_output_size(2, 5, 2, 1, 1) == 2);      // H < R with padding
  CHECK(conv_output_size(3, 3, 0, 1, 1) == 1);      // exact fit
  CHECK(conv_output_size(2, 3, 0, 1, 1) == 0);      // filter larger than the input
  CHECK(conv_output_size(5, 3, 0, 1, 3) == 0);      // dilated filter larger than the input
  CHECK(conv_output_size(5, 3, 1, 0, 1) == 0);      // stride 0
  CHECK(conv_output_size(5, 3, 1, 1, 0) == 0);      // dilation 0
  CHECK(conv_output_size(5, 3, -1, 1, 1) == 0);     // negative padding

  Conv2dDesc d = conv_desc();
  d.stride_h = 2;
  d.w = 30;
  d.dil_w = 2;
  d.pad_w = 2;
  const ConvShape s = conv_shape(d);
  CHECK(s.p == 28);
  CHECK(s.q == 30);
  CHECK(s.m == 2 * 28 * 30);
  CHECK(s.kgemm == 3 * 3 * 64);
  CHECK(s.x_elems == 2 * 56 * 30 * 64);
  CHECK(s.w_elems == 64 * 9 * 64);
  CHECK(s.y_elems == 2 * 28 * 30 * 64);
}

TEST_CASE("conv validate: a well-formed problem passes, for both operand types and every output type") {
  for (DType t : {DType::f16, DType::bf16})
    for (DType o : {DType::f16, DType::bf16, DType::f32}) {
      Conv2dDesc d = conv_desc();
      d.type = t;
      d.out_type = o;
      CHECK(validate(d, conv_ops()).ok());
    }
}

TEST_CASE("conv validate: groups != 1 is unsupported, and says so") {
  Conv2dDesc d = conv_desc();
  d.groups = 2;
  check_status(validate(d, conv_ops()), StatusCode::unsupported, "grouped convolution is not supported (groups=2)");
  d.groups = 0;
  check_status(validate(d, conv_ops()), StatusCode::unsupported, "groups = 1 only");
}

TEST_CASE("conv validate: non-positive sizes") {
  for (int which = 0; which < 7; ++which) {
    Conv2dDesc d = conv_desc();
    std::int64_t* f[] = {&d.n, &d.h, &d.w, &d.c, &d.k, &d.r, &d.s};
    *f[which] = which % 2 == 0 ? 0 : -3;
    CAPTURE(which);
    check_status(validate(d, conv_ops()), StatusCode::invalid_argument, "conv2d sizes must be positive");
  }
}

TEST_CASE("conv validate: padding, stride and dilation") {
  Conv2dDesc d = conv_desc();
  d.pad_w = -1;
  check_status(validate(d, conv_ops()), StatusCode::invalid_argument, "padding must not be negative");
  d = conv_desc();
  d.stride_h = 0;
  check_status(validate(d, conv_ops()), StatusCode::invalid_argument, "stride must be positive, got stride_h=0");
  d = conv_desc();
  d.stride_w = -2;
  check_status(validate(d, conv_ops()), StatusCode::invalid_argument, "stride must be positive");
  d = conv_desc();
  d.dil_h = 0;
  check_status(validate(d, conv_ops()), StatusCode::invalid_argument, "dilation must be positive, got dil_h=0");
  d = conv_desc();
  d.dil_w = 0;
  check_status(validate(d, conv_ops()), StatusCode::invalid_argument, "dilation must be positive");
}

TEST_CASE("conv validate: an output size of zero is an invalid argument") {
  Conv2dDesc d = conv_desc();
  d.h = 2;
  d.pad_h = 0;  // 3-row filter, 2 input rows, no padding
  check_status(validate(d, conv_ops()), StatusCode::invalid_argument, "output size is not positive: P=0");
  d = conv_desc();
  d.w = 5;
  d.pad_w = 0;
  d.dil_w = 3;  // dilated extent 7 > 5
  check_status(validate(d, conv_ops()), StatusCode::invalid_argument, "Q=0");
  d = conv_desc();
  d.h = 2;
  d.w = 3;
  d.r = 5;
  d.s = 5;
  d.pad_h = 2;
  d.pad_w = 2;  // H and W smaller than the filter, padding makes it fit
  CHECK(validate(d, conv_ops()).ok());
}

TEST_CASE("conv validate: f32 operands are unsupported; every output type is fine") {
  Conv2dDesc d = conv_desc();
  d.type = DType::f32;
  check_status(validate(d, conv_ops()), StatusCode::unsupported, "f16 or bf16");
}

TEST_CASE("conv validate: null pointers") {
  Conv2dOperands o = conv_ops();
  o.x = nullptr;
  check_status(validate(conv_desc(), o), StatusCode::invalid_argument, "x (activations) is null");
  o = conv_ops();
  o.w = nullptr;
  check_status(validate(conv_desc(), o), StatusCode::invalid_argument, "w (filters) is null");
  o = conv_ops();
  o.y = nullptr;
  check_status(validate(conv_desc(), o), StatusCode::invalid_argument, "y (output) is null");
  o = conv_ops();
  o.bias = nullptr;
  check_status(validate(conv_desc(), o), StatusCode::invalid_argument, "bias pointer is null");
  Conv2dDesc d = conv_desc();
  d.epilogue = EpilogueSpec{};
  CHECK(validate(d, o).ok());  // no bias in the epilogue: not read
  d.epilogue.residual = true;
  o.residual = nullptr;
  check_status(validate(d, o), StatusCode::invalid_argument, "residual pointer is null");
  d.epilogue = linear_combination(1.0f, 0.5f);  // beta reads y itself: no other pointer needed
  CHECK(validate(d, o).ok());
}

TEST_CASE("conv validate: pointers not aligned to their element size") {
  Conv2dOperands o = conv_ops();
  o.x = caddr(kX + 1);
  check_status(validate(conv_desc(), o), StatusCode::misaligned, "x or w is not aligned");
  o = conv_ops();
  o.w = caddr(kW + 3);
  check_status(validate(conv_desc(), o), StatusCode::misaligned, "x or w is not aligned");
  o = conv_ops();
  o.y = cmaddr(kY + 1);
  check_status(validate(conv_desc(), o), StatusCode::misaligned, "y, bias or residual");
  o = conv_ops();
  o.bias = caddr(kBias + 1);
  check_status(validate(conv_desc(), o), StatusCode::misaligned, "y, bias or residual");
  Conv2dDesc d = conv_desc();
  d.out_type = DType::f32;
  o = conv_ops();
  o.y = cmaddr(kY + 2);  // 2-byte aligned is not enough for f32
  check_status(validate(d, o), StatusCode::misaligned, "(4 bytes)");
  o = conv_ops();
  o.x = caddr(kX + 2);  // element-aligned but not vector-aligned: valid (narrower instances take it)
  CHECK(validate(conv_desc(), o).ok());
}

TEST_CASE("conv validate: overlapping output") {
  const Conv2dDesc d = conv_desc();
  const ConvShape s = conv_shape(d);
  Conv2dOperands o = conv_ops();
  o.y = cmaddr(kX + static_cast<std::uintptr_t>(s.x_elems) * 2 - 2);  // last element of x
  check_status(validate(d, o), StatusCode::invalid_argument, "y overlaps x");
  o = conv_ops();
  o.y = cmaddr(kX + static_cast<std::uintptr_t>(s.x_elems) * 2);  // right after x: fine
  CHECK(validate(d, o).ok());
  o = conv_ops();
  o.w = caddr(kY + 1024);
  check_status(validate(d, o), StatusCode::invalid_argument, "y overlaps w");
  o = conv_ops();
  o.bias = caddr(kY + static_cast<std::uintptr_t>(s.y_elems) * 2 - 64);
  check_status(validate(d, o), StatusCode::invalid_argument, "y overlaps bias");
  Conv2dDesc dr = d;
  dr.epilogue.residual = true;
  o = conv_ops();
  o.residual = caddr(kY + 128);
  check_status(validate(dr, o), StatusCode::invalid_argument, "residual partially overlaps y");
  o.residual = o.y;  // exact alias: each element is read by the thread that writes it
  CHECK(validate(dr, o).ok());
}

TEST_CASE("conv validate: empty clamp bounds and 32-bit limits") {
  Conv2dDesc d = conv_desc();
  d.epilogue.clamp = true;
  d.epilogue.clamp_lo = 1.0f;
  d.epilogue.clamp_hi = 0.0f;
  check_status(validate(d, conv_ops()), StatusCode::invalid_argument, "clamp bounds are empty");
  d = conv_desc();
  d.n = 4096;
  d.h = 512;
  d.w = 512;
  d.c = 8;  // 2^33 elements
  Conv2dOperands o;
  o.x = caddr(std::uintptr_t{1} << 44);
  o.w = caddr(std::uintptr_t{2} << 44);
  o.y = cmaddr(std::uintptr_t{3} << 44);
  o.bias = caddr(std::uintptr_t{4} << 44);
  check_status(validate(d, o), StatusCode::invalid_argument, "exceeds 2^31 elements");
  d = conv_desc();
  d.h = std::int64_t{1} << 30;
  check_status(validate(d, o), StatusCode::invalid_argument, "not below 2^30");
  Conv2dOperands top = conv_ops();
  top.y = cmaddr(UINTPTR_MAX - 63);  // aligned, but y would wrap around the address space
  check_status(validate(conv_desc(), top), StatusCode::invalid_argument, "past the end of the address space");
}

TEST_CASE("conv alignment_of: x by C, w by R*S*C, y/bias/residual by K") {
  Conv2dDesc d = conv_desc();
  Conv2dOperands o = conv_ops();
  ConvAlignment al = alignment_of(d, o);
  CHECK(al.x == 8);
  CHECK(al.w == 8);
  CHECK(al.y == 8);
  d.c = 12;  // rows of 24 bytes
  CHECK(alignment_of(d, o).x == 4);
  CHECK(alignment_of(d, o).w == 4);  // 9*12 = 108 elements
  d.c = 3;
  CHECK(alignment_of(d, o).x == 1);
  CHECK(alignment_of(d, o).w == 1);  // 27 elements
  d = conv_desc();
  d.k = 13;
  CHECK(alignment_of(d, o).y == 1);  // odd K: scalar output stores
  d.k = 64;
  o.x = caddr(kX + 4);
  CHECK(alignment_of(d, o).x == 2);
  o = conv_ops();
  d.epilogue.residual = true;
  o.residual = caddr(kRes + 8);
  CHECK(alignment_of(d, o).y == 4);
}

TEST_CASE("conv2d(): invalid input is reported before the device is looked at; no device is no_device") {
  Conv2dDesc d = conv_desc();
  d.groups = 4;
  CHECK(conv2d(d, conv_ops()).code() == StatusCode::unsupported);
  if (cuda_device_count() > 0) return;  // the GPU tests cover the device path
  const Status s = conv2d(conv_desc(), conv_ops());
  CAPTURE(s.to_string());
  CHECK(s.code() == StatusCode::no_device);
}

TEST_CASE("conv validate: enum values outside their enumerations are invalid arguments, named in the message") {
  Conv2dDesc d = conv_desc();
  d.type = static_cast<DType>(7);
  check_status(validate(d, conv_ops()), StatusCode::invalid_argument, "unknown element type (DType value 7 for x and w");
  d = conv_desc();
  d.out_type = static_cast<DType>(0xF3);
  check_status(validate(d, conv_ops()), StatusCode::invalid_argument, "243 for y, bias and residual");
  d = conv_desc();
  d.epilogue.activation = static_cast<Activation>(5);
  check_status(validate(d, conv_ops()), StatusCode::invalid_argument, "unknown activation (Activation value 5)");
  // Before the sizes: a corrupt descriptor is reported for what is corrupt.
  d.n = 0;
  check_status(validate(d, conv_ops()), StatusCode::invalid_argument, "unknown activation");
  // f32 activations remain a known but unsupported type.
  d = conv_desc();
  d.type = DType::f32;
  CHECK(validate(d, conv_ops()).code() == StatusCode::unsupported);
  // conv2d() reports it before looking for a device.
  d.type = static_cast<DType>(3);
  CHECK(conv2d(d, conv_ops()).code() == StatusCode::invalid_argument);
}

TEST_CASE("conv validate: sizes whose products overflow 64 bits are rejected, not computed") {
  // Every value below 2^30 (accepted one by one), their products far beyond 2^63: N·P·Q·K, N·H·W·C and
  // R·S·C·K each overflow int64 when multiplied naively.
  Conv2dDesc d = conv_desc();
  const std::int64_t big = (std::int64_t{1} << 30) - 1;
  d.n = d.h = d.w = d.c = d.k = big;
  d.r = d.s = 3;
  Conv2dOperands o;
  o.x = caddr(std::uintptr_t{1} << 44);
  o.w = caddr(std::uintptr_t{2} << 44);
  o.y = cmaddr(std::uintptr_t{3} << 44);
  o.bias = caddr(std::uintptr_t{4} << 44);
  check_status(validate(d, o), StatusCode::invalid_argument, "exceeds 2^31 elements");
  check_status(validate(d, o), StatusCode::invalid_argument, "2^63 or more");
  // Large filters: R·S·C overflows, with a small image and huge padding so the output exists.
  d = conv_desc();
  d.r = d.s = big;
  d.c = big;
  d.pad_h = d.pad_w = big / 2 + 1;
  check_status(validate(d, o), StatusCode::invalid_argument, "exceeds 2^31 elements");
  // Each product of two fits; the padded x alone exceeds 2^31 elements.
  d = conv_desc();
  d.n = 1;
  d.h = d.w = 1 << 16;
  d.c = 1;
  check_status(validate(d, o), StatusCode::invalid_argument, "x (padded)");
}

TEST_CASE("conv_shape and conv_output_size saturate instead of overflowing") {
  constexpr std::int64_t max = std::numeric_limits<std::int64_t>::max();
  // conv_output_size of extreme arguments: no overflow in in + 2·pad or dil·(filter − 1).
  CHECK(conv_output_size(max, 1, 0, 1, 1) == max);
  CHECK(conv_output_size(max, 3, max, 1, 1) > 0);  // padded extent saturates: large, not negative
  CHECK(conv_output_size(10, max, 0, 1, 1) == 0);  // the filter cannot fit
  CHECK(conv_output_size(10, 3, 0, 1, max) == 0);  // nor can a huge dilation
  CHECK(conv_output_size(10, 2, 0, max, 1) == 1);  // one output position, whatever the stride
  // conv_shape of a descriptor validate() would reject: clamped, never wrapped to small or negative values.
  Conv2dDesc d = conv_desc();
  d.n = d.h = d.w = d.c = d.k = std::int64_t{1} << 40;
  const ConvShape s = conv_shape(d);
  CHECK(s.x_elems == max);
  CHECK(s.m == max);
  CHECK(s.y_elems == max);
  CHECK(s.kgemm == 9 * (std::int64_t{1} << 40));
  CHECK(s.w_elems == max);
  d = conv_desc();
  d.n = -4;  // a non-positive factor gives 0, not a negative size
  CHECK(conv_shape(d).m == 0);
  CHECK(conv_shape(d).x_elems == 0);
  // Exact for valid problems (unchanged arithmetic).
  const ConvShape v = conv_shape(conv_desc());
  CHECK(v.p == 56);
  CHECK(v.m == 2 * 56 * 56);
  CHECK(v.kgemm == 9 * 64);
  CHECK(v.y_elems == 2 * 56 * 56 * 64);
  // alignment_of does not multiply R·S·C unchecked either.
  d = conv_desc();
  d.r = d.s = d.c = std::int64_t{1} << 30;
  CHECK(alignment_of(d, conv_ops()).w >= 1);
}
