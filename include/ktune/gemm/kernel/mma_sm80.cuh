// ktune/gemm/kernel/mma_sm80.cuh — Ampere-class tensor-core mainloop: cp.async multistage pipeline,
// swizzled shared memory, ldmatrix fragments, mma.sync m16n8k16 (f16/bf16) or m16n8k8 (tf32), fp32
// accumulators. Runs on sm_80 and later (sm_90 included).
#pragma once
#include <cstdint>

#include "ktune/gemm/config.hpp"
#include "ktune/gemm/kernel/smem.cuh"
#include "ktune/gemm/resource_model.hpp"

namespace ktune::kernel {

// ---- PTX with no CCCL wrapper: ldmatrix, mma.sync, cvt.rna.tf32 ---------------------------------
template <bool Trans>
__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], const void* smem) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  if constexpr (Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}

template <MathOp M>
__device__ __forceinline__ void mma(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2]) {
  if constexpr (M == MathOp::mma_f16)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else if constexpr (M == MathOp::mma_bf16)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ std::uint32_t round_tf32(std::uint32_t x) {
  std::uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(__uint_as_float(x)));
  return r;
}

// ---- Mainloop ------------------------------------------------------------------------------------
// One block computes a BM×BN tile of A·B into per-thread accumulators acc[MI][NI][4] where
// acc[mi][ni] is the m16n8 fragment at warp-tile offset (mi·16, ni·8): elements (g, 2t), (g, 2t+1),
// (g+8, 2t), (g+8, 2t+1) with g = lane/4, t = lane%4.
template <GemmConfig C, class T>
struct MmaMainloop {
  static constexpr int BM = C.tile.m, BN = C.tile.n, BK = C.tile.k;
  static constexpr int WM = C.warp.m, WN = C.warp.n;
  static constexpr int threads = C.threads();
  static constexpr InstrShape instr = instr_shape(C.math);
  static constexpr int MI = WM / instr.m, NI = WN / instr.n, KI = BK / instr.k;
  static_assert(KI % 2 == 0, "the constraint model guarantees an even number of k-steps per tile");
  static constexpr bool a_kc = C.a_k_contiguous(), b_kc = C.b_k_contiguous();
  static constexpr bool tf32 = C.math == MathOp::mma_tf32;
  static constexpr int chunk = 16 / int(sizeof(T));  // elements per 16-byte chunk

  // Shared tiles in their global layout (contiguous dimension innermost).
  using TileA = SwizzledTile<T, a_kc ? BM : BK, a_kc ? BK : BM>;
  using TileB = SwizzledTile<T, b_kc ? BN : BK, b_kc ? BK : BN>;
  using CopyA = TileCopy<T, a_kc ? BM : BK, a_kc ? BK : BM, C.align, threads>;
  using CopyB = TileCopy<T, b_kc ? BN : BK, b_kc ? BK : BN, C.align, threads>;
  static constexpr int stage_bytes = TileA::bytes + TileB::bytes;
  // Both operands copied by whole-row passes of cp.async vectors: k-tile iterators (smem.cuh).
  static constexpr bool iterated_copies =
      OperandTileIterator<CopyA, a_kc, T>::applies && OperandTileIterator<CopyB, b_kc, T>::applies;
  // The register model (resource_model.hpp) charges the copies by the same test.
  static_assert(iterated_copies == mma_sm80_iterated_copies(C), "model and mainloop disagree on the k-tile iterators");
  // Flat copies on the f16/bf16 tiles of at least 128x128 (16-byte vectors): each vector one LDGSTS
  // (copy_and_advance<true>) and the copies issued for the k-tiles past the end too (run_pipelined_tiles'
  // LoadPastEnd), so ptxas predicates the copy block and spreads it between the HMMAs. SASS per k-tile,
  // sm_90a, 128x256x64 bf16 'tn': 265 -> 244 instructions, the compiler's issue stalls 950 -> 795 cycles;
  // Sm80MmaF16 110-188 -> 85-157. Elsewhere the old form: on tf32 and the smaller tiles either change
  // scheduled worse (stalls: tf32 'nt' 128x128x32 769 -> 1788 with LoadPastEnd, tf32 'a1' 'tn' 506 -> 1207
  // and 64x64x64 614 -> 724 with one LDGSTS).
  static constexpr bool flat_copies = iterated_copies && !tf32 && BM * BN >= 128 * 128 && CopyA::vec_bytes == 16 &&
                                     CopyB::vec_bytes == 16;

