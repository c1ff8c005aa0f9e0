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
  wgmma_f16,   // wgmma.mma_async m64nNk16 (sm_90a), fp16 operands in shared memory, fp32 accumulate
  wgmma_bf16,  // wgmma.mma_async m64nNk16 (sm_90a), bf16 operands in shared memory, fp32 accumulate
  wgmma_tf32,  // wgmma.mma_async m64nNk8 (sm_90a), fp32 operands read as tf32 (K-major only), fp32 accumulate
};

constexpr DType operand_type(MathOp m) {
  switch (m) {
    case MathOp::mma_f16:
    case MathOp::wgmma_f16: return DType::f16;
    case MathOp::mma_bf16:
    case MathOp::wgmma_bf16: return DType::bf16;
    default: return DType::f32;
  }
}
constexpr bool uses_tensor_cores(MathOp m) { return m != MathOp::simt_f32; }
// Hopper warpgroup MMA: the instance is a TMA + wgmma kernel (gemm/kernel/sm90/), not an sm80 one.
constexpr bool is_wgmma(MathOp m) {
  return m == MathOp::wgmma_f16 || m == MathOp::wgmma_bf16 || m == MathOp::wgmma_tf32;
}
// Can an instance computing `inst` run a problem that asks for `req` (see required_math)? The same op,
// or the warpgroup MMA on the same operand type: both compute fp32 sums of the same products (tf32:
// of the fp32 operands reduced to tf32; exact fp32 problems, simt_f32, are never served by wgmma).
constexpr bool math_implements(MathOp inst, MathOp req) {
  return inst == req ||
         (is_wgmma(inst) && (req == MathOp::mma_f16 || req == MathOp::mma_bf16 || req == MathOp::mma_tf32) &&
          operand_type(inst) == operand_type(req));
}
constexpr std::string_view to_string(MathOp m) {
  switch (m) {
    case MathOp::simt_f32: return "simt_f32";
    case MathOp::mma_f16: return "mma_f16";
    case MathOp::mma_bf16: return "mma_bf16";
    case MathOp::mma_tf32: return "mma_tf32";
    case MathOp::wgmma_f16: return "wgmma_f16";
    case MathOp::wgmma_bf16: return "wgmma_bf16";
    case MathOp::wgmma_tf32: return "wgmma_tf32";
  }
  return "?";
}
// Instruction shape (M, N, K) of one tensor-core op; SIMT uses 1×1×1. wgmma's N is a multiple of 8 up to
// 256 chosen per instance (the consumer warpgroup's tile width); 8 is its granularity.
struct InstrShape { int m, n, k; };
constexpr InstrShape instr_shape(MathOp m) {
  switch (m) {
    case MathOp::mma_f16:
    case MathOp::mma_bf16: return {16, 8, 16};
    case MathOp::mma_tf32: return {16, 8, 8};
    case MathOp::wgmma_f16:
    case MathOp::wgmma_bf16: return {64, 8, 16};
    case MathOp::wgmma_tf32: return {64, 8, 8};
    default: return {1, 1, 1};
  }
}

// What the caller asks for with fp32 operands: exact fp32 or tf32 tensor cores.
enum class Compute : std::uint8_t { f32, tf32 };

}  // namespace ktune
