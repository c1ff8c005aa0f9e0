// ktune/gemm/kernel/gemm_kernel.cuh — the GEMM kernel: schedule → mainloop → fused epilogue, and its
// host-side launcher. A mainloop provides:
//   Accumulators, shared-memory layout, run(...), and visit(acc, f) which calls
//   f(row_in_tile, col_in_tile, float& v0, float& v1) for every pair of adjacent output columns.
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "ktune/device.hpp"
#include "ktune/dispatch.hpp"
#include "ktune/epilogue/builtin.cuh"
#include "ktune/epilogue/chunk.cuh"
#include "ktune/gemm/kernel/cluster_split_k.cuh"
#include "ktune/gemm/kernel/mma_sm80.cuh"
#include "ktune/gemm/kernel/params.cuh"
#include "ktune/gemm/kernel/pdl.hpp"
#include "ktune/gemm/kernel/schedule.cuh"
#include "ktune/gemm/kernel/simt.cuh"
#include "ktune/gemm/split_k.hpp"
#include "ktune/workspace.hpp"

namespace ktune::kernel {

template <GemmConfig C>
struct MainloopFor {
  using T = element_t<operand_type(C.math)>;
  using type = std::conditional_t<C.math == MathOp::simt_f32, SimtMainloop<C>, MmaMainloop<C, T>>;
};

// Split-K: the sum of every slice's partial of row, columns col..col+n-1, in one fixed order (so serial
// and parallel mode give the same bits, run to run): slices are taken in groups of
// split_k_group_slices (split_k.hpp), each group added in slice order, then the group sums in group
// order. The parallel reduction runs the groups in separate threads; serial mode adds each group in
// the block of its last slice to arrive and the group sums in the tile's last group. The partials
// were written by other multiprocessors: read them through L2 (ld.global.cg).

// n (1 to 4) floats of a partial row (16-byte aligned: partial_ld % 4 == 0), zero past n.
__device__ __forceinline__ void load_partial(const float* src, int n, float (&v)[4]) {
  if (n == 4) {
    *reinterpret_cast<float4*>(v) = __ldcg(reinterpret_cast<const float4*>(src));
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i) v[i] = i < n ? __ldcg(src + i) : 0.0f;
  }
}

template <class EpiParams>
__device__ __forceinline__ void group_sum(const GemmParams<EpiParams>& p, int row, int col, int n, int group,
                                          float (&x)[4]) {
  const int first = group * split_k_group_slices, last = min(first + split_k_group_slices, p.split_k);
  const float* src = p.partials + first * p.partial_slice + static_cast<std::int64_t>(row) * p.partial_ld + col;
  float v[split_k_group_slices][4];
#pragma unroll
  for (int s = 0; s < split_k_group_slices; ++s) {  // all loads first: up to 4 in flight
    if (first + s >= last) break;
    load_partial(src + s * p.partial_slice, n, v[s]);
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) x[i] = v[0][i];
#pragma unroll
  for (int s = 1; s < split_k_group_slices; ++s) {
    if (first + s >= last) break;
#pragma unroll
    for (int i = 0; i < 4; ++i) x[i] += v[s][i];
  }
}

// The epilogue on n (1 to 4) values with the output type known only at run time. The built-in epilogue
// has a type-erased form (one copy of its code per kernel); other epilogues get one copy per type.
template <class Epi>
__device__ __forceinline__ void apply_epilogue(const typename Epi::Params& ep, DType t, int row, int col, float (&x)[4],
                                               int n) {
  if constexpr (requires { Epi::apply_dynamic(ep, t, row, col, x, n); }) {
    Epi::apply_dynamic(ep, t, row, col, x, n);
  } else {
    switch (t) {
      case DType::f16: Epi::template apply<__half>(ep, row, col, x, n); break;
      case DType::bf16: Epi::template apply<__nv_bfloat16>(ep, row, col, x, n); break;
      default: Epi::template apply<float>(ep, row, col, x, n); break;
    }
  }
}

// D[row, col..col+3] = epilogue(x), D of type p.d_type.
template <class Epi>
__device__ __forceinline__ void epilogue_store(const GemmParams<typename Epi::Params>& p, int row, int col, int n,
                                               float (&x)[4]) {
  apply_epilogue<Epi>(p.ep, p.d_type, row, col, x, n);
  const std::int64_t at = static_cast<std::int64_t>(row) * p.ldd + col;
  switch (p.d_type) {
    case DType::f16: epilogue::store_vec4(static_cast<__half*>(p.d) + at, x, n, p.d_vec4); break;
    case DType::bf16: epilogue::store_vec4(static_cast<__nv_bfloat16*>(p.d) + at, x, n, p.d_vec4); break;
    default: epilogue::store_vec4(static_cast<float*>(p.d) + at, x, n, p.d_vec4); break;
  }
}

// f(row, col, n) for every 4-column group (n ≤ 4 columns inside D) of the BM×BN tile at (m0, n0), the
// block's threads on consecutive groups (coalesced partial reads and D stores).
template <int BM, int BN, int Threads, class F>
__device__ __forceinline__ void for_each_tile_quad(int m, int n, int m0, int n0, F&& f) {
  constexpr int quads_per_row = BN / 4, quads = BM * quads_per_row;
#pragma unroll 2
  for (int q = threadIdx.x; q < quads; q += Threads) {
    const int row = m0 + q / quads_per_row, col = n0 + (q % quads_per_row) * 4;
    if (row < m && col < n) f(row, col, min(4, n - col));
  }
}

// Publish this block's writes and count its arrival at *counter; true (in every thread) in the block
// that completes the count of `expected`, which resets the counter to zero and then sees the other
// blocks' writes (published before their arrivals). A count of one needs no counter.
__device__ __forceinline__ bool arrive_last(int* counter, int expected) {
  if (expected <= 1) return true;
  __threadfence();
  __syncthreads();
  bool last = false;
  if (threadIdx.x == 0) {
    last = atomicAdd(counter, 1) == expected - 1;
    if (last) *counter = 0;
  }
  if (!__syncthreads_or(last)) return false;
  __threadfence();
  return true;
}

