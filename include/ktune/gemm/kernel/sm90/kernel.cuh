// ktune/gemm/kernel/sm90/kernel.cuh — the Hopper GEMM kernel (sm_90a only) and its host launcher.
//
// Persistent, warp-specialized: a grid of at most one block per multiprocessor walks the output tiles
// (grouped raster, tile += gridDim.x). Warpgroup 0 is the producer: it gives most of its registers away
// (setmaxnreg) and one thread streams k-tiles of A and B through TMA into a ring of `stages` shared-
// memory slots. Warpgroups 1.. are consumers: each waits for a slot, issues its wgmmas, keeps one
// k-tile of wgmmas in flight and releases the slot of the previous one. After a tile's last k-tile the
// consumers run the fused epilogue (accumulators → per-warp staging in shared memory → epilogue →
// vector stores; epilogue.cuh) while the producer already fills the ring for the next tile. Launched
// in clusters of 2 CTAs, the pair's tiles share one operand, which the two producers multicast
// (mainloop.cuh). Short launches are programmatic (sm90_launch_pdl: sm90_pdl_enabled, or GemmLaunchOptions::pdl): the kernel lets the next
// one start after its barrier init and waits for the previous one before its first global access.
//
// Device code exists only for sm_90a (__CUDA_ARCH_FEAT_SM90_ALL); other targets get a trapping body so
// multi-architecture builds still compile, and the launcher refuses to run a non-sm_90a image.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <type_traits>
#include <utility>

#include "ktune/device.hpp"
#include "ktune/dispatch.hpp"
#include "ktune/epilogue/builtin.cuh"
#include "ktune/gemm/kernel/gemm_kernel.cuh"
#include "ktune/gemm/kernel/params.cuh"
#include "ktune/gemm/kernel/pdl.hpp"
#include "ktune/gemm/kernel/schedule.cuh"
#include "ktune/gemm/kernel/sm90/cluster_k.cuh"
#include "ktune/gemm/kernel/sm90/epilogue.cuh"
#include "ktune/gemm/kernel/sm90/mainloop.cuh"
#include "ktune/gemm/kernel/sm90/pipeline.cuh"
#include "ktune/gemm/kernel/sm90/split_k.cuh"
#include "ktune/gemm/kernel/sm90/tma.cuh"
#include "ktune/gemm/resource_model.hpp"

