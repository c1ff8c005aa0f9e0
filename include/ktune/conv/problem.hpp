// ktune/conv/problem.hpp — a 2-D convolution (forward propagation) as the caller describes it, its
// output size, its validation, and the alignment facts that decide which instances can run it.
//
//   y[n, p, q, k] = epilogue( Σ_{r,s,c} x[n, p·stride_h − pad_h + r·dil_h, q·stride_w − pad_w + s·dil_w, c]
//                                        · w[k, r, s, c],  y_prior, bias[k], residual[n, p, q, k] )
//
// Activations x are NHWC, filters w are KRSC, the output y (and the residual) are NPQK — all packed.
// It runs as an implicit GEMM: M = N·P·Q output pixels, N = K output channels, K = R·S·C, with
// A[m, (r,s,c)] gathered from x (zero outside the image) and B = the filters, a column-major
// (R·S·C)×K matrix with ldb = R·S·C. The epilogue is the GEMM's: y is D, row-major M×K (ldd = K);
// beta ≠ 0 reads y's prior contents as C (cuDNN's y = alpha·conv + beta·y).
#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "ktune/epilogue/spec.hpp"
#include "ktune/problem.hpp"
#include "ktune/status.hpp"
#include "ktune/types.hpp"

namespace ktune {

struct Conv2dDesc {
  std::int64_t n = 0, h = 0, w = 0, c = 0;  // input: batch, height, width, channels (NHWC)
  std::int64_t k = 0, r = 0, s = 0;         // filters: output channels, filter height, width (KRSC)
  std::int64_t pad_h = 0, pad_w = 0;        // zero padding on each side
  std::int64_t stride_h = 1, stride_w = 1;
  std::int64_t dil_h = 1, dil_w = 1;
  std::int64_t groups = 1;                  // only 1 is implemented
  DType type = DType::f16;                  // element type of x and w
  DType out_type = DType::f16;              // element type of y, bias and residual
  EpilogueSpec epilogue{};
};

struct Conv2dOperands {
  const void* x = nullptr;         // N×H×W×C
  const void* w = nullptr;         // K×R×S×C
  void* y = nullptr;               // N×P×Q×K; read first when epilogue.beta != 0
  const void* bias = nullptr;      // K elements, when epilogue.bias
  const void* residual = nullptr;  // N×P×Q×K, when epilogue.residual (may alias y exactly)
};

namespace detail {
// Size arithmetic that cannot overflow: a product or sum of non-negative values saturates at INT64_MAX,
// and a non-positive factor gives 0. The sizes of a problem validate() rejects are meaningless but
// never undefined behaviour; validate() compares them against the 32-bit limits.
constexpr std::int64_t size_max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t sat_mul(std::int64_t a, std::int64_t b) {
  if (a <= 0 || b <= 0) return 0;
  return a > size_max / b ? size_max : a * b;
}
constexpr std::int64_t sat_mul(std::int64_t a, std::int64_t b, std::int64_t c) { return sat_mul(sat_mul(a, b), c); }
constexpr std::int64_t sat_mul(std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t d) {
  return sat_mul(sat_mul(a, b, c), d);
}
constexpr std::int64_t sat_add(std::int64_t a, std::int64_t b) {
  if (a < 0) a = 0;
  if (b < 0) b = 0;
  return a > size_max - b ? size_max : a + b;
}
}  // namespace detail

// Output extent along one dimension: ⌊(in + 2·pad − dil·(filter−1) − 1) / stride⌋ + 1, or 0 when the
// dilated filter does not fit the padded input (or an argument is not positive). Saturating: no
// argument overflows it.
constexpr std::int64_t conv_output_size(std::int64_t in, std::int64_t filter, std::int64_t pad, std::int64_t stride,
                                        std::int64_t dil) {
  if (in <= 0 || filter <= 0 || pad < 0 || stride <= 0 || dil <= 0) return 0;
  using detail::sat_add, detail::sat_mul;
  const std::int64_t padded = sat_add(in, sat_mul(2, pad));
  const std::int64_t dilated_filter = sat_add(sat_mul(dil, filter - 1), 1);
  return dilated_filter > padded ? 0 : (padded - dilated_filter) / stride + 1;
}

// The sizes everything else is computed from (saturating, see detail::sat_mul: exact for every problem
// validate() accepts).
struct ConvShape {
  std::int64_t p = 0, q = 0;  // output height and width
  std::int64_t m = 0;         // GEMM M = N·P·Q
  std::int64_t kgemm = 0;     // GEMM K = R·S·C
  std::int64_t x_elems = 0, w_elems = 0, y_elems = 0;
};

constexpr ConvShape conv_shape(const Conv2dDesc& d) {
  using detail::sat_mul;
  ConvShape s;
  s.p = conv_output_size(d.h, d.r, d.pad_h, d.stride_h, d.dil_h);
  s.q = conv_output_size(d.w, d.s, d.pad_w, d.stride_w, d.dil_w);
  s.m = sat_mul(d.n, s.p, s.q);
  s.kgemm = sat_mul(d.r, d.s, d.c);
  s.x_elems = sat_mul(d.n, d.h, d.w, d.c);
  s.w_elems = sat_mul(d.k, s.kgemm);
  s.y_elems = sat_mul(s.m, d.k);
  return s;
}

// The exact convolution sum of output pixel m (NPQ order: m = (n·P + p)·Q + q) and output channel k, in
// float64: what every host reference of a conv checks against. x(i) and w(i) return element i of the
// NHWC input and the KRSC filter (as anything convertible to double); taps in the padding add nothing.
template <class XAt, class WAt>
double conv_sum_exact(const Conv2dDesc& d, const ConvShape& sh, std::int64_t m, std::int64_t k, XAt&& x, WAt&& w) {
  const std::int64_t q = m % sh.q, p = (m / sh.q) % sh.p, n = m / (sh.q * sh.p);
  double acc = 0.0;
  for (std::int64_t r = 0; r < d.r; ++r) {
    const std::int64_t h = p * d.stride_h - d.pad_h + r * d.dil_h;
    if (h < 0 || h >= d.h) continue;
    for (std::int64_t s = 0; s < d.s; ++s) {
      const std::int64_t wi = q * d.stride_w - d.pad_w + s * d.dil_w;
      if (wi < 0 || wi >= d.w) continue;
      const std::int64_t xb = ((n * d.h + h) * d.w + wi) * d.c, wb = ((k * d.r + r) * d.s + s) * d.c;
      for (std::int64_t c = 0; c < d.c; ++c) acc += double(x(xb + c)) * double(w(wb + c));
    }
  }
  return acc;
}

// The math a problem asks for (mma.sync on its operand type).
constexpr MathOp required_math(const Conv2dDesc& d) {
  return d.type == DType::bf16 ? MathOp::mma_bf16 : MathOp::mma_f16;
}

// Largest vector (elements, ≤ 16 bytes) each operand allows: x's rows are C elements (one pixel),
// w's rows are R·S·C elements (one output channel), y / bias / residual rows are K elements.
struct ConvAlignment {
  int x = 1, w = 1;  // activations and filters
  int y = 1;         // y (also read when beta != 0), bias and residual together
};

inline ConvAlignment alignment_of(const Conv2dDesc& d, const Conv2dOperands& ops) {
  const int eb = size_of(d.type), ed = size_of(d.out_type);
  ConvAlignment al;
  al.x = operand_alignment(ops.x, d.c, d.c, eb);
  const std::int64_t w_row = detail::sat_mul(d.r, d.s, d.c);
  al.w = operand_alignment(ops.w, w_row, w_row, eb);
  int v = operand_alignment(ops.y, d.k, d.k, ed);
  if (d.epilogue.residual) v = std::min(v, operand_alignment(ops.residual, d.k, d.k, ed));
  if (d.epilogue.bias) v = std::min(v, operand_alignment(ops.bias, d.k, d.k, ed));
  al.y = v;
  return al;
}

// The implicit GEMM's index arithmetic is 32-bit: every tensor (x with its padding) stays below 2^31
// elements, and coordinates with their dilated filter offsets stay below 2^30.
inline constexpr std::int64_t conv_max_elements = (std::int64_t{1} << 31) - 1;
inline constexpr std::int64_t conv_max_extent = std::int64_t{1} << 30;

// Argument checks that do not depend on any instance. A failure means nothing may be launched.
inline Status validate(const Conv2dDesc& d, const Conv2dOperands& ops) {
  using detail::invalid;
  auto n = [](std::int64_t v) { return v == detail::size_max ? std::string("2^63 or more") : std::to_string(v); };
  if (d.groups != 1)
    return error(StatusCode::unsupported, "grouped convolution is not supported (groups=" + n(d.groups) +
                                              "): conv2d implements groups = 1 only");
  // Enumerators first: an enum class holds any value of its underlying type (a cast from a corrupt
  // configuration); what such a value would mean is unknown, so nothing below may interpret it.
  if (!detail::known(d.type) || !detail::known(d.out_type))
    return invalid("unknown element type (DType value " + std::to_string(static_cast<int>(d.type)) + " for x and w, " +
                   std::to_string(static_cast<int>(d.out_type)) + " for y, bias and residual)");
  if (!detail::known(d.epilogue.activation))
    return invalid("unknown activation (Activation value " + std::to_string(static_cast<int>(d.epilogue.activation)) + ")");
  if (d.n <= 0 || d.h <= 0 || d.w <= 0 || d.c <= 0 || d.k <= 0 || d.r <= 0 || d.s <= 0)
    return invalid("conv2d sizes must be positive, got N=" + n(d.n) + " H=" + n(d.h) + " W=" + n(d.w) + " C=" + n(d.c) +
                   " K=" + n(d.k) + " R=" + n(d.r) + " S=" + n(d.s));
  if (d.pad_h < 0 || d.pad_w < 0)
    return invalid("padding must not be negative, got pad_h=" + n(d.pad_h) + " pad_w=" + n(d.pad_w));
  if (d.stride_h <= 0 || d.stride_w <= 0)
    return invalid("stride must be positive, got stride_h=" + n(d.stride_h) + " stride_w=" + n(d.stride_w));
  if (d.dil_h <= 0 || d.dil_w <= 0)
    return invalid("dilation must be positive, got dil_h=" + n(d.dil_h) + " dil_w=" + n(d.dil_w));
  for (std::int64_t v : {d.n, d.h, d.w, d.c, d.k, d.r, d.s, d.pad_h, d.pad_w, d.stride_h, d.stride_w, d.dil_h, d.dil_w})
    if (v >= conv_max_extent) return invalid("conv2d size or parameter " + n(v) + " is not below 2^30");
  // Every value is below 2^30 now, so these products of two fit; the products of three or four below
  // saturate instead of overflowing (detail::sat_mul).
  if (d.dil_h * (d.r - 1) >= conv_max_extent || d.dil_w * (d.s - 1) >= conv_max_extent)
    return invalid("dilated filter extent is not below 2^30");
  const ConvShape s = conv_shape(d);
  if (s.p <= 0 || s.q <= 0)
    return invalid("output size is not positive: P=" + n(s.p) + " Q=" + n(s.q) + " (H=" + n(d.h) + " W=" + n(d.w) +
                   ", the dilated " + n(d.r) + "x" + n(d.s) + " filter spans " + n(d.dil_h * (d.r - 1) + 1) + "x" +
                   n(d.dil_w * (d.s - 1) + 1) + ", padding " + n(d.pad_h) + "x" + n(d.pad_w) + ")");
  const std::int64_t x_padded = detail::sat_mul(d.n, d.h + 2 * d.pad_h, d.w + 2 * d.pad_w, d.c);
  if (x_padded > conv_max_elements || s.w_elems > conv_max_elements || s.y_elems > conv_max_elements)
    return invalid("a tensor exceeds 2^31 elements (conv2d indexes with 32-bit integers): x (padded) " + n(x_padded) +
                   ", w " + n(s.w_elems) + ", y " + n(s.y_elems));
  if (d.type != DType::f16 && d.type != DType::bf16)
    return error(StatusCode::unsupported, "conv2d computes on f16 or bf16 activations and filters, got " +
                                              std::string(to_string(d.type)));
  if (d.epilogue.clamp && !(d.epilogue.clamp_lo <= d.epilogue.clamp_hi))
    return invalid("clamp bounds are empty (clamp_lo > clamp_hi or NaN)");
  if (ops.x == nullptr) return invalid("x (activations) is null");
  if (ops.w == nullptr) return invalid("w (filters) is null");
  if (ops.y == nullptr) return invalid("y (output) is null");
  if (d.epilogue.bias && ops.bias == nullptr) return invalid("epilogue has a bias but the bias pointer is null");
  if (d.epilogue.residual && ops.residual == nullptr)
    return invalid("epilogue has a residual but the residual pointer is null");
  const int eb = size_of(d.type), ed = size_of(d.out_type);
  if (detail::misaligned_for(ops.x, eb) || detail::misaligned_for(ops.w, eb))
    return error(StatusCode::misaligned, "x or w is not aligned to its element size (" + n(eb) + " bytes)");
  if (detail::misaligned_for(ops.y, ed) || (d.epilogue.bias && detail::misaligned_for(ops.bias, ed)) ||
      (d.epilogue.residual && detail::misaligned_for(ops.residual, ed)))
    return error(StatusCode::misaligned, "y, bias or residual is not aligned to its element size (" + n(ed) + " bytes)");
  // y must not overlap what it is computed from (the residual may alias y exactly: each element is
  // read by the thread that then writes it).
  auto overlaps = [](const void* p, std::int64_t pn, const void* q, std::int64_t qn) {
    auto a = reinterpret_cast<std::uintptr_t>(p), b = reinterpret_cast<std::uintptr_t>(q);
    return a < b + static_cast<std::uintptr_t>(qn) && b < a + static_cast<std::uintptr_t>(pn);
  };
  const std::int64_t y_bytes = s.y_elems * ed;
  auto wraps = [](const void* p, std::int64_t bytes) {
    return static_cast<std::uint64_t>(bytes) > UINTPTR_MAX - reinterpret_cast<std::uintptr_t>(p);
  };
  if (wraps(ops.x, s.x_elems * eb) || wraps(ops.w, s.w_elems * eb) || wraps(ops.y, y_bytes) ||
      (d.epilogue.bias && wraps(ops.bias, d.k * ed)) || (d.epilogue.residual && wraps(ops.residual, y_bytes)))
    return invalid("a tensor extends past the end of the address space");
  if (overlaps(ops.y, y_bytes, ops.x, s.x_elems * eb)) return invalid("y overlaps x");
  if (overlaps(ops.y, y_bytes, ops.w, s.w_elems * eb)) return invalid("y overlaps w");
  if (d.epilogue.bias && overlaps(ops.y, y_bytes, ops.bias, d.k * ed)) return invalid("y overlaps bias");
  if (d.epilogue.residual && ops.residual != ops.y && overlaps(ops.y, y_bytes, ops.residual, y_bytes))
    return invalid("residual partially overlaps y (it may alias y exactly)");
  return {};
}

}  // namespace ktune
