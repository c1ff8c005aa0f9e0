// ktune/gemm/kernel/sm90/wgmma.cuh — warpgroup MMA (sm_90a): shared-memory matrix descriptors and
// wgmma.mma_async m64nNk16 (f16, bf16) / m64nNk8 (tf32) with fp32 accumulators, both operands read
// from shared memory through descriptors. CCCL has no wrapper for wgmma, so this is inline PTX; the
// operand lists (N/2 accumulator registers per thread) are spelled once, in macros of 8-register groups.
//
// Accumulator layout (m64nN, per warpgroup thread; warp w = thread/32 of the warpgroup, g = lane/4,
// t = lane%4): d[4j+0], d[4j+1] hold row 16w+g, columns 8j+2t, 8j+2t+1; d[4j+2], d[4j+3] hold row
// 16w+g+8, same columns — the m16n8 mma.sync layout, repeated over N/8 column blocks.
#pragma once
#include <cstdint>

#include "ktune/types.hpp"

namespace ktune::kernel::sm90 {

// A shared-memory matrix descriptor for the 128-byte swizzle (PTX ISA "Matrix Descriptor Format"):
// start address, leading- and stride-dimension byte offsets (all >> 4), swizzle mode 1 = 128 B.
// K-major operands: 128-byte rows (64 16-bit or 32 32-bit elements), 8-row atoms 1024 B apart (SBO);
// LBO unused (1).
// MN-major operands: 64-element MN blocks LBO apart, 8-row K groups SBO apart.
// swizzle: the descriptor's layout type (bits 62-63): 1 = 128-byte swizzle, 2 = 64-byte swizzle.
__device__ __forceinline__ std::uint64_t make_smem_desc(std::uint32_t smem_addr, std::uint32_t lbo, std::uint32_t sbo,
                                                        std::uint32_t swizzle = 1) {
  return std::uint64_t((smem_addr & 0x3FFFF) >> 4) | (std::uint64_t((lbo & 0x3FFFF) >> 4) << 16) |
         (std::uint64_t((sbo & 0x3FFFF) >> 4) << 32) | (std::uint64_t(swizzle & 3) << 62);
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int Pending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
}

// Keeps the compiler from moving reads or writes of accumulator registers across wgmma issue/wait.
template <int N>
__device__ __forceinline__ void fence_registers(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// ---- inline PTX ------------------------------------------------------------------------------------
// A wgmma names its N/2 accumulator registers twice: in the instruction text ("%0, ..., %{N/2-1}") and in
// the operand list ("+f"(d[0]), ...). Both are spelled once here, in groups of 8, and every (N, type)
// below is one line: the shape and the numbers of the operands after the accumulators (descriptors of A
// and B, the scale-d flag and, for 16-bit types, the transpose immediates), which the preprocessor cannot
// compute. The PTX is what the hand-written lists were (SASS byte-identical: notes/sm90-gemm.md "Session 13").
#define KTUNE_WGMMA_R8(a, b, c, d, e, f, g, h) "%" #a ", %" #b ", %" #c ", %" #d ", %" #e ", %" #f ", %" #g ", %" #h
#define KTUNE_WGMMA_G0 KTUNE_WGMMA_R8(0, 1, 2, 3, 4, 5, 6, 7)
#define KTUNE_WGMMA_G1 KTUNE_WGMMA_R8(8, 9, 10, 11, 12, 13, 14, 15)
#define KTUNE_WGMMA_G2 KTUNE_WGMMA_R8(16, 17, 18, 19, 20, 21, 22, 23)
#define KTUNE_WGMMA_G3 KTUNE_WGMMA_R8(24, 25, 26, 27, 28, 29, 30, 31)
#define KTUNE_WGMMA_G4 KTUNE_WGMMA_R8(32, 33, 34, 35, 36, 37, 38, 39)
#define KTUNE_WGMMA_G5 KTUNE_WGMMA_R8(40, 41, 42, 43, 44, 45, 46, 47)
#define KTUNE_WGMMA_G6 KTUNE_WGMMA_R8(48, 49, 50, 51, 52, 53, 54, 55)
#define KTUNE_WGMMA_G7 KTUNE_WGMMA_R8(56, 57, 58, 59, 60, 61, 62, 63)
#define KTUNE_WGMMA_G8 KTUNE_WGMMA_R8(64, 65, 66, 67, 68, 69, 70, 71)
#define KTUNE_WGMMA_G9 KTUNE_WGMMA_R8(72, 73, 74, 75, 76, 77, 78, 79)
#define KTUNE_WGMMA_G10 KTUNE_WGMMA_R8(80, 81, 82, 83, 84, 85, 86, 87)
#define KTUNE_WGMMA_G11 KTUNE_WGMMA_R8(88, 89, 90, 91, 92, 93, 94, 95)
#define KTUNE_WGMMA_G12 KTUNE_WGMMA_R8(96, 97, 98, 99, 100, 101, 102, 103)
#define KTUNE_WGMMA_G13 KTUNE_WGMMA_R8(104, 105, 106, 107, 108, 109, 110, 111)
#define KTUNE_WGMMA_G14 KTUNE_WGMMA_R8(112, 113, 114, 115, 116, 117, 118, 119)
#define KTUNE_WGMMA_G15 KTUNE_WGMMA_R8(120, 121, 122, 123, 124, 125, 126, 127)
#define KTUNE_WGMMA_D8(b) \
  "+f"(d[b + 0]), "+f"(d[b + 1]), "+f"(d[b + 2]), "+f"(d[b + 3]), "+f"(d[b + 4]), "+f"(d[b + 5]), "+f"(d[b + 6]), "+f"(d[b + 7])
#define KTUNE_WGMMA_REGS_32 KTUNE_WGMMA_G0 ", " KTUNE_WGMMA_G1 ", " KTUNE_WGMMA_G2 ", " KTUNE_WGMMA_G3
#define KTUNE_WGMMA_REGS_48 KTUNE_WGMMA_G0 ", " KTUNE_WGMMA_G1 ", " KTUNE_WGMMA_G2 ", " KTUNE_WGMMA_G3 ", " KTUNE_WGMMA_G4 ", " KTUNE_WGMMA_G5
#define KTUNE_WGMMA_REGS_56 KTUNE_WGMMA_G0 ", " KTUNE_WGMMA_G1 ", " KTUNE_WGMMA_G2 ", " KTUNE_WGMMA_G3 ", " KTUNE_WGMMA_G4 ", " KTUNE_WGMMA_G5 ", " KTUNE_WGMMA_G6
#define KTUNE_WGMMA_REGS_64 KTUNE_WGMMA_G0 ", " KTUNE_WGMMA_G1 ", " KTUNE_WGMMA_G2 ", " KTUNE_WGMMA_G3 ", " KTUNE_WGMMA_G4 ", " KTUNE_WGMMA_G5 ", " KTUNE_WGMMA_G6 ", " KTUNE_WGMMA_G7
#define KTUNE_WGMMA_REGS_96 KTUNE_WGMMA_G0 ", " KTUNE_WGMMA_G1 ", " KTUNE_WGMMA_G2 ", " KTUNE_WGMMA_G3 ", " KTUNE_WGMMA_G4 ", " KTUNE_WGMMA_G5 ", " KTUNE_WGMMA_G6 ", " KTUNE_WGMMA_G7 ", " KTUNE_WGMMA_G8 ", " KTUNE_WGMMA_G9 ", " KTUNE_WGMMA_G10 ", " KTUNE_WGMMA_G11
#define KTUNE_WGMMA_REGS_128 KTUNE_WGMMA_G0 ", " KTUNE_WGMMA_G1 ", " KTUNE_WGMMA_G2 ", " KTUNE_WGMMA_G3 ", " KTUNE_WGMMA_G4 ", " KTUNE_WGMMA_G5 ", " KTUNE_WGMMA_G6 ", " KTUNE_WGMMA_G7 ", " KTUNE_WGMMA_G8 ", " KTUNE_WGMMA_G9 ", " KTUNE_WGMMA_G10 ", " KTUNE_WGMMA_G11 ", " KTUNE_WGMMA_G12 ", " KTUNE_WGMMA_G13 ", " KTUNE_WGMMA_G14 ", " KTUNE_WGMMA_G15
#define KTUNE_WGMMA_D_32 KTUNE_WGMMA_D8(0), KTUNE_WGMMA_D8(8), KTUNE_WGMMA_D8(16), KTUNE_WGMMA_D8(24)
#define KTUNE_WGMMA_D_48 KTUNE_WGMMA_D8(0), KTUNE_WGMMA_D8(8), KTUNE_WGMMA_D8(16), KTUNE_WGMMA_D8(24), KTUNE_WGMMA_D8(32), KTUNE_WGMMA_D8(40)
#define KTUNE_WGMMA_D_56 KTUNE_WGMMA_D8(0), KTUNE_WGMMA_D8(8), KTUNE_WGMMA_D8(16), KTUNE_WGMMA_D8(24), KTUNE_WGMMA_D8(32), KTUNE_WGMMA_D8(40), KTUNE_WGMMA_D8(48)
#define KTUNE_WGMMA_D_64 KTUNE_WGMMA_D8(0), KTUNE_WGMMA_D8(8), KTUNE_WGMMA_D8(16), KTUNE_WGMMA_D8(24), KTUNE_WGMMA_D8(32), KTUNE_WGMMA_D8(40), KTUNE_WGMMA_D8(48), KTUNE_WGMMA_D8(56)
#define KTUNE_WGMMA_D_96 KTUNE_WGMMA_D8(0), KTUNE_WGMMA_D8(8), KTUNE_WGMMA_D8(16), KTUNE_WGMMA_D8(24), KTUNE_WGMMA_D8(32), KTUNE_WGMMA_D8(40), KTUNE_WGMMA_D8(48), KTUNE_WGMMA_D8(56), KTUNE_WGMMA_D8(64), KTUNE_WGMMA_D8(72), KTUNE_WGMMA_D8(80), KTUNE_WGMMA_D8(88)
#define KTUNE_WGMMA_D_128 KTUNE_WGMMA_D8(0), KTUNE_WGMMA_D8(8), KTUNE_WGMMA_D8(16), KTUNE_WGMMA_D8(24), KTUNE_WGMMA_D8(32), KTUNE_WGMMA_D8(40), KTUNE_WGMMA_D8(48), KTUNE_WGMMA_D8(56), KTUNE_WGMMA_D8(64), KTUNE_WGMMA_D8(72), KTUNE_WGMMA_D8(80), KTUNE_WGMMA_D8(88), KTUNE_WGMMA_D8(96), KTUNE_WGMMA_D8(104), KTUNE_WGMMA_D8(112), KTUNE_WGMMA_D8(120)

// d (+)= A·B, 16-bit operands: m64nNk16, R = N/2 accumulators, then %R, %R+1 (descriptors), %R+2 (scale-d),
// %R+3, %R+4 (transpose A, B).
#define KTUNE_WGMMA_16BIT(N, type, R, A, B, S, TA, TB)                                                  \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #S ", 0;\n"                                      \
               "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." type " {" KTUNE_WGMMA_REGS_##R           \
               "}, %" #A ", %" #B ", p, 1, 1, %" #TA ", %" #TB ";\n}\n"                                  \
               : KTUNE_WGMMA_D_##R                                                                       \
               : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TransA), "n"(TransB))