namespace ktune::kernel::sm90 {

// Consumer schedule and epilogue store of an instance type CfgT (defaults: cooperative, staged stores).
//   pingpong (GemmConfig::schedule = WgSchedule::pingpong, or CfgT::pingpong for probes; one warpgroup
//     tile per block tile): two consumer warpgroups take turns on whole tiles, so one's epilogue runs
//     under the other's mainloop; cooperative: the config's consumer warpgroups split every tile.
//   tma_store (CfgT::tma_store, probes): at least 4 KB of staging per consumer warp, i.e. 4 or more
//     buffers for the asynchronous TMA store (epilogue.cuh: store_tile_async, which every instance uses
//     for 16-bit D with 16-byte aligned rows and the identity or fragment epilogue; the instances' own
//     staging is the resource model's sm90_warp_staging_bytes: 2 to 8 buffers).
//   swap_ab (GemmConfig::schedule = WgSchedule::swap_ab: families Sm90WgmmaF16Swap/Swap2Wg, and the
//     probes' configs too; cooperative, 'tn' f16/bf16, 16-bit D, the whole built-in epilogue):
//     the kernel computes the transposed problem D^T (N x M) = B·A^T: the launcher hands it M' = N,
//     N' = M, A' = our B, B' = our A (both K-major), so the instance's tile (and every kernel-side
//     row/column) is in that swapped orientation; the epilogue (epilogue.cuh: store_tile_swapped) writes
//     the accumulators transposed into row-major D, the bias indexed by the accumulator row (our N), C and
//     the residual read at the transposed positions. No fragment epilogue, TMA store, wide store,
//     split-K, stream-K, cluster split-K or clusters (dispatch.hpp: swap_ab_implements,
//     check_launch_options).
// Each consumer warp has its own epilogue staging either way.
struct Sm90Schedule {
  bool pingpong = false;
  bool tma_store = false;
  bool swap_ab = false;
};
template <class CfgT>
constexpr Sm90Schedule schedule_of() {
  Sm90Schedule s;
  s.pingpong = CfgT::value.schedule == WgSchedule::pingpong;
  if constexpr (requires { CfgT::pingpong; }) s.pingpong = s.pingpong || CfgT::pingpong;
  if constexpr (requires { CfgT::tma_store; }) s.tma_store = CfgT::tma_store;
  s.swap_ab = CfgT::value.schedule == WgSchedule::swap_ab;
  return s;
}
// tf32 operands through a TFLOAT32 tensor map: the TMA rounds each fp32 element to tf32 on the way into
// shared memory, as cuBLASLt's FAST_TF32 does (H200, 4096^3: output bit-identical to cuBLASLt's, same
// speed), instead of the tensor core truncating FLOAT32 data (2.6e-4 vs 7.8e-4 relative error against
// float64). CfgT::tma_tf32 = false (a probe) keeps the FLOAT32 map. (make_tensor_map)
template <class CfgT>
constexpr bool uses_tf32_tensor_map() {
  if constexpr (requires { CfgT::tma_tf32; }) return CfgT::tma_tf32;
  else return true;
}
constexpr int sm90_consumer_warpgroups(const GemmConfig& c, Sm90Schedule s) {
  return s.pingpong ? 2 : c.consumer_warpgroups();
}
constexpr int sm90_kernel_staging_bytes(const GemmConfig& c, Sm90Schedule s) {
  // The model's staging per warp; probes that force ping-pong on a one-warpgroup config: the least.
  const int per_warp = sm90_consumer_warpgroups(c, s) == c.consumer_warpgroups() ? sm90_warp_staging_bytes(c)
                                                                                   : sm90_min_warp_staging_bytes;
  const int tma = 4 * sm90_store_box_bytes;
  return 4 * sm90_consumer_warpgroups(c, s) * (s.tma_store && tma > per_warp ? tma : per_warp);
}
// The bias buffers (resource_model.hpp: sm90_bias_buffer_bytes) for this schedule's consumer
// warpgroups. None where they would not fit (ping-pong + TMA-store probes): a bias then takes the staged
// store. For the default schedule this is what the resource model counts.
constexpr int sm90_kernel_bias_bytes(const GemmConfig& c, Sm90Schedule s) {
  const int want = sm90_consumer_warpgroups(c, s) * 2 * c.warp.n * 4;
  const int rest = sm90_base_smem_bytes(c) - sm90_staging_bytes(c) + sm90_kernel_staging_bytes(c, s);
  return rest + want <= ::ktune::sm90.smem_optin_bytes ? want : 0;
}
template <class CfgT>
inline constexpr int sm90_kernel_threads = 128 * (1 + sm90_consumer_warpgroups(CfgT::value, schedule_of<CfgT>()));
template <class CfgT>
inline constexpr int sm90_kernel_smem_bytes = sm90_base_smem_bytes(CfgT::value) - sm90_staging_bytes(CfgT::value) +
                                              sm90_kernel_staging_bytes(CfgT::value, schedule_of<CfgT>()) +
                                              sm90_kernel_bias_bytes(CfgT::value, schedule_of<CfgT>());

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// The GEMM's producer: k-tile kt of output tile tc is one 2-D TMA box of A and of B (in a cluster of 2,
// the shared operand's halves multicast; mainloop.cuh).
template <GemmConfig C>
struct GemmTmaProducer {
  const CUtensorMap* a;
  const CUtensorMap* b;
  // A cluster launch multicasts the shared operand (GemmLaunchOptions::cluster = 2); false: the cluster
  // splits each tile's K instead (cluster split-K, SplitKMode::cluster; wgmma_gemm_kernel's ClusterK).
  bool multicast = true;
  __device__ __forceinline__ void prefetch() const {
    prefetch_tensor_map(a);
    prefetch_tensor_map(b);
  }
  __device__ __forceinline__ void load(char* stage, std::uint64_t* bar, TileCoord tc, int kt, unsigned cluster,
                                       unsigned rank) const {
    WgmmaMainloop<C>::load(a, b, stage, bar, tc.m * C.tile.m, tc.n * C.tile.n, kt * C.tile.k, cluster, rank);
  }
};

// The largest cluster a producer multicasts into: a member `max_multicast` (conv's tma_im2col producer: 8),
// else 2 (the GEMM's pairs). Consumers of larger clusters release slots with one lane per CTA.
template <class Producer>
constexpr unsigned producer_max_multicast() {
  if constexpr (requires { Producer::max_multicast; }) return Producer::max_multicast;
  else return 2;
}

// Does a cluster launch of this producer multicast the shared operand even in a ClusterK kernel? (A
// member `multicast`, set per launch: the GEMM's producer.)
template <class Producer>
__device__ __forceinline__ bool producer_multicasts(const Producer& p) {
  if constexpr (requires { p.multicast; }) return p.multicast;
  else return false;
}

// Does the producer say how many CTAs of a cluster launch share each ring slot (a member `multicast_group`:
// conv's tma_im2col producer)? 1: the cluster splits K (ClusterK); the whole cluster: it multicasts; between:
// groups of that many consecutive ranks multicast and the groups split K (a cluster of group × cluster_k).
template <class Producer>
constexpr bool producer_has_multicast_group() {
  return requires(const Producer& p) { p.multicast_group; };
}

// Ping-pong consumers (named barriers 1 and 2, 256 threads: both consumer warpgroups): consumer c may
// start the mainloop of its next tile only once the other consumer has waited for every k-tile of the
// tile before it. That puts one consumer's epilogue under the other's mainloop, and it keeps a consumer
// that skips the other's slots from running a whole ring lap ahead (a parity wait cannot tell lap n
// from lap n - 2). Hand PTX: cuda::ptx has no named barrier.
__device__ __forceinline__ void consumer_order_wait(int consumer) {
  asm volatile("bar.sync %0, 256;\n" ::"r"(1 + consumer) : "memory");
}
__device__ __forceinline__ void consumer_order_signal(int other_consumer) {
  asm volatile("bar.arrive %0, 256;\n" ::"r"(1 + other_consumer) : "memory");
}

// The 4 warps of consumer warpgroup c meet (named barriers 7 and 8, 128 threads): they have all waited for
// their wgmmas, so one warp may release a ring slot for the warpgroup (clusters of 4 and 8: a quarter of the
// remote arrivals of a release per warp).
__device__ __forceinline__ void consumer_wg_sync(int consumer) {
  asm volatile("bar.sync %0, 128;\n" ::"r"(7 + consumer) : "memory");
}

// The whole warp-specialized persistent kernel but for what the producer loads, so other operand
// sources (conv2d's TMA im2col, ktune/conv/kernel/sm90_conv.cuh) share the ring, the wgmma consumers,
// the schedule and the epilogue. Producer: prefetch() once, then load(stage, bar, tile, kt, cluster,
// rank) issues the TMA copies of k-tile kt (0 ≤ kt < k_tiles) of output tile `tile`, ML::stage_bytes
// in all, completing on `bar`.
// Sch (Sm90Schedule): ping-pong consumers (C has one consumer warpgroup tile, warp = tile) take turns on
// whole tiles (even and odd tiles of this CTA's walk) instead of splitting each tile (cooperative);
// tma_d: D's tensor map (8-row × 64-column boxes, 128-byte swizzle; 16-bit D) for the asynchronous store
// (nullptr: every tile leaves through the consumers' own stores); d_store_boxes (2..): use at most that many
// of the warp's store box buffers (0: all).
// SplitK: p.split_k > 1 splits every tile's k-tiles into slices, work units of their own (split_k.cuh);
// false leaves that code out.
// ClusterK (cluster_k.cuh; conv's tma_im2col route): in a cluster launch the cluster's CTAs split one
// tile's k-tiles (rank r: slice r) instead of multicasting to adjacent tiles, and rank 0 adds the others'
// accumulators from distributed shared memory; one unit per CTA (the launcher's grid is units × cluster).
// In a launch without a cluster it changes nothing.
// wide (wide.ring = R > 0; cooperative, no cluster; tma_d is then D's 3-D view, make_wide_store_map):
// producer and consumers walk only ring stages 0..R-1, and the stages after them plus the staging hold
// each consumer warp's store buffers (epilogue.cuh: store_tile_wide; the launcher's choice for short K).
template <GemmConfig C, class Epi, class Producer, Sm90Schedule Sch = Sm90Schedule{}, bool SplitK = false,
          bool ClusterK = false>
__device__ __forceinline__ void warp_specialized_gemm(const Producer& producer, const GemmParams<typename Epi::Params>& p,
                                                      const int k_tiles, const CUtensorMap* tma_d = nullptr,
                                                      bool fragments_allowed = true, int d_store_boxes = 0,
                                                      Sm90WideStore wide = {}) {
  using ML = WgmmaMainloop<C>;
  constexpr bool PingPong = Sch.pingpong || C.schedule == WgSchedule::pingpong;
  static_assert(!PingPong || ML::consumers == 1, "ping-pong consumers each compute a whole tile");
  static_assert(!ClusterK || !PingPong, "cluster split-K runs cooperative consumers");
  constexpr int consumer_wgs = sm90_consumer_warpgroups(C, Sch);
  constexpr int slot_readers = PingPong ? 1 : ML::consumers;  // warpgroups that read each ring slot
  constexpr int S = C.stages;
  extern __shared__ __align__(1024) char smem_raw[];
  // Round up to a 1024-byte swizzle atom in the shared address space (the model reserved the slack).
  const std::uint32_t raw = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_raw));
  char* ring = smem_raw + ((1024u - (raw & 1023u)) & 1023u);
  float* staging = reinterpret_cast<float*>(ring + S * ML::stage_bytes);
  constexpr int bias_offset = S * ML::stage_bytes + sm90_kernel_staging_bytes(C, Sch);  // bias buffers, then barriers
  auto* bars = reinterpret_cast<std::uint64_t*>(ring + bias_offset + sm90_kernel_bias_bytes(C, Sch));
  const Pipeline<S> pipe{bars, bars + S};
  // A cluster launch (2 CTAs; conv's tma_im2col route also 4 or 8) multicasts the shared operand; a plain
  // launch has a cluster of 1.
  const unsigned cluster = cuda::ptx::get_sreg_cluster_nctarank();
  const unsigned rank = cluster > 1 ? cuda::ptx::get_sreg_cluster_ctarank() : 0u;
  // CTAs that share (multicast) a slot's operands: the cluster, but 1 where the cluster splits K (a
  // ClusterK kernel's cluster launch, unless its producer says the launch multicasts). Conv's producer may
  // split a cluster into multicast groups that split K together (producer_has_multicast_group):
  // rank = k_rank · mcast + share_rank.
  constexpr bool has_group = producer_has_multicast_group<Producer>();
  // (The derived ranks are recomputed where used, not held: the 256x128 consumers have no register to spare.)
  auto group = [&] {  // the producer's multicast group in a cluster launch
    if constexpr (has_group) return cluster > 1 ? producer.multicast_group : 1u;
    else return 1u;
  };
  const bool cluster_k = has_group ? ClusterK && cluster > group() : ClusterK && cluster > 1 && !producer_multicasts(producer);
  const unsigned mcast = has_group ? group() : cluster_k ? 1u : cluster;  // CTAs that share each slot (a power of 2)
  // (mcast is a power of 2: shifts, not divisions. Without a group, and used only where cluster_k holds, the
  // cluster and the rank themselves, as the GEMM's kernel has always had them.)
  auto ck = [&] { return has_group ? cluster >> __popc(mcast - 1u) : cluster; };  // CTAs that split each tile's K
  auto k_rank = [&] { return has_group ? rank >> __popc(mcast - 1u) : rank; };     // this CTA's k-slice
  auto share_rank = [&] { return has_group ? rank & (mcast - 1u) : cluster_k ? 0u : rank; };  // rank in its multicast group
  auto share_base = [&] { return has_group ? rank & ~(mcast - 1u) : 0u; };  // the group's first rank
  // Wide store (epilogue.cuh: sm90_wide_layout): the consumer warps' store buffers in the ring stages the
  // mainloop does not walk, then the third bias buffers.
  constexpr Sm90WideLayout wide_layout =
      sm90_wide_layout(S, ML::stage_bytes, sm90_kernel_staging_bytes(C, Sch), 4 * consumer_wgs, ML::WN, C.tile.n);
  auto wide_area = [&] { return ring + sm90_wide_ring * ML::stage_bytes; };  // (recomputed where used: no register)
  // The bias through the tensor core (epilogue.cuh; Sm90WideStore::bias_mma): A' and the B's after the store
  // buffers, set up by the whole block before its first barrier.
  // (The GEMM's kernel only: in the conv kernel it made ptxas spill 56 bytes, 256x128.)
  static_assert(!Sch.swap_ab || (std::is_same_v<Epi, epilogue::Builtin> && !PingPong && !ClusterK && !SplitK),
                "swap_ab: the built-in epilogue, cooperative consumers, no split-K (probes)");
  constexpr bool bias_mma_capable = !Sch.swap_ab && std::is_same_v<Epi, epilogue::Builtin> && std::is_same_v<Producer, GemmTmaProducer<C>> &&
                                    sm90_wide_store_fits<ML> && !PingPong && ML::a_kc && ML::row_bytes == 128 &&
                                    wide_layout.buffers >= 2 && wide_layout.bias_mma &&
                                    (C.math == MathOp::wgmma_f16 || C.math == MathOp::wgmma_bf16);
  auto bias_mma_area = [&] { return wide_area() + wide_layout.bias_offset; };
  if constexpr (bias_mma_capable) {
    if (wide.ring > 0 && wide.bias_mma) {
      if constexpr (C.math == MathOp::wgmma_f16) bias_mma_init<__half>(bias_mma_area(), C.tile.n, threadIdx.x, blockDim.x);
      else bias_mma_init<__nv_bfloat16>(bias_mma_area(), C.tile.n, threadIdx.x, blockDim.x);
    }
  }
  // Arrivals per slot: every consumer warp of every CTA sharing it, but one per warpgroup in clusters of more
  // than 2 (release_slot below; cooperative consumers: the ping-pong 128x128 consumer spilled 12 bytes with it).
  const int slot_release_warps = producer_max_multicast<Producer>() > 2 && !PingPong && mcast > 2 ? 1 : 4;
  if (threadIdx.x == 0) pipe.init(slot_release_warps * slot_readers * static_cast<int>(mcast));
  if (cluster > 1) {  // the peer's TMA and arrivals reach this CTA's barriers: all initialised first
    cuda::ptx::barrier_cluster_arrive();
    cuda::ptx::barrier_cluster_wait();
  } else {
    __syncthreads();
  }
  // Programmatic dependent launch (sm90_launch): the next kernel of the stream may start its prologue
  // now. Its cudaGridDependencySynchronize waits for this grid's completion and memory, so this grid
  // waits for the previous one before each role's first global access below (no-ops without the
  // launch attribute).
  cudaTriggerProgrammaticLaunchCompletion();

  // Work units: a cluster computes `cluster` adjacent tiles (along M when pairing shares B, else N);
  // units are rastered in groups, and CTA `rank` takes tile `rank` of its cluster's unit.
  const int tiles_m = (p.m + C.tile.m - 1) / C.tile.m, tiles_n = (p.n + C.tile.n - 1) / C.tile.n;
  const int cl = static_cast<int>(cluster), tl = static_cast<int>(mcast);  // CTAs and tiles per unit
  const int units_m = ML::pair_m ? (tiles_m + tl - 1) / tl : tiles_m;
  const int units_n = ML::pair_m ? tiles_n : (tiles_n + tl - 1) / tl;
  const int units = units_m * units_n;
  // Split-K: work w is slice w % S of unit w / S, S = p.split_k (clusters of 1). Otherwise work = unit.
  // (S is read from the parameters where used, not held in a register: the consumers have none to spare.)
  const bool split = SplitK && p.split_k > 1;
  const int works = split ? units * p.split_k : units;
  const int first_unit = static_cast<int>(blockIdx.x) / cl, unit_step = static_cast<int>(gridDim.x) / cl;
  // Stream-K (split_k.cuh, schedule.cuh): CTA b walks its data-parallel tiles, then its k-iteration
  // range's segments; first_work/more_work/next_work are the walk for every mode.
  // (The GEMM's own kernel only, instances with warpgroup tiles up to 64x128: compiled out elsewhere.)
  const bool streamk = SplitK && supports_stream_k(C) && std::is_same_v<Producer, GemmTmaProducer<C>> && p.stream_k;
  const int cta = static_cast<int>(blockIdx.x);
  auto first_work = [&] { return streamk ? stream_k_first(p.sk, cta) : first_unit; };
  auto more_work = [&](int w) { return streamk ? stream_k_more(p.sk, cta, w) : w < works; };
  auto next_work = [&](int w) { return streamk ? stream_k_next(p.sk, cta, w) : w + unit_step; };
  auto k_range = [&](int w) {
    return split       ? k_slice(k_tiles, w % p.split_k, p.split_k)
           : streamk   ? stream_k_range(p.sk, cta, w)
           : cluster_k ? k_slice(k_tiles, static_cast<int>(k_rank()), static_cast<int>(ck()))
                       : KRange{0, k_tiles};
  };
  // This CTA's tile of its unit (held by the GEMM's kernel, recomputed by conv's: its registers are short).
  const int gemm_tile_rank = has_group ? 0 : cluster_k ? 0 : static_cast<int>(rank);
  auto tile_rank = [&] { return has_group ? static_cast<int>(share_rank()) : gemm_tile_rank; };
  auto tile_of = [&](int w) {
    const int unit = split ? w / p.split_k : streamk ? stream_k_tile(p.sk, w) : w;
    const TileCoord u = grouped_raster(unit, units_m, units_n, p.raster_group);
    return ML::pair_m ? TileCoord{u.m * tl + tile_rank(), u.n} : TileCoord{u.m, u.n * tl + tile_rank()};
  };
  const int wg = threadIdx.x / 128;

  if (wg == 0) {
    // Producer warpgroup: one thread issues every TMA copy.
    if constexpr (consumer_wgs == 2) asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(smem_layout::sm90_producer_registers));
    if (threadIdx.x == 0) {
      producer.prefetch();  // (the tensor maps are kernel parameters: no dependency on the previous grid)
      cudaGridDependencySynchronize();  // A, B (and the bias_mma copy) may be the previous grid's output
      RingState<S> st;
      if constexpr (!PingPong)  // (ping-pong's skip keeps its compile-time modulo)
        if (wide.ring > 0) st.stages = wide.ring;
      for (int unit = first_work(); more_work(unit); unit = next_work(unit)) {
        const TileCoord tc = tile_of(unit);  // may lie past M or N in a pair: TMA reads zeros there
        const KRange kr = k_range(unit);
        for (int kt = kr.first; kt < kr.first + kr.count; ++kt) {
          // The bias through the tensor core: the tile's bias slice into the B' of its last k-tile's stage.
          int bias_cols = 0;
          if constexpr (bias_mma_capable)
            if (wide.ring > 0 && wide.bias_mma && kt == kr.first + kr.count - 1) bias_cols = min(C.tile.n, p.n - tc.n * C.tile.n);
          std::uint64_t* bar = pipe.acquire(st, ML::stage_bytes + 2 * bias_cols);
          producer.load(ring + st.stage * ML::stage_bytes, bar, tc, kt, mcast, rank);
          if constexpr (bias_mma_capable)
            if (bias_cols > 0)
              bias_mma_copy<C.tile.n>(p.ep.bias, tc.n * C.tile.n, p.n,
                                      bias_mma_area() + sm90_bias_a_bytes + st.stage * sm90_bias_b_bytes(C.tile.n), bar);
          st.advance();
        }
      }
    }
    if constexpr (ClusterK)  // the consumers' two cluster barriers per unit (cluster_k_sum), every thread
      if (cluster_k)
        for (int unit = first_unit; unit < works; unit += unit_step) cluster_k_producer_sync();
  } else {
    if constexpr (consumer_wgs == 2) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(smem_layout::sm90_consumer_registers));
    // Every global access of the consumers (bias, C, residual, D, split-K partials and counters, stream-K
    // workspace) comes after the previous grid: it may write what this grid reads or read what it writes.
    cudaGridDependencySynchronize();
    const int cw = wg - 1, lane = threadIdx.x & 31, warp_in_wg = (threadIdx.x >> 5) & 3;
    auto release_slot = [&](int slot) {  // this warp no longer reads ring slot `slot`
      if constexpr (producer_max_multicast<Producer>() <= 2) {
        if (lane == 0) pipe.release(slot, mcast);
      } else if (!PingPong && mcast > 2) {  // clusters of 4 / 8: one arrival per warpgroup and CTA, after its 4 warps meet
        consumer_wg_sync(cw);
        if (warp_in_wg == 0) pipe.release_by_lanes(slot, mcast, share_base(), static_cast<unsigned>(lane));
      } else {
        pipe.release_by_lanes(slot, mcast, share_base(), static_cast<unsigned>(lane));
      }
    };
    const int sub = PingPong ? 0 : cw;  // which warpgroup sub-tile of the block tile this consumer computes
    constexpr int warp_staging_bytes = sm90_kernel_staging_bytes(C, Sch) / (4 * consumer_wgs);
    float* stage_warp = staging + ((threadIdx.x - 128) >> 5) * (warp_staging_bytes / 4);
    const auto d0 = ML::descriptors(static_cast<std::uint32_t>(__cvta_generic_to_shared(ring)), sub);
    const bool identity = is_identity<Epi>(p.ep);
    // The built-in epilogue on the accumulators in registers, then the identity store (epilogue.cuh).
    bool fragments = false;
    constexpr bool bias_buffers = sm90_kernel_bias_bytes(C, Sch) > 0;
    if constexpr (std::is_same_v<Epi, epilogue::Builtin> && !Sch.swap_ab)  // (swap_ab: its own store, below)
      fragments = fragments_allowed && !split && !streamk && !identity && fragment_epilogue(p.ep, p.d_vec4) && (bias_buffers || p.ep.bias == nullptr) &&
                  (!cluster_k || cluster_k_owner(consumer_wgs, k_rank(), ck(), cw));  // cluster split-K: owners store (and prefetch bias)
    // The bias through the tensor core (host: a bias of the operands' type, alpha 1), else copied ahead.
    // (A lambda of kernel parameters and `fragments`, not a flag held across the mainloop.)
    auto bias_mma = [&] {
      if constexpr (bias_mma_capable) return fragments && wide.bias_mma && wide.ring > 0 && p.ep.alpha == 1.0f;
      else return false;
    };
    const bool bias_ahead = fragments && p.ep.bias != nullptr && !bias_mma();
    // 16-bit D leaves through the asynchronous TMA store (epilogue.cuh) when the launcher made D's tensor
    // map and the accumulators hold D's values (identity or fragment epilogue), through `store_boxes`
    // buffers (what the warp's staging holds, or fewer: d_store_boxes); `slot` is the next one.
    constexpr int staging_boxes = sm90_store_boxes(warp_staging_bytes);
    constexpr bool async_capable =
        !Sch.swap_ab && std::is_same_v<Epi, epilogue::Builtin> && sm90_async_store_fits<ML> && staging_boxes >= 2;
    static_assert(!async_capable || (warp_staging_bytes % 512 == 0 && S * ML::stage_bytes % 1024 == 0),
                  "warp staging regions start on 512-byte boundaries of a 1024-byte aligned staging area");
    const bool async_store = async_capable && tma_d != nullptr && (identity || fragments) && size_of(p.d_type) == 2;
    const int store_boxes = d_store_boxes >= 2 && d_store_boxes < staging_boxes ? d_store_boxes : staging_boxes;
    // The wide store converts with the fragment epilogue's ReLU (cvt.rn.relu) instead of a pass of its own.
    bool relu_in_pack = false;
    if constexpr (async_capable && sm90_wide_store_fits<ML> && !PingPong)
      relu_in_pack = async_store && fragments && wide.ring > 0 && wide.relu_in_pack && p.ep.activation == Activation::relu;
    // Wide store: a third bias buffer (in the freed ring stages, after the warps' store buffers) so a tile's
    // bias is copied two tiles ahead: one short mainloop is less than a global load's latency under the
    // store traffic. Groups: one committed per tile (empty where no tile follows), so the wait for tile
    // t's copy leaves only tile t+1's pending.
    bool bias_deep = false;
    if constexpr (async_capable && sm90_wide_store_fits<ML> && !PingPong)
      bias_deep = wide_layout.bias_deep && bias_ahead && wide.ring > 0 && wide.bias_deep;
    int slot = 0;
    // This consumer's two bias buffers (bias_prefetch/bias_wait: its 128 threads share the copies and
    // meet at named barrier 3 + cw; 1 and 2 order ping-pong consumers), and the tiles it computes.
    // (Recomputed where used, not held: the consumers have no registers to spare.)
    constexpr int bias_buffer_bytes = ML::WN * 4;
    auto bias_buffer = [&](int b) {
      if (b < 2) return ring + bias_offset + (2 * cw + b) * bias_buffer_bytes;
      return wide_area() + wide_layout.bias_offset + cw * bias_buffer_bytes;
    };
    auto col0_of = [&](int unit) { return tile_of(unit).n * C.tile.n + ML::wg_col0(sub); };
    auto prefetch_bias = [&](int col0, int b) {
      bias_prefetch<ML::WN>(p.ep.bias, size_of(p.d_type), col0, p.n, bias_buffer(b), static_cast<int>(threadIdx.x & 127));
    };
    if constexpr (std::is_same_v<Epi, epilogue::Builtin>) {
      const int mine = PingPong && cw == 1 ? next_work(first_work()) : first_work();
      if (bias_ahead && more_work(mine)) prefetch_bias(col0_of(mine), 0);
      if (bias_deep) {  // and the second tile's (ping-pong is never deep)
        const int second = next_work(mine);
        if (more_work(mine) && more_work(second)) prefetch_bias(col0_of(second), 1);
        else __pipeline_commit();
      }
    }
    int local = 0;  // this consumer's tiles so far: tile `local` reads bias buffer local % 2
    RingState<S> st;
    if constexpr (!PingPong)
      if (wide.ring > 0) st.stages = wide.ring;
    int turn = 0;  // ping-pong: this CTA's tiles alternate between consumers 0 and 1
    for (int unit = first_work(); more_work(unit); unit = next_work(unit), ++turn) {
      const KRange kr = k_range(unit);
      // Stream-K: a piece of a tile cut between CTAs (decided here: two predicates, no register held
      // across the mainloop): a later piece goes to the workspace, the first adds the later ones.
      const bool sk_later = streamk && kr.first > 0, sk_first = streamk && kr.first == 0 && kr.count < k_tiles;
      if constexpr (PingPong) {
        if ((turn & 1) != cw) {  // the other consumer's tile
          st.skip(kr.count);
          continue;
        }
        if (turn > 0) consumer_order_wait(cw);  // the other consumer has waited for all of tile turn-1
        if (kr.count == 0 && more_work(next_work(unit))) consumer_order_signal(1 - cw);  // an empty slice
      }
      // Per tile: not live across tiles (the wgmma asm reads and writes them), so not across the
      // split-K finish either.
      typename ML::Accumulators acc;
      const TileCoord tc = tile_of(unit);
      const int row0 = tc.m * C.tile.m + ML::wg_row0(sub) + 16 * warp_in_wg;
      const int col0 = tc.n * C.tile.n + ML::wg_col0(sub);
      const int buffer = bias_deep ? local % 3 : local & 1;
      ++local;
      const int next = PingPong ? next_work(next_work(unit)) : next_work(unit);  // this consumer's next tile
      const int next_col0 = bias_ahead && !bias_deep && more_work(next) ? col0_of(next) : -1;
      int previous = 0;
      bool landed = false;  // the probe a k-tile ahead found this slot full
      for (int kt = 0; kt < kr.count; ++kt) {
        if (!landed) pipe.wait_full(st);
        if constexpr (PingPong)
          if (kt == kr.count - 1 && more_work(next_work(unit))) consumer_order_signal(1 - cw);
        ML::mma(acc, d0, st.stage, kt > 0);
        const int current = st.stage;
        st.advance();
        // Probe the next slot before waiting on the wgmmas: the barrier's latency then runs under them, and
        // the next k-tile's wgmmas issue right after the release when its bytes are there.
        landed = kt + 1 < kr.count && pipe.probe_full(st);
        wgmma_wait<1>();  // the previous k-tile's wgmmas are done: its slot may be refilled
        if (kt > 0) release_slot(previous);
        previous = current;
      }
      if constexpr (bias_mma_capable) {
        if (bias_mma() && kr.count > 0) {  // acc += A'·B' (the bias row of the last k-tile's stage)
          // From A's stage-0 descriptor (warp-uniform registers; K-major: the LBO field 16 → 2048 for B'),
          // not from the ring's address: fewer live registers (the conv 256x128 kernel spilled otherwise).
          const std::uint64_t a1 =
              d0.a + ((sm90_wide_ring * ML::stage_bytes + wide_layout.bias_offset - ML::wg_row0(sub) * ML::row_bytes) >> 4);
          const std::uint64_t b1 = a1 + (std::uint64_t((sm90_wide_block_bytes - 16) >> 4) << 16) +
                                   ((sm90_bias_a_bytes + ML::wg_col0(sub) / 64 * sm90_wide_block_bytes) >> 4) +
                                   static_cast<std::uint64_t>(previous) * (sm90_bias_b_bytes(C.tile.n) >> 4);
          ML::mma_rank1(acc, a1, b1);
        }
      }
      wgmma_wait<0>();
      if (kr.count > 0) release_slot(previous);
#pragma unroll
      for (int mi = 0; mi < ML::MI; ++mi) fence_registers(acc[mi]);

      if constexpr (ClusterK) {  // ranks > 0 hand their slice's sums to rank 0, which adds them
        if (cluster_k) {
          if (kr.count == 0) {  // more ranks than k-tiles: an empty slice (rank 0's too) adds zeros
#pragma unroll
            for (int mi = 0; mi < ML::MI; ++mi)
#pragma unroll
              for (int i = 0; i < ML::WN / 2; ++i) acc[mi][i] = 0.0f;
          }
          if (!cluster_k_sum<ML, 128 * consumer_wgs>(acc, ring, k_rank(), ck(), has_group ? mcast : 1u, has_group ? share_rank() : 0u,
                                                     static_cast<int>(threadIdx.x) - 128)) continue;
        }
      }

      if constexpr (SplitK) {
        if (split) {  // this slice's fp32 partial (split_k.cuh); an empty slice's is zero
          if (kr.count == 0) {
#pragma unroll
            for (int mi = 0; mi < ML::MI; ++mi)
#pragma unroll
              for (int i = 0; i < ML::WN / 2; ++i) acc[mi][i] = 0.0f;
          }
          const int slice = unit % p.split_k, sub_row0 = row0 - 16 * warp_in_wg;
          store_partial<ML>(acc, p.partials + slice * p.partial_slice, p.partial_ld, row0, col0, p.m, p.n);
          // Parallel mode: splitk_reduce_kernel finishes. Serial mode: the sub-tile's last slice adds the
          // partials, reloads the sum and goes on to the epilogue below (the staged store: fragments and
          // the TMA store are off for split launches). (The sub-tile test is warpgroup-uniform.)
          // (Serial mode only where supports_serial_split_k: the launcher refuses it elsewhere.)
          if constexpr (!supports_serial_split_k(C)) {
            (void)sub_row0;
            continue;
          } else {
            if (!p.split_serial || sub_row0 >= p.m || col0 >= p.n || !serial_split_k_sum<ML::WM, ML::WN>(p, sub_row0, col0, slice, cw))
              continue;
            load_partial_fragments<ML>(acc, p.partials, p.partial_ld, row0, col0, p.m, p.n);
          }
        } else if (streamk) {  // a tile cut between CTAs: its later pieces go to the workspace, its first adds them
          if ((sk_later || sk_first) && !stream_k_fixup<ML>(acc, p, unit, sk_later, row0 - 16 * warp_in_wg, col0, sub, cw)) continue;
        }
      }

      if constexpr (std::is_same_v<Epi, epilogue::Builtin>) {
        if (fragments) apply_fragments<ML>(p, acc, bias_buffer(buffer), cw, relu_in_pack, bias_deep, bias_mma());
        // The next tile's bias into the other buffer: every warp of this warpgroup has passed this
        // tile's barrier, so all are done with that buffer (the tile before).
        if (next_col0 >= 0) prefetch_bias(next_col0, buffer ^ 1);
        if (bias_deep) {  // the tile after next into the buffer of the tile before (all warps are past it)
          const int after = next_work(next);
          if (more_work(next) && more_work(after)) prefetch_bias(col0_of(after), buffer == 0 ? 2 : buffer - 1);
          else __pipeline_commit();
        }
      }
      if constexpr (async_capable) {
        if (async_store) {
          if constexpr (sm90_wide_store_fits<ML> && !PingPong) {
            if constexpr (wide_layout.buffers >= 2) {
              if (wide.ring > 0) {  // this warp's buffers in the stages after the first sm90_wide_ring ones
                constexpr int nb = wide_layout.buffers;
                char* bufs = wide_area() + ((threadIdx.x - 128) >> 5) * wide_layout.warp_bytes;
                if (p.d_type == DType::f16) {
                  if (relu_in_pack) store_tile_wide<ML, __half, nb, true>(tma_d, acc, bufs, row0, col0, p.m, p.n, slot);
                  else store_tile_wide<ML, __half, nb, false>(tma_d, acc, bufs, row0, col0, p.m, p.n, slot);
                } else {
                  if (relu_in_pack) store_tile_wide<ML, __nv_bfloat16, nb, true>(tma_d, acc, bufs, row0, col0, p.m, p.n, slot);
                  else store_tile_wide<ML, __nv_bfloat16, nb, false>(tma_d, acc, bufs, row0, col0, p.m, p.n, slot);
                }
                continue;
              }
            }
          }
          char* boxes = store_box_buffers(stage_warp);
          if (p.d_type == DType::f16) store_tile_async<ML, __half>(tma_d, acc, boxes, store_boxes, row0, col0, p.m, p.n, slot);
          else store_tile_async<ML, __nv_bfloat16>(tma_d, acc, boxes, store_boxes, row0, col0, p.m, p.n, slot);
          continue;
        }
      }
      if constexpr (Sch.swap_ab) {  // the transposed tile into row-major D (16-bit D: the host checked)
        if (p.d_type == DType::f16) store_tile_swapped<ML, __half>(p, acc, stage_warp, row0, col0);
        else store_tile_swapped<ML, __nv_bfloat16>(p, acc, stage_warp, row0, col0);
      } else {
        const bool plain = identity || fragments;  // the accumulators hold D's values
        switch (p.d_type) {
          case DType::f32: store_tile<ML, Epi, float>(p, acc, stage_warp, row0, col0, plain); break;
          case DType::f16: store_tile<ML, Epi, __half>(p, acc, stage_warp, row0, col0, plain); break;
          case DType::bf16: store_tile<ML, Epi, __nv_bfloat16>(p, acc, stage_warp, row0, col0, plain); break;
        }
      }
    }
    // TMA stores read this warp's buffers asynchronously: the block's shared memory must outlive them.
    if constexpr (async_capable)
      if (async_store) store_async_drain();
  }
  // A CTA may exit only when its peers no longer multicast into it or arrive on its barriers.
  if (cluster > 1) {
    cuda::ptx::barrier_cluster_arrive();
    cuda::ptx::barrier_cluster_wait();
  }
}
#endif

