// tools/sm90-probes/fill.cu — ktune-sm90-probes --fill: how fast the TMA fills one multiprocessor's stage ring,
// with no wgmma. A question the kernels cannot answer on their own: is a small tile's k-tile time (bf16 128x64
// s8: 0.19 µs on one CTA, 0.27 on 104) and the ping-pong 256x64 conv tile's (56² 3×3 64→64, N = 256: tensor
// pipe busy 47% of the cycles, notes/conv2d.md "Session 18") set by the loads, by L2, or by the consumers?
//
//   ktune-sm90-probes --fill gemm|conv|mma [--ctas 1,8,66,104,132] [--rows A+B] [--stages S] [--hold 0,512]
//                     [--ktiles K] [--n N] [--repeats R] [--im2col-only 0|1]
//
// One producer thread per CTA walks the k-tiles as the library's kernels do (the ring of kernel/sm90/
// pipeline.cuh: wait for a free slot, expect its bytes, issue the boxes) and one consumer thread waits for each
// slot's bytes, holds it `hold` cycles (a stand-in for the tensor pipe's time on a k-tile: 512 cycles for
// 256x64x64 or 128x128x64 at wgmma's full rate, 256 for 128x64x64), and releases it.
//   gemm: two 2-D tiled boxes per k-tile, {64 k, A rows} and {64 k, B rows} (the sm90 GEMM's 'tn' loads), from
//         matrices small enough to stay in L2 (k wraps at 4096); CTA i reads A tile i % 13 and B tile i / 13 % 8
//         (the 1664x512 grid's tiles). --ktiles per CTA.
//   conv: the TMA im2col producer of the conv kernel (ConvIm2colProducer) on 56² 3×3 64→64 at batch --n with
//         256-pixel boxes and 64-filter boxes (the ping-pong 256x64 tile), a persistent walk over every tile;
//         --im2col-only 1: the im2col box alone (32 KB slots instead of 40), what a tile with its 64 filters
//         resident in shared memory would load per k-tile (72 KB of filters for 3×3×64 leave room for 4 slots).
//   mma:  the other side, no loads: every consumer warpgroup of a tile shape issues its k-tiles' wgmmas (the
//         mainloop's WgmmaMainloop::mma, wait_group 1 between k-tiles) on one resident stage, --ktiles times:
//         the tensor side's floor per k-tile for 128x64, 64x64, 256x64 (cooperative and ping-pong), 128x128,
//         128x256, 256x128 and the swap 64x112 (does an N = 64 tile read shared memory faster than wgmma can
//         use it? notes/conv2d.md "Session 17").
// Per row: µs (median of the repeats, CUDA events), the median CTA's cycles per k-tile (clock64) and the bytes
// it took in per cycle, and the aggregate rate (mma: cycles per k-tile against wgmma's full rate, 4096
// f16 FLOP per cycle and multiprocessor). Timings only: nothing is checked (the boxes are not read).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "../common/gpu_harness.cuh"
#include "ktune/conv/kernel/sm90_conv.cuh"
#include "ktune/gemm/kernel/sm90/pipeline.cuh"