// tf32: m64nNk8, K-major operands only (no transpose immediates).
#define KTUNE_WGMMA_TF32(N, R, A, B, S)                                                                  \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #S ", 0;\n"                                      \
               "wgmma.mma_async.sync.aligned.m64n" #N "k8.f32.tf32.tf32 {" KTUNE_WGMMA_REGS_##R          \
               "}, %" #A ", %" #B ", p, 1, 1;\n}\n"                                                     \
               : KTUNE_WGMMA_D_##R                                                                       \
               : "l"(desc_a), "l"(desc_b), "r"(scale_d))

// One m64nNk16 step on f16 or bf16 operands: the N this library instantiates are 64, 96, 112, 128, 192,
// 256 (wgmma has N = 8..256 in steps of 8; another N is one more line here).
template <int N, bool BF16, int TransA, int TransB>
struct Wgmma;
#define KTUNE_WGMMA_SHAPE(N, R, A, B, S, TA, TB)                                                         \
  template <bool BF16, int TransA, int TransB>                                                           \
  struct Wgmma<N, BF16, TransA, TransB> {                                                                \
    __device__ __forceinline__ static void run(float (&d)[R], std::uint64_t desc_a, std::uint64_t desc_b, \
                                               int scale_d) {                                            \
      if constexpr (BF16) KTUNE_WGMMA_16BIT(N, "bf16.bf16", R, A, B, S, TA, TB);                         \
      else KTUNE_WGMMA_16BIT(N, "f16.f16", R, A, B, S, TA, TB);                                          \
    }                                                                                                    \
  };