template <class CfgT, class Epi>
__global__ void __launch_bounds__(sm90_kernel_threads<CfgT>, 1)
    wgmma_gemm_kernel(const __grid_constant__ CUtensorMap tma_a, const __grid_constant__ CUtensorMap tma_b,
                      const GemmParams<typename Epi::Params> p, const __grid_constant__ CUtensorMap tma_d,
                      const int d_store_boxes, const bool staged_epilogue, const Sm90WideStore wide) {
#if defined(__CUDA_ARCH__)
#if __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr GemmConfig C = CfgT::value;
  constexpr Sm90Schedule sch = schedule_of<CfgT>();
  // Cluster split-K (p.split_cluster > 1: clusters split one tile's K) where the instance takes it.
  constexpr bool cluster_k = supports_cluster_split_k(C) && !sch.pingpong && !sch.swap_ab;
  warp_specialized_gemm<C, Epi, GemmTmaProducer<C>, sch, !sch.swap_ab, cluster_k>(GemmTmaProducer<C>{&tma_a, &tma_b, p.split_cluster <= 1}, p,
                                                         (p.k + C.tile.k - 1) / C.tile.k,
                                                         d_store_boxes > 0 ? &tma_d : nullptr, !staged_epilogue,
                                                         d_store_boxes, wide);
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
  const std::uint64_t bit = device_bit(dev);
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

// A launch of `grid` CTAs in clusters of `cluster` along x (attr: storage for the one attribute).
inline cudaLaunchConfig_t sm90_cluster_config(unsigned grid, int cluster, int threads, int smem, cudaStream_t stream,
                                              cudaLaunchAttribute& attr) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(grid, 1, 1);
  cfg.blockDim = dim3(static_cast<unsigned>(threads), 1, 1);
  cfg.dynamicSmemBytes = static_cast<std::size_t>(smem);
  cfg.stream = stream;
  attr = cudaLaunchAttribute{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = static_cast<unsigned>(cluster);
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  return cfg;
}

// Clusters of `cluster` CTAs that fit on the whole device at once (0 if none).
template <auto Kernel>
int resident_clusters(int threads, int smem, int cluster) {
  cudaLaunchAttribute attr;
  return ::ktune::kernel::resident_clusters<Kernel>(
      sm90_cluster_config(static_cast<unsigned>(cluster), cluster, threads, smem, nullptr, attr));
}

// ---- What the GEMM and conv launchers share (conv: ktune/conv/kernel/sm90_conv.cuh) ------------------

// Before a launch of Kernel: its sm_90a image, its shared-memory limit, the device, and the CTAs that fit
// on one multiprocessor (occupancy API, asked once per kernel; at least 1).
template <auto Kernel>
Status sm90_prepare_launch(int threads, int smem, DeviceInfo& dev, int& per_sm_blocks) {
  KTUNE_RETURN_IF_ERROR(ensure_sm90_image<Kernel>());
  KTUNE_RETURN_IF_ERROR(ensure_smem_limit<Kernel>(smem));
  KTUNE_RETURN_IF_ERROR(current_device(dev));
  static const int per_sm = [&] {
    int n = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, Kernel, threads, smem) != cudaSuccess) {
      (void)cudaGetLastError();
      n = 0;
    }
    return n > 0 ? n : 1;
  }();
  per_sm_blocks = per_sm;
  return {};
}