// Serial split-K's last step: D = epilogue(sum) for every 4-column group of the BM×BN tile at (m0, n0),
// the sum of each being x = v[0] + v[1] + ... + v[count - 1], left to right (group_sum's order within a
// group, splitk_reduce_kernel's over the group sums), v[j] at partials + j·stride; `thread` (0 to
// Threads - 1) is this thread's index among the Threads that share the tile. Each thread takes two
// 4-column groups at a time, with the loads of both in flight, then applies the epilogue to one and the
// other in a loop: the epilogue is inlined once. (Six inlined copies in the earlier form were ~5.5 of
// the ~7 s of CPU a split-capable instance took to compile: notes/build-time.md.)
template <class Epi, int BM, int BN, int Threads>
__device__ __forceinline__ void serial_split_k_epilogue(const GemmParams<typename Epi::Params>& p, int m0, int n0,
                                                        std::int64_t stride, int count, int thread) {
  constexpr int quads_per_row = BN / 4, quads = BM * quads_per_row, batch = 4;
  // The 4-column group of quad q: its row, column and width (0 outside D or past the tile: nothing
  // loaded or stored).
  auto locate = [&](int q, int& row, int& col, int& n) {
    row = m0 + q / quads_per_row;
    col = n0 + (q % quads_per_row) * 4;
    n = q < quads && row < p.m && col < p.n ? min(4, p.n - col) : 0;
    if (n == 0) row = col = 0;
  };
#pragma unroll 1
  for (int q = thread; q < quads; q += 2 * Threads) {
    int row0, col0, w0, row1, col1, w1;
    locate(q, row0, col0, w0);
    locate(q + Threads, row1, col1, w1);
    const float* src0 = p.partials + static_cast<std::int64_t>(row0) * p.partial_ld + col0;
    const float* src1 = p.partials + static_cast<std::int64_t>(row1) * p.partial_ld + col1;
    float x0[4], x1[4];
    load_partial(src0, w0, x0);
    load_partial(src1, w1, x1);
#pragma unroll 1
    for (int j0 = 1; j0 < count; j0 += batch) {
      float v0[batch][4], v1[batch][4];
#pragma unroll
      for (int j = 0; j < batch; ++j)
        if (j0 + j < count) {
          load_partial(src0 + (j0 + j) * stride, w0, v0[j]);
          load_partial(src1 + (j0 + j) * stride, w1, v1[j]);
        }
#pragma unroll
      for (int j = 0; j < batch; ++j)
        if (j0 + j < count) {
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            x0[i] += v0[j][i];
            x1[i] += v1[j][i];
          }
        }
    }
#pragma unroll 1
    for (int h = 0; h < 2; ++h) {  // one copy of the epilogue, on the first group, then on the second
      const bool first = h == 0;
      const int row = first ? row0 : row1, col = first ? col0 : col1, w = min(4, first ? w0 : w1);
      float x[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) x[i] = first ? x0[i] : x1[i];
      if (w > 0) epilogue_store<Epi>(p, row, col, w, x);
    }
  }
}

// Serial split-K, after the block of slice `slice` stored its partial of its tile: the last slice of
// its group to arrive (whichever) adds the group's partials in slice order and stores the sum in place
// of the group's first partial; the tile's last group to arrive adds the group sums in group order and
// applies the epilogue. The same sums in the same order as splitk_reduce_kernel (parallel mode), spread over
// the tile's blocks instead of one block reading every slice; no spinning, no ordering assumption
// between blocks; each counter is left zero by the block that completed it.
template <class Epi, int BM, int BN, int Threads>
__device__ __forceinline__ void serial_split_k_finish(const GemmParams<typename Epi::Params>& p, int m0, int n0,
                                                      int slice) {
  const int groups = split_k_groups(p.split_k), group = slice / split_k_group_slices;
  const int group_size = min(split_k_group_slices, p.split_k - group * split_k_group_slices);
  int* counters = p.semaphores + static_cast<std::int64_t>(blockIdx.x) * split_k_counters_per_tile(p.split_k);
  if (!arrive_last(counters + 1 + group, group_size)) return;
  const std::int64_t group_stride = split_k_group_slices * p.partial_slice;
  if (groups > 1) {
    if (group_size > 1) {  // a group of one slice is its own sum, already in place
      for_each_tile_quad<BM, BN, Threads>(p.m, p.n, m0, n0, [&](int row, int col, int n) {
        float x[4];
        group_sum(p, row, col, n, group, x);
        float* dst = p.partials + group * group_stride + static_cast<std::int64_t>(row) * p.partial_ld + col;
        if (n == 4) {
          __stcg(reinterpret_cast<float4*>(dst), make_float4(x[0], x[1], x[2], x[3]));
        } else {
          for (int i = 0; i < n; ++i) __stcg(dst + i, x[i]);
        }
      });
    }
    if (!arrive_last(counters, groups)) return;
  }
  // One group: its slices in order; several: the group sums (each in place of its group's first slice).
  serial_split_k_epilogue<Epi, BM, BN, Threads>(p, m0, n0, groups == 1 ? p.partial_slice : group_stride,
                                                groups == 1 ? p.split_k : groups, threadIdx.x);
}

// What store_tile does with a block's accumulators.
enum class TileStore {
  epilogue,  // apply the epilogue and store D
  partial,   // split-K: store the raw fp32 sums to this slice's partial matrix in the workspace
};

// Mainloop::visit_band<band>(acc, f) for a band index known only at run time: each branch indexes the
// accumulators with constants, so they stay in registers.
template <class Mainloop, class Acc, class F>
__device__ __forceinline__ void visit_band_at(int band, Acc& acc, F&& f) {
  [&]<int... Band>(std::integer_sequence<int, Band...>) {
    ((band == Band ? Mainloop::template visit_band<Band>(acc, f) : void()), ...);
  }(std::make_integer_sequence<int, Mainloop::bands>{});
}

// Does the built-in epilogue run on the accumulator registers (D = act(alpha·acc + bias[col]) with act
// ReLU or none: no C, residual or clamp)? The fused Conv+Bias+ReLU of the conv kernels is this form.
__device__ __forceinline__ bool register_epilogue(const epilogue::Builtin::Params& e) {
  return e.beta == 0.0f && e.residual == nullptr && !e.clamp &&
         (e.activation == Activation::none || e.activation == Activation::relu);
}

