// tools/common/problem_spec.hpp — a GEMM problem as the profiler and the benchmarks name it
// ("bf16 tn 4096x4096x4096 bias_relu"), its ktune description, and the built-in shape presets.
// Host-only: no CUDA calls, usable by `ktune-profile --list` on a machine without a GPU.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ktune/problem.hpp"

namespace ktune::tools {

// What the caller computes: the operand type plus, for fp32 operands, exact fp32 or tf32 tensor cores.
enum class Precision { f16, bf16, f32, tf32 };

constexpr std::string_view to_string(Precision p) {
  switch (p) {
    case Precision::f16: return "f16";
    case Precision::bf16: return "bf16";
    case Precision::f32: return "f32";
    case Precision::tf32: return "tf32";
  }
  return "?";
}

// The operand type of a precision (f32 and tf32: fp32 operands).
constexpr DType operand_type_of(Precision p) {
  switch (p) {
    case Precision::f16: return DType::f16;
    case Precision::bf16: return DType::bf16;
    default: return DType::f32;
  }
}

// m x n x k with precision p's operands in layouts a and b, D of type `out`, fp32 accumulation (tf32
// tensor cores for Precision::tf32), no epilogue: what ProblemSpec and ShapeProblem (shapes_file.hpp)
// describe before their epilogues.
inline GemmDesc precision_desc(std::int64_t m, std::int64_t n, std::int64_t k, Precision p, Layout a, Layout b, DType out) {
  GemmDesc d;
  d.m = m;
  d.n = n;
  d.k = k;
  d.ab_type = operand_type_of(p);
  d.a_layout = a;
  d.b_layout = b;
  d.d_type = out;
  d.compute = p == Precision::tf32 ? Compute::tf32 : Compute::f32;
  return d;
}

inline std::optional<Precision> parse_precision(std::string_view s) {
  if (s == "f16" || s == "fp16" || s == "half") return Precision::f16;
  if (s == "bf16") return Precision::bf16;
  if (s == "f32" || s == "fp32" || s == "float") return Precision::f32;
  if (s == "tf32") return Precision::tf32;
  return std::nullopt;
}

// Relative Frobenius error allowed against the reference (DEVELOPERS.md tolerances).
constexpr double tolerance(Precision p) {
  switch (p) {
    case Precision::f32: return 1e-5;
    case Precision::tf32: return 3e-3;
    default: return 1e-2;
  }
}

// BLAS letters, A's first: 't' = row-major, 'n' = column-major (ktune's layout_letter).
inline bool parse_layouts(std::string_view s, Layout& a, Layout& b) {
  if (s.size() != 2) return false;
  auto one = [](char c, Layout& l) {
    if (c == 't' || c == 'T') l = Layout::row;
    else if (c == 'n' || c == 'N') l = Layout::col;
    else return false;
    return true;
  };
  return one(s[0], a) && one(s[1], b);
}

// "4096x4096x4096" (also 'X' or ',' as separators) → m, n, k > 0.
inline bool parse_mnk(std::string_view s, std::int64_t& m, std::int64_t& n, std::int64_t& k) {
  std::int64_t v[3] = {0, 0, 0};
  int i = 0;
  bool digit = false;
  for (char c : s) {
    if (c >= '0' && c <= '9') {
      if (v[i] > (std::int64_t{1} << 40)) return false;
      v[i] = v[i] * 10 + (c - '0');
      digit = true;
    } else if ((c == 'x' || c == 'X' || c == ',') && digit && i < 2) {
      ++i;
      digit = false;
    } else {
      return false;
    }
  }
  if (i != 2 || !digit || v[0] <= 0 || v[1] <= 0 || v[2] <= 0) return false;
  m = v[0];
  n = v[1];
  k = v[2];
  return true;
}

struct ProblemSpec {
  std::int64_t m = 0, n = 0, k = 0;
  Precision precision = Precision::bf16;
  Layout a_layout = Layout::row;  // 't'
  Layout b_layout = Layout::col;  // 'n'
  bool bias_relu = false;         // fused D = relu(A·B + bias[col])