// How a launch stores D: through the asynchronous TMA store (16-bit D, 16-byte aligned rows, identity or
// fragment epilogue; boxes > 0, map = D's tensor map) and, for tiles of at most a few k-tiles, the wide
// store from the ring stages the mainloop does not need (wide.ring > 0, map = D's 3-D view; cooperative
// consumers, no cluster: a cluster's ring holds multicast stages or rank 0's cluster split-K partials).
// Nothing for split-K launches (the partials leave through their own store). epilogue.cuh: make_store_map,
// sm90_wide_store_choice, make_wide_store_map.
struct Sm90DStore {
  CUtensorMap map{};
  int boxes = 0;
  Sm90WideStore wide{};
};
template <GemmConfig C, Sm90Schedule Sch, class Epi>
Sm90DStore sm90_d_store(DType t, void* d, std::int64_t m, std::int64_t n, std::int64_t ldd, const EpilogueSpec& e,
                        bool split, int cluster, int k_tiles, const void* bias = nullptr) {
  using ML = WgmmaMainloop<C>;
  Sm90DStore s;
  if constexpr (sm90_async_store_fits<ML> && std::is_same_v<Epi, epilogue::Builtin> && !Sch.swap_ab) {
    if (split) return s;
    s.boxes = make_store_map(s.map, t, d, m, n, ldd, e);
    if constexpr (sm90_wide_store_fits<ML> && !Sch.pingpong && C.schedule != WgSchedule::pingpong) {
      if (s.boxes > 0 && cluster == 1) {
        constexpr int warps = 4 * sm90_consumer_warpgroups(C, Sch), staging = sm90_kernel_staging_bytes(C, Sch);
        s.wide = sm90_wide_store_choice(C.stages, k_tiles, ML::stage_bytes, staging, warps, ML::WN, C.tile.n);
        s.wide.bias_mma = sm90_bias_mma_choice(s.wide, sm90_wide_layout(C.stages, ML::stage_bytes, staging, warps, ML::WN, C.tile.n),
                                               e, bias, t, C.operand());
        CUtensorMap w{};
        if (s.wide.ring > 0 && make_wide_store_map(w, t, d, m, n, ldd)) s.map = w;
        else s.wide = {};
      }
    }
  }
  return s;
}