// Does store_tile store the tile at (m0, n0) straight from the registers (its fast path: a whole tile,
// register_epilogue, D in the operands' 16-bit type, 8-byte aligned rows)? Then it uses no shared memory,
// so a persistent kernel may refill the pipeline's ring while it runs.
template <GemmConfig C, class Epi, TileStore Mode = TileStore::epilogue>
__device__ __forceinline__ bool register_store(const GemmParams<typename Epi::Params>& p, int m0, int n0) {
  if constexpr (Mode == TileStore::epilogue && std::is_same_v<Epi, epilogue::Builtin> &&
                (C.math == MathOp::mma_f16 || C.math == MathOp::mma_bf16))
    return m0 + C.tile.m <= p.m && n0 + C.tile.n <= p.n && p.d_vec4 && p.d_type == operand_type(C.math) &&
           register_epilogue(p.ep);
  else
    return false;
}

// That epilogue on one lane's accumulator pairs: f(j, v0, v1) is the packed 16-bit pair of columns 8j + 2t,
// 8j + 2t + 1 of the lane's warp tile (n8 block j, t = lane % 4). The bias of those columns is read once
// per tile into registers (scalar loads: the bias pointer need not be 4-byte aligned); without a bias
// they hold −0, which leaves every alpha·acc bit-exact (−0 included).
template <class T, int NI>
struct RegisterEpilogue {
  float alpha;
  bool relu;
  float bias[NI][2];
  // cols: the bias of the warp tile's first column (bias + n0 + warp_col0), or null.
  __device__ __forceinline__ RegisterEpilogue(const epilogue::Builtin::Params& e, const T* cols)
      : alpha(e.alpha), relu(e.activation == Activation::relu) {
    const int t = threadIdx.x & 3;
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) bias[j][h] = cols != nullptr ? epilogue::to_float(cols[8 * j + 2 * t + h]) : -0.0f;
  }
  __device__ __forceinline__ auto operator()(int j, float v0, float v1) const {
    float x0 = alpha * v0 + bias[j][0], x1 = alpha * v1 + bias[j][1];
    if (relu) {
      x0 = epilogue::relu(x0);
      x1 = epilogue::relu(x1);
    }
    return epilogue::pack2<T>(x0, x1);
  }
};

// f(row, col, v0, v1) for every accumulator pair of the warp tile (row and col inside it), all
// indices constants: the accumulators stay in registers.
template <class Mainloop, class Acc, class F>
__device__ __forceinline__ void visit_warp_tile(Acc& acc, F&& f) {
  [&]<int... Band>(std::integer_sequence<int, Band...>) {
    (Mainloop::template visit_band<Band>(acc, [&](int r, int c, float v0, float v1) { f(Band * 16 + r, c, v0, v1); }),
     ...);
  }(std::make_integer_sequence<int, Mainloop::bands>{});
}

// The fast path's 16-byte stores of D = f(acc) (16-bit T; d: the warp tile's origin, rows 16-byte aligned;
// f a RegisterEpilogue). Lane t of a quad holds 2 columns of each of 4 adjacent n8 blocks of one row; two shfl.xor stages
// transpose the quad's packed pairs so that lane t holds the 8 columns of block 4q+t and stores them as one
// vector: a warp store writes 8 rows × 64 contiguous bytes (whole 32-byte sectors) instead of 8 × 16 bytes,
// with a quarter of the store instructions. H200, bf16 tn 4096³ (s7-batchA, probe): 128x256x32 436.4 ->
// 466.3 TF/s, 256x128x64 432.8 -> 472.3; the kernel without any store ran 479.4 / 468.3. (ncu: the 4-byte
// stores made 2.1 M L2 write requests for 1 M sectors; DRAM reads were the same with and without D, so
// streaming or evict-first hints, also measured, did not help: 426.6 / 430.8.)
template <class Mainloop, class T, class Acc, class F>
__device__ __forceinline__ void store_warp_tile_16b(Acc& acc, T* d, std::int64_t ldd, const F& f) {
  static_assert(Mainloop::NI % 4 == 0, "4 n8 blocks per 16-byte store");
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const bool hi = (t & 2) != 0, lo = (t & 1) != 0;
#pragma unroll
  for (int i = 0; i < Mainloop::MI; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int q = 0; q < Mainloop::NI / 4; ++q) {
        std::uint32_t w[4];  // w[j]: this lane's pair of block 4q+j = element [t][j] of the quad's 4×4
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const auto pk = f(4 * q + j, acc[i][4 * q + j][2 * h], acc[i][4 * q + j][2 * h + 1]);
          w[j] = *reinterpret_cast<const std::uint32_t*>(&pk);
        }
        // Lanes t, t^2 keep the blocks whose bit 1 is t's and trade the others: a[b][0] = [t][2·bit1(t)+b],
        // a[b][1] = [t^2][2·bit1(t)+b].
        std::uint32_t a[2][2];
#pragma unroll
        for (int b = 0; b < 2; ++b) {
          a[b][0] = hi ? w[2 + b] : w[b];
          a[b][1] = __shfl_xor_sync(0xffffffffu, hi ? w[b] : w[2 + b], 2);
        }
        // Lanes t, t^1 keep b = bit0(t) and trade the other: element [s][t] for s = t, t^2, t^1, t^3.
        const std::uint32_t e0 = lo ? a[1][0] : a[0][0], e2 = lo ? a[1][1] : a[0][1];
        const std::uint32_t e1 = __shfl_xor_sync(0xffffffffu, lo ? a[0][0] : a[1][0], 1);
        const std::uint32_t e3 = __shfl_xor_sync(0xffffffffu, lo ? a[0][1] : a[1][1], 1);
        std::uint32_t o[4];  // word s = columns 2s, 2s+1 of block 4q+t = element [s][t]
#pragma unroll
        for (int s = 0; s < 4; ++s) {
          const int x = s ^ t;
          o[s] = x == 0 ? e0 : x == 1 ? e1 : x == 2 ? e2 : e3;
        }
        *reinterpret_cast<uint4*>(d + static_cast<std::int64_t>(i * 16 + h * 8 + g) * ldd + (4 * q + t) * 8) =
            make_uint4(o[0], o[1], o[2], o[3]);
      }
}

