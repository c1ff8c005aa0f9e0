// ktune/problem.hpp — a GEMM problem as the caller describes it, its validation, and the alignment
// facts that decide which instances can run it.
//
//   D[M×N] = epilogue( A[M×K] · B[K×N], C[M×N], bias[N], residual[M×N] )
//
// C, D and the residual are row-major. A and B may each be row- or column-major.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "ktune/epilogue/spec.hpp"
#include "ktune/status.hpp"
#include "ktune/types.hpp"

namespace ktune {

struct GemmDesc {
  std::int64_t m = 0, n = 0, k = 0;
  DType ab_type = DType::f16;             // element type of A and B
  Layout a_layout = Layout::row;
  Layout b_layout = Layout::row;
  std::int64_t lda = 0, ldb = 0;          // 0: packed (the contiguous extent)
  DType d_type = DType::f16;              // element type of C, D, bias and residual
  std::int64_t ldc = 0, ldd = 0, ldr = 0; // 0: packed (N)
  Compute compute = Compute::f32;         // for f32 operands: exact f32 (SIMT) or tf32 tensor cores
  EpilogueSpec epilogue{};
};

struct GemmOperands {
  const void* a = nullptr;
  const void* b = nullptr;
  const void* c = nullptr;         // read when epilogue.beta != 0; may equal d
  void* d = nullptr;
  const void* bias = nullptr;      // N elements, when epilogue.bias
  const void* residual = nullptr;  // M×N row-major with ldr, when epilogue.residual
  // Scratch for instances and launch options that need it (split-K partials and semaphores; see
  // gemm_workspace_size). Null: ktune::gemm() takes it from its cached per-(device, stream) pool. A
  // workspace smaller than the launch needs is an error (nothing is launched). Device memory,
  // 16-byte aligned, used in stream order only: ktune zeroes what it needs zeroed, in-stream.
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
};

// Leading dimensions with 0 resolved to the packed value.
inline GemmDesc resolved(GemmDesc d) {
  if (d.lda == 0) d.lda = d.a_layout == Layout::row ? d.k : d.m;
  if (d.ldb == 0) d.ldb = d.b_layout == Layout::row ? d.n : d.k;
  if (d.ldc == 0) d.ldc = d.n;
  if (d.ldd == 0) d.ldd = d.n;
  if (d.ldr == 0) d.ldr = d.n;
  return d;
}

// The math the problem asks for.
inline MathOp required_math(const GemmDesc& d) {
  switch (d.ab_type) {
    case DType::f16: return MathOp::mma_f16;
    case DType::bf16: return MathOp::mma_bf16;
    default: return d.compute == Compute::tf32 ? MathOp::mma_tf32 : MathOp::simt_f32;
  }
}

// Largest vector (in elements, ≤ 16 bytes) that every access to an operand can use: it must divide
// the address, the leading dimension and the contiguous extent.
inline int operand_alignment(const void* ptr, std::int64_t ld, std::int64_t contiguous_extent, int elem_bytes) {
  int v = 16 / elem_bytes;
  const auto addr = reinterpret_cast<std::uintptr_t>(ptr);
  while (v > 1 && ((addr % (static_cast<std::uintptr_t>(v) * elem_bytes)) != 0 || ld % v != 0 || contiguous_extent % v != 0))
    v /= 2;
  return v;
}

struct GemmAlignment {
  int a = 1, b = 1;   // vector width (elements) A and B allow
  int d = 1;          // vector width C, D, residual and bias allow together
};

inline GemmAlignment alignment_of(const GemmDesc& d0, const GemmOperands& ops) {
  const GemmDesc d = resolved(d0);
  const int eb = size_of(d.ab_type), ed = size_of(d.d_type);
  GemmAlignment al;
  al.a = operand_alignment(ops.a, d.lda, d.a_layout == Layout::row ? d.k : d.m, eb);
  al.b = operand_alignment(ops.b, d.ldb, d.b_layout == Layout::row ? d.n : d.k, eb);
  int v = operand_alignment(ops.d, d.ldd, d.n, ed);
  if (d.epilogue.beta != 0.0f) v = std::min(v, operand_alignment(ops.c, d.ldc, d.n, ed));
  if (d.epilogue.residual) v = std::min(v, operand_alignment(ops.residual, d.ldr, d.n, ed));
  if (d.epilogue.bias) v = std::min(v, operand_alignment(ops.bias, d.n, d.n, ed));
  al.d = v;
  return al;
}

namespace detail {
inline Status invalid(std::string m) { return error(StatusCode::invalid_argument, std::move(m)); }
inline bool misaligned_for(const void* p, int elem_bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % static_cast<std::uintptr_t>(elem_bytes) != 0;
}
// Bytes from the first element of a rows×cols matrix with leading dimension ld (all ≥ 1, ld ≥ cols) to
// one past its last, or -1 when that does not fit in 63 bits.
inline std::int64_t span_bytes(std::int64_t rows, std::int64_t ld, std::int64_t cols, int elem_bytes) {
  constexpr std::int64_t max = std::numeric_limits<std::int64_t>::max();
  if (rows > 1 && ld > (max - cols) / (rows - 1)) return -1;
  const std::int64_t elems = (rows - 1) * ld + cols;
  if (elems > max / elem_bytes) return -1;
  return elems * elem_bytes;
}
// Enumerators a caller can pass (an enum class holds any value of its underlying type, e.g. a cast
// from a corrupt configuration).
constexpr bool known(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }
constexpr bool known(Layout l) { return l == Layout::row || l == Layout::col; }
constexpr bool known(Compute c) { return c == Compute::f32 || c == Compute::tf32; }
constexpr bool known(Activation a) {
  return a == Activation::none || a == Activation::relu || a == Activation::gelu_tanh || a == Activation::gelu_erf ||
         a == Activation::silu;
}
// Does [p, p + bytes) lie inside the address space (no wrap-around)?
inline bool fits_address_space(const void* p, std::int64_t bytes) {
  return bytes >= 0 && static_cast<std::uint64_t>(bytes) <= UINTPTR_MAX - reinterpret_cast<std::uintptr_t>(p);
}
}  // namespace detail

// Argument checks that do not depend on any instance. A failure means nothing may be launched.
inline Status validate(const GemmDesc& d0, const GemmOperands& ops) {
  using detail::invalid;
  const GemmDesc d = resolved(d0);
  if (d.m <= 0 || d.n <= 0 || d.k <= 0)
    return invalid("GEMM dimensions must be positive, got M=" + std::to_string(d.m) + " N=" + std::to_string(d.n) +
                   " K=" + std::to_string(d.k));
  // Kernels index M, N and K with 32-bit integers and round them up to whole tiles (≤ 256).
  constexpr std::int64_t max_dim = (std::int64_t{1} << 31) - 257;
  if (d.m > max_dim || d.n > max_dim || d.k > max_dim)
    return invalid("GEMM dimensions must be ≤ 2^31 - 257 (kernels index M, N, K with 32-bit integers)");
  if (!detail::known(d.ab_type) || !detail::known(d.d_type))
    return invalid("unknown element type (DType value " + std::to_string(static_cast<int>(d.ab_type)) + " for A and B, " +
                   std::to_string(static_cast<int>(d.d_type)) + " for C and D)");
  if (!detail::known(d.a_layout) || !detail::known(d.b_layout))
    return invalid("unknown layout (Layout value " + std::to_string(static_cast<int>(d.a_layout)) + " for A, " +
                   std::to_string(static_cast<int>(d.b_layout)) + " for B)");
  if (!detail::known(d.epilogue.activation))
    return invalid("unknown activation (Activation value " + std::to_string(static_cast<int>(d.epilogue.activation)) + ")");
  if (d.ab_type == DType::f32 && d.compute != Compute::f32 && d.compute != Compute::tf32)
    return error(StatusCode::unsupported, "unknown compute type for f32 operands");
  if (!detail::known(d.compute))
    return invalid("unknown compute type (Compute value " + std::to_string(static_cast<int>(d.compute)) + ")");
  if (d.ab_type != DType::f32 && d.compute == Compute::tf32)
    return error(StatusCode::unsupported, "compute tf32 needs f32 operands, got " + std::string(to_string(d.ab_type)));
  const std::int64_t a_rows = d.a_layout == Layout::row ? d.m : d.k, a_cols = d.a_layout == Layout::row ? d.k : d.m;
  const std::int64_t b_rows = d.b_layout == Layout::row ? d.k : d.n, b_cols = d.b_layout == Layout::row ? d.n : d.k;
  if (d.lda < a_cols) return invalid("lda=" + std::to_string(d.lda) + " is smaller than A's contiguous extent " + std::to_string(a_cols));
  if (d.ldb < b_cols) return invalid("ldb=" + std::to_string(d.ldb) + " is smaller than B's contiguous extent " + std::to_string(b_cols));
  if (d.ldd < d.n) return invalid("ldd=" + std::to_string(d.ldd) + " is smaller than N=" + std::to_string(d.n));
  if (ops.a == nullptr) return invalid("A is null");
  if (ops.b == nullptr) return invalid("B is null");
  if (ops.d == nullptr) return invalid("D is null");
  const bool reads_c = d.epilogue.beta != 0.0f;
  if (reads_c && ops.c == nullptr) return invalid("beta != 0 but C is null");
  if (reads_c && d.ldc < d.n) return invalid("ldc=" + std::to_string(d.ldc) + " is smaller than N=" + std::to_string(d.n));
  if (d.epilogue.bias && ops.bias == nullptr) return invalid("epilogue has a bias but the bias pointer is null");
  if (d.epilogue.residual && ops.residual == nullptr) return invalid("epilogue has a residual but the residual pointer is null");
  if (d.epilogue.residual && d.ldr < d.n) return invalid("ldr=" + std::to_string(d.ldr) + " is smaller than N=" + std::to_string(d.n));
  if (d.epilogue.clamp && !(d.epilogue.clamp_lo <= d.epilogue.clamp_hi))
    return invalid("clamp bounds are empty (clamp_lo > clamp_hi or NaN)");
  const int eb = size_of(d.ab_type), ed = size_of(d.d_type);
  if (detail::misaligned_for(ops.a, eb) || detail::misaligned_for(ops.b, eb))
    return error(StatusCode::misaligned, "A or B is not aligned to its element size");
  if (detail::misaligned_for(ops.d, ed) || (reads_c && detail::misaligned_for(ops.c, ed)) ||
      (d.epilogue.bias && detail::misaligned_for(ops.bias, ed)) ||
      (d.epilogue.residual && detail::misaligned_for(ops.residual, ed)))
    return error(StatusCode::misaligned, "C, D, bias or residual is not aligned to its element size");
  // Every operand's extent, from its pointer, must fit the 64-bit address space: otherwise its byte
  // offsets overflow (and the overlap checks below would wrap around).
  using detail::span_bytes;
  const std::int64_t a_bytes = span_bytes(a_rows, d.lda, a_cols, eb), b_bytes = span_bytes(b_rows, d.ldb, b_cols, eb);
  const std::int64_t d_bytes = span_bytes(d.m, d.ldd, d.n, ed);
  const std::int64_t c_bytes = reads_c ? span_bytes(d.m, d.ldc, d.n, ed) : 0;
  const std::int64_t r_bytes = d.epilogue.residual ? span_bytes(d.m, d.ldr, d.n, ed) : 0;
  const std::int64_t bias_bytes = d.epilogue.bias ? d.n * ed : 0;
  const struct { const char* name; const void* p; std::int64_t bytes; } extents[] = {
      {"A", ops.a, a_bytes}, {"B", ops.b, b_bytes}, {"D", ops.d, d_bytes}, {"C", ops.c, c_bytes},
      {"residual", ops.residual, r_bytes}, {"bias", ops.bias, bias_bytes}};
  for (const auto& x : extents)
    if (!detail::fits_address_space(x.p, x.bytes))
      return invalid(std::string(x.name) + " does not fit in the address space (its rows times its leading dimension "
                                           "overflow 64-bit byte offsets from its pointer)");
  // D must not overlap the inputs it is computed from (C may alias D exactly: each element of C is
  // read by the thread that then writes it).
  auto overlaps = [](const void* p, std::int64_t pn, const void* q, std::int64_t qn) {
    auto a = reinterpret_cast<std::uintptr_t>(p), b = reinterpret_cast<std::uintptr_t>(q);
    return a < b + static_cast<std::uintptr_t>(qn) && b < a + static_cast<std::uintptr_t>(pn);
  };
  if (overlaps(ops.d, d_bytes, ops.a, a_bytes)) return invalid("D overlaps A");
  if (overlaps(ops.d, d_bytes, ops.b, b_bytes)) return invalid("D overlaps B");
  if (reads_c && ops.c != ops.d && overlaps(ops.d, d_bytes, ops.c, c_bytes))
    return invalid("C partially overlaps D (C may alias D exactly, with ldc == ldd)");
  if (reads_c && ops.c == ops.d && d.ldc != d.ldd) return invalid("C aliases D but ldc != ldd");
  if (d.epilogue.residual && ops.residual != ops.d && overlaps(ops.d, d_bytes, ops.residual, r_bytes))
    return invalid("residual partially overlaps D (it may alias D exactly, with ldr == ldd)");
  if (d.epilogue.residual && ops.residual == ops.d && d.ldr != d.ldd) return invalid("residual aliases D but ldr != ldd");
  if (d.epilogue.bias && overlaps(ops.d, d_bytes, ops.bias, bias_bytes)) return invalid("D overlaps bias");
  // A caller's workspace is scratch the kernel writes: it must not overlap any operand.
  if (ops.workspace == nullptr && ops.workspace_bytes != 0)
    return invalid("workspace_bytes is " + std::to_string(ops.workspace_bytes) + " but workspace is null");
  if (ops.workspace != nullptr) {
    constexpr auto max_bytes = static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max());
    const auto w_bytes = static_cast<std::int64_t>(std::min(ops.workspace_bytes, max_bytes));
    if (ops.workspace_bytes > max_bytes || !detail::fits_address_space(ops.workspace, w_bytes))
      return invalid("workspace does not fit in the address space (workspace_bytes " + std::to_string(ops.workspace_bytes) + ")");
    for (const auto& x : extents)
      if (x.bytes > 0 && x.p != nullptr && overlaps(ops.workspace, w_bytes, x.p, x.bytes))
        return invalid("workspace overlaps " + std::string(x.name));
  }
  return {};
}

}  // namespace ktune
