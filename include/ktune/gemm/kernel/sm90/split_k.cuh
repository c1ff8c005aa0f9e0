// ktune/gemm/kernel/sm90/split_k.cuh — split-K in the Hopper persistent kernel (GemmLaunchOptions::
// split_k > 1): the same workspace, the same slices and the same fixed summation order as the sm80
// instances (gemm/split_k.hpp, kernel/gemm_kernel.cuh), so serial and parallel mode give the same bits.
//
// Work units: the persistent loop walks units × split_k (tile, k-slice) pairs, the slices of one tile
// adjacent (work w = unit·split_k + slice), each with its k-tiles k_slice(k_tiles, slice, split_k). The
// producer loads a unit's slice, the consumers compute it like a tile; then each consumer warpgroup
// stores its WM×WN accumulators (its sub-tile of the tile) as fp32 partials (straight from the wgmma
// fragments, 32-byte row segments through L2: no staging, no barrier). An empty slice (more slices than
// k-tiles) stores zeros.
//   parallel: splitk_reduce_kernel (gemm_kernel.cuh) adds the partials and applies the epilogue.
//   serial:   per warpgroup sub-tile, arrival counters as in sm80's serial_split_k_finish: the last slice
//             of a group of split_k_group_slices to arrive adds the group, the last group adds the group
//             sums into partial 0, reloads them into its accumulators and goes on to the kernel's usual
//             epilogue. Only the 128 threads of that consumer warpgroup take part (the producer and the
//             other consumer run on): named barrier 5 + consumer.
//             Counters: split_k_counters_per_tile per WM×WN sub-tile of D, so the workspace layout is
//             split_k_layout with the warpgroup tile (sm90_split_k_layout).
//
// Stream-K (GemmLaunchOptions::stream_k; the walk is schedule.cuh's): a tile cut between CTAs is finished
// by the CTA that computed its first k-tiles (as its last segment); each other piece (always its CTA's
// first stream-K segment, so one per CTA) goes to that CTA's slot of the workspace as fp32 partials
// (store_partial) and a flag per (CTA, warpgroup sub-tile) says it is there. The finishing warpgroup
// waits for the flags of CTAs b + 1, b + 2, ... in turn, adds their partials to its accumulators in that
// (k) order, resets the flags and goes on to the kernel's usual epilogue. The wait cannot deadlock: the
// awaited pieces are first segments, computed without waiting, and all CTAs are resident (the launcher
// runs at most the resident CTAs).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "ktune/dispatch.hpp"
#include "ktune/gemm/kernel/gemm_kernel.cuh"
#include "ktune/gemm/kernel/params.cuh"
#include "ktune/gemm/kernel/schedule.cuh"
#include "ktune/gemm/split_k.hpp"
#include "ktune/workspace.hpp"