// Epilogue: each warp moves its accumulators through shared memory one 16-row band at a time, then
// every lane applies the epilogue to 4 consecutive columns and stores them as one vector. Rows are
// written by 16·WN/4 lanes' worth of coalesced vectors. The epilogue and the stores exist once in the
// code (not once per band, accumulator register or output type), which keeps instances small and fast
// to compile.
template <GemmConfig C, class Epi, class Mainloop, TileStore Mode = TileStore::epilogue, class Acc>
__device__ __forceinline__ void store_tile(const GemmParams<typename Epi::Params>& p, Acc& acc, char* smem, int m0,
                                           int n0, int slice = 0) {
  constexpr int WN = C.warp.n, band_rows = smem_layout::epilogue_band_rows;
  constexpr int stride = WN + smem_layout::epilogue_pad;  // floats per staged row
  constexpr int vectors = band_rows * WN / 4;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float* stage = reinterpret_cast<float*>(smem) + warp * band_rows * stride;
  const int row0 = m0 + Mainloop::warp_row0(warp), col0 = n0 + Mainloop::warp_col0(warp);

  // Fast path: a tile inside D, D = act(alpha·acc + bias) (register_epilogue) in the operands' 16-bit type,
  // stored straight from the registers without the staging and the run-time epilogue: 16 bytes per lane
  // where D's rows are 16-byte aligned (store_warp_tile_16b), else each lane's pairs (4 bytes; the 4 lanes
  // of a row cover 16 bytes). The staged path costs ~9 us per wave of 128x256 tiles on the H200
  // (4096^3 bf16: 0.335 ms with it, 0.299 ms without any epilogue; notes/sm80-mma.md).
  if constexpr (Mode == TileStore::epilogue && std::is_same_v<Epi, epilogue::Builtin> &&
                (C.math == MathOp::mma_f16 || C.math == MathOp::mma_bf16)) {
    using T = element_t<operand_type(C.math)>;
    if (register_store<C, Epi, Mode>(p, m0, n0)) {
      T* d = static_cast<T*>(p.d) + static_cast<std::int64_t>(row0) * p.ldd + col0;
      const T* bias = p.ep.bias != nullptr ? static_cast<const T*>(p.ep.bias) + col0 : nullptr;
      const RegisterEpilogue<T, Mainloop::NI> f(p.ep, bias);
      if constexpr (Mainloop::NI % 4 == 0) {
        if (((reinterpret_cast<std::uintptr_t>(p.d) | static_cast<std::uintptr_t>(p.ldd) * sizeof(T)) & 15) == 0) {
          store_warp_tile_16b<Mainloop, T>(acc, d, p.ldd, f);
          return;
        }
      }
      const int g = lane >> 2, t = lane & 3;
#pragma unroll
      for (int i = 0; i < Mainloop::MI; ++i)
#pragma unroll
        for (int j = 0; j < Mainloop::NI; ++j)
#pragma unroll
          for (int h = 0; h < 2; ++h)
            *reinterpret_cast<decltype(f(0, 0.0f, 0.0f))*>(d + (i * 16 + h * 8 + g) * p.ldd + j * 8 + 2 * t) =
                f(j, acc[i][j][2 * h], acc[i][j][2 * h + 1]);
      return;
    }
  }

#pragma unroll 1
  for (int band = 0; band < Mainloop::bands; ++band) {
    __syncwarp();
    visit_band_at<Mainloop>(band, acc, [&](int r, int c, float v0, float v1) {
      *reinterpret_cast<float2*>(stage + r * stride + c) = make_float2(v0, v1);
    });
    __syncwarp();
#pragma unroll 1
    for (int v = lane; v < vectors; v += 32) {
      const int r = v / (WN / 4), c = (v % (WN / 4)) * 4;
      const int row = row0 + band * band_rows + r, col = col0 + c;
      if (row >= p.m || col >= p.n) continue;
      const int n = min(4, p.n - col);
      float x[4];
      *reinterpret_cast<float4*>(x) = *reinterpret_cast<const float4*>(stage + r * stride + c);
      if constexpr (Mode == TileStore::partial)  // partial_ld % 4 == 0: vector stores
        epilogue::store_vec4(p.partials + slice * p.partial_slice + static_cast<std::int64_t>(row) * p.partial_ld + col, x, n, true);
      else
        epilogue_store<Epi>(p, row, col, n, x);
    }
  }
}

