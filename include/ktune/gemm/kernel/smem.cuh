// ktune/gemm/kernel/smem.cuh — swizzled shared-memory tiles and the global→shared copy stage.
#pragma once
#include <cuda_pipeline_primitives.h>

#include <cstdint>

namespace ktune::kernel {

// One cp.async of Bytes (4, 8 or 16) from global `src` to shared `dst` that reads src when `in`, else
// writes zeros and reads nothing (src-size 0). One LDGSTS with a run-time source size: the same copy
// through __pipeline_memcpy_async(dst, src, Bytes, in ? 0 : Bytes) compiles to two predicated LDGSTS
// (one per constant zero-fill size): 24 instead of 12 per k-tile in the 128x256x64 mainloop.
template <int Bytes>
__device__ __forceinline__ void cp_async_zfill(void* dst, const void* src, bool in) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async copies 4, 8 or 16 bytes");
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  const unsigned src_size = in ? Bytes : 0;
  if constexpr (Bytes == 16)  // .cg: L2 only (the operands are reused from shared memory, not L1)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(src_size));
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(d), "l"(src), "n"(Bytes), "r"(src_size));
}

// A Rows×Cols tile of T in shared memory, Cols contiguous. 16-byte chunks are XOR-swizzled so that
// 8 consecutive rows at the same chunk column land in 8 different bank groups: ldmatrix reads and
// the copy stage's writes are free of bank conflicts without padding.
template <class T, int Rows, int Cols>
struct SwizzledTile {
  static constexpr int row_bytes = Cols * int(sizeof(T));
  static constexpr int bytes = Rows * row_bytes;
  static constexpr int lines_per_row = row_bytes >= 128 ? row_bytes / 128 : 1;
  static_assert(row_bytes % 16 == 0 && bytes % 128 == 0, "swizzled tiles hold whole 16-byte chunks and 128-byte lines");

  // Does the swizzle pattern repeat every `rows` rows (so offsets advance by a constant)?
  static constexpr bool repeats_every(int rows) { return (rows * row_bytes) % (1024 * lines_per_row) == 0; }

  __device__ __forceinline__ static int offset(int row, int col) {  // bytes
    const int off = row * row_bytes + col * int(sizeof(T));
    const int key = ((off >> 7) / lines_per_row) & 7;
    return off ^ (key << 4);
  }
};

// A Rows×Cols tile of T with each row padded by Pad elements (SIMT tiles: the pad staggers banks
// for transposing stores while keeping rows 16-byte aligned for float4 reads).
template <class T, int Rows, int Cols, int Pad>
struct PaddedTile {
  static constexpr int row_elems = Cols + Pad;
  static constexpr int row_bytes = row_elems * int(sizeof(T));
  static constexpr int bytes = Rows * row_bytes;
  static constexpr bool repeats_every(int) { return true; }
  __device__ __forceinline__ static int offset(int row, int col) { return (row * row_elems + col) * int(sizeof(T)); }
};

// Copies one Rows×Cols tile (Cols contiguous in global memory) into a SwizzledTile, Vec elements per
// access, predicated: rows at or past row_limit and columns at or past col_limit read as zero.
// Vec·sizeof(T) of 4, 8 or 16 bytes goes through cp.async; a 2-byte vector (unaligned f16/bf16) is
// copied through registers, which is synchronous but still correct inside the pipeline.
template <class T, int Rows, int Cols, int Vec, int Threads, class Tile = SwizzledTile<T, Rows, Cols>>
struct TileCopy {
  static constexpr int vec_bytes = Vec * int(sizeof(T));
  static constexpr int vectors_per_row = Cols / Vec;
  static constexpr int iterations = Rows * Cols / Vec / Threads;
  static_assert(Cols % Vec == 0 && (Rows * Cols / Vec) % Threads == 0, "the constraint model guarantees an even split");
  // When the block's threads cover whole rows, each thread's vectors share one column and step
  // `row_step` rows at a time: addresses are a base plus constant strides, computed once per tile
  // instead of per vector (the mainloop runs at ~250 registers, where recomputation is expensive).
  static constexpr bool regular = Threads % vectors_per_row == 0;
  static constexpr int row_step = regular ? Threads / vectors_per_row : 0;
  using TileType = Tile;

