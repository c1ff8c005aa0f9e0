// Host tests: argument validation (problem.hpp), alignment facts, the epilogue spec, Status, and the
// one-call API's behaviour on a machine without a GPU. Pointers are fake addresses: nothing here
// dereferences them, and nothing may be launched.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>

#include "ktune/device.hpp"
#include "ktune/gemm.hpp"
#include "ktune/problem.hpp"

using namespace ktune;

namespace {

const void* addr(std::uintptr_t a) { return reinterpret_cast<const void*>(a); }
void* maddr(std::uintptr_t a) { return reinterpret_cast<void*>(a); }

// Far-apart fake buffers (each region is 256 MiB away from the next).
constexpr std::uintptr_t kA = 0x10000000, kB = 0x20000000, kC = 0x30000000, kD = 0x40000000, kBias = 0x50000000,
                         kRes = 0x60000000;

GemmDesc desc(std::int64_t m = 128, std::int64_t n = 256, std::int64_t k = 64, DType ab = DType::f16,
              Layout la = Layout::row, Layout lb = Layout::col, DType dt = DType::f16) {
  GemmDesc d;
  d.m = m;
  d.n = n;
  d.k = k;
  d.ab_type = ab;
  d.a_layout = la;
  d.b_layout = lb;
  d.d_type = dt;
  return d;
}

GemmOperands ops() {
  GemmOperands o;
  o.a = addr(kA);
  o.b = addr(kB);
  o.c = addr(kC);
  o.d = maddr(kD);
  o.bias = addr(kBias);
  o.residual = addr(kRes);
  return o;
}

void check_invalid(const Status& s, StatusCode code, const std::string& fragment) {
  CAPTURE(s.to_string());
  CHECK(s.code() == code);
  CHECK(s.message().find(fragment) != std::string::npos);
}

}  // namespace

TEST_CASE("validate: a well-formed problem passes, for every layout and type") {
  for (DType t : {DType::f16, DType::bf16, DType::f32})
    for (Layout la : {Layout::row, Layout::col})
      for (Layout lb : {Layout::row, Layout::col}) {
        CAPTURE(to_string(t));
        const Status s = validate(desc(100, 200, 300, t, la, lb, t), ops());
        CHECK(s.ok());
        CHECK(s.to_string() == "ok");
      }
  GemmDesc d = desc();
  d.ab_type = DType::f32;
  d.compute = Compute::tf32;
  CHECK(validate(d, ops()).ok());
}

TEST_CASE("validate: null A, B or D is an invalid argument") {
  GemmOperands o = ops();
  o.a = nullptr;
  check_invalid(validate(desc(), o), StatusCode::invalid_argument, "A is null");
  o = ops();
  o.b = nullptr;
  check_invalid(validate(desc(), o), StatusCode::invalid_argument, "B is null");
  o = ops();
  o.d = nullptr;
  check_invalid(validate(desc(), o), StatusCode::invalid_argument, "D is null");
}

TEST_CASE("validate: C, bias and residual are needed only when the epilogue reads them") {
  GemmOperands o = ops();
  o.c = nullptr;
  o.bias = nullptr;
  o.residual = nullptr;
  CHECK(validate(desc(), o).ok());  // identity epilogue: none of them is read
  GemmDesc d = desc();
  d.epilogue.beta = 0.5f;
  check_invalid(validate(d, o), StatusCode::invalid_argument, "beta != 0 but C is null");
  d = desc();
  d.epilogue.bias = true;
  check_invalid(validate(d, o), StatusCode::invalid_argument, "bias pointer is null");
  d = desc();
  d.epilogue.residual = true;
  check_invalid(validate(d, o), StatusCode::invalid_argument, "residual pointer is null");
  d = desc();
  d.epilogue.alpha = 2.0f;  // alpha alone does not read C
  CHECK(validate(d, o).ok());
}