  // ---- ldmatrix addressing ------------------------------------------------------------------------
  // A lane's shared-memory offset for fragment (idx, kk) is computed once for (0, 0); the others are a
  // constant XOR plus a constant add, because the swizzle key only depends on bits the steps do not
  // touch (checked below at compile time; otherwise the offset is computed in full). The XOR (< 128)
  // comes first and the add (a multiple of 128) last, so one register per XOR value serves every
  // fragment through ldmatrix's immediate offset. The mainloop runs at ~250 registers, where every
  // address the compiler must keep or rematerialize costs.
  static constexpr int gcd128(int bytes) { return bytes % 128 == 0 ? 128 : bytes % 64 == 0 ? 64 : bytes % 32 == 0 ? 32 : 16; }
  // K-contiguous: k-steps move 32 bytes inside a ≤128-byte row; fragments move 16 rows.
  template <class Tile>
  static constexpr bool fast_kc = Tile::row_bytes <= 128 && KI * 32 <= Tile::row_bytes && Tile::repeats_every(16);
  // MN-contiguous: k-steps move 16 rows; fragments move 32 bytes inside the warp's aligned span.
  template <class Tile, int Frags, int WarpExtent>
  static constexpr bool fast_mn = Tile::repeats_every(16) && Frags * 32 <= gcd128(WarpExtent * int(sizeof(T)));
  static constexpr bool fast_a = a_kc ? fast_kc<TileA> : (!tf32 && fast_mn<TileA, MI, WM>);
  static constexpr bool fast_b = b_kc ? fast_kc<TileB> : (!tf32 && fast_mn<TileB, NI / 2, WN>);
  // The register model (resource_model.hpp) charges fragment offsets of MN-contiguous operands by the same test.
  static_assert(a_kc || fast_a == mma_sm80_fixed_trans_offsets(C, BM, WM), "model and mainloop disagree on A's offsets");
  static_assert(b_kc || fast_b == mma_sm80_fixed_trans_offsets(C, BN, WN), "model and mainloop disagree on B's offsets");

  // Offset of this lane's first A / B fragment row (full swizzle computation, done once).
  __device__ __forceinline__ static int a_lane_offset(int wm0, int lane) {
    if constexpr (a_kc) return TileA::offset(wm0 + (lane & 15), (lane >> 4) * chunk);
    else return TileA::offset((lane >> 4) * 8 + (lane & 7), wm0 + ((lane >> 3) & 1) * 8);
  }
  __device__ __forceinline__ static int b_lane_offset(int wn0, int lane) {
    if constexpr (b_kc) return TileB::offset(wn0 + (lane >> 4) * 8 + (lane & 7), ((lane >> 3) & 1) * chunk);
    else return TileB::offset(((lane >> 3) & 1) * 8 + (lane & 7), wn0 + (lane >> 4) * 8);
  }

  // A fragment (16 × instr.k) number i of the warp tile at k-step kk. `base` = a_lane_offset().
  __device__ __forceinline__ static void load_a(std::uint32_t (&a)[4], const char* sA, int base, int wm0, int i, int kk,
                                                int lane) {
    const int m0 = wm0 + i * instr.m, k0 = kk * instr.k;
    if constexpr (a_kc) {
      // 4 8×(16 B) matrices: rows m0 + lane%16, chunk k0 + (lane/16)·chunk.
      const int off = fast_a ? (base ^ (kk * 32)) + i * 16 * TileA::row_bytes
                             : TileA::offset(m0 + (lane & 15), k0 + (lane >> 4) * chunk);
      ldmatrix_x4<false>(a, sA + off);
    } else if constexpr (!tf32) {
      // Stored [k][m]: transpose on load. Matrix q = lane/8 covers m (q%2)·8.., k (q/2)·8..
      const int off = fast_a ? (base ^ (i * 32)) + kk * 16 * TileA::row_bytes
                             : TileA::offset(k0 + (lane >> 4) * 8 + (lane & 7), m0 + ((lane >> 3) & 1) * 8);
      ldmatrix_x4<true>(a, sA + off);
    } else {
      const int g = lane >> 2, t = lane & 3;
      auto at = [&](int m, int k) { return *reinterpret_cast<const std::uint32_t*>(sA + TileA::offset(k, m)); };
      a[0] = at(m0 + g, k0 + t);
      a[1] = at(m0 + g + 8, k0 + t);
      a[2] = at(m0 + g, k0 + t + 4);
      a[3] = at(m0 + g + 8, k0 + t + 4);
    }
    if constexpr (tf32)
      for (int q = 0; q < 4; ++q) a[q] = round_tf32(a[q]);
  }