  __device__ __forceinline__ static void issue(char* dst, const T* src, bool in) {
    if constexpr (vec_bytes >= 4) {
      // Not cp_async_zfill: with it ptxas spilled ktune_gemm_sm80_simt_f32_nt_128x128x16_w32x64_s3_a4 (sm_90a,
      // 36 bytes at its 128-register bound); the mma mainloops copy through OperandTileIterator where they can.
      __pipeline_memcpy_async(dst, src, vec_bytes, in ? 0 : vec_bytes);
    } else {
      *reinterpret_cast<T*>(dst) = in ? *src : T(0.0f);
    }
  }

  // gmem: element (0,0) of the tile; ld: elements between rows. Elements at or past row_limit /
  // col_limit read as zero (the source address is then never read).
  __device__ __forceinline__ static void copy(char* smem, const T* gmem, std::int64_t ld, int row_limit, int col_limit,
                                              int tid) {
    if constexpr (regular) {
      const int r0 = tid / vectors_per_row, c = (tid % vectors_per_row) * Vec;
      const bool col_in = c < col_limit;
      const T* src = gmem + r0 * ld + c;
      const std::int64_t step = std::int64_t{row_step} * ld;
      char* dst = smem + Tile::offset(r0, c);
#pragma unroll
      for (int i = 0; i < iterations; ++i) {
        const bool in = col_in && r0 + i * row_step < row_limit;
        char* d = Tile::repeats_every(row_step) ? dst + i * row_step * Tile::row_bytes
                                                : smem + Tile::offset(r0 + i * row_step, c);
        issue(d, in ? src + i * step : gmem, in);
      }
    } else {
#pragma unroll
      for (int i = 0; i < iterations; ++i) {
        const int v = tid + i * Threads;
        const int r = v / vectors_per_row;
        const int c = (v % vectors_per_row) * Vec;
        const bool in = r < row_limit && c < col_limit;
        issue(smem + Tile::offset(r, c), in ? gmem + r * ld + c : gmem, in);
      }
    }
  }
};

// One operand's k-tiles in order, for a Copy whose threads cover whole rows (Copy::regular, cp.async
// vectors): the thread's source pointer advances by one k-tile per call instead of being recomputed,
// the MN-bound predicates are computed once, and out-of-range vectors are zero-filled from the
// unselected address (source size 0: nothing is read). Rows of the tile are MN (K-contiguous operand)
// or K (MN-contiguous operand).
template <class Copy, bool KContig, class T>
struct OperandTileIterator {
  using Tile = typename Copy::TileType;
  // Whole rows per pass, cp.async vectors, a constant destination stride, a 32-bit MN mask.
  static constexpr bool applies = Copy::regular && Copy::vec_bytes >= 4 && Copy::iterations <= 32 &&
                                  Tile::repeats_every(Copy::row_step);
  static constexpr int vec = Copy::vec_bytes / int(sizeof(T));
  static constexpr int k_extent = KContig ? Copy::vectors_per_row * vec : Copy::iterations * Copy::row_step;  // BK

  const T* src;          // the thread's first vector of the current k-tile
  std::int64_t step;     // elements between the thread's consecutive vectors (row_step rows)
  int dst;               // byte offset of the thread's first vector in the tile
  int k_left;            // K minus the current k-tile's first k, minus the thread's own k offset
  unsigned mn_in;        // bit i: vector i lies inside MN

  // Operand base, leading dimension, the block's first MN index, the first k-tile, MN and the end of K
  // (K, or a split-K slice's end: copies past it zero-fill and read nothing).
  __device__ __forceinline__ OperandTileIterator(const T* base, std::int64_t ld, int mn0, int kt_first, int MN, int K,
                                                 int tid) {
    const int r0 = tid / Copy::vectors_per_row, c = (tid % Copy::vectors_per_row) * vec;
    const int k0 = kt_first * k_extent;
    dst = Tile::offset(r0, c);
    step = std::int64_t{Copy::row_step} * ld;
    mn_in = 0;
    if constexpr (KContig) {  // rows: MN, columns: K
      src = base + std::int64_t(mn0 + r0) * ld + k0 + c;
      k_left = K - k0 - c;
#pragma unroll
      for (int i = 0; i < Copy::iterations; ++i) mn_in |= unsigned(mn0 + r0 + i * Copy::row_step < MN) << i;
    } else {  // rows: K, columns: MN
      src = base + std::int64_t(k0 + r0) * ld + mn0 + c;
      k_left = K - k0 - r0;
      mn_in = mn0 + c < MN ? ~0u : 0u;
    }
  }