TEST_CASE("validate: non-positive dimensions") {
  for (auto [m, n, k] : {std::tuple<int, int, int>{0, 1, 1}, {1, 0, 1}, {1, 1, 0}, {-5, 7, 7}, {7, -1, 7}, {7, 7, -3}}) {
    CAPTURE(m);
    CAPTURE(n);
    CAPTURE(k);
    check_invalid(validate(desc(m, n, k), ops()), StatusCode::invalid_argument, "dimensions must be positive");
  }
  CHECK(validate(desc(1, 1, 1), ops()).ok());
}

TEST_CASE("validate: dimensions past 2^31 - 257 are rejected (32-bit indexing, tile round-up)") {
  constexpr std::int64_t big = std::int64_t{1} << 31;
  constexpr std::int64_t limit = big - 257;  // a tile (≤ 256) rounded up must still fit in int
  check_invalid(validate(desc(big, 1, 1), ops()), StatusCode::invalid_argument, "2^31 - 257");
  check_invalid(validate(desc(1, big - 1, 1), ops()), StatusCode::invalid_argument, "2^31 - 257");
  check_invalid(validate(desc(1, 1, limit + 1), ops()), StatusCode::invalid_argument, "2^31 - 257");
  // The limit itself is fine (buffers placed terabytes apart so they cannot overlap).
  GemmOperands o;
  o.a = addr(std::uintptr_t{1} << 40);
  o.b = addr(std::uintptr_t{2} << 40);
  o.d = maddr(std::uintptr_t{3} << 40);
  CHECK(validate(desc(limit, 1, 1), o).ok());
}

TEST_CASE("validate: leading dimension too small, per layout") {
  // A row-major: contiguous extent K; column-major: M.
  GemmDesc d = desc(100, 200, 300, DType::f16, Layout::row, Layout::col);
  d.lda = 299;
  check_invalid(validate(d, ops()), StatusCode::invalid_argument, "lda=299 is smaller than A's contiguous extent 300");
  d.lda = 300;
  CHECK(validate(d, ops()).ok());
  d = desc(100, 200, 300, DType::f16, Layout::col, Layout::col);
  d.lda = 99;
  check_invalid(validate(d, ops()), StatusCode::invalid_argument, "lda=99 is smaller than A's contiguous extent 100");
  d.lda = 100;  // fine for column-major A even though 100 < K
  CHECK(validate(d, ops()).ok());
  // B row-major: contiguous extent N; column-major: K.
  d = desc(100, 200, 300, DType::f16, Layout::row, Layout::row);
  d.ldb = 199;
  check_invalid(validate(d, ops()), StatusCode::invalid_argument, "ldb=199 is smaller than B's contiguous extent 200");
  d = desc(100, 200, 300, DType::f16, Layout::row, Layout::col);
  d.ldb = 299;
  check_invalid(validate(d, ops()), StatusCode::invalid_argument, "ldb=299 is smaller than B's contiguous extent 300");
  d.ldb = 200;
  check_invalid(validate(d, ops()), StatusCode::invalid_argument, "ldb=200");
  // D, C and the residual are row-major M×N.
  d = desc(100, 200, 300);
  d.ldd = 150;
  check_invalid(validate(d, ops()), StatusCode::invalid_argument, "ldd=150 is smaller than N=200");
  d = desc(100, 200, 300);
  d.epilogue.beta = 1.0f;
  d.ldc = 199;
  check_invalid(validate(d, ops()), StatusCode::invalid_argument, "ldc=199 is smaller than N=200");
  d = desc(100, 200, 300);
  d.ldc = 5;  // ignored: C is not read with beta = 0
  CHECK(validate(d, ops()).ok());
  d = desc(100, 200, 300);
  d.epilogue.residual = true;
  d.ldr = 10;
  check_invalid(validate(d, ops()), StatusCode::invalid_argument, "ldr=10 is smaller than N=200");
}

