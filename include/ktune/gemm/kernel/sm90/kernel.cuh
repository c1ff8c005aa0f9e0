// ktune/gemm/kernel/sm90/kernel.cuh — the Hopper GEMM kernel (sm_90a only) and its host launcher.
//
// Persistent, warp-specialized: a grid of at most one block per multiprocessor walks the output tiles
// (grouped raster, tile += gridDim.x). Warpgroup 0 is the producer: it gives most of its registers away
// (setmaxnreg) and one thread streams k-tiles of A and B through TMA into a ring of `stages` shared-
// memory slots. Warpgroups 1.. are consumers: each waits for a slot, issues its wgmmas, keeps one
// k-tile of wgmmas in flight and releases the slot of the previous one. After a tile's last k-tile the
// consumers run the fused epilogue (accumulators → per-warp staging in shared memory → Epi::apply →
// vector stores) while the producer already fills the ring for the next tile.
//
// Device code exists only for sm_90a (__CUDA_ARCH_FEAT_SM90_ALL); other targets get a trapping body so
// multi-architecture builds still compile, and the launcher refuses to run a non-sm_90a image.
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <utility>

#include "ktune/device.hpp"
#include "ktune/dispatch.hpp"
#include "ktune/epilogue/builtin.cuh"
#include "ktune/gemm/kernel/gemm_kernel.cuh"
#include "ktune/gemm/kernel/params.cuh"
#include "ktune/gemm/kernel/schedule.cuh"
#include "ktune/gemm/kernel/sm90/mainloop.cuh"
#include "ktune/gemm/kernel/sm90/pipeline.cuh"
#include "ktune/gemm/kernel/sm90/tma.cuh"
#include "ktune/gemm/resource_model.hpp"