// Split-K, cluster mode (cluster_split_k.cuh): after the mainloop of its slice, the CTA of cluster rank r
// stages its fp32 tile in shared memory; rank r adds part r of the tile (4-column groups
// [quads·r/ranks, quads·(r+1)/ranks)) over the ranks' tiles in rank order. One cluster per tile: that is
// the sum, and the rank applies the epilogue to its part. Several: the rank stores its part's sum as the
// cluster's partial (partials + cluster·partial_slice), arrives at the (tile, rank) counter, and the last
// cluster to arrive adds the clusters' partials in cluster order (8 loads in flight per group) and applies
// the epilogue. One copy of the epilogue in the code. No CTA leaves before its peers have read its tile.
template <GemmConfig C, class Epi, class Mainloop, class Acc>
__device__ __forceinline__ void cluster_split_k_finish(const GemmParams<typename Epi::Params>& p, Acc& acc, char* smem, int m0,
                                                       int n0) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr int ld = cluster_tile_ld(C), quads_per_row = C.tile.n / 4, quads = C.tile.m * quads_per_row;
  float* tile = reinterpret_cast<float*>(smem);
  {
    const int warp = threadIdx.x >> 5;
    float* w = tile + Mainloop::warp_row0(warp) * ld + Mainloop::warp_col0(warp);
    visit_warp_tile<Mainloop>(acc, [&](int r, int c, float v0, float v1) { *reinterpret_cast<float2*>(w + r * ld + c) = make_float2(v0, v1); });
  }
  cluster_split_sync();  // every rank's tile is staged
  const unsigned ranks = static_cast<unsigned>(p.split_cluster), rank = cluster_split_rank();
  const int clusters = p.split_k / p.split_cluster;
  const QuadRange part = cluster_split_part(quads, rank, ranks);
  // f(row, col, n, at) for each 4-column group of this rank's part that lies inside D: its row and column
  // in D, its width n (1 to 4) and its offset `at` in the staged tiles.
  auto for_each_part_quad = [&](auto&& f) {
#pragma unroll 1
    for (int q = part.first + static_cast<int>(threadIdx.x); q < part.end; q += C.threads()) {
      const int row = m0 + q / quads_per_row, col = n0 + (q % quads_per_row) * 4;
      const int n = row < p.m && col < p.n ? min(4, p.n - col) : 0;
      if (n == 0) continue;
      f(row, col, n, (q / quads_per_row) * ld + (q % quads_per_row) * 4);
    }
  };
  bool finish = true;
  if (clusters > 1) {  // this cluster's sum of the part is its partial; the last cluster to arrive finishes
    const std::int64_t cluster = static_cast<std::int64_t>(blockIdx.y) / p.split_cluster;
    for_each_part_quad([&](int row, int col, int n, int at) {
      float x[4];
      cluster_quad_sum(tile, ranks, at, x);
      epilogue::store_vec4(p.partials + cluster * p.partial_slice + static_cast<std::int64_t>(row) * p.partial_ld + col, x, n, true);
    });
    cuda::ptx::barrier_cluster_arrive();  // done with the peers' tiles
    finish = arrive_last(p.semaphores + (static_cast<std::int64_t>(blockIdx.x) * p.split_cluster + rank), clusters);
  }
  if (finish) {
    for_each_part_quad([&](int row, int col, int n, int at) {
      float x[4];
      if (clusters == 1) {
        cluster_quad_sum(tile, ranks, at, x);
      } else {  // the clusters' partials in cluster order, 8 loads in flight
        constexpr int batch = 8;
        const float* src = p.partials + static_cast<std::int64_t>(row) * p.partial_ld + col;
        load_partial(src, n, x);
#pragma unroll 1
        for (int j0 = 1; j0 < clusters; j0 += batch) {
          float v[batch][4];
#pragma unroll
          for (int j = 0; j < batch; ++j)
            if (j0 + j < clusters) load_partial(src + (j0 + j) * p.partial_slice, n, v[j]);
#pragma unroll
          for (int j = 0; j < batch; ++j)
            if (j0 + j < clusters)
#pragma unroll
              for (int i = 0; i < 4; ++i) x[i] += v[j][i];
        }
      }
      epilogue_store<Epi>(p, row, col, n, x);
    });
  }
  if (clusters == 1) cuda::ptx::barrier_cluster_arrive();  // done with the peers' tiles
  cuda::ptx::barrier_cluster_wait();  // the peers are done with this CTA's tile: it may exit
#else
  (void)p, (void)acc, (void)smem, (void)m0, (void)n0;
  __trap();  // the launcher runs cluster mode only on an sm_90 image
#endif
}

// Kernels take their configuration as a type (CfgT::value is a GemmConfig): nvcc's host stubs cannot
// spell class-type template arguments of __global__ functions.
template <class CfgT, class Epi>
__global__ void __launch_bounds__(CfgT::value.threads(), target_blocks_per_sm(CfgT::value)) gemm_kernel(const GemmParams<typename Epi::Params> p) {
  static constexpr GemmConfig C = CfgT::value;
  using Mainloop = typename MainloopFor<C>::type;
  using T = typename MainloopFor<C>::T;
  extern __shared__ __align__(128) char smem[];
  const int tiles_m = (p.m + C.tile.m - 1) / C.tile.m, tiles_n = (p.n + C.tile.n - 1) / C.tile.n;
  const TileCoord tile = grouped_raster(blockIdx.x, tiles_m, tiles_n, p.raster_group);
  const int m0 = tile.m * C.tile.m, n0 = tile.n * C.tile.n;

  constexpr bool splittable = supports_split_k(C);
  const int slice = splittable && p.split_k > 1 ? static_cast<int>(blockIdx.y) : 0;
  typename Mainloop::Accumulators acc;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // Programmatic dependent launch (launch_with: sm80_pdl_enabled, sm90 devices): the next kernel of the
  // stream may start its prologue now; its cudaGridDependencySynchronize waits for this grid's completion
  // and memory. This grid waits for the previous one here, in every thread, before any global access
  // (above: kernel parameters only; below: the mainloop's A/B copies, then C, bias, residual, D, split-K
  // partials and counters, cluster split-K partials and counters). No-ops without the launch attribute.
  cudaTriggerProgrammaticLaunchCompletion();
  cudaGridDependencySynchronize();
#endif
  if constexpr (splittable) {
    const KRange kr = k_slice((p.k + C.tile.k - 1) / C.tile.k, slice, p.split_k);
    Mainloop::run(acc, smem, static_cast<const T*>(p.a), p.lda, static_cast<const T*>(p.b), p.ldb, m0, n0, p.m, p.n,
                  p.k, kr.first, kr.count);
  } else {
    Mainloop::run(acc, smem, static_cast<const T*>(p.a), p.lda, static_cast<const T*>(p.b), p.ldb, m0, n0, p.m, p.n, p.k);
  }
  __syncthreads();  // the pipeline's shared memory becomes the epilogue's staging area

  if (splittable && p.split_k > 1) {
    if constexpr (supports_cluster_split_k(C)) {
      static_assert(cluster_tile_bytes(C) <= estimate_resources(C).smem_bytes, "cluster split-K stages the fp32 tile in shared memory");
      if (p.split_cluster > 1) {
        cluster_split_k_finish<C, Epi, Mainloop>(p, acc, smem, m0, n0);
        return;
      }
    }
    store_tile<C, Epi, Mainloop, TileStore::partial>(p, acc, smem, m0, n0, slice);
    if (p.split_serial) serial_split_k_finish<Epi, C.tile.m, C.tile.n, C.threads()>(p, m0, n0, slice);
    return;  // parallel mode: splitk_reduce_kernel finishes
  }
  store_tile<C, Epi, Mainloop>(p, acc, smem, m0, n0);
}