TEST_CASE("validate: pointers not aligned to their element size") {
  GemmOperands o = ops();
  o.a = addr(kA + 1);  // odd address for f16
  check_invalid(validate(desc(), o), StatusCode::misaligned, "A or B is not aligned");
  o = ops();
  o.b = addr(kB + 3);
  check_invalid(validate(desc(), o), StatusCode::misaligned, "A or B is not aligned");
  o = ops();
  o.a = addr(kA + 2);  // 2-byte aligned: fine for bf16/f16, not for f32
  CHECK(validate(desc(64, 64, 64, DType::bf16), o).ok());
  check_invalid(validate(desc(64, 64, 64, DType::f32, Layout::row, Layout::col, DType::f32), o), StatusCode::misaligned,
                "A or B");
  o = ops();
  o.d = maddr(kD + 1);
  check_invalid(validate(desc(), o), StatusCode::misaligned, "C, D, bias or residual");
  o = ops();
  o.d = maddr(kD + 2);  // f32 output needs 4 bytes
  check_invalid(validate(desc(64, 64, 64, DType::f16, Layout::row, Layout::col, DType::f32), o), StatusCode::misaligned,
                "C, D, bias or residual");
  GemmDesc d = desc();
  d.epilogue.beta = 1.0f;
  o = ops();
  o.c = addr(kC + 1);
  check_invalid(validate(d, o), StatusCode::misaligned, "C, D, bias or residual");
  d = desc();
  d.epilogue.bias = true;
  o = ops();
  o.bias = addr(kBias + 1);
  check_invalid(validate(d, o), StatusCode::misaligned, "C, D, bias or residual");
}

TEST_CASE("validate: D must not overlap A or B") {
  GemmDesc d = desc(64, 64, 64);  // A spans 64×64×2 = 8192 bytes
  GemmOperands o = ops();
  o.d = maddr(kA + 4096);
  check_invalid(validate(d, o), StatusCode::invalid_argument, "D overlaps A");
  o.d = maddr(kA);  // in-place on A
  check_invalid(validate(d, o), StatusCode::invalid_argument, "D overlaps A");
  o.d = maddr(kA + 8192);  // right after A: fine
  CHECK(validate(d, o).ok());
  o = ops();
  o.d = maddr(kB - 64);  // D's span (8192 B) reaches into B
  check_invalid(validate(d, o), StatusCode::invalid_argument, "D overlaps B");
  // A padded leading dimension extends A's span: with lda = 128, A spans 63·128+64 elements.
  d.lda = 128;
  o = ops();
  o.d = maddr(kA + 2 * (63 * 128 + 64) - 2);
  check_invalid(validate(d, o), StatusCode::invalid_argument, "D overlaps A");
  o.d = maddr(kA + 2 * (63 * 128 + 64));
  CHECK(validate(d, o).ok());
}

TEST_CASE("validate: C may alias D exactly, but not partially") {
  GemmDesc d = desc(64, 64, 64);
  d.epilogue.beta = 1.0f;
  GemmOperands o = ops();
  o.c = o.d;  // exact alias with ldc == ldd
  CHECK(validate(d, o).ok());
  o.c = addr(kD + 2);  // shifted by one element
  check_invalid(validate(d, o), StatusCode::invalid_argument, "C partially overlaps D");
  o.c = addr(kD - 64 * 2);  // one row before: the spans overlap
  check_invalid(validate(d, o), StatusCode::invalid_argument, "C partially overlaps D");
  o.c = o.d;
  d.ldc = 128;  // same pointer, different leading dimension
  check_invalid(validate(d, o), StatusCode::invalid_argument, "C aliases D but ldc != ldd");
  d.ldd = 128;
  CHECK(validate(d, o).ok());
  // With beta = 0, C is not read: any C is fine.
  d = desc(64, 64, 64);
  o = ops();
  o.c = addr(kD + 2);
  CHECK(validate(d, o).ok());
}