namespace ktune::kernel::sm90 {

// Epilogue of one consumer warp: its 16-row bands (one per m64 block), Cols columns at a time, staged
// through `stage` so every lane applies the epilogue to 4 consecutive columns and stores one vector.
template <class ML, class Epi, class TOut>
__device__ __forceinline__ void store_accumulators(const GemmParams<typename Epi::Params>& p,
                                                   typename ML::Accumulators& acc, float* stage, int row0, int col0) {
  constexpr int cols = smem_layout::sm90_epilogue_cols, stride = cols + smem_layout::sm90_epilogue_pad;
  constexpr int chunks = ML::WN / cols, vectors = smem_layout::epilogue_band_rows * cols / 4;
  const int lane = threadIdx.x & 31;
  TOut* D = static_cast<TOut*>(p.d);
  const bool vec4 = p.d_vec4;  // host checked that D, C, bias and residual allow 4-element vectors
  [&]<int... I>(std::integer_sequence<int, I...>) {
    (
        [&] {
          constexpr int mi = I / chunks, ch = I % chunks;
          const int rb = row0 + 64 * mi, cb = col0 + ch * cols;
          if (rb >= p.m || cb >= p.n) return;  // warp-uniform: the band chunk is outside D
          __syncwarp();
          ML::template stage_chunk<mi, ch, cols>(acc, stage, stride);
          __syncwarp();
#pragma unroll 1
          for (int v = lane; v < vectors; v += 32) {
            const int r = v / (cols / 4), c = (v % (cols / 4)) * 4;
            const int row = rb + r, col = cb + c;
            if (row >= p.m || col >= p.n) continue;
            const int n = min(4, p.n - col);
            float x[4];
            *reinterpret_cast<float4*>(x) = *reinterpret_cast<const float4*>(stage + r * stride + c);
            Epi::template apply<TOut>(p.ep, row, col, x, n);
            TOut* dst = D + static_cast<std::int64_t>(row) * p.ldd + col;
            if (n == 4 && vec4) {
              struct alignas(4 * sizeof(TOut)) Vec4 { TOut e[4]; };
              Vec4 out;
#pragma unroll
              for (int i = 0; i < 4; ++i) out.e[i] = epilogue::from_float<TOut>(x[i]);
              *reinterpret_cast<Vec4*>(dst) = out;
            } else {
              for (int i = 0; i < n; ++i) dst[i] = epilogue::from_float<TOut>(x[i]);
            }
          }
        }(),
        ...);
  }(std::make_integer_sequence<int, ML::MI * chunks>{});
}

template <class CfgT, class Epi>
__global__ void __launch_bounds__(CfgT::value.threads(), 1)
    wgmma_gemm_kernel(const __grid_constant__ CUtensorMap tma_a, const __grid_constant__ CUtensorMap tma_b,
                      const GemmParams<typename Epi::Params> p) {
#if defined(__CUDA_ARCH__)
#if __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  static constexpr GemmConfig C = CfgT::value;
  using ML = WgmmaMainloop<C>;
  constexpr int S = C.stages;
  constexpr int stride = smem_layout::sm90_epilogue_cols + smem_layout::sm90_epilogue_pad;
  extern __shared__ __align__(1024) char smem_raw[];
  // Round up to a 1024-byte swizzle atom in the shared address space (the model reserved the slack).
  const std::uint32_t raw = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_raw));
  char* ring = smem_raw + ((1024u - (raw & 1023u)) & 1023u);
  float* staging = reinterpret_cast<float*>(ring + S * ML::stage_bytes);
  auto* bars = reinterpret_cast<std::uint64_t*>(ring + S * ML::stage_bytes + sm90_staging_bytes(C));
  const Pipeline<S> pipe{bars, bars + S};
  if (threadIdx.x == 0) pipe.init(4 * ML::consumers);
  __syncthreads();

  const int tiles_m = (p.m + C.tile.m - 1) / C.tile.m, tiles_n = (p.n + C.tile.n - 1) / C.tile.n;
  const int tiles = tiles_m * tiles_n;
  const int k_tiles = (p.k + C.tile.k - 1) / C.tile.k;
  const int wg = threadIdx.x / 128;

  if (wg == 0) {
    // Producer warpgroup: one thread issues every TMA copy.
    if constexpr (ML::consumers == 2) asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(smem_layout::sm90_producer_registers));
    if (threadIdx.x == 0) {
      prefetch_tensor_map(&tma_a);
      prefetch_tensor_map(&tma_b);
      RingState<S> st;
      for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const TileCoord tc = grouped_raster(tile, tiles_m, tiles_n, p.raster_group);
        for (int kt = 0; kt < k_tiles; ++kt) {
          std::uint64_t* bar = pipe.acquire(st, ML::stage_bytes);
          ML::load(&tma_a, &tma_b, ring + st.stage * ML::stage_bytes, bar, tc.m * C.tile.m, tc.n * C.tile.n, kt * C.tile.k);
          st.advance();
        }
      }
    }
  } else {
    if constexpr (ML::consumers == 2) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(smem_layout::sm90_consumer_registers));
    const int cw = wg - 1, lane = threadIdx.x & 31, warp_in_wg = (threadIdx.x >> 5) & 3;
    float* stage_warp = staging + ((threadIdx.x - 128) >> 5) * smem_layout::epilogue_band_rows * stride;
    const auto d0 = ML::descriptors(static_cast<std::uint32_t>(__cvta_generic_to_shared(ring)), cw);
    typename ML::Accumulators acc;
    RingState<S> st;
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      const TileCoord tc = grouped_raster(tile, tiles_m, tiles_n, p.raster_group);
      int previous = 0;
      for (int kt = 0; kt < k_tiles; ++kt) {
        pipe.wait_full(st);
        ML::mma(acc, d0, st.stage, kt > 0);
        wgmma_wait<1>();  // the previous k-tile's wgmmas are done: its slot may be refilled
        if (kt > 0 && lane == 0) pipe.release(previous);
        previous = st.stage;
        st.advance();
      }
      wgmma_wait<0>();
      if (lane == 0) pipe.release(previous);
#pragma unroll
      for (int mi = 0; mi < ML::MI; ++mi) fence_registers(acc[mi]);

      const int row0 = tc.m * C.tile.m + ML::wg_row0(cw) + 16 * warp_in_wg;
      const int col0 = tc.n * C.tile.n + ML::wg_col0(cw);
      switch (p.d_type) {
        case DType::f32: store_accumulators<ML, Epi, float>(p, acc, stage_warp, row0, col0); break;
        case DType::f16: store_accumulators<ML, Epi, __half>(p, acc, stage_warp, row0, col0); break;
        case DType::bf16: store_accumulators<ML, Epi, __nv_bfloat16>(p, acc, stage_warp, row0, col0); break;
      }
    }
  }