namespace ktune::probes {
namespace {

using namespace ktune::kernel::sm90;
using namespace ktune::tools;

constexpr int fill_max_stages = 16;
// The conv tile of the probe: ping-pong 256x64 (its producer's boxes: 256 pixels × 64 channels, 64 filters).
constexpr GemmConfig fill_conv_tile{90, MathOp::wgmma_f16, Layout::row, Layout::col, {256, 64, 64}, {256, 64}, 5, 8, WgSchedule::pingpong};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
// The ring (barriers, 1024-byte aligned slots for the 128-byte swizzle, both threads' walk state) and the
// clock at its start; every thread of the CTA calls this once.
struct FillRing {
  Pipeline<fill_max_stages> pipe;
  char* slots;
  RingState<fill_max_stages> st;
  long long t0;
};
__device__ __forceinline__ FillRing fill_ring_start(int stages) {
  extern __shared__ char smem[];
  __shared__ std::uint64_t bars[2 * fill_max_stages];
  const std::uintptr_t base = reinterpret_cast<std::uintptr_t>(smem);
  FillRing r{Pipeline<fill_max_stages>{bars, bars + fill_max_stages}, reinterpret_cast<char*>((base + 1023) & ~std::uintptr_t{1023}), {}, 0};
  if (threadIdx.x == 0) r.pipe.init(1);
  __syncthreads();
  r.st.stages = stages;
  r.t0 = clock64();
  return r;
}
// The consumer: wait for the slot's bytes, hold it, release it.
__device__ __forceinline__ void fill_consume(const Pipeline<fill_max_stages>& pipe, RingState<fill_max_stages>& st, int hold) {
  pipe.wait_full(st);
  if (hold > 0) {
    const long long t = clock64();
    while (clock64() - t < hold) {
    }
  }
  pipe.release(st.stage, 1u);
  st.advance();
}
#endif

__global__ void __launch_bounds__(64, 1)
    fill_gemm_kernel(const __grid_constant__ CUtensorMap ta, const __grid_constant__ CUtensorMap tb, int rows_a, int rows_b,
                     int k_tiles, int k_wrap, int stages, int hold, long long* cycles) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  FillRing r = fill_ring_start(stages);
  const std::uint32_t stage_bytes = static_cast<std::uint32_t>((rows_a + rows_b) * 128);
  if (threadIdx.x == 0) {
    prefetch_tensor_map(&ta);
    prefetch_tensor_map(&tb);
    const int a_row = int(blockIdx.x % 13) * rows_a, b_row = int(blockIdx.x / 13 % 8) * rows_b;
    for (int kt = 0; kt < k_tiles; ++kt) {
      std::uint64_t* bar = r.pipe.acquire(r.st, stage_bytes);
      char* slot = r.slots + r.st.stage * stage_bytes;
      const int k0 = (kt % k_wrap) * 64;
      tma_load_2d(slot, &ta, k0, a_row, bar);
      tma_load_2d(slot + rows_a * 128, &tb, k0, b_row, bar);
      r.st.advance();
    }
  } else if (threadIdx.x == 32) {
    for (int kt = 0; kt < k_tiles; ++kt) fill_consume(r.pipe, r.st, hold);
    cycles[blockIdx.x] = clock64() - r.t0;
  }
#endif
}

__global__ void __launch_bounds__(64, 1)
    fill_conv_kernel(const __grid_constant__ CUtensorMap tx, const __grid_constant__ CUtensorMap tw, ConvTmaGeometry geo,
                     int tiles, int stages, int hold, bool im2col_only, long long* cycles, int* k_tiles_done) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using ML = WgmmaMainloop<fill_conv_tile>;
  FillRing r = fill_ring_start(stages);
  if (threadIdx.x == 0) {
    const ConvIm2colProducer<fill_conv_tile> producer{&tx, &tw, geo, 1u};
    producer.prefetch();
    for (int t = int(blockIdx.x); t < tiles; t += int(gridDim.x))
      for (int kt = 0; kt < geo.k_tiles; ++kt) {
        char* slot = r.slots + r.st.stage * (im2col_only ? ML::a_bytes : ML::stage_bytes);
        if (im2col_only) {  // what a tile with its filters resident in shared memory would load
          std::uint64_t* bar = r.pipe.acquire(r.st, ML::a_bytes);
          const Im2colBox b = producer.walk.box(geo, t * fill_conv_tile.tile.m, kt);
          tma_load_im2col_4d(slot, &tx, b.c0, b.w, b.h, b.n, b.off_w, b.off_h, bar);
        } else {
          std::uint64_t* bar = r.pipe.acquire(r.st, ML::stage_bytes);
          producer.load(slot, bar, kernel::TileCoord{t, 0}, kt, 1u, 0u);
        }
        r.st.advance();
      }
  } else if (threadIdx.x == 32) {
    int done = 0;
    for (int t = int(blockIdx.x); t < tiles; t += int(gridDim.x))
      for (int kt = 0; kt < geo.k_tiles; ++kt, ++done) fill_consume(r.pipe, r.st, hold);
    cycles[blockIdx.x] = clock64() - r.t0;
    k_tiles_done[blockIdx.x] = done;
  }
#endif
}