TEST_CASE("validate: the residual may alias D exactly; the bias must not overlap D") {
  GemmDesc d = desc(64, 64, 64);
  d.epilogue.residual = true;
  GemmOperands o = ops();
  o.residual = o.d;
  CHECK(validate(d, o).ok());
  o.residual = addr(kD + 6);
  check_invalid(validate(d, o), StatusCode::invalid_argument, "residual partially overlaps D");
  o.residual = o.d;
  d.ldr = 65;
  check_invalid(validate(d, o), StatusCode::invalid_argument, "residual aliases D but ldr != ldd");
  d = desc(64, 64, 64);
  d.epilogue.bias = true;
  o = ops();
  o.bias = addr(kD + 64 * 2 * 10);  // inside D's 10th row
  check_invalid(validate(d, o), StatusCode::invalid_argument, "D overlaps bias");
}

TEST_CASE("validate: a caller's workspace must not overlap any operand, and its size needs a pointer") {
  GemmDesc d = desc(64, 64, 64);  // A, B and D span 8192 bytes each
  d.epilogue.beta = 1.0f;
  d.epilogue.bias = true;
  d.epilogue.residual = true;
  GemmOperands o = ops();
  constexpr std::uintptr_t kWork = 0x70000000;
  o.workspace = maddr(kWork);
  o.workspace_bytes = 1 << 20;
  CHECK(validate(d, o).ok());
  o.workspace = nullptr;  // none: ktune::gemm() takes one from its pool
  o.workspace_bytes = 0;
  CHECK(validate(d, o).ok());
  o.workspace_bytes = 4096;  // a size without a pointer
  check_invalid(validate(d, o), StatusCode::invalid_argument, "workspace is null");
  // Overlaps: the workspace ends inside an operand, starts inside one, or is one.
  const struct {
    const char* name;
    std::uintptr_t at;
  } operands[] = {{"A", kA}, {"B", kB}, {"C", kC}, {"D", kD}, {"residual", kRes}, {"bias", kBias}};
  for (const auto& x : operands) {
    CAPTURE(x.name);
    o = ops();
    o.workspace_bytes = 4096;
    o.workspace = maddr(x.at - 4096 + 16);
    check_invalid(validate(d, o), StatusCode::invalid_argument, std::string("workspace overlaps ") + x.name);
    o.workspace = maddr(x.at + 64);
    check_invalid(validate(d, o), StatusCode::invalid_argument, std::string("workspace overlaps ") + x.name);
    o.workspace = maddr(x.at - 4096);  // ends right where the operand starts: fine
    CHECK(validate(d, o).ok());
  }
  // C, bias and residual count only when the epilogue reads them.
  d = desc(64, 64, 64);
  o = ops();
  o.workspace = maddr(kC);
  o.workspace_bytes = 4096;
  CHECK(validate(d, o).ok());
  // A workspace running past the end of the address space, or a size beyond 2^63.
  o = ops();
  o.workspace = maddr(UINTPTR_MAX - 255);
  o.workspace_bytes = 4096;
  check_invalid(validate(d, o), StatusCode::invalid_argument, "workspace does not fit in the address space");
  o.workspace = maddr(kA + (std::uintptr_t{1} << 40));
  o.workspace_bytes = std::numeric_limits<std::size_t>::max();
  check_invalid(validate(d, o), StatusCode::invalid_argument, "workspace does not fit in the address space");
}

TEST_CASE("validate: clamp bounds must not be empty") {
  GemmDesc d = desc();
  d.epilogue.clamp = true;
  d.epilogue.clamp_lo = 1.0f;
  d.epilogue.clamp_hi = -1.0f;
  check_invalid(validate(d, ops()), StatusCode::invalid_argument, "clamp bounds are empty");
  d.epilogue.clamp_lo = d.epilogue.clamp_hi = 0.5f;  // a single point is fine
  CHECK(validate(d, ops()).ok());
  d.epilogue.clamp_lo = std::numeric_limits<float>::quiet_NaN();
  check_invalid(validate(d, ops()), StatusCode::invalid_argument, "clamp bounds");
  d.epilogue.clamp = false;  // bounds are ignored without clamp
  CHECK(validate(d, ops()).ok());
}

