// ktune/epilogue/spec.hpp — the built-in fused epilogue, described as plain data.
//
//   D = act( alpha·(A·B) + beta·C + bias[col] + residual[row, col] )     then clamp, if asked
//
// The built-in epilogue is chosen at run time (one uniform branch per element, invisible next to the
// mainloop), so one kernel instance serves every combination instead of one instance per epilogue.
// A user-written functor is a template argument instead (see epilogue/functors.cuh).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace ktune {

enum class Activation : std::uint8_t { none, relu, gelu_tanh, gelu_erf, silu };

constexpr std::string_view to_string(Activation a) {
  switch (a) {
    case Activation::none: return "none";
    case Activation::relu: return "relu";
    case Activation::gelu_tanh: return "gelu_tanh";
    case Activation::gelu_erf: return "gelu_erf";
    case Activation::silu: return "silu";
  }
  return "?";
}

struct EpilogueSpec {
  float alpha = 1.0f;
  float beta = 0.0f;           // beta ≠ 0 reads C (which may alias D)
  bool bias = false;           // per-column (per output channel) bias vector of N elements, D's type
  bool residual = false;       // add a residual matrix (D's type, row-major, its own leading dim)
  Activation activation = Activation::none;
  bool clamp = false;          // clamp to [clamp_lo, clamp_hi] after the activation
  float clamp_lo = 0.0f;
  float clamp_hi = 0.0f;

  // Short tag for names, logs and cache keys, e.g. "bias_relu", "ab_res_silu_clamp", "identity".
  std::string tag() const {
    std::string s;
    auto add = [&](std::string_view p) {
      if (!s.empty()) s += '_';
      s += p;
    };
    if (alpha != 1.0f || beta != 0.0f) add(beta != 0.0f ? "ab" : "alpha");
    if (bias) add("bias");
    if (residual) add("res");
    if (activation != Activation::none) add(to_string(activation));
    if (clamp) add("clamp");
    return s.empty() ? "identity" : s;
  }
};

// Convenience builders for the common fused cases.
inline EpilogueSpec linear_combination(float alpha, float beta) { return {alpha, beta}; }
inline EpilogueSpec bias_activation(Activation a) {
  EpilogueSpec e;
  e.bias = true;
  e.activation = a;
  return e;
}

}  // namespace ktune