  // B fragments for the adjacent n8 blocks 2j and 2j+1 at k-step kk: b[0..1] block 2j, b[2..3] 2j+1.
  __device__ __forceinline__ static void load_b(std::uint32_t (&b)[4], const char* sB, int base, int wn0, int j, int kk,
                                                int lane) {
    const int n0 = wn0 + j * 2 * instr.n, k0 = kk * instr.k;
    if constexpr (b_kc) {
      const int off = fast_b ? (base ^ (kk * 32)) + j * 16 * TileB::row_bytes
                             : TileB::offset(n0 + (lane >> 4) * 8 + (lane & 7), k0 + ((lane >> 3) & 1) * chunk);
      ldmatrix_x4<false>(b, sB + off);
    } else if constexpr (!tf32) {
      const int off = fast_b ? (base ^ (j * 32)) + kk * 16 * TileB::row_bytes
                             : TileB::offset(k0 + ((lane >> 3) & 1) * 8 + (lane & 7), n0 + (lane >> 4) * 8);
      ldmatrix_x4<true>(b, sB + off);
    } else {
      const int g = lane >> 2, t = lane & 3;
      auto at = [&](int k, int n) { return *reinterpret_cast<const std::uint32_t*>(sB + TileB::offset(k, n)); };
      b[0] = at(k0 + t, n0 + g);
      b[1] = at(k0 + t + 4, n0 + g);
      b[2] = at(k0 + t, n0 + 8 + g);
      b[3] = at(k0 + t + 4, n0 + 8 + g);
    }
    if constexpr (tf32)
      for (int q = 0; q < 4; ++q) b[q] = round_tf32(b[q]);
  }

  // Issue the copies of k-tile `kt` into stage slot `slot`.
  __device__ __forceinline__ static void load_stage(char* smem, int slot, int kt, const T* A, std::int64_t lda,
                                                    const T* B, std::int64_t ldb, int m0, int n0, int M, int N, int K,
                                                    int tid) {
    char* sA = smem + slot * stage_bytes;
    char* sB = sA + TileA::bytes;
    copy_operand_tile<CopyA, a_kc>(sA, A, lda, m0, kt * BK, M, K, tid);
    copy_operand_tile<CopyB, b_kc>(sB, B, ldb, n0, kt * BK, N, K, tid);
  }

  using Accumulators = float[MI][NI][4];

  static constexpr int bands = WM / 16;  // epilogue bands of 16 rows = one m16 fragment row
  // Origin of this warp's tile inside the block tile.
  __device__ __forceinline__ static int warp_row0(int warp) { return (warp / (BN / WN)) * WM; }
  __device__ __forceinline__ static int warp_col0(int warp) { return (warp % (BN / WN)) * WN; }