// Split-K, parallel mode: D = epilogue(sum of the split_k partials), in the fixed order. Each
// 4-column group of a row gets `lanes` consecutive threads (a power of two ≥ the number of slice
// groups): lane g adds slice group g, then lane 0 adds the group sums in order and stores.
inline constexpr int splitk_reduce_threads = 256;
static_assert((max_split_k + split_k_group_slices - 1) / split_k_group_slices <= splitk_reduce_threads,
              "a block of the reduction holds every slice group of one 4-column group");

template <class Epi>
__global__ void __launch_bounds__(splitk_reduce_threads) splitk_reduce_kernel(const GemmParams<typename Epi::Params> p,
                                                                              int lanes) {
  __shared__ float4 group_sums[splitk_reduce_threads];
  const int groups = (p.split_k + split_k_group_slices - 1) / split_k_group_slices;
  const int quads_n = (p.n + 3) / 4;
  const int g = threadIdx.x % lanes;
  const std::int64_t quad = static_cast<std::int64_t>(blockIdx.x) * (splitk_reduce_threads / lanes) + threadIdx.x / lanes;
  const bool in = quad < static_cast<std::int64_t>(p.m) * quads_n;
  const int row = in ? static_cast<int>(quad / quads_n) : 0, col = in ? static_cast<int>(quad % quads_n) * 4 : 0;
  const int n = min(4, p.n - col);
  float x[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (in && g < groups) group_sum(p, row, col, n, g, x);
  group_sums[threadIdx.x] = make_float4(x[0], x[1], x[2], x[3]);
  __syncthreads();
  if (!in || g != 0) return;
  for (int h = 1; h < groups; ++h) {
    const float4 y = group_sums[threadIdx.x + h];
    x[0] += y.x;
    x[1] += y.y;
    x[2] += y.z;
    x[3] += y.w;
  }
  epilogue_store<Epi>(p, row, col, n, x);
}

// ---- Host side -------------------------------------------------------------------------------------

// Raise the dynamic shared-memory limit once per device for this kernel.
template <auto Kernel>
Status ensure_smem_limit(int bytes) {
  if (bytes <= 48 * 1024) return {};
  static std::atomic<std::uint64_t> configured{0};
  int dev = 0;
  KTUNE_RETURN_IF_ERROR(cuda_status(cudaGetDevice(&dev), "cudaGetDevice"));
  const std::uint64_t bit = device_bit(dev);
  if (configured.load(std::memory_order_acquire) & bit) return {};
  KTUNE_RETURN_IF_ERROR(cuda_status(cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes),
                                    "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)"));
  configured.fetch_or(bit, std::memory_order_acq_rel);
  return {};
}

// Programmatic dependent launch of the sm80 kernel (gemm_kernel triggers its dependents and waits for the
// previous grid before its first global access, in its sm_90-and-newer code): by pdl.hpp's rule and switch
// (KTUNE_SM80_PDL=0 never, =1 always, else M·N·K ≤ 2^33), and only where Kernel's image for the current
// device has that code: compiled for sm_90 or newer (ptxVersion) and running on a compute capability ≥ 9.0
// device (binaryVersion). An sm_80 image has no wait; launched programmatically after a kernel that
// triggers early it would race it. The image is looked up once per device.
template <auto Kernel>
bool pdl_image() {
  static std::atomic<std::uint64_t> known{0}, capable{0};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  const std::uint64_t bit = device_bit(dev);
  if (known.load(std::memory_order_acquire) & bit) return (capable.load(std::memory_order_relaxed) & bit) != 0;
  cudaFuncAttributes fa{};
  bool yes = false;
  if (cudaFuncGetAttributes(&fa, Kernel) == cudaSuccess) yes = fa.binaryVersion >= 90 && fa.ptxVersion >= 90;
  else (void)cudaGetLastError();
  if (yes) capable.fetch_or(bit, std::memory_order_relaxed);
  known.fetch_or(bit, std::memory_order_release);
  return yes;
}
// Per launch, GemmLaunchOptions::pdl overrides the switch and the rule (pdl_launch): `on` still needs the
// image (else a plain launch), `off` never launches programmatically.
template <auto Kernel>
bool sm80_pdl_enabled(const GemmDesc& d, PdlChoice choice = PdlChoice::rule) {
  return pdl_launch(choice, sm80_pdl_mode(), d) && pdl_image<Kernel>();
}

// Kernel<<<grid, threads, smem, stream>>>(q), or the same through cudaLaunchKernelEx with
// cudaLaunchAttributeProgrammaticStreamSerialization where `programmatic`.
template <auto Kernel, class Params>
cudaError_t launch_grid(dim3 grid, int threads, int smem, cudaStream_t stream, bool programmatic, const Params& q) {
  if (!programmatic) {
    Kernel<<<grid, threads, smem, stream>>>(q);
    return cudaGetLastError();
  }
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = dim3(static_cast<unsigned>(threads), 1, 1);
  cfg.dynamicSmemBytes = static_cast<std::size_t>(smem);
  cfg.stream = stream;
  cudaLaunchAttribute a = pdl_attribute();
  cfg.attrs = &a;
  cfg.numAttrs = 1;
  return cudaLaunchKernelEx(&cfg, Kernel, q);
}

// Kernel parameters of a resolved, validated problem (shared by every GEMM launcher).
template <class EpiParams>
GemmParams<EpiParams> make_gemm_params(const GemmDesc& d, const GemmOperands& ops, const GemmLaunchOptions& opt,
                                       const EpiParams& ep) {
  GemmParams<EpiParams> p{};
  p.m = static_cast<int>(d.m);
  p.n = static_cast<int>(d.n);
  p.k = static_cast<int>(d.k);
  p.a = ops.a;
  p.lda = d.lda;
  p.b = ops.b;
  p.ldb = d.ldb;
  p.d = ops.d;
  p.ldd = d.ldd;
  p.d_type = d.d_type;
  p.d_vec4 = alignment_of(d, ops).d % 4 == 0;
  p.raster_group = opt.raster_group > 0 ? opt.raster_group : 8;
  p.ep = ep;
  return p;
}