// Programmatic dependent launch of the sm90 kernels (warp_specialized_gemm: trigger after the barrier
// init, wait before each role's first global access): the launch, CTA rasterization and prologue of a
// ktune launch overlap the tail of the kernel before it in the stream. It pays on short GEMMs (H200,
// session 9, graph replay of back-to-back launches: 1024³ 7.22 → 6.42 µs, 256³ 3.77 → 2.91) and cost
// ~0.3-1.5% on long ones (4096×11008×4096 pp_128x128 0.545 → 0.553 ms, 4096³ 0.205 → 0.206, two
// rounds each), so by default only GEMMs of M·N·K ≤ 2^33 (≲ 25 µs) launch programmatically.
// A/B switch, read once: KTUNE_SM90_PDL=0 never, =1 always (pdl.hpp, shared with the sm80 launcher's
// KTUNE_SM80_PDL). Per launch, GemmLaunchOptions::pdl overrides it (`on` / `off`; `rule`: the switch and
// the size rule). The kernels are sm_90a code on compute capability 9.0 devices: `on` is always possible.
inline bool sm90_pdl_enabled(const GemmDesc& d, PdlChoice choice = PdlChoice::rule) {
  return pdl_launch(choice, sm90_pdl_mode(), d);
}

// The launch itself: `grid` CTAs, in clusters of `cluster` (1: no cluster attribute), programmatic where
// sm90_pdl_enabled(d, pdl); then, for a split-K launch in parallel mode, the reduction kernel that adds the
// partials and applies the epilogue: a plain launch (programmatic, it made the pair slower: session 8,
// 128×4096×4096 @split2p 17.53 → 17.92 µs; session 4 found the same for sm80).
template <class Epi, class... KernelArgs, class... Args>
Status sm90_launch_pdl(PdlChoice pdl, void (*kernel)(KernelArgs...), std::int64_t grid, int cluster, int threads, int smem,
                       cudaStream_t stream, const GemmParams<typename Epi::Params>& p, const GemmDesc& d, bool split,
                       const char* what, Args&&... args) {
  if (grid > 0x7fffffff) return error(StatusCode::invalid_argument, "too many (tile, k-slice) units for one launch");
  cudaLaunchAttribute attrs[2];
  cudaLaunchConfig_t cfg = sm90_cluster_config(static_cast<unsigned>(grid), cluster, threads, smem, stream, attrs[0]);
  if (cluster <= 1) cfg.numAttrs = 0;
  if (sm90_pdl_enabled(d, pdl)) attrs[cfg.numAttrs++] = pdl_attribute();
  cfg.attrs = cfg.numAttrs > 0 ? attrs : nullptr;
  KTUNE_RETURN_IF_ERROR(cuda_status(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...), what));
  return split && !p.split_serial ? launch_splitk_reduce<Epi>(p, d, stream) : Status{};
}
// The same by the rule (the conv launchers, which have no per-launch PDL option).
template <class Epi, class... KernelArgs, class... Args>
Status sm90_launch(void (*kernel)(KernelArgs...), std::int64_t grid, int cluster, int threads, int smem, cudaStream_t stream,
                   const GemmParams<typename Epi::Params>& p, const GemmDesc& d, bool split, const char* what,
                   Args&&... args) {
  return sm90_launch_pdl<Epi>(PdlChoice::rule, kernel, grid, cluster, threads, smem, stream, p, d, split, what,
                              std::forward<Args>(args)...);
}