  // f(r, c, v0, v1) for each accumulator pair at band row r (0..15), warp-tile columns c, c+1.
  template <int Band, class F>
  __device__ __forceinline__ static void visit_band(Accumulators& acc, F&& f) {
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) f(g + h * 8, j * instr.n + 2 * t, acc[Band][j][2 * h], acc[Band][j][2 * h + 1]);
  }

  // k-tiles [kt_first, kt_first + kt_count) of the problem (a split-K slice; all of K by default).
  __device__ __forceinline__ static void run(float (&acc)[MI][NI][4], char* smem, const T* A, std::int64_t lda,
                                             const T* B, std::int64_t ldb, int m0, int n0, int M, int N, int K,
                                             int kt_first = 0, int kt_count = -1) {
    const int tid = threadIdx.x;
    if (kt_count < 0) kt_count = (K + BK - 1) / BK;
    if constexpr (iterated_copies) {
      // The iterators see K end at the slice's end, so copies past it (flat_copies) read nothing.
      const int k_end = min(K, (kt_first + kt_count) * BK);
      OperandTileIterator<CopyA, a_kc, T> ia(A, lda, m0, kt_first, M, k_end, tid);
      OperandTileIterator<CopyB, b_kc, T> ib(B, ldb, n0, kt_first, N, k_end, tid);
      run_pipelined_tiles<flat_copies>(acc, smem, kt_count, [&](int slot, int) {
        char* sA = smem + slot * stage_bytes;
        ia.template copy_and_advance<flat_copies>(sA);
        ib.template copy_and_advance<flat_copies>(sA + TileA::bytes);
      });
    } else {
      run_pipelined_tiles(acc, smem, kt_count, [&](int slot, int kt) {
        load_stage(smem, slot, kt_first + kt, A, lda, B, ldb, m0, n0, M, N, K, tid);
      });
    }
  }

  // The pipeline with the global→shared copies supplied by the caller: load(slot, kt) issues the
  // copies of k-tile kt into stage slot `slot` (A at smem + slot·stage_bytes as a TileA, B TileB::bytes
  // after it). It is called exactly once per k-tile, for kt = 0, 1, 2, … in order, so a stateful
  // operand iterator may advance on every call (the implicit-GEMM convolution's A loader does).
  template <class LoadStage>
  __device__ __forceinline__ static void run_pipelined(float (&acc)[MI][NI][4], char* smem, int K, LoadStage&& load) {
    run_pipelined_tiles(acc, smem, (K + BK - 1) / BK, static_cast<LoadStage&&>(load));
  }

  // The pipeline's prologue: the copies of k-tiles 0 .. stages-2 into slots 0 .. stages-2, one commit
  // group each. A persistent kernel issues it for its next tile before the current tile's epilogue
  // (slots free, epilogue in registers) and then runs run_pipelined_tiles<..., true>.
  template <class LoadStage>
  __device__ __forceinline__ static void issue_prologue(int k_tiles, LoadStage& load) {
#pragma unroll
    for (int s = 0; s < C.stages - 1; ++s) {
      if (s < k_tiles) load(s, s);
      copy_commit();
    }
  }

  // The same over `k_tiles` k-tiles (zero leaves the accumulators zero). LoadPastEnd: load() is also
  // called for the stages-1 k-tiles past the end (each zero-fills its slot and reads nothing; nobody
  // reads those slots), so the steady state issues its copies without a guard. PrologueIssued: the
  // caller already ran issue_prologue(k_tiles, load).
  template <bool LoadPastEnd = false, bool PrologueIssued = false, class LoadStage>
  __device__ __forceinline__ static void run_pipelined_tiles(float (&acc)[MI][NI][4], char* smem, int k_tiles,
                                                             LoadStage&& load) {
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm0 = (warp / (BN / WN)) * WM, wn0 = (warp % (BN / WN)) * WN;
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int j = 0; j < NI; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

    // Prologue: fill stages-1 slots, then wait for the first.
    if constexpr (!PrologueIssued) issue_prologue(k_tiles, load);
    copy_wait<C.stages - 2>();
    __syncthreads();

    // Steady state (one barrier per k-tile): while the tensor cores work on k-step kk, the fragments
    // of step kk+1 are read from shared memory; the last step of a tile already reads the first
    // fragments of the next tile, and the first step issues the global copies of tile kt+stages-1
    // into the slot every warp finished reading before the last barrier.
    std::uint32_t fa[2][MI][4], fb[2][NI / 2][4];
    int read_slot = 0;
    const int a_base = a_lane_offset(wm0, lane), b_base = b_lane_offset(wn0, lane);
    auto load_frags = [&](int buf, int slot, int kk) {
      const char* sA = smem + slot * stage_bytes;
      const char* sB = sA + TileA::bytes;
#pragma unroll
      for (int i = 0; i < MI; ++i) load_a(fa[buf][i], sA, a_base, wm0, i, kk, lane);
#pragma unroll
      for (int j = 0; j < NI / 2; ++j) load_b(fb[buf][j], sB, b_base, wn0, j, kk, lane);
    };
    load_frags(0, 0, 0);
    for (int kt = 0; kt < k_tiles; ++kt) {
#pragma unroll
      for (int kk = 0; kk < KI; ++kk) {
        if (kk == KI - 1) {  // move to the next tile's slot
          copy_wait<C.stages - 2>();
          __syncthreads();
          read_slot = read_slot + 1 == C.stages ? 0 : read_slot + 1;
        }
        load_frags((kk + 1) & 1, read_slot, (kk + 1) % KI);
#pragma unroll
        for (int i = 0; i < MI; ++i) {
          // The copies of tile kt+stages-1 go out after the first half of the first step's mma
          // (H200, 128x256x32 bf16: 408 -> 418 TF/s with the serpentine order below).
          if (kk == 0 && i == MI / 2) {
            // Tile kt+stages-1 goes to slot (kt-1) % stages, the one read last tile (read_slot is kt % stages
            // here): no division by the stage count.
            const int next = kt + C.stages - 1;
            if (LoadPastEnd || next < k_tiles) load(read_slot == 0 ? C.stages - 1 : read_slot - 1, next);
            copy_commit();
          }
#pragma unroll
          for (int jj = 0; jj < NI; ++jj) {
            const int j = (i & 1) ? NI - 1 - jj : jj;  // serpentine: the last B fragment of a row starts the next
            const std::uint32_t* bj = &fb[kk & 1][j / 2][(j & 1) * 2];
            const std::uint32_t b2[2] = {bj[0], bj[1]};
            mma<C.math>(acc[i][j], fa[kk & 1][i], b2);
          }
        }
      }
    }
    copy_wait<0>();
  }
};

}  // namespace ktune::kernel