// The tensor side alone: each of the CTA's WGs consumer warpgroups runs the tile's wgmmas of k_tiles k-tiles
// from stage 0 (ping-pong: each warpgroup a whole tile, both at once, as two tiles in flight).
// (Tile: a type with `static constexpr GemmConfig value` and `wgs`, as the library's kernels take CfgT: a
// class-type template argument of a __global__ function breaks nvcc's host stub.)
template <class Tile>
__global__ void __launch_bounds__(128 * Tile::wgs, 1) mma_rate_kernel(int k_tiles, long long* cycles, float* sink) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr GemmConfig C = Tile::value;
  constexpr int WGs = Tile::wgs;
  using ML = WgmmaMainloop<C>;
  extern __shared__ char smem[];
  char* ring = reinterpret_cast<char*>((reinterpret_cast<std::uintptr_t>(smem) + 1023) & ~std::uintptr_t{1023});
  for (int i = int(threadIdx.x); i < ML::stage_bytes / 4; i += int(blockDim.x))
    reinterpret_cast<std::uint32_t*>(ring)[i] = 0x3c003c00u;  // 1.0 in f16 and near 1 in bf16: finite sums
  __syncthreads();
  const int wg = int(threadIdx.x) / 128;
  const auto d0 = ML::descriptors(static_cast<std::uint32_t>(__cvta_generic_to_shared(ring)), C.schedule == WgSchedule::pingpong ? 0 : wg);
  typename ML::Accumulators acc;
  const long long t0 = clock64();
  for (int kt = 0; kt < k_tiles; ++kt) {
    ML::mma(acc, d0, 0, kt > 0);
    wgmma_wait<1>();
  }
  wgmma_wait<0>();
  const long long t1 = clock64();
  if (threadIdx.x % 128 == 0) cycles[blockIdx.x * WGs + wg] = t1 - t0;
  // Every accumulator block read once (keeps each block's wgmmas; reading all 128 values made ptxas serialize them).
  float any = 0.0f;
#pragma unroll
  for (int mi = 0; mi < ML::MI; ++mi) any += acc[mi][0] + acc[mi][ML::WN / 2 - 1];
  if (any == -1.0f) sink[threadIdx.x] = any;  // never true
#endif
}

struct FillArgs {
  bool conv = false, mma = false;
  bool im2col_only = false;  // conv: the im2col box alone per k-tile (--im2col-only)
  std::vector<int> ctas{1, 8, 66, 104, 132};
  int rows_a = 128, rows_b = 64;
  int stages = 0;  // 0: as many as fit (gemm), 5 (conv: the ping-pong 256x64 tile's)
  std::vector<int> holds{0};
  int k_tiles = 1024;
  int n = 256;
  int repeats = 5;
};

std::vector<int> parse_ints(const char* s) {
  std::vector<int> v;
  for (std::string t(s); !t.empty();) {
    const std::size_t c = t.find(',');
    v.push_back(std::atoi(t.substr(0, c).c_str()));
    t = c == std::string::npos ? "" : t.substr(c + 1);
  }
  return v;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// Launch `launch` (grid `ctas`) once to warm up, then `repeats` times between events: the median µs.
template <class F>
Status time_launches(F launch, int repeats, double& us) {
  KTUNE_RETURN_IF_ERROR(launch());
  KTUNE_TOOLS_CUDA(cudaDeviceSynchronize());
  CudaEvent e0, e1;
  KTUNE_RETURN_IF_ERROR(e0.create());
  KTUNE_RETURN_IF_ERROR(e1.create());
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    KTUNE_TOOLS_CUDA(cudaEventRecord(e0.get()));
    KTUNE_RETURN_IF_ERROR(launch());
    KTUNE_TOOLS_CUDA(cudaEventRecord(e1.get()));
    KTUNE_TOOLS_CUDA(cudaEventSynchronize(e1.get()));
    float ms = 0.0f;
    KTUNE_TOOLS_CUDA(cudaEventElapsedTime(&ms, e0.get(), e1.get()));
    t.push_back(1000.0 * ms);
  }
  us = median(t);
  return {};
}