TEST_CASE("validate: tf32 compute needs f32 operands") {
  for (DType t : {DType::f16, DType::bf16}) {
    GemmDesc d = desc(64, 64, 64, t);
    d.compute = Compute::tf32;
    check_invalid(validate(d, ops()), StatusCode::unsupported, "compute tf32 needs f32 operands, got " + std::string(to_string(t)));
  }
}

TEST_CASE("resolved and required_math") {
  GemmDesc d = resolved(desc(10, 20, 30, DType::f16, Layout::row, Layout::row));
  CHECK(d.lda == 30);
  CHECK(d.ldb == 20);
  CHECK(d.ldc == 20);
  CHECK(d.ldd == 20);
  CHECK(d.ldr == 20);
  d = resolved(desc(10, 20, 30, DType::f16, Layout::col, Layout::col));
  CHECK(d.lda == 10);
  CHECK(d.ldb == 30);
  GemmDesc e = desc(10, 20, 30);
  e.lda = 77;
  CHECK(resolved(e).lda == 77);  // explicit values are kept
  CHECK(required_math(desc(1, 1, 1, DType::f16)) == MathOp::mma_f16);
  CHECK(required_math(desc(1, 1, 1, DType::bf16)) == MathOp::mma_bf16);
  GemmDesc f = desc(1, 1, 1, DType::f32);
  CHECK(required_math(f) == MathOp::simt_f32);
  f.compute = Compute::tf32;
  CHECK(required_math(f) == MathOp::mma_tf32);
}

TEST_CASE("alignment: operand_alignment takes the largest vector dividing address, ld and extent") {
  CHECK(operand_alignment(addr(0x10000), 64, 64, 2) == 8);   // 16 B of f16
  CHECK(operand_alignment(addr(0x10000), 64, 64, 4) == 4);   // 16 B of f32
  CHECK(operand_alignment(addr(0x10008), 64, 64, 2) == 4);   // address only 8-byte aligned
  CHECK(operand_alignment(addr(0x10004), 64, 64, 2) == 2);
  CHECK(operand_alignment(addr(0x10002), 64, 64, 2) == 1);
  CHECK(operand_alignment(addr(0x10000), 63, 64, 2) == 1);   // odd leading dimension
  CHECK(operand_alignment(addr(0x10000), 66, 64, 2) == 2);
  CHECK(operand_alignment(addr(0x10000), 64, 6, 2) == 2);    // extent 6: vectors of 2
  CHECK(operand_alignment(addr(0x10000), 64, 7, 4) == 1);
  CHECK(operand_alignment(addr(0x10008), 64, 64, 4) == 2);
}

TEST_CASE("alignment: alignment_of per operand and for the output side") {
  // f16, A row-major K=4096, B column-major (contiguous K too).
  GemmDesc d = desc(4096, 4096, 4096, DType::f16, Layout::row, Layout::col, DType::f16);
  GemmAlignment al = alignment_of(d, ops());
  CHECK(al.a == 8);
  CHECK(al.b == 8);
  CHECK(al.d == 8);
  d.d_type = DType::f32;
  CHECK(alignment_of(d, ops()).d == 4);
  // Odd K limits row-major A and column-major B, not a column-major A with M = 4096.
  d = desc(4096, 4096, 4095, DType::bf16, Layout::col, Layout::col);
  al = alignment_of(d, ops());
  CHECK(al.a == 8);
  CHECK(al.b == 1);
  // An odd lda.
  d = desc(64, 64, 64, DType::f16, Layout::row, Layout::row);
  d.lda = 67;
  CHECK(alignment_of(d, ops()).a == 1);
  CHECK(alignment_of(d, ops()).b == 8);
  // The output side takes the minimum over D, C (when read), the residual and the bias.
  d = desc(64, 64, 64);
  GemmOperands o = ops();
  o.c = addr(kC + 4);
  CHECK(alignment_of(d, o).d == 8);  // C not read
  d.epilogue.beta = 1.0f;
  CHECK(alignment_of(d, o).d == 2);
  d = desc(64, 64, 64);
  d.epilogue.bias = true;
  o = ops();
  o.bias = addr(kBias + 8);
  CHECK(alignment_of(d, o).d == 4);
  d = desc(64, 64, 64);
  d.epilogue.residual = true;
  d.ldr = 65;
  CHECK(alignment_of(d, ops()).d == 1);
  d = desc(64, 62, 64);  // N = 62
  CHECK(alignment_of(d, ops()).d == 2);
}