KTUNE_WGMMA_SHAPE(64, 32, 32, 33, 34, 35, 36)
KTUNE_WGMMA_SHAPE(96, 48, 48, 49, 50, 51, 52)
KTUNE_WGMMA_SHAPE(112, 56, 56, 57, 58, 59, 60)
KTUNE_WGMMA_SHAPE(128, 64, 64, 65, 66, 67, 68)
KTUNE_WGMMA_SHAPE(192, 96, 96, 97, 98, 99, 100)
KTUNE_WGMMA_SHAPE(256, 128, 128, 129, 130, 131, 132)
#undef KTUNE_WGMMA_SHAPE

// d (+)= A·B for one m64nNk16 step; scale_d = 0 overwrites d (first step of a tile). TransA / TransB:
// 0 = K-major operand, 1 = MN-major (M-major A, N-major B), allowed for 16-bit types.
template <int N, bool BF16, int TransA, int TransB>
__device__ __forceinline__ void wgmma_m64k16(float (&d)[N / 2], std::uint64_t desc_a, std::uint64_t desc_b, int scale_d) {
  Wgmma<N, BF16, TransA, TransB>::run(d, desc_a, desc_b, scale_d);
}

// tf32: fp32 operands in shared memory (the tensor core reads the upper 19 bits of each element),
// m64nNk8, K-major operands only (wgmma has no transpose for 32-bit types, hence no trans operands).
template <int N>
struct WgmmaTf32;
#define KTUNE_WGMMA_TF32_SHAPE(N, R, A, B, S)                                                            \
  template <>                                                                                            \
  struct WgmmaTf32<N> {                                                                                  \
    __device__ __forceinline__ static void run(float (&d)[R], std::uint64_t desc_a, std::uint64_t desc_b, \
                                               int scale_d) {                                            \
      KTUNE_WGMMA_TF32(N, R, A, B, S);                                                                   \
    }                                                                                                    \
  };
