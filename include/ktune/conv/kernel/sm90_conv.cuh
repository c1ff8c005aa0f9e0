// ktune/conv/kernel/sm90_conv.cuh — conv2d fprop on the Hopper GEMM kernel (sm_90a): TMA + wgmma,
// warp-specialized, persistent (ktune/gemm/kernel/sm90/). Two routes:
//   gemm1x1     a 1×1, stride-1, unpadded convolution is the GEMM y[(n,h,w), k] = Σ_c x[(n,h,w), c]·w[k, c]:
//               x is a row-major (N·H·W)×C A, the filters a column-major C×K B, y the row-major D. The
//               sm90 GEMM launcher runs it unchanged.
//   tma_im2col  any filter: the same kernel body (warp_specialized_gemm) with a producer whose A boxes
//               come from TMA's im2col mode. The GEMM K loop runs over (filter tap r·S+s, 64-channel
//               block): k-tile kt loads, for the tile's BM output pixels starting at m0 = (n, p, q), the
//               64 channels c0.. of input pixel (p·stride − pad + r·dil, q·stride − pad + s·dil), zero
//               where that lies in the padding, past C or past the batch; and the matching 64 channels of
//               tap (r, s) of BN filters from a 3-D tiled map {C, R·S, K}. Both land as 128-byte swizzled
//               K-major rows, exactly the GEMM's stage layout, so consumers and epilogue are the GEMM's.
//               Split-K (ConvLaunchOptions::split_k > 1) is the GEMM kernel's: (tile, k-slice) work units
//               of the persistent loop, fp32 partials, the GEMM's reduction kernel or serial finish.
//               cluster_k > 1: the CTAs of a cluster split one tile's k-tiles and add their accumulators
//               through distributed shared memory (gemm/kernel/sm90/cluster_k.cuh).
// multicast = 2, 4, 8 (tma_im2col): clusters of that many CTAs on adjacent tiles each load their share of
// the box they share and multicast it (ConvIm2colProducer); gemm1x1 passes 2 on as the GEMM's cluster = 2.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>

#include "ktune/conv/dispatch.hpp"
#include "ktune/conv/kernel/im2col_box.hpp"
#include "ktune/gemm/kernel/sm90/kernel.cuh"
#include "ktune/gemm/split_k.hpp"
#include "ktune/workspace.hpp"