// Split-K, parallel mode's second kernel (sm80 and sm90 launchers): a plain launch after the GEMM. (A
// programmatic dependent launch, triggered at the GEMM's start, was 0.9-3 us slower per call on the
// H200 for 64x64x65536: notes/split-k.md.)
template <class Epi>
Status launch_splitk_reduce(const GemmParams<typename Epi::Params>& q, const GemmDesc& d, cudaStream_t stream) {
  const int groups = split_k_groups(q.split_k);
  int lanes = 1;
  while (lanes < groups) lanes *= 2;  // ≤ 64 (max_split_k = 256) ≤ splitk_reduce_threads
  const std::int64_t quads = d.m * ceil_div(d.n, std::int64_t{4}), per_block = splitk_reduce_threads / lanes;
  splitk_reduce_kernel<Epi><<<static_cast<unsigned>(ceil_div(quads, per_block)), splitk_reduce_threads, 0, stream>>>(q, lanes);
  return cuda_status(cudaGetLastError(), "split-K reduction kernel launch");
}

// q's split-K fields over `workspace` laid out as ws (split_k_layout for a GEMM of m rows): the fp32
// partials and, when `counters` > 0, that many split-K counters from ktune's per-stream pool (zero, left
// zero: no memset), else the workspace's, zeroed in stream (`what` names that memset in its error).
template <class EpiParams>
Status set_split_k_workspace(GemmParams<EpiParams>& q, const SplitKLayout& ws, std::int64_t m, void* workspace,
                             std::int64_t counters, cudaStream_t stream, const char* what = "split-K counters") {
  q.partials = reinterpret_cast<float*>(static_cast<char*>(workspace) + ws.partials_offset);
  q.partial_ld = ws.partial_ld;
  q.partial_slice = ws.partial_ld * m;
  if (counters > 0) {
    q.semaphores = split_k_counter_pool().get(stream, counters);
    if (q.semaphores == nullptr) {
      q.semaphores = static_cast<int*>(workspace);
      KTUNE_RETURN_IF_ERROR(cuda_status(cudaMemsetAsync(workspace, 0, ws.semaphore_bytes, stream), what));
    }
  }
  return {};
}

// Clusters of cfg's cluster shape (its cluster-dimension attribute) that fit on the whole device at once;
// 0 if none, or if the occupancy query fails. (The sm80 cluster split-K launcher and the sm90 launchers.)
template <auto Kernel>
int resident_clusters(const cudaLaunchConfig_t& cfg) {
  int n = 0;
  if (cudaOccupancyMaxActiveClusters(&n, Kernel, &cfg) != cudaSuccess) {
    (void)cudaGetLastError();
    n = 0;
  }
  return n;
}

// Split-K, cluster mode (cluster_split_k_finish): grid (tiles, split_k) in clusters of (1, split_cluster, 1).
// Runs only where clusters exist and the kernel's image has the sm_90 code (else `unsupported`, nothing
// launched); clusters of more than 8 CTAs need the non-portable attribute and must fit the device.
// Programmatic (sm80_pdl_enabled) where `programmatic`.
template <auto Kernel, class EpiParams>
Status launch_cluster_split_k(const GemmConfig& c, const GemmDesc& d, const GemmOperands& ops, const GemmLaunchOptions& opt,
                              const GemmParams<EpiParams>& p, std::int64_t tiles, int smem, cudaStream_t stream,
                              bool programmatic = false) {
  int dev = 0;
  KTUNE_RETURN_IF_ERROR(cuda_status(cudaGetDevice(&dev), "cudaGetDevice"));
  const std::uint64_t bit = device_bit(dev);
  // Per cluster size, the devices on which it was found to run (checked once: these queries cost more
  // than the launch).
  static std::atomic<std::uint64_t> fits[max_split_cluster + 1] = {};
  const bool known = (fits[opt.split_cluster].load(std::memory_order_acquire) & bit) != 0;
  if (!known) {
    DeviceInfo info;
    KTUNE_RETURN_IF_ERROR(current_device(info));
    cudaFuncAttributes fa{};
    KTUNE_RETURN_IF_ERROR(cuda_status(cudaFuncGetAttributes(&fa, Kernel), "cudaFuncGetAttributes"));
    if (info.cc < 90 || fa.binaryVersion < 90)
      return error(StatusCode::unsupported, "cluster split-K needs an sm90 device and the kernel's sm_90 image (device sm" +
                                                std::to_string(info.cc) + ", image sm_" + std::to_string(fa.binaryVersion) + ")");
    if (opt.split_cluster > 8)
      KTUNE_RETURN_IF_ERROR(cuda_status(cudaFuncSetAttribute(Kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1),
                                        "cudaFuncSetAttribute(NonPortableClusterSizeAllowed)"));
  }
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(opt.split_k), 1);
  cfg.blockDim = dim3(static_cast<unsigned>(c.threads()), 1, 1);
  cfg.dynamicSmemBytes = static_cast<std::size_t>(smem);
  cfg.stream = stream;
  cudaLaunchAttribute attrs[3] = {};
  attrs[0].id = cudaLaunchAttributeClusterDimension;
  attrs[0].val.clusterDim.x = 1;
  attrs[0].val.clusterDim.y = static_cast<unsigned>(opt.split_cluster);
  attrs[0].val.clusterDim.z = 1;
  // Load-balancing cluster scheduling. H200 s7-final, 16x4096x4096 bf16 16x64x128 @split4c4 (256 CTAs in
  // clusters of 4): 11.86 us, against 19.01 with the driver's default policy (spread: 19.00), 66 clusters
  // of 4 resident instead of 62; @split4c2 and @split2c2 unchanged (14.37 / 15.46 vs 14.36 / 15.41 us).
  attrs[1].id = cudaLaunchAttributeClusterSchedulingPolicyPreference;
  attrs[1].val.clusterSchedulingPolicyPreference = cudaClusterSchedulingPolicyLoadBalancing;
  cfg.attrs = attrs;
  cfg.numAttrs = 2;
  if (!known) {
    if (resident_clusters<Kernel>(cfg) < 1)
      return error(StatusCode::unsupported, "cluster split-K: no cluster of " + std::to_string(opt.split_cluster) +
                                                " CTAs of this instance fits the device");
    fits[opt.split_cluster].fetch_or(bit, std::memory_order_acq_rel);
  }
  if (programmatic) {  // (after the occupancy query, which was made without it)
    attrs[2] = pdl_attribute();
    cfg.numAttrs = 3;
  }
  GemmParams<EpiParams> q = p;
  q.split_k = opt.split_k;
  q.split_cluster = opt.split_cluster;
  const SplitKLayout ws = split_k_layout(c, d, opt);
  if (ws.total_bytes > 0)  // several clusters per tile: their partials, and a counter per (tile, rank)
    KTUNE_RETURN_IF_ERROR(set_split_k_workspace(q, ws, d.m, ops.workspace, tiles * opt.split_cluster, stream, "cluster split-K counters"));
  return cuda_status(cudaLaunchKernelEx(&cfg, Kernel, q), "GEMM kernel launch (cluster split-K)");
}