KTUNE_WGMMA_TF32_SHAPE(64, 32, 32, 33, 34)
KTUNE_WGMMA_TF32_SHAPE(128, 64, 64, 65, 66)
KTUNE_WGMMA_TF32_SHAPE(192, 96, 96, 97, 98)
KTUNE_WGMMA_TF32_SHAPE(256, 128, 128, 129, 130)
// (The list macros are this header's own.)
#undef KTUNE_WGMMA_TF32_SHAPE
#undef KTUNE_WGMMA_16BIT
#undef KTUNE_WGMMA_TF32
#undef KTUNE_WGMMA_R8
#undef KTUNE_WGMMA_D8
#undef KTUNE_WGMMA_G0
#undef KTUNE_WGMMA_G1
#undef KTUNE_WGMMA_G2
#undef KTUNE_WGMMA_G3
#undef KTUNE_WGMMA_G4
#undef KTUNE_WGMMA_G5
#undef KTUNE_WGMMA_G6
#undef KTUNE_WGMMA_G7
#undef KTUNE_WGMMA_G8
#undef KTUNE_WGMMA_G9
#undef KTUNE_WGMMA_G10
#undef KTUNE_WGMMA_G11
#undef KTUNE_WGMMA_G12
#undef KTUNE_WGMMA_G13
#undef KTUNE_WGMMA_G14
#undef KTUNE_WGMMA_G15
#undef KTUNE_WGMMA_REGS_32
#undef KTUNE_WGMMA_REGS_48
#undef KTUNE_WGMMA_REGS_56
#undef KTUNE_WGMMA_REGS_64
#undef KTUNE_WGMMA_REGS_96
#undef KTUNE_WGMMA_REGS_128
#undef KTUNE_WGMMA_D_32
#undef KTUNE_WGMMA_D_48
#undef KTUNE_WGMMA_D_56
#undef KTUNE_WGMMA_D_64
#undef KTUNE_WGMMA_D_96
#undef KTUNE_WGMMA_D_128

// One wgmma k-step of math op M (m64nNk16 for f16/bf16, m64nNk8 for tf32): d (+)= A·B, scale_d = 0
// overwrites d. TransA / TransB as above; tf32 takes K-major operands only (the constraint model's
// wgmma_k_major rule keeps MN-major tf32 configurations from being instantiated).
template <MathOp M, int N, int TransA, int TransB>
__device__ __forceinline__ void wgmma_step(float (&d)[N / 2], std::uint64_t desc_a, std::uint64_t desc_b, int scale_d) {
  if constexpr (M == MathOp::wgmma_tf32) {
    static_assert(TransA == 0 && TransB == 0, "wgmma tf32 reads K-major shared memory only");
    WgmmaTf32<N>::run(d, desc_a, desc_b, scale_d);
  } else {
    static_assert(M == MathOp::wgmma_f16 || M == MathOp::wgmma_bf16, "not a wgmma math op");
    Wgmma<N, M == MathOp::wgmma_bf16, TransA, TransB>::run(d, desc_a, desc_b, scale_d);
  }
}

}  // namespace ktune::kernel::sm90