namespace ktune::kernel::sm90 {

// The sm90 GEMM configuration of conv configuration CfgT::value, as the GEMM kernel's CfgT.
template <class CfgT>
struct ConvGemmConfig {
  static constexpr GemmConfig value = CfgT::value.gemm;
};

// ---- gemm1x1 -----------------------------------------------------------------------------------------

inline GemmDesc conv_gemm1x1_desc(const Conv2dDesc& d) {
  GemmDesc g = implicit_gemm_of(d);  // M = N·H·W, N = K, K = C; A row-major, B column-major
  g.lda = d.c;
  g.ldb = d.c;
  g.ldc = g.ldd = g.ldr = d.k;
  return g;
}

inline GemmOperands conv_gemm1x1_operands(const Conv2dOperands& o) {
  GemmOperands g;
  g.a = o.x;
  g.b = o.w;
  g.c = o.y;  // beta != 0 reads y's prior contents
  g.d = o.y;
  g.bias = o.bias;
  g.residual = o.residual;
  return g;
}

// The launch of a 1x1 convolution as the GEMM it is, through `gemm_launch` (an sm90 GEMM launcher of
// CfgT::value.gemm: this TU's own instantiation, or the GEMM table entry's, launch_conv_gemm1x1_table).
template <class CfgT>
Status launch_conv_gemm1x1_with(Status (*gemm_launch)(const GemmDesc&, const GemmOperands&, const GemmLaunchOptions&, cudaStream_t),
                                const Conv2dDesc& d, const Conv2dOperands& ops, const ConvLaunchOptions& opt, cudaStream_t stream) {
  if (opt.cluster_k > 1) return error(StatusCode::unsupported, "the gemm1x1 route does not split K in clusters (cluster_k > 1)");
  if (opt.multicast > conv_multicast_limit(CfgT::value))
    return error(StatusCode::unsupported, "this gemm1x1 instance multicasts in clusters of up to " +
                                              std::to_string(conv_multicast_limit(CfgT::value)) + " CTAs, got " + std::to_string(opt.multicast));
  GemmLaunchOptions g;
  g.raster_group = opt.raster_group;
  g.split_k = opt.split_k;
  g.split_mode = opt.split_mode;
  g.cluster = opt.multicast;  // 2: the GEMM's clusters of 2 multicast the shared operand
  GemmOperands go = conv_gemm1x1_operands(ops);
  if (g.split_k > 1) {  // split-K partials (and serial counters) from ktune's per-stream workspace pool
    const std::size_t need = split_k_layout(ConvGemmConfig<CfgT>::value, resolved(conv_gemm1x1_desc(d)), g).total_bytes;
    KTUNE_RETURN_IF_ERROR(gemm_workspace_pool().acquire(stream, need, go.workspace, go.workspace_bytes));
  }
  return gemm_launch(conv_gemm1x1_desc(d), go, g, stream);
}

template <class CfgT>
Status launch_conv_gemm1x1(const Conv2dDesc& d, const Conv2dOperands& ops, const ConvLaunchOptions& opt,
                           cudaStream_t stream) {
  return launch_conv_gemm1x1_with<CfgT>(&launch_builtin<ConvGemmConfig<CfgT>>, d, ops, opt, stream);
}

template <class CfgT>
cudaError_t conv_gemm1x1_attributes(cudaFuncAttributes* a) {
  return attributes_of<ConvGemmConfig<CfgT>>(a);
}

// Families whose tiles are GEMM table instances (ConvFamily::gemm_table_kernels): the 1x1 route runs the
// GEMM entry of the same configuration (found by its instance name, as gemm/route/repack_route.cuh finds
// its inner instance), so the conv TU compiles no second copy of that kernel (~8 s of CPU each in the
// 2-core test build). Nothing is launched when the entry is missing (a program without the GEMM TUs).
template <class CfgT>
const GemmKernelEntry* conv_gemm1x1_table_entry() {
  static constexpr InstanceName gemm_name = instance_name(CfgT::value.gemm);
  // Found once (a name search per launch would cost more than the launch's host work); a miss is not
  // remembered: a call during static initialisation may come before the GEMM TUs have registered.
  static std::atomic<const GemmKernelEntry*> found{nullptr};
  const GemmKernelEntry* e = found.load(std::memory_order_acquire);
  if (e == nullptr) {
    e = gemm_table().find(gemm_name.view());
    if (e == nullptr || !(e->config == CfgT::value.gemm) || e->launch == nullptr) return nullptr;
    found.store(e, std::memory_order_release);
  }
  return e;
}

template <class CfgT>
Status launch_conv_gemm1x1_table(const Conv2dDesc& d, const Conv2dOperands& ops, const ConvLaunchOptions& opt,
                                 cudaStream_t stream) {
  const GemmKernelEntry* e = conv_gemm1x1_table_entry<CfgT>();
  if (e == nullptr)
    return error(StatusCode::no_instance, "the gemm1x1 route's GEMM instance " + std::string(instance_name(CfgT::value.gemm).view()) +
                                              " is not registered in gemm_table()");
  return launch_conv_gemm1x1_with<CfgT>(e->launch, d, ops, opt, stream);
}

template <class CfgT>
cudaError_t conv_gemm1x1_table_attributes(cudaFuncAttributes* a) {
  const GemmKernelEntry* e = conv_gemm1x1_table_entry<CfgT>();
  return e != nullptr && e->attributes != nullptr ? e->attributes(a) : cudaErrorInvalidDeviceFunction;
}

// ---- tma_im2col --------------------------------------------------------------------------------------

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// TMA im2col load of a 4-D NHWC tensor: BM pixels (the map's pixelsPerColumn) starting at the filter
// window corner (w, h) of image n, channels c.. (channelsPerPixel), shifted by the tap offsets. CCCL's
// cuda::ptx has no im2col form, hence the PTX.
__device__ __forceinline__ void tma_load_im2col_4d(void* dst, const CUtensorMap* map, int c, int w, int h, int n,
                                                   std::uint16_t off_w, std::uint16_t off_h, std::uint64_t* bar) {
  const auto d = static_cast<std::uint32_t>(__cvta_generic_to_shared(dst));
  const auto b = static_cast<std::uint32_t>(__cvta_generic_to_shared(bar));
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8};\n" ::"r"(d),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(c), "r"(w), "r"(h), "r"(n), "r"(b), "h"(off_w), "h"(off_h)
      : "memory");
}

