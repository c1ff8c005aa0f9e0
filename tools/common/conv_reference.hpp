// tools/common/conv_reference.hpp — a float64 CPU reference of conv2d fprop with its epilogue, on a range
// of output pixels, and the conversions of f16/bf16 bit patterns it needs. Host-only, header-only, no
// CUDA: ktune-profile checks cuDNN's output with it (tools/common/conv_data.hpp), the host tests check it.
//
// Output pixel i is (n, p, q) with i = (n·P + p)·Q + q (NPQK order), so a range of pixels is one
// contiguous block of y: [i0·K, i1·K).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "ktune/conv/problem.hpp"

namespace ktune::tools {

inline float f16_bits_to_float(std::uint16_t h) {
  const int exp = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  float f;
  if (exp == 0) f = std::ldexp(float(mant), -24);  // zero and subnormals
  else if (exp == 31) f = mant != 0 ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else f = std::ldexp(float(mant | 0x400), exp - 25);
  return (h & 0x8000) ? -f : f;
}

inline float bf16_bits_to_float(std::uint16_t b) {
  const std::uint32_t u = std::uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// n elements of type t (raw bytes as the GPU holds them) → float.
inline std::vector<float> to_float_vector(DType t, const void* raw, std::size_t n) {
  std::vector<float> out(n);
  if (t == DType::f32) {
    std::memcpy(out.data(), raw, n * sizeof(float));
    return out;
  }
  const auto* h = static_cast<const std::uint16_t*>(raw);
  for (std::size_t i = 0; i < n; ++i) out[i] = t == DType::bf16 ? bf16_bits_to_float(h[i]) : f16_bits_to_float(h[i]);
  return out;
}

// The epilogue of a conv without y's prior contents or a residual (alpha, bias, activation, clamp), in
// float64. beta and the residual are not supported here (ktune-profile's conv problems have neither).
inline double conv_reference_epilogue(double acc, const EpilogueSpec& e, double bias) {
  double v = double(e.alpha) * acc + (e.bias ? bias : 0.0);
  switch (e.activation) {
    case Activation::none: break;
    case Activation::relu: v = v > 0.0 ? v : 0.0; break;
    case Activation::gelu_tanh: v = 0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))); break;
    case Activation::gelu_erf: v = 0.5 * v * (1.0 + std::erf(v * 0.7071067811865476)); break;
    case Activation::silu: v = v / (1.0 + std::exp(-v)); break;
  }
  if (e.clamp) v = std::fmin(std::fmax(v, double(e.clamp_lo)), double(e.clamp_hi));
  return v;
}

// y for output pixels [p0, p1): out[(i − p0)·K + k], float64 accumulation. x is NHWC, w is KRSC, bias K
// values (read when d.epilogue.bias), all as float.
inline void conv_reference(const Conv2dDesc& d, const float* x, const float* w, const float* bias, std::int64_t p0,
                           std::int64_t p1, double* out) {
  const ConvShape sh = conv_shape(d);
  const auto x_at = [x](std::int64_t e) { return x[e]; };
  const auto w_at = [w](std::int64_t e) { return w[e]; };
  for (std::int64_t i = p0; i < p1; ++i) {
    for (std::int64_t k = 0; k < d.k; ++k) {
      const double acc = conv_sum_exact(d, sh, i, k, x_at, w_at);
      out[(i - p0) * d.k + k] = conv_reference_epilogue(acc, d.epilogue, bias != nullptr ? double(bias[k]) : 0.0);
    }
  }
}

// The output pixels a reference check covers: all of them when there are at most 3·block, else three
// blocks of `block` pixels (the first, the middle and the last: the image borders where padding is
// read, and the interior), as [begin, end) ranges.
inline std::vector<std::pair<std::int64_t, std::int64_t>> conv_check_blocks(std::int64_t pixels, std::int64_t block = 1024) {
  if (pixels <= 3 * block) return {{0, pixels}};
  const std::int64_t mid = pixels / 2 - block / 2;
  return {{0, block}, {mid, mid + block}, {pixels - block, pixels}};
}

}  // namespace ktune::tools
