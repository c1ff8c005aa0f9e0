// ktune/gemm/kernel/smem.cuh — swizzled shared-memory tiles and the global→shared copy stage.
#pragma once
#include <cuda_pipeline_primitives.h>

#include <cstdint>

namespace ktune::kernel {

// A Rows×Cols tile of T in shared memory, Cols contiguous. 16-byte chunks are XOR-swizzled so that
// 8 consecutive rows at the same chunk column land in 8 different bank groups: ldmatrix reads and
// the copy stage's writes are free of bank conflicts without padding.
template <class T, int Rows, int Cols>
struct SwizzledTile {
  static constexpr int row_bytes = Cols * int(sizeof(T));
  static constexpr int bytes = Rows * row_bytes;
  static constexpr int lines_per_row = row_bytes >= 128 ? row_bytes / 128 : 1;
  static_assert(row_bytes % 16 == 0 && bytes % 128 == 0, "swizzled tiles hold whole 16-byte chunks and 128-byte lines");

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
  static constexpr int bytes = Rows * row_elems * int(sizeof(T));
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

  // gmem: element (0,0) of the tile; ld: elements between rows.
  __device__ __forceinline__ static void copy(char* smem, const T* gmem, std::int64_t ld, int row_limit, int col_limit,
                                              int tid) {
#pragma unroll
    for (int i = 0; i < iterations; ++i) {
      const int v = tid + i * Threads;
      const int r = v / vectors_per_row;
      const int c = (v % vectors_per_row) * Vec;
      const bool in = r < row_limit && c < col_limit;
      const T* src = in ? gmem + r * ld + c : gmem;
      char* dst = smem + Tile::offset(r, c);
      if constexpr (vec_bytes >= 4) {
        __pipeline_memcpy_async(dst, src, vec_bytes, in ? 0 : vec_bytes);
      } else {
        *reinterpret_cast<T*>(dst) = in ? *src : T(0.0f);
      }
    }
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
#pragma unroll
    for (int i = 0; i < iterations; ++i) {
      const int e = tid + i * Threads;
      const int k = e % K, mn = e / K;
      const bool in = mn < mn_limit && k < k_limit;
      const float* src = in ? gmem + mn * ld + k : gmem;
      __pipeline_memcpy_async(smem + Tile::offset(k, mn), src, 4, in ? 0 : 4);
    }
  }
};

__device__ __forceinline__ void copy_commit() { __pipeline_commit(); }
template <int N>
__device__ __forceinline__ void copy_wait() { __pipeline_wait_prior(N); }

}  // namespace ktune::kernel