// The same box into the same shared-memory offset of every CTA in cta_mask (of this cluster), counting
// its bytes on the mbarrier at bar's offset in each.
__device__ __forceinline__ void tma_load_im2col_4d_multicast(void* dst, const CUtensorMap* map, int c, int w, int h, int n,
                                                             std::uint16_t off_w, std::uint16_t off_h, std::uint64_t* bar,
                                                             std::uint16_t cta_mask) {
  const auto d = static_cast<std::uint32_t>(__cvta_generic_to_shared(dst));
  const auto b = static_cast<std::uint32_t>(__cvta_generic_to_shared(bar));
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8}, %9;\n" ::"r"(d),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(c), "r"(w), "r"(h), "r"(n), "r"(b), "h"(off_w), "h"(off_h), "h"(cta_mask)
      : "memory");
}

__device__ __forceinline__ void tma_load_3d(void* dst, const CUtensorMap* map, int c0, int c1, int c2, std::uint64_t* bar) {
  const std::int32_t coords[3] = {c0, c1, c2};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, dst, map, coords, bar);
}
__device__ __forceinline__ void tma_load_3d_multicast(void* dst, const CUtensorMap* map, int c0, int c1, int c2,
                                                      std::uint64_t* bar, std::uint16_t cta_mask) {
  const std::int32_t coords[3] = {c0, c1, c2};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, dst, map, coords, bar, cta_mask);
}

