// ktune/types.hpp — element types, layouts and math operations, as host-visible enums.
#pragma once
#include <cstdint>
#include <string_view>

namespace ktune {

enum class DType : std::uint8_t { f32, f16, bf16 };

constexpr int size_of(DType t) { return t == DType::f32 ? 4 : 2; }
constexpr std::string_view to_string(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
  }
  return "?";
}

// Row-major: the last index is contiguous. For A (M×K) row-major means K-contiguous; for B (K×N)
// row-major means N-contiguous. Names use the BLAS letters: 't' = row-major, 'n' = column-major.
enum class Layout : std::uint8_t { row, col };
constexpr char layout_letter(Layout l) { return l == Layout::row ? 't' : 'n'; }
constexpr std::string_view to_string(Layout l) { return l == Layout::row ? "row" : "col"; }

// How the products are computed. The operand element type follows from the math op.
enum class MathOp : std::uint8_t {
  simt_f32,  // FFMA on fp32 operands: exact fp32
  mma_f16,   // mma.sync m16n8k16, fp16 operands, fp32 accumulate
  mma_bf16,  // mma.sync m16n8k16, bf16 operands, fp32 accumulate
  mma_tf32,  // mma.sync m16n8k8, fp32 operands rounded to tf32, fp32 accumulate
};

constexpr DType operand_type(MathOp m) {
  switch (m) {
    case MathOp::mma_f16: return DType::f16;
    case MathOp::mma_bf16: return DType::bf16;
    default: return DType::f32;
  }
}
constexpr bool uses_tensor_cores(MathOp m) { return m != MathOp::simt_f32; }
constexpr std::string_view to_string(MathOp m) {
  switch (m) {
    case MathOp::simt_f32: return "simt_f32";
    case MathOp::mma_f16: return "mma_f16";
    case MathOp::mma_bf16: return "mma_bf16";
    case MathOp::mma_tf32: return "mma_tf32";
  }
  return "?";
}
// Instruction shape (M, N, K) of one tensor-core op; SIMT uses 1×1×1.
struct InstrShape { int m, n, k; };
constexpr InstrShape instr_shape(MathOp m) {
  switch (m) {
    case MathOp::mma_f16:
    case MathOp::mma_bf16: return {16, 8, 16};
    case MathOp::mma_tf32: return {16, 8, 8};
    default: return {1, 1, 1};
  }
}

// What the caller asks for with fp32 operands: exact fp32 or tf32 tensor cores.
enum class Compute : std::uint8_t { f32, tf32 };

}  // namespace ktune