namespace ktune::kernel::sm90 {

// The workspace of an sm90 instance: counters per warpgroup tile (WM×WN), partials as for sm80.
inline SplitKLayout sm90_split_k_layout(const GemmConfig& c, const GemmDesc& d, const GemmLaunchOptions& o) {
  return split_k_layout(c, d, o);
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// Named barrier 5 + consumer over that consumer warpgroup's 128 threads (1-2 order ping-pong consumers,
// 3-4 the bias buffers). Immediate ids: a register id makes ptxas reserve all 16 barriers. Hand PTX:
// cuda::ptx has no named barrier.
__device__ __forceinline__ void split_bar_sync(int consumer) {
  if (consumer == 0) asm volatile("bar.sync 5, 128;\n" ::: "memory");
  else asm volatile("bar.sync 6, 128;\n" ::: "memory");
}
__device__ __forceinline__ bool split_bar_or(int consumer, bool v) {
  unsigned out;
  if (consumer == 0)
    asm volatile("{\n .reg .pred p;\n setp.ne.u32 p, %1, 0;\n bar.red.or.pred p, 5, 128, p;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(out) : "r"(unsigned(v)) : "memory");
  else
    asm volatile("{\n .reg .pred p;\n setp.ne.u32 p, %1, 0;\n bar.red.or.pred p, 6, 128, p;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(out) : "r"(unsigned(v)) : "memory");
  return out != 0;
}

// arrive_last (gemm_kernel.cuh) for the consumer warpgroup `consumer`: publish its writes, count its
// arrival; true in every thread of the warpgroup that completes the count (which resets the counter
// and then sees the others' writes).
__device__ __forceinline__ bool warpgroup_arrive_last(int* counter, int expected, int consumer) {
  if (expected <= 1) return true;
  __threadfence();
  split_bar_sync(consumer);
  bool last = false;
  if ((threadIdx.x & 127) == 0) {
    last = atomicAdd(counter, 1) == expected - 1;
    if (last) *counter = 0;
  }
  if (!split_bar_or(consumer, last)) return false;
  __threadfence();
  return true;
}

// The wgmma accumulator fragment layout, walked row by row: lane (g, t) holds rows g and g + 8 of each
// 16-row band of each m64 block mi, columns 8j + 2t and 8j + 2t + 1 at acc[mi][4j + 2h] and [4j + 2h + 1]
// (h: which of the two rows). f(acc_row, row) for each of the warp's rows, row = row0 + 64·mi + g + 8h,
// acc_row = &acc[mi][2h] (pair j at acc_row[4j], acc_row[4j + 1]). store_partial,
// load_partial_fragments and add_partial_fragments differ only in what they do with a row.
template <class ML, class Acc, class F>
__device__ __forceinline__ void for_each_fragment_row(Acc& acc, int row0, F&& f) {
  const int g = (threadIdx.x & 31) >> 2;
#pragma unroll
  for (int mi = 0; mi < ML::MI; ++mi)
#pragma unroll
    for (int h = 0; h < 2; ++h) f(&acc[mi][2 * h], row0 + 64 * mi + g + 8 * h);
}

// This warp's accumulators → its rows of the partial matrix `dst` (row stride ld, ld % 4 == 0, ld ≥ n
// rounded up to 4: a pair at an even col < n stays inside its row).
template <class ML>
__device__ __forceinline__ void store_partial(const typename ML::Accumulators& acc, float* dst, std::int64_t ld,
                                              int row0, int col0, int m, int n) {
  const int t = threadIdx.x & 3;
  for_each_fragment_row<ML>(acc, row0, [&](const float* a, int row) {
    if (row >= m) return;
    float* r = dst + static_cast<std::int64_t>(row) * ld + col0 + 2 * t;
    const int cols = n - col0 - 2 * t;  // pair j is inside D while 8j < cols (then it stops: no predicate per pair kept)
#pragma unroll
    for (int j = 0; j < ML::WN / 8; ++j) {
      if (8 * j >= cols) break;
      __stcg(reinterpret_cast<float2*>(r + 8 * j), make_float2(a[4 * j], a[4 * j + 1]));
    }
  });
}

// Serial mode, after consumer warpgroup `consumer` stored the partial of slice `slice` of its WM×WN
// sub-tile at (r0, c0): sm80's two-level serial reduction (serial_split_k_finish) over the sub-tile's
// counters, with the warpgroup's 128 threads in place of a block. The last slice of its group to arrive
// adds the group's partials in slice order into the group's first partial (groups of one slice are
// their own sum); the last group to arrive adds the group sums in group order into partial 0 and
// returns true: the caller reloads the sum into its accumulators (load_partial_fragments) and the tile
// leaves through the kernel's own epilogue. The same sums in the same order as splitk_reduce_kernel
// (parallel mode), and no second copy of the epilogue in the kernel (it cost ~2 s of compile per
// instance).
template <int WM, int WN, class EpiParams>
__device__ __forceinline__ bool serial_split_k_sum(const GemmParams<EpiParams>& p, int r0, int c0, int slice, int consumer) {
  const int groups = split_k_groups(p.split_k), group = slice / split_k_group_slices;
  const int group_size = min(split_k_group_slices, p.split_k - group * split_k_group_slices);
  const int subtiles_n = (p.n + WN - 1) / WN;
  int* counters = p.semaphores + static_cast<std::int64_t>((r0 / WM) * subtiles_n + c0 / WN) * split_k_counters_per_tile(p.split_k);
  if (!warpgroup_arrive_last(counters + 1 + group, group_size, consumer)) return false;
  const std::int64_t group_stride = split_k_group_slices * p.partial_slice;
  constexpr int quads_per_row = WN / 4, quads = WM * quads_per_row;
  // Each thread sums `batch` 4-column groups at a time (quads q, q + 128, ...), their loads of one slice
  // in flight together; the slices in a rolled loop (small code: this runs once per sub-tile). One load
  // at a time took ~2x the GEMM on 128x4096x4096 (latency-bound: 16 groups x slices per thread).
  constexpr int batch = 4;
  static_assert(quads % (128 * batch) == 0, "warpgroup tiles are multiples of 64x64");
  // Step 0 (several groups): this group's sum into its first partial; step 1: the whole sum into
  // partial 0 (one group: its slices; several: the group sums).
#pragma unroll 1
  for (int step = groups > 1 ? 0 : 1; step < 2; ++step) {
    if (step == 1 && groups > 1 && !warpgroup_arrive_last(counters, groups, consumer)) return false;
    if (step == 0 && group_size == 1) continue;  // already in place
    const std::int64_t stride = step == 0 || groups == 1 ? p.partial_slice : group_stride;
    const int count = step == 0 ? group_size : groups == 1 ? p.split_k : groups;
    float* base = p.partials + (step == 0 ? group * group_stride : 0);
#pragma unroll 1
    for (int q0 = threadIdx.x & 127; q0 < quads; q0 += 128 * batch) {
      float* at[batch];
      int n[batch];
      float x[batch][4];
#pragma unroll
      for (int i = 0; i < batch; ++i) {  // n = 0: outside D (nothing loaded: zeros, nothing stored)
        const int q = q0 + 128 * i, row = r0 + q / quads_per_row, col = c0 + (q % quads_per_row) * 4;
        n[i] = row < p.m && col < p.n ? min(4, p.n - col) : 0;
        at[i] = base + static_cast<std::int64_t>(n[i] > 0 ? row : 0) * p.partial_ld + (n[i] > 0 ? col : 0);
        load_partial(at[i], n[i], x[i]);
      }
#pragma unroll 1
      for (int j = 1; j < count; ++j) {  // left to right: group_sum's / splitk_reduce_kernel's order
        float v[batch][4];
#pragma unroll
        for (int i = 0; i < batch; ++i) load_partial(at[i] + j * stride, n[i], v[i]);
#pragma unroll
        for (int i = 0; i < batch; ++i)
#pragma unroll
          for (int e = 0; e < 4; ++e) x[i][e] += v[i][e];
      }
#pragma unroll
      for (int i = 0; i < batch; ++i) {
        if (n[i] == 4) {
          __stcg(reinterpret_cast<float4*>(at[i]), make_float4(x[i][0], x[i][1], x[i][2], x[i][3]));
        } else {
#pragma unroll
          for (int e = 0; e < 3; ++e)
            if (e < n[i]) __stcg(at[i] + e, x[i][e]);
        }
      }
    }
  }
  __threadfence_block();  // the warpgroup's sums, for its warps' fragment reloads
  split_bar_sync(consumer);
  return true;
}

// This warp's pairs of the sum (partial 0, written by its warpgroup) back into its accumulators:
// store_partial's layout, read through L2. Every accumulator is written (zero outside D), so none of the
// slice's own values stays live across the serial reduction (that spilled).
template <class ML>
__device__ __forceinline__ void load_partial_fragments(typename ML::Accumulators& acc, const float* src, std::int64_t ld,
                                                       int row0, int col0, int m, int n) {
  const int t = threadIdx.x & 3;
  for_each_fragment_row<ML>(acc, row0, [&](float* a, int row) {
    const float* r = src + static_cast<std::int64_t>(row < m ? row : 0) * ld + col0 + 2 * t;
    const int cols = row < m ? n - col0 - 2 * t : 0;
#pragma unroll
    for (int j = 0; j < ML::WN / 8; ++j) {
      float2 v = make_float2(0.0f, 0.0f);
      if (8 * j < cols) v = __ldcg(reinterpret_cast<const float2*>(r + 8 * j));
      a[4 * j] = v.x;
      a[4 * j + 1] = v.y;
    }
  });
}

// stream_k_fixup's sum: acc += this warp's pairs of a slot written by store_partial (WM×WN floats, rows
// WN apart; row0: the warp's first row in the slot; m, n: D's extent from the slot's corner). Every load
// reads inside the slot (no predicate, so a row's loads are all in flight together: predicated loads
// each waited for the one before); pairs outside D add zero.
template <class ML>
__device__ __forceinline__ void add_partial_fragments(typename ML::Accumulators& acc, const float* slot, int row0, int m, int n) {
  const int t = threadIdx.x & 3;
  for_each_fragment_row<ML>(acc, row0, [&](float* a, int row) {
    const float* r = slot + static_cast<std::int64_t>(row) * ML::WN + 2 * t;
    const int cols = row < m ? n - 2 * t : 0;
    float2 v[ML::WN / 8];
#pragma unroll
    for (int j = 0; j < ML::WN / 8; ++j) v[j] = __ldcg(reinterpret_cast<const float2*>(r + 8 * j));
#pragma unroll
    for (int j = 0; j < ML::WN / 8; ++j) {
      const bool inside = 8 * j < cols;
      a[4 * j] += inside ? v[j].x : 0.0f;
      a[4 * j + 1] += inside ? v[j].y : 0.0f;
    }
  });
}

// After consumer warpgroup `consumer` computed work w of a stream-K launch, a piece of a tile cut between
// CTAs (later: it does not start at k-tile 0; else it is the first piece), on its sub-tile `sub` at
// (sub_row0, col0) of D: true when its accumulators hold the tile's whole sum (the first piece with the
// later ones added), false when the piece went to the workspace (the tile is finished elsewhere).
// Warpgroup-uniform; named barrier 5 + consumer.
template <class ML, class EpiParams>
__device__ __forceinline__ bool stream_k_fixup(typename ML::Accumulators& acc, const GemmParams<EpiParams>& p, int w, bool later,
                                               int sub_row0, int col0, int sub, int consumer) {
  constexpr int sub_floats = ML::WM * ML::WN;
  const int b = static_cast<int>(blockIdx.x), warp_row = 16 * ((threadIdx.x >> 5) & 3);
  const int m = p.m - sub_row0, n = p.n - col0;  // D's extent from the sub-tile's corner (may be <= 0)
  if (later) {  // a later piece: to this CTA's slot, then its flag
    store_partial<ML>(acc, p.partials + static_cast<std::int64_t>(b * ML::consumers + sub) * sub_floats, ML::WN, warp_row, 0, m, n);
    // The warpgroup's stores reach thread 0 through the barrier; its fence and release store publish
    // them (cumulative) to the finisher's acquire (CUTLASS's semaphore does the same). One fence, not 128.
    split_bar_sync(consumer);
    if ((threadIdx.x & 127) == 0) {
      __threadfence();
      __nv_atomic_store_n(&p.semaphores[b * ML::consumers + sub], 1, __NV_ATOMIC_RELEASE, __NV_THREAD_SCOPE_DEVICE);
    }
    return false;
  }
  // The first piece: add the pieces of CTAs b + 1, ... (those whose ranges start inside this tile).
  const int tile_end = w - p.sk.dp_tiles + p.sk.k_tiles;
#pragma unroll 1
  for (int c = b + 1; c < p.sk.ctas && stream_k_begin(p.sk, c) < tile_end; ++c) {
    if ((threadIdx.x & 127) == 0) {
      // The compiler's scoped atomics (st.release.gpu / ld.acquire.gpu, as cuda::atomic_ref emits): <cuda/atomic>
      // added ~31k preprocessed lines (<cuda/std/atomic>, <chrono>, <sstream>) and ~3.5 s of CPU to every
      // instance TU that includes this header (notes/build-time.md).
      int* flag = &p.semaphores[c * ML::consumers + sub];
      // Bounded: a piece that never comes (a CTA not resident, a bug) ends the launch with an error
      // after ~2^26 polls (seconds) instead of hanging the device.
      for (unsigned polls = 0; __nv_atomic_load_n(flag, __NV_ATOMIC_ACQUIRE, __NV_THREAD_SCOPE_DEVICE) == 0; ++polls) {
        if (polls > (1u << 26)) __trap();
        if (polls > 64) __nanosleep(100);
      }
      __nv_atomic_store_n(flag, 0, __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE);  // left zero for the next launch
    }
    split_bar_sync(consumer);
    add_partial_fragments<ML>(acc, p.partials + static_cast<std::int64_t>(c * ML::consumers + sub) * sub_floats, warp_row, m, n);
  }
  return true;
}
#endif

// ---- Host side -------------------------------------------------------------------------------------

// The caller's options and workspace for a split launch of instance C (split_k > 1): clusters of 1
// only, the workspace large enough and 16-byte aligned. Nothing is launched when this fails.
inline Status check_sm90_split_k(const GemmConfig& c, const GemmDesc& d, const GemmOperands& ops, const GemmLaunchOptions& opt) {
  KTUNE_RETURN_IF_ERROR(check_launch_option_ranges(opt));
  if (opt.split_k == 1) return {};
  if (opt.split_mode == SplitKMode::cluster) {  // one cluster per tile through warp_specialized_gemm's ClusterK path
    if (opt.split_cluster > cluster_split_k_limit(c) || opt.split_k != opt.split_cluster)
      return error(StatusCode::unsupported, "sm90 cluster split-K: one cluster of at most " + std::to_string(cluster_split_k_limit(c)) +
                                                " CTAs per tile (1: none) with split_k == split_cluster, got split_k=" +
                                                std::to_string(opt.split_k) + ", split_cluster=" + std::to_string(opt.split_cluster));
    if (opt.stream_k || opt.cluster == 2)
      return error(StatusCode::unsupported, "sm90 cluster split-K excludes stream_k and cluster = 2");
    return {};  // no workspace: the partials stay in the cluster
  }
  if (opt.stream_k) return error(StatusCode::invalid_argument, "stream_k and split_k > 1 exclude each other");
  if (opt.cluster == 2) return error(StatusCode::unsupported, "sm90 split-K runs in clusters of 1 (split_k > 1 with cluster = 2)");
  if (opt.split_mode == SplitKMode::serial && !supports_serial_split_k(c))
    return error(StatusCode::unsupported, "serial split-K needs a warpgroup tile of at most 64x128 on sm90 (this instance: parallel mode)");
  const std::size_t need = sm90_split_k_layout(c, d, opt).total_bytes;
  if (ops.workspace == nullptr || ops.workspace_bytes < need)
    return error(StatusCode::invalid_argument, "workspace too small: split_k=" + std::to_string(opt.split_k) + " needs " +
                                                   std::to_string(need) + " bytes, got " +
                                                   std::to_string(ops.workspace == nullptr ? 0 : ops.workspace_bytes));
  if (reinterpret_cast<std::uintptr_t>(ops.workspace) % 16 != 0)
    return error(StatusCode::misaligned, "workspace must be 16-byte aligned");
  return {};
}

// q (the GEMM's parameters) with split-K's fields set: partials in the workspace, serial mode's counters
// from ktune's per-stream pool, else from the workspace, zeroed in stream.
template <class EpiParams>
Status set_sm90_split_k(GemmParams<EpiParams>& q, const GemmConfig& c, const GemmDesc& d, const GemmOperands& ops,
                        const GemmLaunchOptions& opt, cudaStream_t stream) {
  q.split_k = opt.split_k;
  q.split_serial = opt.split_mode == SplitKMode::serial;
  const std::int64_t subtiles = ceil_div(d.m, std::int64_t{c.warp.m}) * ceil_div(d.n, std::int64_t{c.warp.n});
  return set_split_k_workspace(q, sm90_split_k_layout(c, d, opt), d.m, ops.workspace,
                               q.split_serial ? subtiles * split_k_counters_per_tile(opt.split_k) : 0, stream);
}

// q's stream-K fields for a launch of instance c (consumer sub-tiles `subtiles`) over at most `slots`
// resident CTAs: the schedule (plan_stream_k), the workspace's partial slots, the flags from ktune's
// per-stream pool (else the workspace's, zeroed in stream). Checks first: nothing is written when it
// fails (options, problem size, workspace).
template <class EpiParams>
Status set_sm90_stream_k(GemmParams<EpiParams>& q, const GemmConfig& c, const GemmDesc& d, const GemmOperands& ops,
                         const GemmLaunchOptions& opt, std::int64_t slots, cudaStream_t stream) {
  if (opt.split_k > 1) return error(StatusCode::invalid_argument, "stream_k and split_k > 1 exclude each other");
  if (!supports_stream_k(c))
    return error(StatusCode::unsupported, "stream-K needs a warpgroup tile of at most 64x128 on sm90 (this instance: none)");
  if (opt.cluster == 2) return error(StatusCode::unsupported, "sm90 stream-K runs in clusters of 1 (stream_k with cluster = 2)");
  if (opt.max_ctas > slots)
    return error(StatusCode::unsupported, "stream-K needs all its CTAs resident at once: max_ctas=" + std::to_string(opt.max_ctas) +
                                              " > " + std::to_string(slots) + " resident");
  const std::int64_t tiles = ceil_div(d.m, std::int64_t{c.tile.m}) * ceil_div(d.n, std::int64_t{c.tile.n});
  StreamKSchedule sk;
  if (!plan_stream_k(tiles, ceil_div(d.k, std::int64_t{c.tile.k}), opt.max_ctas > 0 ? opt.max_ctas : slots, sk))
    return error(StatusCode::unsupported, "stream-K: the problem's tiles x k-tiles exceed the 32-bit schedule (or K = 0)");
  const SplitKLayout ws = stream_k_layout(c, sk.ctas);
  if (ops.workspace == nullptr || ops.workspace_bytes < ws.total_bytes)
    return error(StatusCode::invalid_argument, "workspace too small: stream-K over " + std::to_string(sk.ctas) + " CTAs needs " +
                                                   std::to_string(ws.total_bytes) + " bytes, got " +
                                                   std::to_string(ops.workspace == nullptr ? 0 : ops.workspace_bytes));
  if (reinterpret_cast<std::uintptr_t>(ops.workspace) % 16 != 0)
    return error(StatusCode::misaligned, "workspace must be 16-byte aligned");
  q.stream_k = true;
  q.sk = sk;
  q.partials = reinterpret_cast<float*>(static_cast<char*>(ops.workspace) + ws.partials_offset);
  q.partial_ld = ws.partial_ld;
  q.semaphores = split_k_counter_pool().get(stream, static_cast<std::int64_t>(sk.ctas) * stream_k_subtiles(c));
  if (q.semaphores == nullptr) {
    q.semaphores = static_cast<int*>(ops.workspace);
    KTUNE_RETURN_IF_ERROR(cuda_status(cudaMemsetAsync(ops.workspace, 0, ws.semaphore_bytes, stream), "stream-K flags"));
  }
  return {};
}

// Resident CTAs of instance c on the current device for stream-K (the resource model's blocks per SM;
// the launcher takes the occupancy API's count where that is lower); 0 without a device.
inline std::int64_t sm90_stream_k_slots(const GemmConfig& c) {
  DeviceInfo dev;
  if (!current_device(dev).ok()) {
    (void)cudaGetLastError();
    return 0;
  }
  return static_cast<std::int64_t>(detail::resident_slots(estimate_resources(c), dev));
}

// Workspace bytes of an sm90 instance (GemmKernelEntry::workspace_size).
template <class CfgT>
std::size_t workspace_size_of(const GemmDesc& d, const GemmLaunchOptions& opt) {
  if (opt.stream_k) {  // as the launcher plans it on the current device (none: no launch, no workspace)
    const GemmDesc r = resolved(d);
    const std::int64_t slots = sm90_stream_k_slots(CfgT::value);
    const std::int64_t tiles = ceil_div(r.m, std::int64_t{CfgT::value.tile.m}) * ceil_div(r.n, std::int64_t{CfgT::value.tile.n});
    StreamKSchedule sk;
    if (slots <= 0 || !plan_stream_k(tiles, ceil_div(r.k, std::int64_t{CfgT::value.tile.k}),
                                     opt.max_ctas > 0 ? std::min<std::int64_t>(opt.max_ctas, slots) : slots, sk))
      return 0;
    return stream_k_layout(CfgT::value, sk.ctas).total_bytes;
  }
  return sm90_split_k_layout(CfgT::value, resolved(d), opt).total_bytes;
}

}  // namespace ktune::kernel::sm90