template <class CfgT, class Epi>
Status launch_with(const GemmDesc& d0, const typename Epi::Params& ep, const GemmOperands& ops,
                   const GemmLaunchOptions& opt, cudaStream_t stream) {
  constexpr GemmConfig C = CfgT::value;
  using ML = WgmmaMainloop<C>;
  constexpr auto kernel = wgmma_gemm_kernel<CfgT, Epi>;
  constexpr int smem = sm90_kernel_smem_bytes<CfgT>;  // the model's, with ping-pong's second staging and the bias buffers
  static_assert(smem <= ::ktune::sm90.smem_optin_bytes, "the kernel's shared memory fits an sm90 block");
  static_assert(schedule_of<CfgT>().tma_store || sm90_consumer_warpgroups(C, schedule_of<CfgT>()) != C.consumer_warpgroups() ||
                    smem == estimate_resources(C).smem_bytes,
                "an instance's shared memory is the resource model's (probes: TMA-store buffers, ping-pong by flag)");
  constexpr int threads = sm90_kernel_threads<CfgT>;
  const GemmDesc d = resolved(d0);
  KTUNE_RETURN_IF_ERROR(check_sm90_split_k(C, d, ops, opt));  // before anything is launched or written
  // Cluster split-K: clusters of split_cluster CTAs, one per tile, rank r the k-slice r (no workspace).
  const int cluster_k = opt.split_k > 1 && opt.split_mode == SplitKMode::cluster ? opt.split_cluster : 1;
  if constexpr (!supports_cluster_split_k(C) || schedule_of<CfgT>().pingpong)
    if (cluster_k > 1) return error(StatusCode::unsupported, "this instance does not take sm90 cluster split-K");
  const bool split = opt.split_k > 1 && cluster_k == 1;
  DeviceInfo dev;
  int per_sm_blocks = 1;
  KTUNE_RETURN_IF_ERROR(sm90_prepare_launch<kernel>(threads, smem, dev, per_sm_blocks));
  static const int pair_clusters = resident_clusters<kernel>(threads, smem, 2);

  // Clusters of 2 (multicast of the shared operand) only on request (GemmLaunchOptions::cluster = 2):
  // correct on the H200 (every instance, odd tile counts, several tiles per cluster); with the fence-free
  // remote arrivals within ±0.6% of cluster 1 for cooperative tiles, 3-9% slower for ping-pong
  // (sm90_launch_policy.hpp), so cluster 1 stays the default.
  const std::int64_t tiles_m = ceil_div(d.m, std::int64_t{C.tile.m}), tiles_n = ceil_div(d.n, std::int64_t{C.tile.n});
  const std::int64_t tiles = tiles_m * tiles_n;
  if (tiles > 0x7fffffff) return error(StatusCode::invalid_argument, "too many output tiles for one launch");
  const std::int64_t pair_dim = ML::pair_m ? tiles_m : tiles_n;
  int cluster = opt.cluster == 2 ? 2 : 1;
  if (pair_clusters < 1 || split || opt.stream_k || cluster_k > 1) cluster = 1;  // (set_sm90_stream_k refuses cluster = 2)

  CUtensorMap ta, tb;
  const DType t = C.operand();
  constexpr bool tf32_map = uses_tf32_tensor_map<CfgT>();
  const int mc = cluster;  // CTAs sharing the multicast operand
  if constexpr (ML::a_kc)
    KTUNE_RETURN_IF_ERROR(make_tensor_map(ta, t, ops.a, d.k, d.m, d.lda, C.tile.k, ML::a_box_outer(mc), tf32_map));
  else
    KTUNE_RETURN_IF_ERROR(make_tensor_map(ta, t, ops.a, d.m, d.k, d.lda, ML::mn_box_inner, ML::a_box_outer(mc)));
  if constexpr (ML::b_kc)
    KTUNE_RETURN_IF_ERROR(make_tensor_map(tb, t, ops.b, d.k, d.n, d.ldb, C.tile.k, ML::b_box_outer(mc), tf32_map));
  else
    KTUNE_RETURN_IF_ERROR(make_tensor_map(tb, t, ops.b, d.n, d.k, d.ldb, ML::mn_box_inner, ML::b_box_outer(mc)));

  GemmParams<typename Epi::Params> p = make_gemm_params(d, ops, opt, ep);
  if (split) KTUNE_RETURN_IF_ERROR(set_sm90_split_k(p, C, d, ops, opt, stream));
  if (opt.stream_k) {  // over the resident CTAs (the model's count, or the occupancy API's where lower)
    const std::int64_t model = static_cast<std::int64_t>(detail::resident_slots(estimate_resources(C), dev));
    const std::int64_t sms = dev.sm_count > 0 ? dev.sm_count : 1;
    KTUNE_RETURN_IF_ERROR(set_sm90_stream_k(p, C, d, ops, opt, std::min(model, sms * per_sm_blocks), stream));
  }
  // D through the asynchronous TMA store where D and the epilogue allow it; for short K the wide store.
  const Sm90DStore ds = sm90_d_store<C, schedule_of<CfgT>(), Epi>(d.d_type, ops.d, d.m, d.n, d.ldd, d.epilogue, split,
                                                                   cluster * cluster_k, static_cast<int>(ceil_div(d.k, std::int64_t{C.tile.k})),
                                                                   ops.bias);

  // A/B switch for measurements: KTUNE_SM90_STAGED_EPILOGUE=1 runs every built-in epilogue through the
  // staged store (store_builtin) instead of the accumulator-fragment path.
  static const bool staged = std::getenv("KTUNE_SM90_STAGED_EPILOGUE") != nullptr;
  const std::int64_t sms = dev.sm_count > 0 ? dev.sm_count : 1;
  if (cluster_k > 1) {  // one unit (tile) per cluster, not persistent: rank 0's ring then holds the partials
    static std::atomic<int> fits[9] = {};  // per cluster size: 1 fits, -1 does not (asked once)
    if (fits[cluster_k].load(std::memory_order_relaxed) == 0)
      fits[cluster_k].store(resident_clusters<kernel>(threads, smem, cluster_k) > 0 ? 1 : -1, std::memory_order_relaxed);
    if (fits[cluster_k].load(std::memory_order_relaxed) < 0)
      return error(StatusCode::unsupported, "sm90 cluster split-K: no cluster of " + std::to_string(cluster_k) + " CTAs fits the device");
    p.split_cluster = cluster_k;
    return sm90_launch_pdl<Epi>(opt.pdl, kernel, tiles * cluster_k, cluster_k, threads, smem, stream, p, d, false,
                                "sm90 GEMM kernel launch (cluster split-K)", ta, tb, p, ds.map, ds.boxes, staged, ds.wide);
  }
  if (cluster == 1) {
    const std::int64_t slots = opt.max_ctas > 0 ? opt.max_ctas : sms * per_sm_blocks;
    const std::int64_t works = tiles * (split ? opt.split_k : 1);  // split-K: (tile, slice) units
    const std::int64_t grid = opt.stream_k ? std::int64_t{p.sk.ctas} : std::min(works, slots);
    return sm90_launch_pdl<Epi>(opt.pdl, kernel, grid, 1, threads, smem, stream, p, d, split, "sm90 GEMM kernel launch", ta, tb, p,
                                ds.map, ds.boxes, staged, ds.wide);
  }
  const std::int64_t units = ceil_div(pair_dim, std::int64_t{2}) * (tiles / pair_dim);
  const std::int64_t clusters =
      std::min<std::int64_t>(units, opt.max_ctas > 0 ? std::max(1, opt.max_ctas / 2) : pair_clusters);
  return sm90_launch_pdl<Epi>(opt.pdl, kernel, 2 * clusters, 2, threads, smem, stream, p, d, false,
                              "sm90 GEMM kernel launch (cluster of 2)", ta, tb, p, ds.map, ds.boxes, staged, ds.wide);
}