TEST_CASE("epilogue spec: tags for names, logs and cache keys") {
  EpilogueSpec e;
  CHECK(e.tag() == "identity");
  CHECK(linear_combination(2.0f, 0.0f).tag() == "alpha");
  CHECK(linear_combination(1.0f, 1.0f).tag() == "ab");
  CHECK(linear_combination(0.5f, -1.0f).tag() == "ab");
  CHECK(bias_activation(Activation::relu).tag() == "bias_relu");
  CHECK(bias_activation(Activation::gelu_erf).tag() == "bias_gelu_erf");
  e = {};
  e.beta = 1.0f;
  e.residual = true;
  e.activation = Activation::silu;
  e.clamp = true;
  CHECK(e.tag() == "ab_res_silu_clamp");
  e.bias = true;
  CHECK(e.tag() == "ab_bias_res_silu_clamp");
  e = {};
  e.activation = Activation::gelu_tanh;
  CHECK(e.tag() == "gelu_tanh");
  CHECK(to_string(Activation::none) == "none");
}

TEST_CASE("status: codes, messages and propagation") {
  CHECK(Status().ok());
  CHECK(Status::success().ok());
  const Status s = error(StatusCode::misaligned, "odd lda");
  CHECK_FALSE(s.ok());
  CHECK_FALSE(static_cast<bool>(s));
  CHECK(s.to_string() == "misaligned: odd lda");
  CHECK(to_string(StatusCode::no_device) == "no_device");
  CHECK(to_string(StatusCode::invalid_argument) == "invalid_argument");
  auto f = [](bool fail) -> Status {
    KTUNE_RETURN_IF_ERROR(fail ? error(StatusCode::internal, "x") : Status{});
    return error(StatusCode::cache_error, "reached the end");
  };
  CHECK(f(true).code() == StatusCode::internal);
  CHECK(f(false).code() == StatusCode::cache_error);
}

TEST_CASE("gemm(): bad arguments return a Status before any device is touched") {
  GemmOperands o = ops();
  o.a = nullptr;
  Status s = gemm(desc(), o);
  CHECK(s.code() == StatusCode::invalid_argument);
  CHECK(s.message() == "A is null");
  CHECK(gemm(desc(0, 1, 1), ops()).code() == StatusCode::invalid_argument);
  o = ops();
  o.a = addr(kA + 1);
  CHECK(gemm(desc(), o).code() == StatusCode::misaligned);
  GemmDesc d = desc();
  d.compute = Compute::tf32;
  CHECK(gemm(d, ops()).code() == StatusCode::unsupported);
}

TEST_CASE("gemm(): a valid problem on a machine without a GPU is no_device") {
  if (cuda_device_count() > 0) {
    // On a GPU machine these fake pointers must never reach a kernel: the GPU tests cover gemm().
    MESSAGE("a CUDA device is visible: the no-device path is not testable here");
    return;
  }
  const Status s = gemm(desc(), ops());
  CHECK(s.code() == StatusCode::no_device);
  CHECK(s.message().find("no CUDA device") != std::string::npos);
  GemmOptions opt;
  opt.instance = "ktune_gemm_does_not_exist";
  CHECK(gemm(desc(), ops(), nullptr, opt).code() == StatusCode::no_device);
}