// The conv producer for warp_specialized_gemm: k-tile kt = (tap, channel block) of output tile tc. The
// one producer thread walks the k-tiles of a tile in order: Im2colWalk steps to the next box without
// the integer divisions of im2col_box (a few per tile instead of per k-tile: the small tiles' k-tiles
// take only a few hundred cycles of wgmma).
// Multicast (a cluster launch of 2, 4 or 8 CTAs in multicast groups of 2-8; groups of 1 for cluster split-K): a group's
// CTAs compute adjacent tiles that share an operand, as the GEMM's clusters (mainloop.cuh: along M sharing
// the filter box when BN ≥ BM, else along N sharing the im2col box), and each loads its share of the shared
// box into all of them: the filter map's boxes are then BN/cluster filters, the im2col map's BM/cluster
// pixels (rank r: pixels m0 + r·BM/cluster..; the walk follows that pixel).
template <GemmConfig C>
struct ConvIm2colProducer {
  using ML = WgmmaMainloop<C>;
  const CUtensorMap* x;  // im2col map over x (NHWC)
  const CUtensorMap* w;  // tiled map {C, R·S, K} over the filters
  ConvTmaGeometry g;
  // CTAs of a cluster launch that share each box (warp_specialized_gemm reads it: producer_has_multicast_group):
  // the cluster (multicast), 1 (cluster split-K), or groups of that many consecutive ranks that multicast
  // while the groups split K.
  unsigned multicast_group = 1;
  static constexpr unsigned max_multicast = conv_max_multicast;  // clusters of up to 8 (producer_max_multicast)
  mutable Im2colWalkT<C.tile.k> walk{};  // (BK channels per k-tile)
  __device__ __forceinline__ void prefetch() const {
    prefetch_tensor_map(x);
    prefetch_tensor_map(w);
  }
  // A group of Cl CTAs (cluster ranks base .. base + Cl − 1, base a multiple of Cl): this CTA loads its 1/Cl
  // of the shared box into all of them. (The cluster rank is read here, not passed: one more live register
  // spilled the 40-register producer.)
  template <int Cl>
  __device__ __forceinline__ void load_shared(char* stage, std::uint64_t* bar, int m0, int n0, int kt) const {
    const unsigned cluster_rank = cuda::ptx::get_sreg_cluster_ctarank();
    const unsigned rank = cluster_rank % Cl;
    const std::uint16_t mask = static_cast<std::uint16_t>(((1u << Cl) - 1u) << (cluster_rank - rank));
    if constexpr (ML::pair_m) {  // the cluster shares the filter box: BN / Cl filters each
      constexpr int share = C.tile.n / Cl;
      const Im2colBox b = walk.box(g, m0, kt);
      tma_load_im2col_4d(stage, x, b.c0, b.w, b.h, b.n, b.off_w, b.off_h, bar);
      tma_load_3d_multicast(stage + ML::a_bytes + int(rank) * share * ML::row_bytes, w, b.c0, b.tap, n0 + int(rank) * share, bar, mask);
    } else {  // the cluster shares the im2col box: BM / Cl pixels each
      constexpr int share = C.tile.m / Cl;
      const Im2colBox b = walk.box(g, m0 + int(rank) * share, kt);
      tma_load_im2col_4d_multicast(stage + int(rank) * share * ML::row_bytes, x, b.c0, b.w, b.h, b.n, b.off_w, b.off_h, bar, mask);
      tma_load_3d(stage + ML::a_bytes, w, b.c0, b.tap, n0, bar);
    }
  }
  __device__ __forceinline__ void load(char* stage, std::uint64_t* bar, TileCoord tc, int kt, unsigned cluster,
                                       unsigned /*rank: load_shared reads it*/) const {
    const int m0 = tc.m * C.tile.m, n0 = tc.n * C.tile.n;
    if constexpr (is_swap_ab(C)) {  // kernel rows are filters (A: the filter box), columns pixels (B: im2col)
      const Im2colBox b = walk.box(g, n0, kt);
      tma_load_3d(stage, w, b.c0, b.tap, m0, bar);
      tma_load_im2col_4d(stage + ML::a_bytes, x, b.c0, b.w, b.h, b.n, b.off_w, b.off_h, bar);
      return;
    }
    // Clusters of 2, 4, 8 as compile-time sizes: a run-time share (a shift by log2(cluster)) made ptxas spill
    // the 256x128 tile's producer (60 bytes, sm_90a).
    if (cluster == 2) return load_shared<2>(stage, bar, m0, n0, kt);
    if (cluster == 4) return load_shared<4>(stage, bar, m0, n0, kt);
    if (cluster == 8) return load_shared<8>(stage, bar, m0, n0, kt);
    const Im2colBox b = walk.box(g, m0, kt);
    tma_load_im2col_4d(stage, x, b.c0, b.w, b.h, b.n, b.off_w, b.off_h, bar);
    tma_load_3d(stage + ML::a_bytes, w, b.c0, b.tap, n0, bar);
  }
};
#endif

// The im2col kernel's schedule flags: swap AB (the transposed problem, stored transposed) when its GEMM
// configuration says so (ping-pong consumers come from the configuration inside warp_specialized_gemm).
// Kernel and launcher (its store choice) both take it from here.
template <GemmConfig C>
constexpr Sm90Schedule conv_im2col_schedule() {
  return Sm90Schedule{false, false, is_swap_ab(C)};
}