  // Issue the copies of the current k-tile into `smem` (a Tile) and move to the next k-tile. OneLdgsts:
  // each 16-byte vector as one LDGSTS (cp_async_zfill) instead of __pipeline_memcpy_async's two predicated
  // ones; the mma mainloop chooses it per tile (MmaMainloop::flat_copies says where and why).
  template <bool OneLdgsts = false>
  __device__ __forceinline__ void copy_and_advance(char* smem) {
    static_assert(applies, "OperandTileIterator::applies is false for this copy");
    static_assert(!OneLdgsts || Copy::vec_bytes == 16, "cp_async_zfill is used for 16-byte vectors only");
#pragma unroll
    for (int i = 0; i < Copy::iterations; ++i) {
      const bool k_in = KContig ? k_left > 0 : i * Copy::row_step < k_left;
      const bool in = k_in && (mn_in >> i & 1u);
      char* d = smem + dst + i * Copy::row_step * Tile::row_bytes;
      if constexpr (OneLdgsts) cp_async_zfill<16>(d, src + i * step, in);
      else __pipeline_memcpy_async(d, src + i * step, Copy::vec_bytes, in ? 0 : Copy::vec_bytes);
    }
    src += KContig ? std::int64_t{k_extent} : Copy::iterations * step;  // one k-tile: BK columns or BK rows
    k_left -= k_extent;
  }
};

// Copies a tile stored K-contiguous in global memory (Rows_g = MN rows of Cols_g = K elements) into
// a PaddedTile transposed to [K][MN], one 4-byte element per cp.async. Consecutive threads walk K, so
// global reads stay coalesced; the row pad spreads the transposed stores over all banks.
template <int MN, int K, int Pad, int Threads>
struct TransposingCopyF32 {
  using Tile = PaddedTile<float, K, MN, Pad>;
  static constexpr int iterations = MN * K / Threads;
  static_assert((MN * K) % Threads == 0, "the constraint model guarantees an even split");

  // gmem: element (mn=0, k=0); ld: elements between MN rows.
  __device__ __forceinline__ static void copy(char* smem, const float* gmem, std::int64_t ld, int mn_limit, int k_limit,
                                              int tid) {
    static_assert(Threads % K == 0, "each thread keeps one k column");
    constexpr int mn_step = Threads / K;
    const int k = tid % K, mn0 = tid / K;
    const bool k_in = k < k_limit;
    const float* src = gmem + mn0 * ld + k;
    const std::int64_t step = std::int64_t{mn_step} * ld;
    char* dst = smem + Tile::offset(k, mn0);
    // Out of range: source size 0 (zero fill, nothing is read) at the unselected address. Selecting
    // `gmem` there instead kept 8 64-bit offsets live across the SIMT mainloop, which spilled at its
    // 128-register bound (sm_80, row-major A); this way 5-11% fewer instructions, no spill.
#pragma unroll
    for (int i = 0; i < iterations; ++i) {
      const bool in = k_in && mn0 + i * mn_step < mn_limit;
      cp_async_zfill<4>(dst + i * mn_step * 4, src + i * step, in);
    }
  }
};

// Copy one operand's k-tile: rows mn0.. of an MN×K operand starting at column k0, whichever of MN or
// K is contiguous (`KContig`) in global memory. `Copy` is the tile copier for that layout.
template <class Copy, bool KContig, class T>
__device__ __forceinline__ void copy_operand_tile(char* dst, const T* base, std::int64_t ld, int mn0, int k0, int MN,
                                                  int K, int tid) {
  if constexpr (KContig)
    Copy::copy(dst, base + std::int64_t(mn0) * ld + k0, ld, MN - mn0, K - k0, tid);
  else
    Copy::copy(dst, base + std::int64_t(k0) * ld + mn0, ld, K - k0, MN - mn0, tid);
}

__device__ __forceinline__ void copy_commit() { __pipeline_commit(); }
template <int N>
__device__ __forceinline__ void copy_wait() { __pipeline_wait_prior(N); }

}  // namespace ktune::kernel