  DType operand_type() const { return operand_type_of(precision); }
  // Output (and bias) type: the operand type, as in the usual mixed-precision GEMM.
  DType output_type() const { return operand_type(); }
  std::string layout_name() const { return {layout_letter(a_layout), layout_letter(b_layout)}; }
  std::string shape_name() const { return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k); }
  std::string epilogue_name() const { return bias_relu ? "bias_relu" : "identity"; }
  // "bf16 tn 4096x4096x4096" (+ " bias_relu")
  std::string name() const {
    std::string s = std::string(to_string(precision)) + " " + layout_name() + " " + shape_name();
    if (bias_relu) s += " bias_relu";
    return s;
  }
  // "bf16/tn/4096x4096x4096" (+ "/bias_relu"): Google Benchmark name prefix.
  std::string path() const {
    std::string s = std::string(to_string(precision)) + "/" + layout_name() + "/" + shape_name();
    if (bias_relu) s += "/bias_relu";
    return s;
  }
  double flops() const { return 2.0 * double(m) * double(n) * double(k); }
  double tol() const { return tolerance(precision); }

  GemmDesc desc() const {
    GemmDesc d = precision_desc(m, n, k, precision, a_layout, b_layout, output_type());
    if (bias_relu) d.epilogue = bias_activation(Activation::relu);
    return d;
  }
};

inline ProblemSpec make_problem(std::int64_t m, std::int64_t n, std::int64_t k, Precision p, std::string_view layouts = "tn",
                                bool bias_relu = false) {
  ProblemSpec s;
  s.m = m;
  s.n = n;
  s.k = k;
  s.precision = p;
  parse_layouts(layouts, s.a_layout, s.b_layout);
  s.bias_relu = bias_relu;
  return s;
}

// ktune-profile's built-in default problems (issue 2 §8). `quick` is the subset scripts/gpu-check.sh
// runs: the two performance targets (bf16 and SIMT fp32 4096³), tf32, unaligned and the fused case.
inline std::vector<ProblemSpec> default_problems(bool quick) {
  using P = Precision;
  if (quick)
    return {make_problem(4096, 4096, 4096, P::bf16),           make_problem(1024, 1024, 1024, P::f16),
            make_problem(4095, 4097, 4093, P::bf16),           make_problem(4096, 4096, 4096, P::f32),
            make_problem(4096, 4096, 4096, P::tf32),           make_problem(4096, 4096, 4096, P::bf16, "tn", true)};
  return {make_problem(4096, 4096, 4096, P::bf16),  make_problem(4096, 4096, 4096, P::f16),
          make_problem(1024, 1024, 1024, P::bf16),  make_problem(4096, 11008, 4096, P::bf16),
          make_problem(128, 4096, 4096, P::bf16),   make_problem(4095, 4097, 4093, P::bf16),
          make_problem(4096, 4096, 4096, P::f32),   make_problem(4096, 4096, 4096, P::tf32),
          make_problem(4096, 4096, 4096, P::bf16, "tn", true)};
}

// Named shape presets for the benchmarks (M, N, K); the precision and layout are applied on top.
struct ShapePreset {
  std::string_view name;
  std::vector<std::array<std::int64_t, 3>> shapes;
};

inline std::vector<ShapePreset> shape_presets() {
  return {
      {"square", {{1024, 1024, 1024}, {2048, 2048, 2048}, {4096, 4096, 4096}, {8192, 8192, 8192}}},
      // LLM: prefill (M = tokens) and decode (M = batch); N, K from 7B-class layers.
      {"llm",
       {{4096, 11008, 4096}, {1024, 4096, 4096}, {128, 4096, 4096}, {128, 28672, 8192}, {16, 4096, 4096}, {16, 11008, 4096}}},
      // Dimensions that break 16-byte row alignment, where vendor libraries slow down.
      {"unaligned", {{4095, 4097, 4093}, {3000, 5000, 700}, {127, 257, 131}}},
  };
}

}  // namespace ktune::tools