// CfgT::value is a ConvConfig with iterator tma_im2col. y_store_boxes > 0: y leaves through the
// asynchronous TMA store (tma_y; gemm/kernel/sm90/epilogue.cuh), as the GEMM's D does; wide.ring > 0: the
// wide store (tma_y is y's 3-D view). multicast_group: CTAs of a cluster launch that share boxes between tiles
// (ConvIm2colProducer::multicast_group; the cluster's groups split K).
template <class CfgT, class Epi>
__global__ void __launch_bounds__(CfgT::value.gemm.threads(), 1)
    conv_im2col_kernel(const __grid_constant__ CUtensorMap tma_x, const __grid_constant__ CUtensorMap tma_w,
                       const GemmParams<typename Epi::Params> p, const ConvTmaGeometry geo,
                       const __grid_constant__ CUtensorMap tma_y, const int y_store_boxes, const Sm90WideStore wide,
                       const unsigned multicast_group) {
#if defined(__CUDA_ARCH__)
#if __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr GemmConfig C = CfgT::value.gemm;
  // SplitK: p.split_k > 1 walks (tile, k-slice) units and leaves fp32 partials (gemm/kernel/sm90/split_k.cuh).
  // ClusterK: in a cluster launch (cluster_k) the cluster's CTAs split one tile's k-tiles (cluster_k.cuh).
  // Swap AB: the transposed problem, stored transposed (neither split-K form).
  constexpr Sm90Schedule sch = conv_im2col_schedule<C>();
  warp_specialized_gemm<C, Epi, ConvIm2colProducer<C>, sch, !sch.swap_ab, (conv_cluster_k_limit(CfgT::value) > 1)>(
      ConvIm2colProducer<C>{&tma_x, &tma_w, geo, multicast_group}, p, geo.k_tiles, y_store_boxes > 0 ? &tma_y : nullptr, true,
      y_store_boxes, wide);
#else
  __trap();  // built for a target without wgmma: the launcher never runs this image
#endif
#endif
}

// ---- Host side ---------------------------------------------------------------------------------------

inline Status im2col_map_encoder(PFN_cuTensorMapEncodeIm2col_v12000& out) {
  KTUNE_RETURN_IF_ERROR(bind_current_context());
  static const auto fn =
      reinterpret_cast<PFN_cuTensorMapEncodeIm2col_v12000>(driver_entry_point("cuTensorMapEncodeIm2col", 12000));
  if (fn == nullptr)
    return error(StatusCode::cuda_error, "the CUDA driver does not provide cuTensorMapEncodeIm2col (needs CUDA 12 or later)");
  out = fn;
  return {};
}

inline CUtensorMapDataType tma_data_type(DType t) {
  return t == DType::bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
}