template <class CfgT, class Epi>
Status launch_with(const GemmDesc& d0, const typename Epi::Params& ep, const GemmOperands& ops,
                   const GemmLaunchOptions& opt, cudaStream_t stream) {
  constexpr GemmConfig C = CfgT::value;
  constexpr auto kernel = gemm_kernel<CfgT, Epi>;
  constexpr int smem = estimate_resources(C).smem_bytes;
  const GemmDesc d = resolved(d0);
  const GemmParams<typename Epi::Params> p = make_gemm_params(d, ops, opt, ep);
  const std::int64_t tiles = ceil_div(d.m, std::int64_t{C.tile.m}) * ceil_div(d.n, std::int64_t{C.tile.n});
  if (tiles > 0x7fffffff) return error(StatusCode::invalid_argument, "too many output tiles for one launch");
  KTUNE_RETURN_IF_ERROR(check_launch_option_ranges(opt));  // split_k, split_mode, split_cluster
  if (opt.stream_k) return error(StatusCode::unsupported, "stream-K runs on sm90 wgmma instances only");
  if (opt.split_k > 1 && !supports_split_k(C))
    return error(StatusCode::unsupported, "this instance does not support split-K (split_k=" + std::to_string(opt.split_k) + ")");
  const bool cluster_mode = opt.split_k > 1 && opt.split_mode == SplitKMode::cluster;
  if (cluster_mode && !supports_cluster_split_k(C))
    return error(StatusCode::unsupported, "this instance does not support cluster split-K (sm80 tiles of at most 32 rows)");
  if (opt.split_k > 1) {
    const std::size_t need = split_k_layout(C, d, opt).total_bytes;
    if (need > 0 && (ops.workspace == nullptr || ops.workspace_bytes < need))
      return error(StatusCode::invalid_argument, "workspace too small: split_k=" + std::to_string(opt.split_k) +
                                                     " needs " + std::to_string(need) + " bytes, got " +
                                                     std::to_string(ops.workspace == nullptr ? 0 : ops.workspace_bytes));
    if (need > 0 && reinterpret_cast<std::uintptr_t>(ops.workspace) % 16 != 0)
      return error(StatusCode::misaligned, "workspace must be 16-byte aligned");
  }
  KTUNE_RETURN_IF_ERROR(ensure_smem_limit<kernel>(smem));
  // Programmatic dependent launch (sm90 devices; the split-K reduction stays a plain launch).
  const bool pdl = sm80_pdl_enabled<kernel>(d, opt.pdl);
  if constexpr (supports_cluster_split_k(C))
    if (cluster_mode) return launch_cluster_split_k<kernel>(C, d, ops, opt, p, tiles, smem, stream, pdl);
  if (opt.split_k <= 1)
    return cuda_status(launch_grid<kernel>(dim3(static_cast<unsigned>(tiles)), C.threads(), smem, stream, pdl, p), "GEMM kernel launch");
  // Split-K: slices along grid y, partials (and serial mode's counters) in the workspace.
  GemmParams<typename Epi::Params> q = p;
  q.split_k = opt.split_k;
  q.split_serial = opt.split_mode == SplitKMode::serial;
  KTUNE_RETURN_IF_ERROR(set_split_k_workspace(q, split_k_layout(C, d, opt), d.m, ops.workspace,
                                              q.split_serial ? tiles * split_k_counters_per_tile(opt.split_k) : 0, stream));
  KTUNE_RETURN_IF_ERROR(cuda_status(launch_grid<kernel>(dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(opt.split_k)),
                                                       C.threads(), smem, stream, pdl, q),
                                    "GEMM kernel launch (split-K)"));
  return q.split_serial ? Status{} : launch_splitk_reduce<Epi>(q, d, stream);
}

// Workspace bytes an instance needs (GemmKernelEntry::workspace_size): split-K partials and counters.
template <class CfgT>
std::size_t workspace_size_of(const GemmDesc& d, const GemmLaunchOptions& opt) {
  return split_k_layout(CfgT::value, resolved(d), opt).total_bytes;
}
// The entry's workspace_size: null for instances without split-K (they need no workspace).
template <class CfgT>
constexpr std::size_t (*workspace_size_fn())(const GemmDesc&, const GemmLaunchOptions&) {
  if constexpr (supports_split_k(CfgT::value)) return &workspace_size_of<CfgT>;
  else return nullptr;
}

// The dispatch-table launcher: the built-in run-time epilogue.
template <class CfgT>
Status launch_builtin(const GemmDesc& d0, const GemmOperands& ops, const GemmLaunchOptions& opt, cudaStream_t stream) {
  const GemmDesc d = resolved(d0);
  const auto ep = epilogue::make_builtin_params(d.epilogue, ops.c, d.ldc, ops.bias, ops.residual, d.ldr);
  return launch_with<CfgT, epilogue::Builtin>(d, ep, ops, opt, stream);
}

template <class CfgT>
cudaError_t attributes_of(cudaFuncAttributes* a) {
  return cudaFuncGetAttributes(a, gemm_kernel<CfgT, epilogue::Builtin>);
}

}  // namespace ktune::kernel