void print_row(const char* mode, int ctas, int stage_bytes, int stages, int hold, double us, const std::vector<long long>& cycles,
               const std::vector<int>& k_tiles) {
  std::vector<double> per_kt, bpc;
  double total_bytes = 0.0;
  for (std::size_t i = 0; i < cycles.size(); ++i) {
    if (k_tiles[i] <= 0 || cycles[i] <= 0) continue;
    per_kt.push_back(double(cycles[i]) / k_tiles[i]);
    bpc.push_back(double(stage_bytes) * k_tiles[i] / double(cycles[i]));
    total_bytes += double(stage_bytes) * k_tiles[i];
  }
  std::printf("%-5s %5d %8.1f %6d %6d %10.2f %12.1f %10.1f %10.2f\n", mode, ctas, stage_bytes / 1024.0, stages, hold, us,
              median(per_kt), median(bpc), total_bytes / (us * 1e-6) / 1e12);
}

// The tile shapes of --fill mma (f16 'tn'; the stage count is unused).
constexpr GemmConfig mma_tile(TileShape t, WarpShape w, WgSchedule s = WgSchedule::cooperative) {
  return GemmConfig{90, MathOp::wgmma_f16, Layout::row, Layout::col, t, w, 1, 8, s};
}
constexpr GemmConfig t64x64 = mma_tile({64, 64, 64}, {64, 64}), t128x64 = mma_tile({128, 64, 64}, {64, 64}),
                     t256x64 = mma_tile({256, 64, 64}, {128, 64}), t128x128 = mma_tile({128, 128, 64}, {64, 128}),
                     t128x256 = mma_tile({128, 256, 64}, {64, 256}), t256x128 = mma_tile({256, 128, 64}, {128, 128}),
                     pp256x64 = mma_tile({256, 64, 64}, {256, 64}, WgSchedule::pingpong),
                     pp128x64 = mma_tile({128, 64, 64}, {128, 64}, WgSchedule::pingpong),
                     swap64x112 = mma_tile({64, 112, 64}, {64, 112}, WgSchedule::swap_ab);
template <const GemmConfig& C, int WGs>
struct MmaTile {
  static constexpr GemmConfig value = C;
  static constexpr int wgs = WGs;
};
using Mma64x64 = MmaTile<t64x64, 1>;
using Mma128x64 = MmaTile<t128x64, 2>;
using Mma256x64 = MmaTile<t256x64, 2>;
using MmaPp256x64 = MmaTile<pp256x64, 2>;
using MmaPp128x64 = MmaTile<pp128x64, 2>;
using Mma128x128 = MmaTile<t128x128, 2>;
using Mma128x256 = MmaTile<t128x256, 2>;
using Mma256x128 = MmaTile<t256x128, 2>;
using MmaSwap64x112 = MmaTile<swap64x112, 1>;