// x (NHWC) as TMA's im2col tensor {C, W, H, N}: boxes of `pixels` output positions × `channels` (the tile's BK). The
// bounding box of filter-window corners runs from −pad to (extent − 1) + pad − dil·(filter − 1) in W
// and H (corners listed W first, like the dimensions), traversed with the convolution's stride.
inline Status make_im2col_map(CUtensorMap& map, const Conv2dDesc& d, const void* x, int pixels, int channels = conv_tma_channels) {
  PFN_cuTensorMapEncodeIm2col_v12000 encode = nullptr;
  KTUNE_RETURN_IF_ERROR(im2col_map_encoder(encode));
  const Im2colMapShape m = im2col_map_shape(d);
  const cuuint64_t dims[4] = {m.dims[0], m.dims[1], m.dims[2], m.dims[3]};
  const cuuint64_t strides[3] = {m.strides[0], m.strides[1], m.strides[2]};
  const cuuint32_t elem_strides[4] = {m.elem_strides[0], m.elem_strides[1], m.elem_strides[2], m.elem_strides[3]};
  const CUresult r = encode(&map, tma_data_type(d.type), 4, const_cast<void*>(x), dims, strides, m.lower, m.upper,
                            static_cast<cuuint32_t>(channels), static_cast<cuuint32_t>(pixels), elem_strides,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, tma_swizzle_for_row(static_cast<std::uint32_t>(channels * size_of(d.type))),
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return error(StatusCode::cuda_error, "cuTensorMapEncodeIm2col failed (CUresult " + std::to_string(int(r)) + ") for x " +
                                             std::to_string(d.n) + "x" + std::to_string(d.h) + "x" + std::to_string(d.w) +
                                             "x" + std::to_string(d.c));
  return {};
}

// The filters (KRSC) as a 3-D tiled tensor {C, R·S, K}: boxes of `channels` (the tile's BK) × 1 tap × `rows` filters.
inline Status make_filter_map(CUtensorMap& map, const Conv2dDesc& d, const void* w, int rows, int channels = conv_tma_channels) {
  PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
  KTUNE_RETURN_IF_ERROR(tensor_map_encoder(encode));
  const std::uint64_t es = static_cast<std::uint64_t>(size_of(d.type));
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(d.c), static_cast<cuuint64_t>(d.r * d.s), static_cast<cuuint64_t>(d.k)};
  const cuuint64_t strides[2] = {d.c * es, d.r * d.s * d.c * es};
  const cuuint32_t box[3] = {static_cast<cuuint32_t>(channels), 1, static_cast<cuuint32_t>(rows)};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  const CUresult r = encode(&map, tma_data_type(d.type), 3, const_cast<void*>(w), dims, strides, box, elem_strides,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, tma_swizzle_for_row(static_cast<std::uint32_t>(channels * size_of(d.type))),
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return error(StatusCode::cuda_error, "cuTensorMapEncodeTiled failed (CUresult " + std::to_string(int(r)) +
                                             ") for filters " + std::to_string(d.k) + "x" + std::to_string(d.r) + "x" +
                                             std::to_string(d.s) + "x" + std::to_string(d.c));
  return {};
}

template <class CfgT, class Epi>
Status launch_conv_im2col_with(const Conv2dDesc& d, const typename Epi::Params& ep, const Conv2dOperands& ops,
                               const ConvLaunchOptions& opt, cudaStream_t stream) {
  constexpr GemmConfig C = CfgT::value.gemm;
  static_assert(C.tile.k == conv_tma_channels || C.tile.k == conv_tma_channels / 2,
                "one k-tile is one 128-byte (or, BK = 32, 64-byte) row of 16-bit channels");
  constexpr auto kernel = conv_im2col_kernel<CfgT, Epi>;
  constexpr int smem = sm90_kernel_smem_bytes<ConvGemmConfig<CfgT>>;  // the model's, with the bias buffers
  static_assert(smem <= ::ktune::sm90.smem_optin_bytes, "the kernel's shared memory fits an sm90 block");
  // Split-K (opt.split_k > 1): the implicit GEMM's k-tiles (tap, channel block) in slices, fp32 partials in
  // ktune's per-stream workspace pool, summed by the GEMM's reduction kernel (parallel) or in the kernel
  // (serial: warpgroup tiles up to 64x128). Checked before anything is launched or written.
  const GemmDesc gd = implicit_gemm_of(d);
  if constexpr (is_swap_ab(C)) {  // the transposed store takes 16-bit y; no split-K or clusters of any kind
    KTUNE_RETURN_IF_ERROR(conv_swap_ab_implements(CfgT::value, d));
    if (opt.split_k > 1 || opt.cluster_k > 1 || opt.multicast > 1)
      return error(StatusCode::unsupported, "swap-AB tma_im2col instance: no split_k, cluster_k or multicast (got " +
                                                std::to_string(opt.split_k) + ", " + std::to_string(opt.cluster_k) + ", " +
                                                std::to_string(opt.multicast) + ")");
  }
  GemmLaunchOptions split;
  split.split_k = opt.split_k;
  split.split_mode = opt.split_mode;
  GemmOperands ws;
  const int cluster_k = opt.cluster_k;  // split-K in clusters of this many CTAs (cluster_k.cuh)
  if (cluster_k != 1) {
    KTUNE_RETURN_IF_ERROR(check_conv_launch_options(opt));
    if (cluster_k > conv_cluster_k_limit(CfgT::value))
      return error(StatusCode::unsupported, "this tma_im2col instance takes cluster_k up to " +
                                                std::to_string(conv_cluster_k_limit(CfgT::value)) + " (its ring holds the partials)");
    static_assert(cluster_k_bytes(C.threads() - 128, WgmmaMainloop<C>::MI * WgmmaMainloop<C>::WN / 2, conv_cluster_k_limit(CfgT::value)) <=
                      long(C.stages) * WgmmaMainloop<C>::stage_bytes,
                  "rank 0's ring holds the other ranks' partials");
  }
  if (split.split_k > 1) {
    KTUNE_RETURN_IF_ERROR(check_conv_launch_options(opt));  // ranges, before the pool grows
    if (split.split_mode == SplitKMode::serial && !supports_serial_split_k(C))
      return error(StatusCode::unsupported, "serial split-K needs a warpgroup tile of at most 64x128 on sm90 (this instance: parallel mode)");
    const std::size_t need = sm90_split_k_layout(C, gd, split).total_bytes;
    KTUNE_RETURN_IF_ERROR(gemm_workspace_pool().acquire(stream, need, ws.workspace, ws.workspace_bytes));
    KTUNE_RETURN_IF_ERROR(check_sm90_split_k(C, gd, ws, split));
  }
  if (opt.multicast != 1) KTUNE_RETURN_IF_ERROR(check_conv_launch_options(opt));
  DeviceInfo dev;
  int per_sm_blocks = 1;
  KTUNE_RETURN_IF_ERROR(sm90_prepare_launch<kernel>(C.threads(), smem, dev, per_sm_blocks));
  const ConvShape s = conv_shape(d);
  // Swap AB: the kernel's M is the K filters and its N the N·P·Q pixels (its tile in that orientation).
  constexpr bool swap = is_swap_ab(C);
  const std::int64_t kernel_m = swap ? std::int64_t{d.k} : s.m, kernel_n = swap ? s.m : std::int64_t{d.k};
  const std::int64_t tiles_m = ceil_div(kernel_m, std::int64_t{C.tile.m}), tiles_n = ceil_div(kernel_n, std::int64_t{C.tile.n});
  const std::int64_t tiles = tiles_m * tiles_n;
  if (tiles > 0x7fffffff) return error(StatusCode::invalid_argument, "too many output tiles for one launch");
  // Multicast (opt.multicast = 2, 4 or 8): clusters of that many CTAs on adjacent tiles that share an
  // operand box (ConvIm2colProducer); a persistent grid of as many clusters as fit. With cluster_k: clusters
  // of multicast × cluster_k CTAs, one unit each, whose multicast groups split K.
  using ML = WgmmaMainloop<C>;
  const int mc = opt.multicast > 1 ? opt.multicast : 1;
  if (mc > conv_multicast_limit(CfgT::value))
    return error(StatusCode::unsupported, "this instance multicasts in clusters of up to " +
                                              std::to_string(conv_multicast_limit(CfgT::value)) + " CTAs, got " + std::to_string(mc));
  // Clusters of n CTAs (multicast or cluster split-K) of this kernel resident at once, asked once per size
  // (the occupancy query costs host time); 0: none fits.
  static_assert(conv_max_multicast == conv_max_cluster_k, "one cache of cluster sizes serves both");
  static std::atomic<int> resident[conv_max_multicast + 1] = {};  // 0 unknown, -1 none
  auto resident_clusters_of = [&](int n) {
    if (resident[n].load(std::memory_order_relaxed) == 0) {
      const int r = resident_clusters<kernel>(C.threads(), smem, n);
      resident[n].store(r > 0 ? r : -1, std::memory_order_relaxed);
    }
    return std::max(0, resident[n].load(std::memory_order_relaxed));
  };
  const int mc_clusters = mc > 1 && cluster_k == 1 ? resident_clusters_of(mc) : 0;
  if (mc > 1 && cluster_k == 1 && mc_clusters < 1)
    return error(StatusCode::unsupported, "a cluster of " + std::to_string(mc) + " CTAs of this instance does not fit the device (multicast)");

  CUtensorMap tx, tw;
  if constexpr (swap) {  // boxes of BN pixels and BM filters; 16-bit y (the transposed store)
    KTUNE_RETURN_IF_ERROR(make_im2col_map(tx, d, ops.x, C.tile.n, C.tile.k));
    KTUNE_RETURN_IF_ERROR(make_filter_map(tw, d, ops.w, C.tile.m, C.tile.k));
  } else {
    KTUNE_RETURN_IF_ERROR(make_im2col_map(tx, d, ops.x, mc > 1 && !ML::pair_m ? C.tile.m / mc : C.tile.m, C.tile.k));
    KTUNE_RETURN_IF_ERROR(make_filter_map(tw, d, ops.w, mc > 1 && ML::pair_m ? C.tile.n / mc : C.tile.n, C.tile.k));
  }

  GemmParams<typename Epi::Params> p{};
  p.m = static_cast<int>(kernel_m);
  p.n = static_cast<int>(kernel_n);
  p.k = static_cast<int>(s.kgemm);
  p.a = swap ? ops.w : ops.x;
  p.lda = swap ? s.kgemm : d.c;
  p.b = swap ? ops.x : ops.w;
  p.ldb = swap ? d.c : s.kgemm;
  p.d = ops.y;
  p.ldd = d.k;
  p.d_type = d.out_type;
  p.d_vec4 = alignment_of(d, ops).y % 4 == 0;
  p.raster_group = opt.raster_group > 0 ? opt.raster_group : 8;
  p.ep = ep;
  const bool split_k = split.split_k > 1;
  if (split_k) KTUNE_RETURN_IF_ERROR(set_sm90_split_k(p, C, gd, ws, split, stream));

  // y (an M × K matrix, ld K) through the asynchronous TMA store where y and the epilogue allow it; the
  // wide store for tiles of few k-tiles (not in clusters: their rings are busy), as the GEMM's D.
  const int cluster = cluster_k * mc;
  const ConvTmaGeometry geo = conv_tma_geometry(d, C.tile.k);
  const Sm90DStore ys = sm90_d_store<C, conv_im2col_schedule<C>(), Epi>(d.out_type, ops.y, s.m, d.k, d.k, d.epilogue, split_k, cluster,
                                                                        geo.k_tiles, ops.bias);

  // Units of a cluster launch: mc adjacent tiles along the dimension the clusters pair (the kernel's walk of
  // units, as the GEMM's clusters); a tile each when mc = 1.
  const std::int64_t pair_dim = ML::pair_m ? tiles_m : tiles_n;
  const std::int64_t units = ceil_div(pair_dim, std::int64_t{mc}) * (tiles / pair_dim);
  if (cluster_k > 1) {  // one (unit, k-slice) per CTA: clusters of mc × cluster_k CTAs
    if (resident_clusters_of(cluster) < 1)
      return error(StatusCode::unsupported, "a cluster of " + std::to_string(cluster) + " CTAs of this instance does not fit the device");
    return sm90_launch<Epi>(kernel, units * cluster, cluster, C.threads(), smem, stream, p, gd, false,
                            "sm90 conv2d (TMA im2col, cluster split-K) kernel launch", tx, tw, p, geo, ys.map, ys.boxes, ys.wide,
                            static_cast<unsigned>(mc));
  }
  if (mc > 1) {  // a persistent grid of clusters of mc tiles along M or N
    return sm90_launch<Epi>(kernel, mc * std::min<std::int64_t>(units, mc_clusters), mc, C.threads(), smem, stream, p, gd, false,
                            "sm90 conv2d (TMA im2col, multicast clusters) kernel launch", tx, tw, p, geo, ys.map, ys.boxes, ys.wide,
                            static_cast<unsigned>(mc));
  }
  const std::int64_t slots = std::int64_t{dev.sm_count > 0 ? dev.sm_count : 1} * per_sm_blocks;
  const std::int64_t works = tiles * std::max(1, split.split_k);  // split-K: (tile, k-slice) units
  return sm90_launch<Epi>(kernel, std::min(works, slots), 1, C.threads(), smem, stream, p, gd, split_k,
                          "sm90 conv2d (TMA im2col) kernel launch", tx, tw, p, geo, ys.map, ys.boxes, ys.wide, 1u);
}

// The dispatch-table launcher: the built-in run-time epilogue; beta reads y's prior contents.
template <class CfgT>
Status launch_conv_im2col(const Conv2dDesc& d, const Conv2dOperands& ops, const ConvLaunchOptions& opt,
                          cudaStream_t stream) {
  const auto ep = epilogue::make_builtin_params(d.epilogue, ops.y, d.k, ops.bias, ops.residual, d.k);
  return launch_conv_im2col_with<CfgT, epilogue::Builtin>(d, ep, ops, opt, stream);
}

template <class CfgT>
cudaError_t conv_im2col_attributes(cudaFuncAttributes* a) {
  return cudaFuncGetAttributes(a, conv_im2col_kernel<CfgT, epilogue::Builtin>);
}

}  // namespace ktune::kernel::sm90