// swap_ab: what the swapped kernel can run, checked before anything is launched: the problem
// (dispatch.hpp: swap_ab_implements, which can_implement applies too: 'tn' f16/bf16, 16-bit D, any
// built-in epilogue) and the launch options (no split-K, stream-K or clusters: check_launch_options says
// the same for table entries; probes' entries reach the launcher directly).
inline Status check_swap_ab(const GemmConfig& c, const GemmDesc& d, const GemmLaunchOptions& opt) {
  KTUNE_RETURN_IF_ERROR(swap_ab_implements(d));
  if (opt.split_k > 1 || opt.stream_k) return error(StatusCode::unsupported, "swap-AB instance: no split-K or stream-K");
  if (opt.cluster == 2 && !supports_clusters(c)) return error(StatusCode::unsupported, "swap-AB instance: no clusters (cluster=2)");
  return {};
}

// The dispatch-table launcher: the built-in run-time epilogue.
template <class CfgT>
Status launch_builtin(const GemmDesc& d0, const GemmOperands& ops, const GemmLaunchOptions& opt, cudaStream_t stream) {
  const GemmDesc d = resolved(d0);
  const auto ep = epilogue::make_builtin_params(d.epilogue, ops.c, d.ldc, ops.bias, ops.residual, d.ldr);
  if constexpr (schedule_of<CfgT>().swap_ab) {
    // The transposed problem D^T = B·A^T: M' = N, N' = M, A' = B (N x K row-major, ld ldb), B' = A (K x M
    // column-major, ld lda). D, ldd, the bias and the epilogue stay ours: the kernel's store transposes.
    static_assert(CfgT::value.a_layout == Layout::row && CfgT::value.b_layout == Layout::col &&
                      (CfgT::value.math == MathOp::wgmma_f16 || CfgT::value.math == MathOp::wgmma_bf16),
                  "swap_ab: 'tn' f16/bf16 instances only");
    KTUNE_RETURN_IF_ERROR(check_swap_ab(CfgT::value, d, opt));
    GemmDesc s = d;
    s.m = d.n;
    s.n = d.m;
    s.lda = d.ldb;
    s.ldb = d.lda;
    GemmOperands so = ops;
    so.a = ops.b;
    so.b = ops.a;
    return launch_with<CfgT, epilogue::Builtin>(s, ep, so, opt, stream);
  } else {
    return launch_with<CfgT, epilogue::Builtin>(d, ep, ops, opt, stream);
  }
}

template <class CfgT>
cudaError_t attributes_of(cudaFuncAttributes* a) {
  return cudaFuncGetAttributes(a, wgmma_gemm_kernel<CfgT, epilogue::Builtin>);
}

}  // namespace ktune::kernel::sm90