// One tile shape of --fill mma: launch, time, report cycles per k-tile against the full rate.
template <class Tile>
Status run_mma_rate(const char* label, const FillArgs& a, DeviceBuffer& cycles_buf, DeviceBuffer& sink) {
  constexpr GemmConfig C = Tile::value;
  constexpr int WGs = Tile::wgs;
  using ML = WgmmaMainloop<C>;
  constexpr int smem = ML::stage_bytes + 1024;
  constexpr auto kernel = mma_rate_kernel<Tile>;
  KTUNE_TOOLS_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  // FLOP per k-tile and CTA over 4096 per cycle (dense f16/bf16 wgmma, one multiprocessor)
  const double full_rate_cycles = 2.0 * C.tile.m * C.tile.n * C.tile.k * (C.schedule == WgSchedule::pingpong ? WGs : 1) / 4096.0;
  for (int ctas : a.ctas) {
    if (ctas < 1 || ctas > 1024 / WGs) return error(StatusCode::invalid_argument, "--ctas: 1..512");
    auto launch = [&]() -> Status {
      kernel<<<ctas, 128 * WGs, smem>>>(a.k_tiles, static_cast<long long*>(cycles_buf.get()), static_cast<float*>(sink.get()));
      return cuda_status(cudaGetLastError(), "mma_rate_kernel launch");
    };
    double us = 0.0;
    KTUNE_RETURN_IF_ERROR(time_launches(launch, a.repeats, us));
    std::vector<long long> cycles(std::size_t(ctas) * WGs);
    KTUNE_TOOLS_CUDA(cudaMemcpy(cycles.data(), cycles_buf.get(), sizeof(long long) * cycles.size(), cudaMemcpyDeviceToHost));
    std::vector<double> per_kt;
    for (long long c : cycles) per_kt.push_back(double(c) / a.k_tiles);
    const double kt_cycles = median(per_kt);
    std::printf("mma   %5d %-34s %10.2f %12.1f %10.1f %9.0f%%\n", ctas, label, us, kt_cycles, full_rate_cycles,
                100.0 * full_rate_cycles / kt_cycles);
  }
  return {};
}

Status run_mma(const FillArgs& a) {
  DeviceBuffer cycles_buf, sink;
  KTUNE_RETURN_IF_ERROR(cycles_buf.allocate(sizeof(long long) * 2048));
  KTUNE_RETURN_IF_ERROR(sink.allocate(sizeof(float) * 256));
  std::printf("mode   ctas tile                                median_us kt_cycles(med) full_rate  of_full\n");
  KTUNE_RETURN_IF_ERROR(run_mma_rate<Mma64x64>("64x64 w64x64 (1 wg)", a, cycles_buf, sink));
  KTUNE_RETURN_IF_ERROR(run_mma_rate<Mma128x64>("128x64 w64x64", a, cycles_buf, sink));
  KTUNE_RETURN_IF_ERROR(run_mma_rate<Mma256x64>("256x64 w128x64", a, cycles_buf, sink));
  KTUNE_RETURN_IF_ERROR(run_mma_rate<MmaPp256x64>("pp 256x64 w256x64 (2 tiles)", a, cycles_buf, sink));
  KTUNE_RETURN_IF_ERROR(run_mma_rate<MmaPp128x64>("pp 128x64 w128x64 (2 tiles)", a, cycles_buf, sink));
  KTUNE_RETURN_IF_ERROR(run_mma_rate<Mma128x128>("128x128 w64x128", a, cycles_buf, sink));
  KTUNE_RETURN_IF_ERROR(run_mma_rate<Mma128x256>("128x256 w64x256", a, cycles_buf, sink));
  KTUNE_RETURN_IF_ERROR(run_mma_rate<Mma256x128>("256x128 w128x128", a, cycles_buf, sink));
  KTUNE_RETURN_IF_ERROR(run_mma_rate<MmaSwap64x112>("swap 64x112 w64x112 (1 wg)", a, cycles_buf, sink));
  return {};
}