#else
  __trap();  // built for a target without wgmma: the launcher never runs this image
#endif
#endif
}

// ---- Host side -------------------------------------------------------------------------------------

// Does the image the driver loaded for the current device hold sm_90a code? (A build without the
// sm_90a target runs the sm_80 image on an H100/H200, whose body only traps.) Checked once per device.
template <auto Kernel>
Status ensure_sm90_image() {
  static std::atomic<std::uint64_t> checked{0};
  int dev = 0;
  KTUNE_RETURN_IF_ERROR(cuda_status(cudaGetDevice(&dev), "cudaGetDevice"));
  const std::uint64_t bit = std::uint64_t{1} << (dev & 63);
  if (checked.load(std::memory_order_acquire) & bit) return {};
  cudaFuncAttributes a{};
  KTUNE_RETURN_IF_ERROR(cuda_status(cudaFuncGetAttributes(&a, Kernel), "cudaFuncGetAttributes"));
  if (a.binaryVersion < 90)
    return error(StatusCode::no_instance, "instance was not compiled for sm_90a (the loaded image is sm_" +
                                              std::to_string(a.binaryVersion) +
                                              "); build with -gencode=arch=compute_90a,code=sm_90a");
  checked.fetch_or(bit, std::memory_order_acq_rel);
  return {};
}

template <class CfgT, class Epi>
Status launch_with(const GemmDesc& d0, const typename Epi::Params& ep, const GemmOperands& ops,
                   const GemmLaunchOptions& opt, cudaStream_t stream) {
  constexpr GemmConfig C = CfgT::value;
  using ML = WgmmaMainloop<C>;
  constexpr auto kernel = wgmma_gemm_kernel<CfgT, Epi>;
  constexpr int smem = estimate_resources(C).smem_bytes;
  const GemmDesc d = resolved(d0);
  KTUNE_RETURN_IF_ERROR(ensure_sm90_image<kernel>());
  CUtensorMap ta, tb;
  const DType t = C.operand();
  if constexpr (ML::a_kc)
    KTUNE_RETURN_IF_ERROR(make_tensor_map(ta, t, ops.a, d.k, d.m, d.lda, C.tile.k, ML::a_box_outer));
  else
    KTUNE_RETURN_IF_ERROR(make_tensor_map(ta, t, ops.a, d.m, d.k, d.lda, 64, ML::a_box_outer));
  if constexpr (ML::b_kc)
    KTUNE_RETURN_IF_ERROR(make_tensor_map(tb, t, ops.b, d.k, d.n, d.ldb, C.tile.k, ML::b_box_outer));
  else
    KTUNE_RETURN_IF_ERROR(make_tensor_map(tb, t, ops.b, d.n, d.k, d.ldb, 64, ML::b_box_outer));

  GemmParams<typename Epi::Params> p{};
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
  const std::int64_t tiles = ceil_div(d.m, std::int64_t{C.tile.m}) * ceil_div(d.n, std::int64_t{C.tile.n});
  if (tiles > 0x7fffffff) return error(StatusCode::invalid_argument, "too many output tiles for one launch");
  KTUNE_RETURN_IF_ERROR(ensure_smem_limit<kernel>(smem));
  DeviceInfo dev;
  KTUNE_RETURN_IF_ERROR(current_device(dev));
  static const int per_sm = [] {
    int n = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, CfgT::value.threads(), smem) != cudaSuccess || n < 1) {
      (void)cudaGetLastError();
      n = 1;
    }
    return n;
  }();
  const std::int64_t slots = std::int64_t{dev.sm_count > 0 ? dev.sm_count : 1} * per_sm;
  const unsigned grid = static_cast<unsigned>(tiles < slots ? tiles : slots);
  kernel<<<grid, C.threads(), smem, stream>>>(ta, tb, p);
  return cuda_status(cudaGetLastError(), "sm90 GEMM kernel launch");
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
  return cudaFuncGetAttributes(a, wgmma_gemm_kernel<CfgT, epilogue::Builtin>);
}

}  // namespace ktune::kernel::sm90
