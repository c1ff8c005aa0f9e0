// ktune/conv/kernel/conv_kernel.cuh — the implicit-GEMM conv2d fprop kernel and its host launcher.
// It is the GEMM kernel with one piece swapped: the A copies come from ConvAIterator (an im2col gather
// from NHWC activations) instead of a dense TileCopy. Schedule (grouped raster), mainloop
// (MmaMainloop::run_pipelined: cp.async stages, swizzled tiles, ldmatrix, mma.sync), B copies (the
// KRSC filters as a column-major GEMM B) and the fused epilogue (store_tile) are the GEMM's own.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "ktune/conv/dispatch.hpp"
#include "ktune/conv/kernel/iterator.cuh"
#include "ktune/gemm/kernel/gemm_kernel.cuh"

namespace ktune::kernel {

template <class EpiParams>
struct ConvParams {
  GemmParams<EpiParams> g;  // the implicit GEMM: a = x, b = w (ldb = R·S·C), d = y (ldd = K), m, n = K, k = R·S·C
  ConvGeometry geo;
};

// The types both kernels below build from CfgT (CfgT::value is a ConvConfig): the operand type, the GEMM's
// mainloop, the im2col gather of A and the GEMM's k-tile iterator for B (the filters).
template <class CfgT>
struct ConvKernelTypes {
  static constexpr ConvConfig CC = CfgT::value;
  static constexpr GemmConfig C = CC.gemm;
  using T = element_t<operand_type(C.math)>;
  using Mainloop = MmaMainloop<C, T>;
  using AIter = ConvAIterator<CC, T>;
  using BIter = OperandTileIterator<typename Mainloop::CopyB, true, T>;
  static_assert(std::is_same_v<typename Mainloop::TileA, typename AIter::Tile>, "A is gathered into the mainloop's tile");
};

template <class CfgT, class Epi>
__global__ void __launch_bounds__(CfgT::value.gemm.threads(), target_blocks_per_sm(CfgT::value.gemm))
    conv2d_fprop_kernel(const ConvParams<typename Epi::Params> p) {
  using Types = ConvKernelTypes<CfgT>;
  static constexpr GemmConfig C = Types::C;
  using T = typename Types::T;
  using Mainloop = typename Types::Mainloop;
  extern __shared__ __align__(128) char smem[];
  const int tiles_m = (p.g.m + C.tile.m - 1) / C.tile.m, tiles_n = (p.g.n + C.tile.n - 1) / C.tile.n;
  const TileCoord tile = grouped_raster(blockIdx.x, tiles_m, tiles_n, p.g.raster_group);
  const int m0 = tile.m * C.tile.m, n0 = tile.n * C.tile.n;
  const int tid = threadIdx.x;

  // Split-K (conv_supports_split_k): slice blockIdx.y runs its k-tiles [kt_first, kt_first + kt_count).
  constexpr bool splittable = conv_supports_split_k(Types::CC);
  int kt_first = 0, kt_count = (p.g.k + C.tile.k - 1) / C.tile.k, slice = 0;
  if constexpr (splittable) {
    if (p.g.split_k > 1) {
      slice = static_cast<int>(blockIdx.y);
      const KRange kr = k_slice(kt_count, slice, p.g.split_k);
      kt_first = kr.first;
      kt_count = kr.count;
    }
  }

  typename Types::AIter a_iter;
  a_iter.init(p.geo, m0, tid, kt_first);
  const T* X = static_cast<const T*>(p.g.a);
  typename Mainloop::Accumulators acc;
  // B (the filters, K-contiguous) by the GEMM's k-tile iterator where it applies (a pointer, stride and
  // masks instead of an address per vector), else by TileCopy.
  using BIter = typename Types::BIter;
  if constexpr (conv_b_iterated(Types::CC)) {
    static_assert(BIter::applies, "the register model (conv_b_iterated) and the B copy agree");
    BIter b_iter(static_cast<const T*>(p.g.b), p.g.ldb, n0, kt_first, p.g.n, p.g.k, tid);
    Mainloop::run_pipelined_tiles(acc, smem, kt_count, [&](int slot, int kt) {
      char* sA = smem + slot * Mainloop::stage_bytes;
      a_iter.load(sA, X, p.geo, kt_first + kt);
      b_iter.copy_and_advance(sA + Mainloop::TileA::bytes);
    });
  } else {
    static_assert(!BIter::applies, "the register model (conv_b_iterated) and the B copy agree");
    const T* B = static_cast<const T*>(p.g.b) + std::int64_t(n0) * p.g.ldb;
    Mainloop::run_pipelined_tiles(acc, smem, kt_count, [&](int slot, int kt) {
      char* sA = smem + slot * Mainloop::stage_bytes;
      char* sB = sA + Mainloop::TileA::bytes;
      const int k0 = (kt_first + kt) * C.tile.k;
      a_iter.load(sA, X, p.geo, kt_first + kt);
      Mainloop::CopyB::copy(sB, B + k0, p.g.ldb, p.g.n - n0, p.g.k - k0, tid);
    });
  }
  __syncthreads();  // the pipeline's shared memory becomes the epilogue's staging area

  if constexpr (splittable) {
    if (p.g.split_k > 1) {  // the GEMM kernel's split-K tail: fp32 partials, then serial or parallel reduction
      store_tile<C, Epi, Mainloop, TileStore::partial>(p.g, acc, smem, m0, n0, slice);
      if (p.g.split_serial) serial_split_k_finish<Epi, C.tile.m, C.tile.n, C.threads()>(p.g, m0, n0, slice);
      return;
    }
  }
  store_tile<C, Epi, Mainloop>(p.g, acc, smem, m0, n0);
}

// Persistent form (ConvLaunchOptions::persistent > 0, conv_supports_persistent): a grid of at most the CTAs
// resident at once walks the output tiles blockIdx.x, + gridDim.x, … in grouped-raster order. On the
// short-reduction layers a CTA otherwise runs fill -> 2-4 k-tiles -> epilogue once and nothing hides the
// fill's latency; here, when a tile's epilogue runs in registers (register_store: fused bias + ReLU or
// alpha on a whole tile), the next tile's prologue (stages-1 k-tiles of the gather and the filters) is issued
// before it, so those loads fly under the stores. Otherwise (the staged epilogue uses the ring's shared
// memory) it is issued after the epilogue. The mainloop, gather, B iterator and epilogue are the
// one-tile kernel's.
template <class CfgT, class Epi>
__global__ void __launch_bounds__(CfgT::value.gemm.threads(), conv_persistent_ctas_per_sm(CfgT::value))
    conv2d_fprop_persistent_kernel(const ConvParams<typename Epi::Params> p) {
  using Types = ConvKernelTypes<CfgT>;
  static constexpr GemmConfig C = Types::C;
  using T = typename Types::T;
  using Mainloop = typename Types::Mainloop;
  using BIter = typename Types::BIter;
  static_assert(conv_supports_persistent(Types::CC) && BIter::applies, "persistent: optimized gather, filters by the k-tile iterator");
  extern __shared__ __align__(128) char smem[];
  const int tiles_m = (p.g.m + C.tile.m - 1) / C.tile.m, tiles_n = (p.g.n + C.tile.n - 1) / C.tile.n;
  const int tiles = tiles_m * tiles_n, kt_count = (p.g.k + C.tile.k - 1) / C.tile.k;
  const int tid = threadIdx.x;
  const T* X = static_cast<const T*>(p.g.a);
  const T* W = static_cast<const T*>(p.g.b);

  int t = static_cast<int>(blockIdx.x);
  const TileCoord first = grouped_raster(t, tiles_m, tiles_n, p.g.raster_group);
  int m0 = first.m * C.tile.m, n0 = first.n * C.tile.n;
  typename Types::AIter a_iter;
  a_iter.init(p.geo, m0, tid, 0);
  BIter b_iter(W, p.g.ldb, n0, 0, p.g.n, p.g.k, tid);
  auto load = [&](int slot, int kt) {
    char* sA = smem + slot * Mainloop::stage_bytes;
    a_iter.load(sA, X, p.geo, kt);
    b_iter.copy_and_advance(sA + Mainloop::TileA::bytes);
  };
  // Aim the gather and the B iterator at tile `tile_id` and issue its prologue into slots 0 .. stages-2.
  auto start = [&](int tile_id) {
    const TileCoord tc = grouped_raster(tile_id, tiles_m, tiles_n, p.g.raster_group);
    m0 = tc.m * C.tile.m;
    n0 = tc.n * C.tile.n;
    a_iter.init(p.geo, m0, tid, 0);
    b_iter = BIter(W, p.g.ldb, n0, 0, p.g.n, p.g.k, tid);
    Mainloop::issue_prologue(kt_count, load);
  };
  Mainloop::issue_prologue(kt_count, load);
  typename Mainloop::Accumulators acc;
  for (;;) {
    Mainloop::template run_pipelined_tiles<false, true>(acc, smem, kt_count, load);
    __syncthreads();  // every warp is done with the ring: the next prologue (or the staged epilogue) may use it
    const int next = t + static_cast<int>(gridDim.x), tm0 = m0, tn0 = n0;
    const bool in_registers = register_store<C, Epi>(p.g, tm0, tn0);  // uniform over the CTA
    if (in_registers && next < tiles) start(next);
    store_tile<C, Epi, Mainloop>(p.g, acc, smem, tm0, tn0);
    if (next >= tiles) return;
    if (!in_registers) {
      __syncthreads();  // the staged epilogue has left the ring
      start(next);
    }
    t = next;
  }
}

// ---- Host side -------------------------------------------------------------------------------------

inline ConvGeometry conv_geometry(const Conv2dDesc& d) {
  const ConvShape s = conv_shape(d);
  ConvGeometry g{};
  g.h = static_cast<int>(d.h);
  g.w = static_cast<int>(d.w);
  g.c = static_cast<int>(d.c);
  g.s = static_cast<int>(d.s);
  g.q = static_cast<int>(s.q);
  g.pq = static_cast<int>(s.p * s.q);
  g.m = static_cast<int>(s.m);
  g.kgemm = static_cast<int>(s.kgemm);
  g.pad_h = static_cast<int>(d.pad_h);
  g.pad_w = static_cast<int>(d.pad_w);
  g.stride_h = static_cast<int>(d.stride_h);
  g.stride_w = static_cast<int>(d.stride_w);
  g.dil_h = static_cast<int>(d.dil_h);
  g.dil_w = static_cast<int>(d.dil_w);
  return g;
}

template <class CfgT, class Epi>
Status launch_conv_with(const Conv2dDesc& d, const typename Epi::Params& ep, const Conv2dOperands& ops,
                        const ConvLaunchOptions& opt, cudaStream_t stream) {
  constexpr ConvConfig CC = CfgT::value;
  constexpr auto kernel = conv2d_fprop_kernel<CfgT, Epi>;
  constexpr int smem = conv_resources(CC).smem_bytes;
  if (opt.cluster_k > 1) return error(StatusCode::unsupported, "mma.sync conv instances do not split K in clusters (cluster_k > 1)");
  if (opt.split_k > 1 && !conv_supports_split_k(CC))
    return error(StatusCode::unsupported, "this mma.sync conv instance does not split K (split_k > 1)");
  const ConvShape s = conv_shape(d);
  ConvParams<typename Epi::Params> p{};
  p.g.m = static_cast<int>(s.m);
  p.g.n = static_cast<int>(d.k);
  p.g.k = static_cast<int>(s.kgemm);
  p.g.a = ops.x;
  p.g.lda = s.kgemm;  // unused: A is gathered
  p.g.b = ops.w;
  p.g.ldb = s.kgemm;
  p.g.d = ops.y;
  p.g.ldd = d.k;
  p.g.d_type = d.out_type;
  p.g.d_vec4 = alignment_of(d, ops).y % 4 == 0;
  p.g.raster_group = opt.raster_group > 0 ? opt.raster_group : 8;
  p.g.ep = ep;
  p.geo = conv_geometry(d);
  const std::int64_t tiles = ceil_div(s.m, std::int64_t{CC.gemm.tile.m}) * ceil_div(d.k, std::int64_t{CC.gemm.tile.n});
  if (tiles > 0x7fffffff) return error(StatusCode::invalid_argument, "too many output tiles for one launch");
  KTUNE_RETURN_IF_ERROR(ensure_smem_limit<kernel>(smem));
  if (opt.persistent > 0) {
    if constexpr (conv_supports_persistent(CC)) {
      KTUNE_RETURN_IF_ERROR(check_conv_launch_options(opt));
      constexpr auto pkernel = conv2d_fprop_persistent_kernel<CfgT, Epi>;
      KTUNE_RETURN_IF_ERROR(ensure_smem_limit<pkernel>(smem));
      DeviceInfo dev;
      KTUNE_RETURN_IF_ERROR(current_device(dev));
      static const int resident = [&] {  // CTAs per multiprocessor, as compiled (registers bind)
        int n = 0;
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, pkernel, CC.gemm.threads(), smem) != cudaSuccess) {
          (void)cudaGetLastError();
          n = 0;
        }
        return n > 0 ? n : 1;
      }();
      const std::int64_t grid = std::min<std::int64_t>(tiles, std::int64_t{std::max(1, dev.sm_count)} * std::min(resident, opt.persistent));
      pkernel<<<static_cast<unsigned>(grid), CC.gemm.threads(), smem, stream>>>(p);
      return cuda_status(cudaGetLastError(), "conv2d kernel launch (persistent)");
    } else {
      return error(StatusCode::unsupported, "this mma.sync conv instance does not run a persistent grid (persistent > 0)");
    }
  }
  if (opt.split_k <= 1) {
    kernel<<<static_cast<unsigned>(tiles), CC.gemm.threads(), smem, stream>>>(p);
    return cuda_status(cudaGetLastError(), "conv2d kernel launch");
  }
  // Split-K: slices along grid y, fp32 partials (and serial mode's counters) in ktune's per-stream
  // workspace pool, as the sm80 GEMM launcher does (gemm_kernel.cuh launch_with).
  const GemmDesc gd = implicit_gemm_of(d);
  GemmLaunchOptions split;
  split.split_k = opt.split_k;
  split.split_mode = opt.split_mode;
  const SplitKLayout ws = split_k_layout(CC.gemm, gd, split);
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  KTUNE_RETURN_IF_ERROR(gemm_workspace_pool().acquire(stream, ws.total_bytes, workspace, workspace_bytes));
  p.g.split_k = opt.split_k;
  p.g.split_serial = opt.split_mode == SplitKMode::serial;
  KTUNE_RETURN_IF_ERROR(set_split_k_workspace(p.g, ws, gd.m, workspace,
                                              p.g.split_serial ? tiles * split_k_counters_per_tile(opt.split_k) : 0,
                                              stream, "conv split-K counters"));
  kernel<<<dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(opt.split_k)), CC.gemm.threads(), smem, stream>>>(p);
  KTUNE_RETURN_IF_ERROR(cuda_status(cudaGetLastError(), "conv2d kernel launch (split-K)"));
  return p.g.split_serial ? Status{} : launch_splitk_reduce<Epi>(p.g, gd, stream);
}

// The dispatch-table launcher: the built-in run-time epilogue; beta reads y's prior contents.
template <class CfgT>
Status launch_conv_builtin(const Conv2dDesc& d, const Conv2dOperands& ops, const ConvLaunchOptions& opt,
                           cudaStream_t stream) {
  const auto ep = epilogue::make_builtin_params(d.epilogue, ops.y, d.k, ops.bias, ops.residual, d.k);
  return launch_conv_with<CfgT, epilogue::Builtin>(d, ep, ops, opt, stream);
}

template <class CfgT>
cudaError_t conv_attributes_of(cudaFuncAttributes* a) {
  return cudaFuncGetAttributes(a, conv2d_fprop_kernel<CfgT, epilogue::Builtin>);
}

}  // namespace ktune::kernel