Status run_fill(const FillArgs& a) {
  DeviceInfo dev;
  KTUNE_RETURN_IF_ERROR(current_device(dev));
  if (dev.cc != 90) return error(StatusCode::no_instance, "--fill runs sm_90a kernels: needs compute capability 9.0");
  DeviceBuffer cycles_buf, done_buf;
  KTUNE_RETURN_IF_ERROR(cycles_buf.allocate(sizeof(long long) * 1024));
  KTUNE_RETURN_IF_ERROR(done_buf.allocate(sizeof(int) * 1024));
  std::printf("mode   ctas stage_KB stages   hold  median_us kt_cycles(med) B/clk/SM agg_TB/s\n");
  for (int ctas : a.ctas) {
    if (ctas < 1 || ctas > 1024) return error(StatusCode::invalid_argument, "--ctas: 1..1024");
    for (int hold : a.holds) {
      std::vector<long long> cycles(ctas);
      std::vector<int> k_tiles(ctas, a.k_tiles);
      double us = 0.0;
      if (!a.conv) {
        const int stage_bytes = (a.rows_a + a.rows_b) * 128;
        const int stages = a.stages > 0 ? a.stages : std::min(fill_max_stages, (dev.smem_optin_bytes - 1024 - 1024) / stage_bytes);
        if (a.rows_a < 8 || a.rows_a > 256 || a.rows_b < 8 || a.rows_b > 256 || a.rows_a % 8 || a.rows_b % 8 || stages < 1 ||
            stages * stage_bytes + 1024 > dev.smem_optin_bytes - 1024)
          return error(StatusCode::invalid_argument, "--rows A+B (each 8..256, multiples of 8: whole 1 KB swizzle atoms) and --stages must fit shared memory");
        const int k_wrap = 64;  // k wraps at 4096 elements: 13·A + 8·B rows × 8 KB stay in L2
        DeviceBuffer A, B;
        KTUNE_RETURN_IF_ERROR(A.allocate(std::size_t(13) * a.rows_a * k_wrap * 64 * 2));
        KTUNE_RETURN_IF_ERROR(B.allocate(std::size_t(8) * a.rows_b * k_wrap * 64 * 2));
        KTUNE_TOOLS_CUDA(cudaMemset(A.get(), 0x3c, A.bytes()));
        KTUNE_TOOLS_CUDA(cudaMemset(B.get(), 0x3c, B.bytes()));
        CUtensorMap ta, tb;
        KTUNE_RETURN_IF_ERROR(make_tensor_map(ta, DType::bf16, A.get(), k_wrap * 64, 13 * a.rows_a, k_wrap * 64, 64, a.rows_a));
        KTUNE_RETURN_IF_ERROR(make_tensor_map(tb, DType::bf16, B.get(), k_wrap * 64, 8 * a.rows_b, k_wrap * 64, 64, a.rows_b));
        const int smem = stages * stage_bytes + 1024;
        KTUNE_TOOLS_CUDA(cudaFuncSetAttribute(fill_gemm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        auto launch = [&]() -> Status {
          fill_gemm_kernel<<<ctas, 64, smem>>>(ta, tb, a.rows_a, a.rows_b, a.k_tiles, k_wrap, stages, hold,
                                               static_cast<long long*>(cycles_buf.get()));
          return cuda_status(cudaGetLastError(), "fill_gemm_kernel launch");
        };
        KTUNE_RETURN_IF_ERROR(time_launches(launch, a.repeats, us));
        KTUNE_TOOLS_CUDA(cudaMemcpy(cycles.data(), cycles_buf.get(), sizeof(long long) * ctas, cudaMemcpyDeviceToHost));
        print_row("gemm", ctas, stage_bytes, stages, hold, us, cycles, k_tiles);
      } else {
        using ML = WgmmaMainloop<fill_conv_tile>;
        const int stages = a.stages > 0 ? a.stages : fill_conv_tile.stages;
        const int slot_bytes = a.im2col_only ? ML::a_bytes : ML::stage_bytes;
        if (stages > fill_max_stages || stages * slot_bytes + 1024 > dev.smem_optin_bytes - 1024)
          return error(StatusCode::invalid_argument, "--stages: the stages (40 KB, 32 KB with --im2col-only) must fit shared memory");
        Conv2dDesc d;  // 56² 3×3 64→64, padding 1
        d.n = a.n;
        d.h = d.w = 56;
        d.c = d.k = 64;
        d.r = d.s = 3;
        d.pad_h = d.pad_w = 1;
        d.type = d.out_type = DType::f16;
        DeviceBuffer x, w;
        KTUNE_RETURN_IF_ERROR(x.allocate(std::size_t(d.n) * 56 * 56 * 64 * 2));
        KTUNE_RETURN_IF_ERROR(w.allocate(std::size_t(64) * 9 * 64 * 2));
        KTUNE_TOOLS_CUDA(cudaMemset(x.get(), 0x3c, x.bytes()));
        KTUNE_TOOLS_CUDA(cudaMemset(w.get(), 0x3c, w.bytes()));
        CUtensorMap tx, tw;
        KTUNE_RETURN_IF_ERROR(make_im2col_map(tx, d, x.get(), fill_conv_tile.tile.m));
        KTUNE_RETURN_IF_ERROR(make_filter_map(tw, d, w.get(), fill_conv_tile.tile.n));
        const ConvTmaGeometry geo = conv_tma_geometry(d);
        const int tiles = static_cast<int>(ceil_div(conv_shape(d).m, std::int64_t{fill_conv_tile.tile.m}));
        const int smem = stages * slot_bytes + 1024;
        KTUNE_TOOLS_CUDA(cudaFuncSetAttribute(fill_conv_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        auto launch = [&]() -> Status {
          fill_conv_kernel<<<ctas, 64, smem>>>(tx, tw, geo, tiles, stages, hold, a.im2col_only, static_cast<long long*>(cycles_buf.get()),
                                               static_cast<int*>(done_buf.get()));
          return cuda_status(cudaGetLastError(), "fill_conv_kernel launch");
        };
        KTUNE_RETURN_IF_ERROR(time_launches(launch, a.repeats, us));
        KTUNE_TOOLS_CUDA(cudaMemcpy(cycles.data(), cycles_buf.get(), sizeof(long long) * ctas, cudaMemcpyDeviceToHost));
        KTUNE_TOOLS_CUDA(cudaMemcpy(k_tiles.data(), done_buf.get(), sizeof(int) * ctas, cudaMemcpyDeviceToHost));
        print_row(a.im2col_only ? "conv-a" : "conv", ctas, slot_bytes, stages, hold, us, cycles, k_tiles);
      }
    }
  }
  return {};
}

}  // namespace

// argv[0] is "--fill".
int fill_main(int argc, char** argv) {
  FillArgs a;
  auto usage = [] {
    std::fprintf(stderr, "usage: ktune-sm90-probes --fill gemm|conv|mma [--ctas 1,8,66,104,132] [--rows A+B] [--stages S] "
                         "[--hold 0,512] [--ktiles K] [--n N] [--repeats R] [--im2col-only 0|1]\n");
    return 2;
  };
  if (argc < 2) return usage();
  const std::string mode = argv[1];
  if (mode != "gemm" && mode != "conv" && mode != "mma") return usage();
  a.conv = mode == "conv";
  a.mma = mode == "mma";
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    const char* v = i + 1 < argc ? argv[++i] : nullptr;
    if (v == nullptr) return usage();
    if (arg == "--ctas") a.ctas = parse_ints(v);
    else if (arg == "--hold") a.holds = parse_ints(v);
    else if (arg == "--rows") {
      if (std::sscanf(v, "%d+%d", &a.rows_a, &a.rows_b) != 2) return usage();
    } else if (arg == "--stages") a.stages = std::atoi(v);
    else if (arg == "--ktiles") a.k_tiles = std::max(1, std::atoi(v));
    else if (arg == "--n") a.n = std::max(1, std::atoi(v));
    else if (arg == "--repeats") a.repeats = std::max(1, std::atoi(v));
    else if (arg == "--im2col-only") a.im2col_only = std::atoi(v) != 0;
    else return usage();
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("ktune-sm90-probes: no CUDA device\n");
    return 77;
  }
  const Status st = a.mma ? run_mma(a) : run_fill(a);
  if (!st.ok()) {
    std::printf("ktune-sm90-probes --fill: %s\n", st.to_string().c_str());
    return 1;
  }
  return 0;
}

}  // namespace ktune::probes
